"""docs/install.md, "Run the sidecar locally first", run as written against the real kube-apiserver:
the chart's account and RBAC applied alone, a kubeconfig with a token of that account, ``syncer
diff`` as that account (exit 1: drift, nothing refused), ``syncer run`` ready and serving metrics.

Only what points at this machine is replaced: the namespace, the git remote (a bare repository),
the port, the chart's path, ``syncer`` (this checkout's, through the interpreter running the tests).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from syncer.cli import main

from .cluster import RealCluster, free_ports
from .test_realapi_deploy import git, install_md_values
from .test_realapi_kubectl import copy_into_namespaces
from .tools import kubectl, require_tool

ROOT = Path(__file__).resolve().parents[2]


def doc_block() -> str:
    text = (ROOT / "docs" / "install.md").read_text()
    section = text[text.index("## Run the sidecar locally first"):]
    return section[section.index("```sh\n") + 6:section.index("\n```", section.index("```sh\n"))]


def test_the_local_run_of_install_md_works_as_written(real_cluster: RealCluster, tmp_path: Path) -> None:
    require_tool("helm")
    kubectl_bin = require_tool("kubectl")
    work = tmp_path / "work"
    host, _ = copy_into_namespaces(real_cluster, "asgard", work)
    from syncer.config import load_config

    ns = load_config(host, "asgard").namespace
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=ns)
    kubectl(admin, "apply", "-f", f"{host}/")
    kubectl(admin, "patch", "configmap", "ollama-endpoint-manager", "-n", ns, "--type=merge",
            "-p", json.dumps({"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90"}}))
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(work, "init", "-q", "-b", "main")
    git(work, "-c", "user.name=ops", "-c", "user.email=ops@example.com", "add", "-A")
    git(work, "-c", "user.name=ops", "-c", "user.email=ops@example.com", "commit", "-qm", "asgard")
    git(work, "push", "-q", str(origin), "main")

    out, err = io.StringIO(), io.StringIO()
    assert main(["init", "asgard", "--repo", str(work), "--chart-values"], stdout=out, stderr=err) == 0, err.getvalue()
    (work / "asgard-tracked.yaml").write_text(out.getvalue())
    values = install_md_values({})
    del values["tracked"]
    (work / "asgard-values.yaml").write_text(yaml.safe_dump(values))
    (work / "git-token").write_text("unused-for-a-local-remote\n")

    (port,) = free_ports(1)
    block = doc_block()
    block = re.sub(r"(-n|--namespace) ai\b", rf"\1 {ns}", block)
    block = block.replace("charts/syncer", str(ROOT / "charts" / "syncer"))
    block = block.replace("https://github.com/example-org/homelab.git", str(origin))
    block = block.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    block = block.replace("syncer diff asgard --kubeconfig syncer.kubeconfig",
                          "syncer diff asgard --kubeconfig syncer.kubeconfig; echo \"diff exit $?\"")
    bin_dir = tmp_path / "bin"  # `syncer` as the console script would be: exec'd, so `kill %1` reaches it
    bin_dir.mkdir()
    (bin_dir / "syncer").write_text(f"#!/bin/sh\nexec {sys.executable} -m syncer.cli \"$@\"\n")
    (bin_dir / "syncer").chmod(0o755)
    (bin_dir / "kubectl").symlink_to(kubectl_bin)
    script = f"set -u\n{block}\necho ready-and-scraped\nkill %1; wait\n"
    (tmp_path / "local-run.sh").write_text(script)
    done = subprocess.run(["bash", str(tmp_path / "local-run.sh")], cwd=work, capture_output=True, text=True,
                          timeout=240, env={**os.environ, "KUBECONFIG": str(admin), "PYTHONPATH": str(ROOT),
                                            "HOME": str(tmp_path), "NO_PROXY": "127.0.0.1",
                                            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
    out_text = done.stdout
    assert "diff exit 1" in out_text, out_text + done.stderr
    assert "warning:" not in out_text and "error:" not in out_text, out_text  # the Role grants what it reads
    assert "data.MAC_ADDRS" in out_text
    assert "ok\n" in out_text and "ready-and-scraped" in out_text, out_text + done.stderr
    assert "syncer_drift_objects{" in out_text and "syncer_ready{installation=\"asgard\"} 1.0" in out_text
    assert "forbidden" not in done.stderr.lower(), done.stderr
