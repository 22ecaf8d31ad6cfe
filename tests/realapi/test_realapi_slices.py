"""EndpointSlices against the real kube-apiserver (v1.20.2: ``discovery.k8s.io/v1beta1`` only).

git (hosts/vanaheim) declares ``discovery.k8s.io/v1`` slices, as manifests written today do;
the cluster serves them as v1beta1. syncer must find them under the older version, read them
in the v1 shape, and give them exactly the Endpoints treatment:

1. one-shot: a pick after stableFor is written as one line with its comment kept; a cleared
   slice is never written and is reported; an undeclared address is never written;
2. the sidecar (its own threads, real watches, real time with a short stableFor): a burst of
   sleep/wake flaps, including a short fallback to the IPv6 slice, gives zero commits and one
   outage report per outage.
"""

from __future__ import annotations

import io
import json
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from syncer.cli import main
from syncer.gitrepo import Workspace
from syncer.kube import kube_client
from syncer.sources.manifests import load_manifests, parse_documents
from syncer.writeback.notify import Notifier
from syncer.sidecar.app import Sidecar, SidecarSettings
from syncer.sidecar.loop import LoopSettings
from syncer.sidecar.schedule import Timing
from syncer.sidecar.watch import WatchSettings
from syncer.writeback.deliver import Mode

