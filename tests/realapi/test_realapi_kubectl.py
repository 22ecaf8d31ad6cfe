"""The tools people already run, for real: kubectl v1.32 (``.ci/helm.sh``) against the real
kube-apiserver.

1. ``kubectl apply -f hosts/<inst>/`` succeeds for every installation in ``hosts/`` -- syncer's
   own config (``syncer.conf``) is not a manifest and kubectl leaves it alone -- and so does
   ``kubectl apply -R -f hosts/``; the same config under its old name ``syncer.yaml`` makes
   kubectl fail (the control: this test would catch a regression).
2. ``kubectl syncer diff`` runs the installed plugin, and ``--kubeconfig``, ``$KUBECONFIG``,
   ``--context`` and ``-n`` mean what they mean to kubectl.

Without kubectl on PATH these tests skip with the reason (CI installs it and runs them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from syncer.config import CONFIG_NAME, LEGACY_CONFIG_NAME, Config, load_config
from syncer.sources.dispatch import source_for
from syncer.sources.manifests import load_manifests

from .cluster import RealCluster
from .tools import require_tool

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[2]
#: Installations of plain manifests (``kubectl apply -f``); a kustomization (hosts/midgard) is
#: applied with ``kubectl apply -k`` instead (tests/realapi/test_realapi_kustomize.py).
INSTALLATIONS = sorted(p.name for p in (ROOT / "hosts").iterdir()
                       if p.is_dir() and source_for(ROOT, p.name, Config(p.name)).name == "manifests")


def kubectl(kubeconfig: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_tool("kubectl"), "--kubeconfig", str(kubeconfig), *args], capture_output=True,
                          text=True, timeout=120, check=False, env=env, stdin=subprocess.DEVNULL)


def cluster_serves(cluster: RealCluster, group_version: str) -> bool:
    found = cluster.request("GET", "/apis").get("groups") or []
    return any(v.get("groupVersion") == group_version for g in found for v in g.get("versions") or [])


def copy_into_namespaces(cluster: RealCluster, installation: str, dest: Path) -> tuple[Path, int]:
    """``hosts/<installation>/`` copied under ``dest/hosts/`` with every namespace it uses replaced
    by a fresh one on the cluster (the session's API server is shared); returns the copy and how
    many objects syncer sees in it."""
    src = ROOT / "hosts" / installation
    host = dest / "hosts" / installation
    shutil.copytree(src, host)
    config = load_config(src, installation)
    namespaces = {ref.namespace for ref in load_manifests(ROOT, installation, config.namespace).objects} - {""}
    renames = {ns: cluster.create_namespace("kubectl") for ns in sorted(namespaces)}
    for f in host.rglob("*"):
        if f.is_file():
            text = f.read_text()
            for old, new in renames.items():
                text = re.sub(rf"(?m)^(\s*(?:- )?namespace:\s*){re.escape(old)}(\s*(#.*)?)$", rf"\g<1>{new}\g<2>", text)
            if not cluster_serves(cluster, "discovery.k8s.io/v1"):
                # This tier's v1.20 serves EndpointSlices only as v1beta1 (same fields as used here).
                text = text.replace("apiVersion: discovery.k8s.io/v1\n", "apiVersion: discovery.k8s.io/v1beta1\n")
            f.write_text(text)
    new_config = load_config(host, installation)
    return host, len(load_manifests(dest, installation, new_config.namespace).objects)


@pytest.mark.parametrize("installation", INSTALLATIONS)
def test_kubectl_apply_f_of_every_installation(real_cluster: RealCluster, installation: str, tmp_path: Path) -> None:
    require_tool("kubectl")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig")
    host, count = copy_into_namespaces(real_cluster, installation, tmp_path / "repo")
    assert (host / CONFIG_NAME).is_file(), f"hosts/{installation}/ keeps its config in {CONFIG_NAME}"

    out = kubectl(admin, "apply", "-f", f"{host}/")
    assert out.returncode == 0, out.stderr
    applied = [ln for ln in out.stdout.splitlines() if ln.endswith((" created", " configured", " unchanged"))]
    assert len(applied) == count > 0, out.stdout  # every object syncer tracks, nothing else
    assert "syncer" not in out.stderr

    # The control: the config under its old name is what broke `kubectl apply -f`.
    (host / CONFIG_NAME).rename(host / LEGACY_CONFIG_NAME)
    out = kubectl(admin, "apply", "-f", f"{host}/")
    assert out.returncode != 0 and LEGACY_CONFIG_NAME in out.stderr, out.stderr
    assert "apiVersion not set" in out.stderr or "kind not set" in out.stderr, out.stderr


def test_kubectl_apply_recursive_over_all_of_hosts(real_cluster: RealCluster, tmp_path: Path) -> None:
    require_tool("kubectl")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig")
    total = sum(copy_into_namespaces(real_cluster, inst, tmp_path / "repo")[1] for inst in INSTALLATIONS)
    out = kubectl(admin, "apply", "-R", "-f", str(tmp_path / "repo" / "hosts"))
    assert out.returncode == 0, out.stderr
    assert len([ln for ln in out.stdout.splitlines() if ln.endswith(" created")]) == total


# ------------------------------------------------------------------------------ the plugin --
def plugin_bin(tmp_path: Path) -> Path:
    """A directory holding ``kubectl-syncer`` as installing the package puts it on PATH.

    The name and target come from pyproject's ``[project.scripts]`` (what pip turns into the
    executable); when this environment's install already has the script, that one is used.
    """
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, func = scripts["kubectl-syncer"].split(":")
    bindir = tmp_path / "plugins"
    bindir.mkdir()
    installed = Path(sysconfig.get_path("scripts")) / "kubectl-syncer"
    if installed.is_file() and os.access(installed, os.X_OK):
        (bindir / "kubectl-syncer").symlink_to(installed)
    else:  # what pip writes for a console script
        script = bindir / "kubectl-syncer"
        script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\n"
                          f"if __name__ == '__main__':\n    sys.exit({func}())\n")
        script.chmod(0o755)
    return bindir


def test_kubectl_syncer_diff_honours_kubectl_flags(real_cluster: RealCluster, tmp_path: Path) -> None:
    require_tool("kubectl")
    namespace = real_cluster.create_namespace("plugin")
    # asgard without namespaces in its manifests: -n decides where they live, as with kubectl.
    repo = tmp_path / "repo"
    host = repo / "hosts" / "asgard"
    shutil.copytree(ROOT / "hosts" / "asgard", host)
    for f in host.glob("*.yaml"):
        f.write_text(re.sub(r"(?m)^  namespace: ai\n", "", f.read_text()))
    # A kubeconfig whose current context points nowhere: only --context realapi reaches the server.
    good = real_cluster.kubeconfig(tmp_path / "good.kubeconfig", namespace=namespace)
    cfg = json.loads(good.read_text())
    cfg["clusters"].append({"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}})
    cfg["contexts"].append({"name": "nowhere", "context": {"cluster": "nowhere", "user": "realapi-user"}})
    cfg["current-context"] = "nowhere"
    kubeconfig = tmp_path / "two-contexts.kubeconfig"
    kubeconfig.write_text(json.dumps(cfg))

    out = kubectl(kubeconfig, "--context", "realapi", "apply", "-n", namespace, "-f", f"{host}/")
    assert out.returncode == 0, out.stderr
    out = kubectl(kubeconfig, "--context", "realapi", "-n", namespace, "patch", "configmap",
                  "ollama-endpoint-manager", "--type", "merge", "-p",
                  '{"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90"}}')
    assert out.returncode == 0, out.stderr

    env = {**os.environ, "PATH": f"{plugin_bin(tmp_path)}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    env.pop("KUBECONFIG", None)
    listed = subprocess.run([require_tool("kubectl"), "plugin", "list"], capture_output=True, text=True,
                            timeout=60, check=False, env=env)
    assert "kubectl-syncer" in listed.stdout, listed.stdout + listed.stderr

    def plugin(*args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([require_tool("kubectl"), "syncer", *args], capture_output=True, text=True,
                              timeout=120, check=False, env={**env, **(extra_env or {})}, cwd=tmp_path)

    args = ["diff", "asgard", "--repo", str(repo), "-o", "json"]
    out = plugin(*args, "--kubeconfig", str(kubeconfig), "--context", "realapi", "-n", namespace)
    assert out.returncode == 1, out.stderr  # drift found
    report = json.loads(out.stdout)
    mac = [d for d in report["drifts"] if d["path"] == "data.MAC_ADDRS"]
    assert len(mac) == 1 and mac[0]["namespace"] == namespace and mac[0]["manager"] == "kubectl-patch", report
    assert mac[0]["live"] == "192.168.68.75 100.115.97.90"
    assert not report["errors"]

    # $KUBECONFIG as kubectl reads it; the current context points nowhere: a one-line error, exit 2.
    out = plugin(*args, "-n", namespace, extra_env={"KUBECONFIG": str(kubeconfig)})
    assert out.returncode == 2 and "127.0.0.1:1" in out.stdout + out.stderr, out.stdout + out.stderr
    out = plugin(*args, "-n", namespace, "--context", "realapi", extra_env={"KUBECONFIG": str(kubeconfig)})
    assert out.returncode == 1 and json.loads(out.stdout)["drifts"] == report["drifts"]

    # Without -n the config's namespace (ai) is used: nothing of asgard lives there.
    out = plugin(*args, "--kubeconfig", str(kubeconfig), "--context", "realapi")
    assert all(d["namespace"] == "ai" for d in json.loads(out.stdout)["drifts"])

    # Onboarding through the plugin, from the real API: the bindings follow from the live objects.
    out = plugin("init", "asgard", "--repo", str(repo), "--force", "--kubeconfig", str(kubeconfig),
                 "--context", "realapi", "-n", namespace)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"namespace {namespace}: given with -n" in out.stdout
    assert "candidates mac-ollama -> ollama-endpoint-manager/MAC_ADDRS" in out.stdout, out.stdout
    assert "candidates m1-ollama -> ollama-endpoint-manager/M1_ADDRS" in out.stdout, out.stdout
    assert f"live objects (API server {real_cluster.url})" in out.stdout, out.stdout

    # kubectl's usage line names the plugin as users type it.
    out = plugin("--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: kubectl syncer"), out.stdout
