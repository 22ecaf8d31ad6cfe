"""Installed as docs/install.md says, on the real kube-apiserver, with the real helm and kubectl.

The bundled asgard installation is applied (``kubectl apply -f hosts/asgard/``), edited live,
and syncer is installed from the chart: values as install.md writes them, with the ``tracked:``
block ``syncer init asgard --chart-values`` prints; ``helm template`` renders the chart, the
ServiceAccount, Role and RoleBinding are applied for real, the Deployment and Service with
``--dry-run=server`` (this tier runs no kubelet). Then, as the chart's own account, with a token
minted by ``kubectl create token``:

* ``syncer diff`` answers 1 (drift), with nothing it may not read;
* ``syncer sync --mode commit`` exits 0 and pushes the commit to a bare remote;
* ``syncer run``, with the rendered Deployment's arguments and environment, is ready and
  copies a ``kubectl patch`` back into git, and stays ready.

And the control, the Role as install.md used to render it (ConfigMaps and Endpoints only): the
reported kinds it cannot read are one error each naming the values key (not compared: not "in
sync", exit 2), the rest is still compared and committed; once the config marks those kinds
``optional:``, they are one warning each and the run answers as if they were not declared
(diff 1, sync 0).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from syncer.cli import main
from syncer.config import load_config

from .cluster import RealCluster, free_ports
from .test_realapi_kubectl import copy_into_namespaces
from .tools import require_tool

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "syncer"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run([require_tool("kubectl"), "--kubeconfig", str(kubeconfig), *args], capture_output=True,
                          text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def syncer(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def install_md_values(tracked: dict[str, Any]) -> dict[str, Any]:
    """docs/install.md step 3 (`asgard-values.yaml`), pointed at a forge-less commit mode."""
    return {"installation": "asgard", "image": {"repository": "registry.example.com/syncer"},
            "sync": {"mode": "commit", "forge": "none", "remote": "https://git.example.com/example-org/homelab.git",
                     "baseBranch": "main"},
            "tracked": tracked, "credentials": {"existingSecret": "syncer-credentials", "gitAuth": "https"}}


def render(tmp_path: Path, release: str, namespace: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    path = tmp_path / f"{release}-values.yaml"
    path.write_text(yaml.safe_dump(values))
    done = subprocess.run([require_tool("helm"), "template", release, str(CHART), "-n", namespace, "-f", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def install(admin: Path, tmp_path: Path, release: str, namespace: str, docs: list[dict[str, Any]]) -> None:
    """Apply the rendered objects: the account and its RBAC for real, the workload server-side dry-run."""
    real = [d for d in docs if d["kind"] in ("ServiceAccount", "Role", "RoleBinding")]
    dry = [d for d in docs if d["kind"] not in ("ServiceAccount", "Role", "RoleBinding")]
    assert {d["kind"] for d in dry} == {"Deployment", "Service"}
    for name, group, flags in (("real", real, ()), ("dry", dry, ("--dry-run=server",))):
        f = tmp_path / f"{release}-{name}.yaml"
        f.write_text(yaml.safe_dump_all(group))
        kubectl(admin, "apply", "-n", namespace, "-f", str(f), *flags)


def account_kubeconfig(cluster: RealCluster, admin: Path, tmp_path: Path, namespace: str, account: str,
                       insecure: bool = False) -> Path:
    token = kubectl(admin, "create", "token", account, "-n", namespace, "--duration", "1h").strip()
    return cluster.kubeconfig(tmp_path / f"{account}{'-insecure' if insecure else ''}.kubeconfig", token=token,
                              namespace=namespace, insecure=insecure)


@pytest.fixture
def asgard(real_cluster: RealCluster, tmp_path: Path) -> Iterator[tuple[Path, Path, str, Path]]:
    """(work repo, bare origin, namespace, admin kubeconfig): asgard applied and edited live."""
    work = tmp_path / "work"
    host, _ = copy_into_namespaces(real_cluster, "asgard", work)
    namespace = load_config(host, "asgard").namespace
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(work, "init", "-q", "-b", "main")
    git(work, "-c", "user.name=ops", "-c", "user.email=ops@example.com", "add", "-A")
    git(work, "-c", "user.name=ops", "-c", "user.email=ops@example.com", "commit", "-qm", "asgard")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    kubectl(admin, "apply", "-f", f"{host}/")
    kubectl(admin, "patch", "configmap", "ollama-endpoint-manager", "-n", namespace, "--type=merge",
            "-p", json.dumps({"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90"}}))
    yield work, origin, namespace, admin


def test_installed_as_documented_diff_sync_and_sidecar_work_as_the_charts_account(
        real_cluster: RealCluster, asgard: tuple[Path, Path, str, Path], tmp_path: Path) -> None:
    work, origin, namespace, admin = asgard
    code, printed, err = syncer("init", "asgard", "--repo", str(work), "--chart-values")
    assert code == 0, err
    tracked = yaml.safe_load(printed)["tracked"]
    docs = render(tmp_path, "syncer", namespace, install_md_values(tracked))
    install(admin, tmp_path, "syncer", namespace, docs)
    assert next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"] == "syncer"
    kc = account_kubeconfig(real_cluster, admin, tmp_path, namespace, "syncer")

    code, out, err = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(kc))
    assert (code, err) == (1, ""), out
    assert "data.MAC_ADDRS" in out and "warning:" not in out and "error:" not in out

    before = int(git(origin, "rev-list", "--count", "main"))
    code, out, err = syncer("sync", "asgard", "--repo", str(work), "--kubeconfig", str(kc), "--mode", "commit",
                            "--remote", str(origin), "--clone-dir", str(tmp_path / "sync-clone"))
    assert (code, err) == (0, ""), out
    assert int(git(origin, "rev-list", "--count", "main")) == before + 1
    assert "192.168.68.75" in git(origin, "show", "main:hosts/asgard/ollama-endpoint-manager.yaml")

    # insecure-skip-tls-verify: one line saying so, no urllib3 warning per request.
    insecure = account_kubeconfig(real_cluster, admin, tmp_path, namespace, "syncer", insecure=True)
    done = subprocess.run([sys.executable, "-m", "syncer.cli", "diff", "asgard", "--repo", str(work), "--kubeconfig",
                           str(insecure)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode in (0, 1), done.stderr
    assert "InsecureRequestWarning" not in done.stderr
    # Told once, as a warning: line with the others (and in -o json's warnings), not on stderr.
    assert "TLS verification is off" not in done.stderr, done.stderr
    assert [line for line in done.stdout.splitlines() if "TLS verification is off" in line] == [
        f"warning: TLS verification is off for the API server at {real_cluster.url} (insecure-skip-tls-verify in "
        "the kubeconfig): its certificate is not checked"], done.stdout
    code, out, err = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(insecure), "-o", "json")
    assert [w["message"] for w in json.loads(out)["warnings"] if "TLS" in w["message"]] == [
        f"TLS verification is off for the API server at {real_cluster.url} (insecure-skip-tls-verify in "
        "the kubeconfig): its certificate is not checked"], out

    # The sidecar, with the rendered Deployment's own arguments and environment.
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    (port,) = free_ports(1)
    args = [a if a != "0.0.0.0:8080" else f"127.0.0.1:{port}" for a in container["args"]]
    env = {e["name"]: e["value"] for e in container["env"]}
    token_file = tmp_path / "git-token"
    token_file.write_text("unused-for-a-local-remote\n")
    env.update({"SYNCER_REMOTE": str(origin), "SYNCER_CLONE_DIR": str(tmp_path / "run-clone"),
                "SYNCER_GIT_TOKEN_FILE": str(token_file), "HOME": str(tmp_path), "SYNCER_KUBECONFIG": str(kc),
                "SYNCER_DEBOUNCE": "0.5", "SYNCER_LOG_FORMAT": "text"})
    proc = subprocess.Popen([sys.executable, "-m", "syncer.cli", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env, "PYTHONPATH": str(ROOT), "NO_PROXY": "127.0.0.1"})
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(base + "/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        deadline = time.monotonic() + 60
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, httpx.get(base + "/readyz", timeout=2).text
            time.sleep(0.3)
        commits = int(git(origin, "rev-list", "--count", "main"))
        kubectl(admin, "patch", "configmap", "ollama-endpoint-manager", "-n", namespace, "--type=merge",
                "-p", json.dumps({"data": {"INTERVAL_SECONDS": "45"}}))
        deadline = time.monotonic() + 60
        while int(git(origin, "rev-list", "--count", "main")) == commits:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the sidecar did not copy the edit back"
            time.sleep(0.3)
        assert 'INTERVAL_SECONDS: "45"' in git(origin, "show", "main:hosts/asgard/ollama-endpoint-manager.yaml")
        for _ in range(10):  # and it stays ready
            assert ready()
            time.sleep(0.3)
        metrics = httpx.get(base + "/metrics", timeout=2).text
    finally:
        proc.terminate()
        try:
            _, stderr = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, stderr
    assert "syncer_unreadable_objects{" not in metrics  # nothing the Role lacks
    assert "may not read" not in stderr, stderr
    assert "copied back" in stderr


def test_the_old_documented_role_costs_errors_unless_those_kinds_are_optional(
        real_cluster: RealCluster, asgard: tuple[Path, Path, str, Path], tmp_path: Path) -> None:
    """The Role install.md rendered before (ConfigMaps and Endpoints only): the real RBAC refuses
    the reported kinds; syncer names the values key once per object, the rest goes on, and the
    exit code says not everything was compared -- unless the config marks those kinds optional."""
    work, origin, namespace, admin = asgard
    old = {"configMaps": ["ollama-endpoint-manager"], "endpoints": ["mac-ollama", "m1-ollama"]}
    docs = render(tmp_path, "old", namespace, install_md_values(old))
    install(admin, tmp_path, "old", namespace, docs)
    account = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]["name"]
    kc = account_kubeconfig(real_cluster, admin, tmp_path, namespace, account)

    code, out, err = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(kc))
    assert (code, err) == (2, ""), out
    assert "6 of 9 declared object(s) could not be compared (6 access denied (403))" in out.splitlines()[0]
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 6, out
    assert any("Service/" in e and "tracked.kinds.Service" in e and "forbidden" in e for e in errors)
    assert any("Deployment/" in e and "tracked.kinds.Deployment" in e and "optional:" in e for e in errors)

    before = int(git(origin, "rev-list", "--count", "main"))
    code, out, err = syncer("sync", "asgard", "--repo", str(work), "--kubeconfig", str(kc), "--mode", "commit",
                            "--remote", str(origin), "--clone-dir", str(tmp_path / "old-clone"))
    assert (code, err) == (2, ""), out
    assert int(git(origin, "rev-list", "--count", "main")) == before + 1  # what it could read went in

    git(work, "pull", "-q", "--rebase", "origin", "main")
    conf = work / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text() + "optional: [Service, Deployment, ServiceAccount, Role, RoleBinding]\n")
    git(work, "-c", "user.name=ops", "-c", "user.email=ops@example.com", "commit", "-qam", "optional kinds")
    git(work, "push", "-q", "origin", "main")
    code, out, err = syncer("diff", "asgard", "--repo", str(work), "--kubeconfig", str(kc))
    assert (code, err) == (0, ""), out  # the commit above copied the drift back
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 6 and "optional" in warnings[0], out
    assert out.splitlines()[0] == ("asgard: in sync (3 objects checked; 6 not compared: 6 access denied (403) "
                                   "(see the warnings))")
    code, out, err = syncer("sync", "asgard", "--repo", str(work), "--kubeconfig", str(kc), "--mode", "commit",
                            "--remote", str(origin), "--clone-dir", str(tmp_path / "optional-clone"))
    assert (code, err) == (0, ""), out