from .cluster import RealCluster

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[2]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
BETA = "discovery.k8s.io/v1beta1"
BACKENDS = "hosts/vanaheim/ollama-backends.yaml"
PATHS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "EndpointSlice": f"/apis/{BETA}/namespaces/{{ns}}/endpointslices",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def vanaheim_in(namespace: str, tmp_path: Path, stable_for: str = "10m") -> Path:
    """hosts/vanaheim rewritten into ``namespace``, committed and pushed to a bare origin."""
    work = tmp_path / "work"
    host = work / "hosts" / "vanaheim"
    shutil.copytree(ROOT / "hosts" / "vanaheim", host)
    for f in host.iterdir():
        f.write_text(f.read_text().replace("namespace: ai", f"namespace: {namespace}")
                     .replace("stableFor: 10m", f"stableFor: {stable_for}"))
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(tmp_path / "origin.git"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "vanaheim")
    git(work, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(work, "push", "-q", "origin", "main")
    return work


def apply_all(cluster: RealCluster, work: Path, namespace: str) -> None:
    """Create every object as ``kubectl apply`` does; slices as the v1beta1 this server serves."""
    for obj in load_manifests(work, "vanaheim", namespace).objects.values():
        manifest = json.loads(json.dumps(obj.data))
        if manifest["kind"] == "EndpointSlice":
            manifest["apiVersion"] = BETA
        manifest["metadata"].setdefault("annotations", {})
        body = json.loads(json.dumps(manifest))
        body["metadata"]["annotations"] = {
            LAST_APPLIED: json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n"}
        cluster.request("POST", PATHS[manifest["kind"]].format(ns=namespace)
                        + "?fieldManager=kubectl-client-side-apply", body)


def merge_patch(cluster: RealCluster, path: str, patch: dict[str, Any], manager: str) -> dict[str, Any]:
    """A JSON merge patch as ``manager`` (what the endpoint manager or ``kubectl edit`` send)."""
    req = urllib.request.Request(f"{cluster.url}{path}?fieldManager={manager}", data=json.dumps(patch).encode(),
                                 method="PATCH", headers={"Authorization": f"Bearer {cluster.admin_token}",
                                                          "Content-Type": "application/merge-patch+json",
                                                          "Accept": "application/json"})
    ctx: ssl.SSLContext | None = getattr(cluster, "_ssl", None)
    with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
        return json.loads(resp.read())  # type: ignore[no-any-return]


def point(cluster: RealCluster, namespace: str, name: str, address: str | None, *, ready: bool = True) -> None:
    eps = [] if address is None else [{"addresses": [address], "conditions": {"ready": ready}}]
    merge_patch(cluster, f"/apis/{BETA}/namespaces/{namespace}/endpointslices/{name}", {"endpoints": eps},
                "slice-endpoint-manager")


def edit_candidates(cluster: RealCluster, namespace: str, mac: str) -> None:
    merge_patch(cluster, f"/api/v1/namespaces/{namespace}/configmaps/slice-endpoint-manager",
                {"data": {"MAC_ADDRS": mac}}, "kubectl-edit")


def syncer(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    later = datetime.now(timezone.utc) + timedelta(minutes=11)  # past stableFor of every pick
    return main(list(argv), now=later, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_the_server_serves_slices_only_as_v1beta1(real_cluster: RealCluster) -> None:
    groups = real_cluster.request("GET", "/apis")["groups"]
    [discovery] = [g for g in groups if g["name"] == "discovery.k8s.io"]
    assert [v["groupVersion"] for v in discovery["versions"]] == [BETA]


def test_slices_one_shot_pick_cleared_undeclared(real_cluster: RealCluster, namespace: str, tmp_path: Path) -> None:
    work = vanaheim_in(namespace, tmp_path)
    apply_all(real_cluster, work, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    base = ("--repo", str(work), "--kubeconfig", str(admin))
    # Freshly applied (the server's own defaults and the empty IPv6 slice included): no drift.
    code, out, err = syncer("diff", "vanaheim", *base)
    assert (code, err) == (0, ""), out

    edit_candidates(real_cluster, namespace, "192.168.68.75 192.168.68.58 fd7a:115c:a1e0::5a")
    point(real_cluster, namespace, "mac-ollama-ipv4", "192.168.68.75")  # a pick
    point(real_cluster, namespace, "m1-ollama-fqdn", "m1-laptop.tail4a2b.ts.net", ready=False)  # asleep
    code, out, err = syncer("diff", "vanaheim", *base, "-o", "json")
    assert (code, err) == (1, "")
    got = sorted((d["kind"], d["name"], d["path"], d["class"], d["direction"], d["manager"], d["action"])
                 for d in json.loads(out)["drifts"])
    assert got == [
        ("ConfigMap", "slice-endpoint-manager", "data.MAC_ADDRS", "value", "cluster", "kubectl-edit", "write"),
        ("EndpointSlice", "m1-ollama-fqdn", "endpoints", "cleared", "cluster", "slice-endpoint-manager", "report"),
        ("EndpointSlice", "mac-ollama-ipv4", "endpoints", "pick", "cluster", "slice-endpoint-manager", "write"),
    ]
    assert json.loads(out)["errors"] == []

    code, out, err = syncer("sync", "vanaheim", *base, "--mode", "commit")
    assert (code, err) == (0, ""), out
    git(work, "fetch", "-q", "origin")
    diff = git(work, "diff", "--unified=0", "main", "origin/main", "--", BACKENDS)
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed == ["-      - 192.168.68.58   # Mac Studio, LAN", "+      - 192.168.68.75   # Mac Studio, LAN"]
    assert "m1-laptop.tail4a2b.ts.net   # M1 laptop" in git(work, "show", f"origin/main:{BACKENDS}")

    # A hand-patched address in no candidate list: reported, never written.
    point(real_cluster, namespace, "mac-ollama-ipv4", "10.9.8.7")
    git(work, "merge", "-q", "--ff-only", "origin/main")
    code, out, err = syncer("diff", "vanaheim", *base, "-o", "json")
    found = {(d["name"], d["class"], d["action"]) for d in json.loads(out)["drifts"]}
    assert ("mac-ollama-ipv4", "undeclared", "report") in found, out
    head = git(work, "rev-parse", "origin/main")
    code, out, err = syncer("sync", "vanaheim", *base, "--mode", "commit")
    assert code == 0, out + err
    git(work, "fetch", "-q", "origin")
    assert git(work, "rev-parse", "origin/main") == head  # nothing written


#: The flapping test's stableFor: each state lasts well under it, the whole run well over it.
STABLE_FOR = 5.0


def test_sidecar_on_slices_sleep_wake_flapping_gives_no_commit(real_cluster: RealCluster, namespace: str,
                                                               tmp_path: Path) -> None:
    work = vanaheim_in(namespace, tmp_path, stable_for=f"{STABLE_FOR:g}s")
    apply_all(real_cluster, work, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    posted: list[dict[str, Any]] = []

    def hook(request: httpx.Request) -> httpx.Response:
        posted.append(json.loads(request.content))
        return httpx.Response(204)

    notifier = Notifier(["http://127.0.0.1:9/hook"], httpx.Client(transport=httpx.MockTransport(hook)))
    ws = Workspace.open_or_clone(str(tmp_path / "origin.git"), "main", tmp_path / "clone")
    loop = LoopSettings("vanaheim", Mode.COMMIT, "syncer diff vanaheim",
                        timing=Timing(debounce=0.3, debounce_max=2.0, resync=600.0, tick=0.2))
    settings = SidecarSettings(loop=loop, listen=None, watch=WatchSettings(backoff_base=0.05, backoff_cap=0.5),
                               startup_timeout=20.0)
    sc = Sidecar(kube_client(str(admin), None, read_yaml=parse_documents, pool_size=32), ws, settings, notifier=notifier)
    sc.start()
    try:
        deadline = time.monotonic() + 30
        while not (sc.loop.last and sc.loop.last.outcome) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sc.loop.last is not None and sc.loop.last.outcome is not None
        assert sc.loop.last.outcome.result.in_sync, sc.loop.last.outcome.result.drifts
        # Each state holds ~1 s (well under stableFor, whose change times have whole seconds),
        # long enough for a pass to see it.
        timeline: list[list[tuple[str, str | None, bool]]] = [
            [("mac-ollama-ipv4", "192.168.68.58", False)],  # asleep
            [("mac-ollama-ipv4", "192.168.68.58", True)],  # awake
            [("mac-ollama-ipv4", None, True)],  # emptied: nothing ready anywhere
            [("mac-ollama-ipv6", "fd7a:115c:a1e0::5a", True)],  # the tailnet, briefly
            [("mac-ollama-ipv6", None, True), ("mac-ollama-ipv4", "192.168.68.58", True)],  # LAN again
            [("mac-ollama-ipv4", "192.168.68.58", False)],  # asleep
            [("mac-ollama-ipv4", "192.168.68.58", True)],  # awake
        ]
        for changes in timeline:
            before = sc.loop.passes
            for name, address, ready in changes:
                point(real_cluster, namespace, name, address, ready=ready)
            deadline = time.monotonic() + 10
            while sc.loop.passes == before and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sc.loop.passes > before, "no pass saw the change"
            time.sleep(0.5)
        time.sleep(STABLE_FOR + 1)  # past stableFor after the last flap: still nothing to write
        last = sc.loop.last
        assert last is not None and last.error is None and last.outcome is not None
        assert last.outcome.result.in_sync, last.outcome.result.drifts
    finally:
        sc.stop()
    log = git(tmp_path / "origin.git", "log", "--format=%s", "main").splitlines()
    assert log == ["vanaheim"]
    outages = [p["outage"] for p in posted if p["event"] == "drift.cleared"]
    assert [(o["kind"], o["name"]) for o in outages] == [("Service", "mac-ollama")] * 3
    assert all(o["duration_seconds"] is not None and o["duration_seconds"] >= 0 for o in outages)


# -- the fake API server speaks the same EndpointSlice wire format ---------------------------

PROBES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "", {"metadata": {"name": "s-empty", "labels": {"kubernetes.io/service-name": "svc"}},
                  "addressType": "IPv4", "endpoints": []}),
    ("POST", "", {"metadata": {"name": "s-no-type"}, "endpoints": []}),
    ("POST", "", {"metadata": {"name": "s-bad-type"}, "addressType": "IPv5", "endpoints": []}),
    ("POST", "", {"metadata": {"name": "s-bad-ip"}, "addressType": "IPv4",
                  "endpoints": [{"addresses": ["fd7a::1"]}]}),
    ("POST", "", {"metadata": {"name": "s-no-addr"}, "addressType": "FQDN", "endpoints": [{"addresses": []}]}),
    ("PUT", "s-empty", {"metadata": {"name": "s-empty"}, "addressType": "IPv6", "endpoints": []}),
]


def _probe(url: str, token: str, ctx: ssl.SSLContext | None, prefix: str, version: str, method: str, name: str,
           body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = {"apiVersion": version, "kind": "EndpointSlice", **json.loads(json.dumps(body))}
    if method == "PUT":  # replace the object as read, with only addressType changed
        with urllib.request.urlopen(urllib.request.Request(
                f"{url}{prefix}/{name}", headers={"Authorization": f"Bearer {token}"}), timeout=10,
                context=ctx) as resp:
            current = json.loads(resp.read())
        body = {**current, "addressType": body["addressType"]}
    req = urllib.request.Request(f"{url}{prefix}{'/' + name if name else ''}", data=json.dumps(body).encode(),
                                 method=method, headers={"Authorization": f"Bearer {token}",
                                                         "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _comparable(code: int, doc: dict[str, Any]) -> tuple[Any, ...]:
    if doc.get("kind") == "Status":
        causes = sorted((c["reason"], c["field"], c["message"]) for c in (doc.get("details") or {}).get("causes", []))
        return code, doc["reason"], doc["message"], causes
    return code, doc["kind"], doc["addressType"], "endpoints" in doc, doc.get("endpoints")


def test_the_fake_answers_endpointslice_requests_as_the_real_server(real_cluster: RealCluster, namespace: str,
                                                                    tmp_path: Path) -> None:
    from tests.fakes.kube_api import FakeKubeAPI

    real_prefix = f"/apis/{BETA}/namespaces/{namespace}/endpointslices"
    real = [_comparable(*_probe(real_cluster.url, real_cluster.admin_token, getattr(real_cluster, "_ssl", None),
                                real_prefix, BETA, m, n, b)) for m, n, b in PROBES]
    with FakeKubeAPI() as fake:
        fake_prefix = f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"
        faked = [_comparable(*_probe(fake.url, fake.token, None, fake_prefix, "discovery.k8s.io/v1", m, n, b))
                 for m, n, b in PROBES]
    assert [r[0] for r in real] == [201, 422, 422, 422, 422, 422], real
    assert faked == real
