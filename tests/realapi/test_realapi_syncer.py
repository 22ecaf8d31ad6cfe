"""syncer's own code paths against a real kube-apiserver: the asgard scenario end to end,
real server defaults, and least privilege with the Role the chart renders."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from syncer.cli import main
from syncer.sources.manifests import load_manifests

from .cluster import RealCluster

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[2]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
PATHS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Endpoints": "/api/v1/namespaces/{ns}/endpoints",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def asgard_in(namespace: str, tmp_path: Path) -> Path:
    """hosts/asgard rewritten into ``namespace``, committed and pushed to a bare origin."""
    work = tmp_path / "work"
    shutil.copytree(ROOT / "hosts" / "asgard", work / "hosts" / "asgard")
    for f in (work / "hosts" / "asgard").iterdir():
        f.write_text(f.read_text().replace("namespace: ai", f"namespace: {namespace}"))
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "origin.git"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "asgard")
    git(work, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(work, "push", "-q", "origin", "main")
    return work


def kubectl_apply(cluster: RealCluster, obj: dict[str, Any], namespace: str) -> None:
    """POST the object as ``kubectl apply`` creates it: with the last-applied annotation."""
    manifest = json.loads(json.dumps(obj))
    manifest["metadata"].setdefault("annotations", {})
    body = json.loads(json.dumps(manifest))
    body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n"}
    cluster.request("POST", PATHS[obj["kind"]].format(ns=namespace) + "?fieldManager=kubectl-client-side-apply", body)


def live_edits(kubeconfig: Path, namespace: str) -> None:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    core = client.CoreV1Api(client.ApiClient(cfg))
    core.patch_namespaced_config_map(
        "ollama-endpoint-manager", namespace,
        {"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90", "M1_ADDRS": "192.168.68.89 100.127.6.20"}},
        field_manager="kubectl-edit", _content_type="application/merge-patch+json")
    for name, ip in (("mac-ollama", "192.168.68.75"), ("m1-ollama", "192.168.68.89")):
        core.patch_namespaced_endpoints(
            name, namespace, {"subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": 11434}]}]},
            field_manager="ollama-endpoint-manager", _content_type="application/merge-patch+json")


def syncer(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    later = datetime.now(timezone.utc) + timedelta(minutes=11)  # past stableFor of every pick
    return main(list(argv), now=later, stdout=out, stderr=err), out.getvalue(), err.getvalue()


@pytest.fixture
def asgard_live(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> tuple[Path, Path]:
    repo = asgard_in(namespace, tmp_path)
    for obj in load_manifests(repo, "asgard", namespace).objects.values():
        kubectl_apply(real_cluster, obj.data, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    return repo, admin


def test_asgard_diff_against_the_real_server(asgard_live: tuple[Path, Path], namespace: str) -> None:
    repo, admin = asgard_live
    # Freshly applied: the server's own defaults (clusterIP, strategy, protocol, ...) are no drift.
    code, out, err = syncer("diff", "asgard", "--repo", str(repo), "--kubeconfig", str(admin))
    assert (code, err) == (0, ""), out
    live_edits(admin, namespace)
    code, out, err = syncer("diff", "asgard", "--repo", str(repo), "--kubeconfig", str(admin), "-o", "json")
    assert (code, err) == (1, "")
    got = sorted((d["kind"], d["name"], d["path"], d["class"], d["direction"], d["manager"], d["action"])
                 for d in json.loads(out)["drifts"])
    assert got == [
        ("ConfigMap", "ollama-endpoint-manager", "data.M1_ADDRS", "value", "cluster", "kubectl-edit", "write"),
        ("ConfigMap", "ollama-endpoint-manager", "data.MAC_ADDRS", "value", "cluster", "kubectl-edit", "write"),
        ("Endpoints", "m1-ollama", "subsets", "pick", "cluster", "ollama-endpoint-manager", "write"),
        ("Endpoints", "mac-ollama", "subsets", "pick", "cluster", "ollama-endpoint-manager", "write"),
    ]


def test_asgard_sync_commit_writes_exactly_the_drifted_lines(asgard_live: tuple[Path, Path], namespace: str) -> None:
    repo, admin = asgard_live
    live_edits(admin, namespace)
    code, out, err = syncer("sync", "asgard", "--repo", str(repo), "--kubeconfig", str(admin), "--mode", "commit")
    assert (code, err) == (0, ""), out
    git(repo, "fetch", "-q", "origin")
    diff = git(repo, "show", "--format=", "--unified=0", "origin/main")
    changed = sorted(ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
    assert changed == sorted([
        '-  MAC_ADDRS: "192.168.68.58 100.115.97.90"', '+  MAC_ADDRS: "192.168.68.75 100.115.97.90"',
        '-  M1_ADDRS: "100.127.6.20"', '+  M1_ADDRS: "192.168.68.89 100.127.6.20"',
        "-      - ip: 192.168.68.58   # Mac Studio, LAN", "+      - ip: 192.168.68.75   # Mac Studio, LAN",
        "-      - ip: 100.127.6.20    # M1 laptop, tailnet", "+      - ip: 192.168.68.89    # M1 laptop, tailnet",
    ])
    # Second sync: no new commit.
    head = git(repo, "rev-parse", "origin/main")
    code, out, _ = syncer("sync", "asgard", "--repo", str(repo), "--kubeconfig", str(admin), "--mode", "commit")
    assert code == 0 and "nothing to commit" in out
    git(repo, "fetch", "-q", "origin")
    assert git(repo, "rev-parse", "origin/main") == head


def test_least_privilege_role_reads_tracked_objects_and_names_what_was_denied(
    asgard_live: tuple[Path, Path], real_cluster: RealCluster, namespace: str, tmp_path: Path
) -> None:
    repo, admin = asgard_live
    live_edits(admin, namespace)
    # The Role the chart renders for asgard: get/list/watch on the tracked names only.
    real_cluster.request("POST", PATHS["Role"].format(ns=namespace), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "syncer"},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["ollama-endpoint-manager"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["endpoints"], "resourceNames": ["mac-ollama", "m1-ollama"],
             "verbs": ["get", "list", "watch"]},
        ]})
    real_cluster.request("POST", PATHS["RoleBinding"].format(ns=namespace), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "syncer"},
        "subjects": [{"kind": "ServiceAccount", "name": "syncer", "namespace": namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "syncer"}})
    token = real_cluster.service_account_token(namespace, "syncer")
    sa = real_cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=namespace)
    code, out, err = syncer("diff", "asgard", "--repo", str(repo), "--kubeconfig", str(sa))
    assert code == 1 and err == ""  # drift found; what it may not read is only reported anyway
    # Everything the Role covers was compared ...
    assert "data.MAC_ADDRS" in out and "mac-ollama" in out and "m1-ollama" in out
    # ... and every object outside it (all of `report` kinds) is one warning naming verb,
    # resource, name and the chart values key that grants it.
    assert not [ln for ln in out.splitlines() if ln.startswith("error:")]
    warnings = [ln for ln in out.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 6  # 2 Services, Deployment, ServiceAccount, Role, RoleBinding
    assert any('services "mac-ollama" is forbidden' in e and 'cannot get resource "services"' in e
               and "tracked.kinds.Service" in e for e in warnings)
    assert any('deployments.apps "ollama-endpoint-manager" is forbidden' in e for e in warnings)
