"""``syncer run`` (the sidecar) against the real kube-apiserver, as a real process.

Each test starts ``python -m syncer.cli run`` subprocesses against the session's
kube-apiserver + etcd and a bare git origin in ``tmp_path``:

1. a live ``kubectl edit`` becomes a commit on main (and an Endpoints pick follows
   after ``stableFor``), visible in ``/metrics``, ``/readyz`` 200;
2. an API server restart: ``/readyz`` goes 503 and back, the watches get 410 and
   re-list, a change made right after the restart still arrives;
3. least privilege: the ServiceAccount bound to the Role ``helm template`` renders runs
   ``syncer run --leader-elect`` with its TokenRequest token (syncer.conf sets the kinds
   the Role does not cover to ``ignore``); a Role without ``watch`` on endpoints, or
   without ``create`` on leases, makes start-up fail with one line naming verb and resource;
4. ``syncer run --leader-elect`` processes on one real Lease: one commit per change; the
   follower takes over when the leader gets SIGTERM (released) or SIGKILL (expired).

What the server showed is written up in docs/realapi.md ("The sidecar").

Every wait is bounded; every process is ended by PID in a fixture.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from ruamel.yaml import YAML

from syncer.sources.manifests import load_manifests

from .cluster import RealCluster, free_ports
from .tools import require_tool

pytestmark = pytest.mark.realapi

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "syncer"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CM_NAME = "ollama-endpoint-manager"
PATHS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Endpoints": "/api/v1/namespaces/{ns}/endpoints",
    "Service": "/api/v1/namespaces/{ns}/services",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "Lease": "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
}
#: Kinds of hosts/asgard that the chart's Role does not let syncer read: with them set to
#: ``ignore`` syncer neither watches nor compares them.
OUTSIDE_THE_ROLE = ("Service", "Deployment", "ServiceAccount", "Role", "RoleBinding")
#: Seconds kube-apiserver gets after SIGTERM before SIGKILL when the test restarts it.
GRACE = 3.0


# ------------------------------------------------------------------ helpers --
def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ops", "-c", "user.email=ops@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def asgard_repo(tmp_path: Path, namespace: str, *, stable_for: str = "2s", ignore_outside_role: bool = False) -> Path:
    """hosts/asgard in ``namespace`` with a short stableFor, committed to a bare origin.

    Returns the bare origin (what ``--remote`` points at).
    """
    work = tmp_path / "work"
    host = work / "hosts" / "asgard"
    shutil.copytree(ROOT / "hosts" / "asgard", host)
    for f in host.iterdir():
        f.write_text(f.read_text().replace("namespace: ai", f"namespace: {namespace}"))
    cfg = host / "syncer.conf"
    text = cfg.read_text().replace("stableFor: 10m", f"stableFor: {stable_for}")
    if ignore_outside_role:
        text = re.sub(r"(?m)^  Service: report\n  Deployment: report\n",
                      "".join(f"  {kind}: ignore\n" for kind in OUTSIDE_THE_ROLE), text)
        assert "Deployment: ignore" in text, text
    cfg.write_text(text)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-qm", "asgard")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    return origin


def kubectl_apply_all(cluster: RealCluster, origin: Path, namespace: str) -> None:
    """Create every object of hosts/asgard as ``kubectl apply`` does (last-applied annotation)."""
    work = origin.parent / "work"
    for obj in load_manifests(work, "asgard", namespace).objects.values():
        manifest = json.loads(json.dumps(obj.data))
        manifest["metadata"].setdefault("annotations", {})
        body = json.loads(json.dumps(manifest))
        body["metadata"]["annotations"] = {
            LAST_APPLIED: json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n"}
        cluster.request("POST", PATHS[obj.data["kind"]].format(ns=namespace)
                        + "?fieldManager=kubectl-client-side-apply", body)


def core_api(kubeconfig: Path) -> client.CoreV1Api:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)  # type: ignore[no-untyped-call]
    return client.CoreV1Api(client.ApiClient(cfg))


def kubectl_edit(kubeconfig: Path, namespace: str, data: dict[str, str]) -> None:
    """What ``kubectl edit`` sends: a strategic merge patch, field manager ``kubectl-edit``."""
    core_api(kubeconfig).patch_namespaced_config_map(CM_NAME, namespace, {"data": data},
                                                     field_manager="kubectl-edit")


def manager_points(kubeconfig: Path, namespace: str, endpoints: str, ip: str) -> None:
    """The endpoint manager repoints an Endpoints (merge patch of the atomic ``subsets``)."""
    core_api(kubeconfig).patch_namespaced_endpoints(
        endpoints, namespace, {"subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": 11434}]}]},
        field_manager="ollama-endpoint-manager", _content_type="application/merge-patch+json")


def main_log(origin: Path) -> list[str]:
    """Subjects on origin's main, newest first."""
    return git(origin, "log", "--format=%an|%s", "main").splitlines()


def changed_lines(origin: Path, rev: str = "main") -> list[str]:
    diff = git(origin, "show", "--format=", "--unified=0", rev)
    return sorted(ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---")))


def metric(text: str, name: str, default: float | None = None, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels`` (``default`` when there
    is none: a labelled counter has no sample until a label set is first used)."""
    total, found = 0.0, False
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
            found = True
    if not found:
        if default is not None:
            return default
        raise KeyError(f"no sample {name}{labels} in /metrics")
    return total


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy") and not k.startswith("SYNCER_")}
    env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", PYTHONUNBUFFERED="1",
               PYTHONPATH=str(ROOT), **extra)
    return env


class SyncerRun:
    """One ``syncer run`` child process with its own /healthz, /readyz and /metrics port."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.log = name, log
        self.port = free_ports(1)[0]
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "syncer.cli", "run", "asgard", *args, "--listen", f"127.0.0.1:{self.port}",
               "--log-format", "json"]
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, cwd=log.parent, start_new_session=True)

    def get(self, path: str) -> tuple[int, str]:
        """(status, body); 0 when nothing answers."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    def metrics(self) -> str:
        status, text = self.get("/metrics")
        assert status == 200, (status, text)
        return text

    def metric(self, name: str, default: float | None = None, **labels: str) -> float:
        return metric(self.metrics(), name, default, **labels)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, timeout: float = 60.0) -> None:
        """/readyz 200 and a pass completed (readiness comes when git was reached, which is
        before the pass has updated the metrics)."""
        def ready() -> bool:
            assert self.alive(), f"{self.name} exited with {self.proc.returncode}:\n{self.output()[-3000:]}"
            return self.get("/readyz")[0] == 200 and self.metric("syncer_last_sync_timestamp_seconds") > 0

        wait_for(ready, timeout, f"{self.name} to be ready (last /readyz: {self.get('/readyz')})", interval=0.2)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.output().splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM by PID; SIGKILL if it has not exited within ``timeout``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


@pytest.fixture
def syncers(tmp_path: Path) -> Iterator[Callable[..., SyncerRun]]:
    """Start ``syncer run`` processes; whatever is still running at the end is stopped."""
    started: list[SyncerRun] = []

    def start(name: str, args: list[str], **env: str) -> SyncerRun:
        run = SyncerRun(name, args, clean_env(**env), tmp_path / f"{name}.log")
        started.append(run)
        return run

    try:
        yield start
    finally:
        for run in started:
            run.terminate(timeout=10)


class ReadyzPoller:
    """Polls /readyz in a thread; keeps (monotonic time the GET began, status, time it answered):
    the status held at some moment between the two."""

    def __init__(self, run: SyncerRun, interval: float = 0.1) -> None:
        self.run, self.interval = run, interval
        self.seen: list[tuple[float, int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _sample(self) -> None:
        began = time.monotonic()
        status = self.run.get("/readyz")[0]
        self.seen.append((began, status, time.monotonic()))

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> "ReadyzPoller":
        # The first sample before the caller goes on: on a loaded machine the thread's first GET
        # could otherwise come after whatever the caller does next (a restart already begun).
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def run_args(origin: Path, kubeconfig: Path, *extra: str) -> list[str]:
    return ["--remote", str(origin), "--kubeconfig", str(kubeconfig), "--mode", "commit", "--debounce", "0.3",
            "--resync", "10m", "--shutdown-grace", "3s", *extra]


def get_or_none(cluster: RealCluster, path: str) -> dict[str, Any] | None:
    """GET as admin; None on 404."""
    try:
        answer: dict[str, Any] = cluster.request("GET", path)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
    return answer


def state_record(cluster: RealCluster, namespace: str, name: str) -> dict[str, Any] | None:
    """The objects recorded as agreed in the sidecar's state ConfigMap ``name`` (None while absent)."""
    cm = get_or_none(cluster, PATHS["ConfigMap"].format(ns=namespace) + "/" + name)
    raw = ((cm or {}).get("data") or {}).get("asgard.json")
    if not raw:
        return None
    return {k: v for k, v in json.loads(raw).items() if "/" in k}  # objects only, not bookkeeping keys


def can(cluster: RealCluster, token: str, namespace: str, verb: str, resource: str, name: str = "",
        group: str = "") -> bool:
    """SelfSubjectAccessReview as the token's user: may it ``verb`` ``resource``?"""
    answer = cluster.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "group": group,
                                        "resource": resource, "name": name}}}, token=token)
    return bool(answer["status"].get("allowed"))


def helm_render(namespace: str, values: dict[str, Any], tmp_path: Path) -> dict[str, dict[str, Any]]:
    """``helm template syncer charts/syncer``: the rendered documents by kind."""
    helm = require_tool("helm")
    values_file = tmp_path / "values.yaml"
    values_file.write_text(json.dumps(values))
    rendered = subprocess.run([helm, "template", "syncer", str(CHART), "-n", namespace, "-f", str(values_file)],
                              check=True, capture_output=True, text=True, timeout=60).stdout
    docs = [d for d in YAML(typ="safe").load_all(rendered) if d]
    return {d["kind"]: json.loads(json.dumps(d)) for d in docs}


# ------------------------------------------------------------------- tests --
def test_live_edit_becomes_a_commit_on_main(real_cluster: RealCluster, namespace: str, tmp_path: Path,
                                            syncers: Callable[..., SyncerRun]) -> None:
    origin = asgard_repo(tmp_path, namespace, stable_for="2s")
    kubectl_apply_all(real_cluster, origin, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    run = syncers("sidecar", run_args(origin, admin, "--state-configmap", "asgard-state"))
    run.wait_ready()

    # Everything hosts/asgard declares is watched (9 objects), and the server's defaults
    # (Deployment strategy, Service clusterIP, Endpoints protocol, ...) are no drift.
    text = run.metrics()
    assert metric(text, "syncer_drift_objects") == 0, text
    assert metric(text, "syncer_passes_total", result="ok") >= 1
    state = wait_for(lambda: state_record(real_cluster, namespace, "asgard-state"), 10, "the state record")
    assert f"v1/ConfigMap/{namespace}/{CM_NAME}" in state
    assert len(state) == 9  # every object of hosts/asgard agrees with git
    assert main_log(origin) == ["Ops|asgard"]

    # kubectl edit of one key -> one commit on main changing exactly that line.
    edited_wall, edited = time.time(), time.monotonic()
    kubectl_edit(admin, namespace, {"MAC_ADDRS": "192.168.68.75 100.115.97.90"})
    wait_for(lambda: len(main_log(origin)) == 2, 30, "the commit of the kubectl edit")
    edit_latency = time.monotonic() - edited
    assert main_log(origin)[0] == "syncer|syncer(asgard): copy 1 live value(s) back from the cluster"
    assert changed_lines(origin) == ['+  MAC_ADDRS: "192.168.68.75 100.115.97.90"',
                                     '-  MAC_ADDRS: "192.168.68.58 100.115.97.90"']
    body = git(origin, "log", "-1", "--format=%B", "main")
    assert "data.MAC_ADDRS" in body and "by kubectl-edit at " in body

    # The manager repoints mac-ollama at the (now declared) LAN address: a pick, written
    # only once it has held for stableFor (2 s; managedFields times are whole seconds).
    picked = time.monotonic()
    manager_points(admin, namespace, "mac-ollama", "192.168.68.75")
    wait_for(lambda: len(main_log(origin)) == 3, 30, "the commit of the stable pick")
    pick_latency = time.monotonic() - picked
    assert pick_latency >= 1.0
    assert changed_lines(origin) == ["+      - ip: 192.168.68.75   # Mac Studio, LAN",
                                     "-      - ip: 192.168.68.58   # Mac Studio, LAN"]
    assert "pick by ollama-endpoint-manager at " in git(origin, "log", "-1", "--format=%B", "main")

    # /metrics shows it: no drift left, a recent successful pass, no errors; still ready.
    def settled() -> str | None:
        t = run.metrics()
        return t if metric(t, "syncer_drift_objects") == 0 and \
            metric(t, "syncer_last_sync_timestamp_seconds") >= edited_wall else None

    text = wait_for(settled, 10, "the metrics after the commits")
    assert metric(text, "syncer_sync_errors_total") == 0, text
    assert metric(text, "syncer_passes_total", 0, result="error") == 0
    assert run.get("/readyz")[0] == 200 and run.get("/healthz")[0] == 200
    assert len(main_log(origin)) == 3  # the re-check after each commit changed nothing
    assert run.terminate() == 0
    assert any(e.get("msg") == "sidecar stopped" for e in run.events())
    print(f"\nkubectl edit -> commit {edit_latency:.1f}s; pick -> commit {pick_latency:.1f}s")


def test_apiserver_restart_gives_410_relist_and_no_lost_change(real_cluster: RealCluster, namespace: str,
                                                               tmp_path: Path,
                                                               syncers: Callable[..., SyncerRun]) -> None:
    origin = asgard_repo(tmp_path, namespace, ignore_outside_role=True)
    kubectl_apply_all(real_cluster, origin, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    run = syncers("sidecar", run_args(origin, admin))
    run.wait_ready()
    restarts_before = run.metric("syncer_watch_restarts_total")

    with ReadyzPoller(run) as poll:
        down_from = time.monotonic()
        # SIGTERM alone would leave kube-apiserver draining the sidecar's open watches for
        # 60 s (its shutdown timeout); after GRACE it gets SIGKILL, which cuts them.
        down = real_cluster.restart_apiserver(grace=GRACE)
        # Right after the restart, before the sidecar has necessarily re-listed: a live edit.
        kubectl_edit(admin, namespace, {"M1_ADDRS": "192.168.68.89 100.127.6.20"})
        edited = time.monotonic()
        wait_for(lambda: len(main_log(origin)) == 2, 60, "the commit of the edit made after the restart")
        arrived = time.monotonic() - edited
        run.wait_ready(timeout=60)
        back = time.monotonic()
    statuses = [s for _, s, _ in poll.seen]
    changes = [(round(t - down_from, 1), s) for i, (t, s, _) in enumerate(poll.seen)
               if i == 0 or poll.seen[i - 1][1] != s]
    assert statuses and statuses[0] == 200, statuses[:5]
    not_ready = [(began, answered) for began, s, answered in poll.seen if s == 503]
    assert not_ready, f"/readyz never went 503 during the {down:.1f}s the API server was down"
    # a 503 held at some moment between its GET's start and its answer: after the restart began,
    # before readiness was back
    assert down_from <= not_ready[0][1] and not_ready[0][0] <= down_from + down + 5
    assert not_ready[-1][0] < back
    assert poll.seen[-1][1] == 200 or run.get("/readyz")[0] == 200

    assert changed_lines(origin) == ['+  M1_ADDRS: "192.168.68.89 100.127.6.20"', '-  M1_ADDRS: "100.127.6.20"']
    assert run.metric("syncer_watch_restarts_total") > restarts_before
    # The watches resumed at their old resourceVersion, got 410 and listed again.
    relists = [e for e in run.events() if e.get("msg") == "watch history expired; re-listing"]
    assert relists, run.output()[-3000:]
    assert all("410" in e.get("error", "") and "too old resource version" in e.get("error", "") for e in relists)
    assert len(relists) <= 3 * 3, relists  # at most a few per watched object, never a 410 loop
    assert run.terminate() == 0
    print(f"\nAPI down {down:.1f}s; /readyz (s after SIGTERM, status): {changes}; "
          f"edit -> commit {arrived:.1f}s; ready again {back - down_from:.1f}s after the restart began")


def test_least_privilege_with_the_chart_role(real_cluster: RealCluster, namespace: str, tmp_path: Path,
                                             syncers: Callable[..., SyncerRun]) -> None:
    require_tool("helm")  # before anything else: without helm this test is skipped, with the reason
    origin = asgard_repo(tmp_path, namespace, ignore_outside_role=True)
    kubectl_apply_all(real_cluster, origin, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)

    # The chart, rendered with values naming exactly the tracked objects, state and lease.
    rendered = helm_render(namespace, {
        "mode": "standalone", "installation": "asgard",
        "image": {"repository": "registry.example.com/syncer"},
        "sync": {"mode": "commit", "forge": "none", "remote": "https://git.example.com/ops/homelab.git"},
        "tracked": {"configMaps": [CM_NAME], "endpoints": ["mac-ollama", "m1-ollama"]},
        "state": {"configMapName": "asgard-syncer-state"},
        "leaderElection": {"enabled": True, "leaseName": "asgard-syncer", "leaseDuration": "6s"},
        "credentials": {"existingSecret": "syncer-credentials", "gitAuth": "https"},
    }, tmp_path)
    role, binding, account = rendered["Role"], rendered["RoleBinding"], rendered["ServiceAccount"]
    assert not any("resourceNames" not in r and r["verbs"] != ["create"] for r in role["rules"]), role["rules"]
    container = rendered["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    # The flags the chart sets for the state ConfigMap and the Lease, as its env twins.
    chart_env = {e["name"]: e["value"] for e in container["env"]
                 if e["name"] in ("SYNCER_STATE_CONFIGMAP", "SYNCER_LEADER_ELECT", "SYNCER_LEASE_NAME",
                                  "SYNCER_LEASE_DURATION")}
    assert chart_env == {"SYNCER_STATE_CONFIGMAP": "asgard-syncer-state", "SYNCER_LEADER_ELECT": "true",
                         "SYNCER_LEASE_NAME": "asgard-syncer", "SYNCER_LEASE_DURATION": "6s"}
    for kind, obj in (("ServiceAccount", account), ("Role", role), ("RoleBinding", binding)):
        real_cluster.request("POST", PATHS[kind].format(ns=namespace), obj)
    sa = account["metadata"]["name"]
    token = real_cluster.service_account_token(namespace, sa, create=False)
    sa_config = real_cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=namespace)
    wait_for(lambda: can(real_cluster, token, namespace, "watch", "endpoints", "mac-ollama"), 10,
             "the RoleBinding to take effect")
    assert not can(real_cluster, token, namespace, "list", "configmaps")  # nothing beyond the names

    run = syncers("sidecar", run_args(origin, sa_config), POD_NAME="syncer-0", **chart_env)
    run.wait_ready()
    wait_for(lambda: run.metric("syncer_leader") == 1, 15, "leadership")
    lease = real_cluster.request("GET", PATHS["Lease"].format(ns=namespace) + "/asgard-syncer")
    assert lease["spec"]["holderIdentity"] == "syncer-0" and lease["spec"]["leaseDurationSeconds"] == 6
    kubectl_edit(admin, namespace, {"INTERVAL_SECONDS": "30"})
    wait_for(lambda: len(main_log(origin)) == 2, 30, "the commit made with the least-privilege token")
    assert changed_lines(origin) == ['+  INTERVAL_SECONDS: "30"', '-  INTERVAL_SECONDS: "15"']
    # The state record was created and updated through the chart's state rules.
    state = wait_for(lambda: state_record(real_cluster, namespace, "asgard-syncer-state"), 10, "the state record")
    assert set(state) == {f"v1/ConfigMap/{namespace}/{CM_NAME}", f"v1/Endpoints/{namespace}/mac-ollama",
                          f"v1/Endpoints/{namespace}/m1-ollama"}
    assert run.metric("syncer_sync_errors_total") == 0, run.metrics()
    assert run.terminate() == 0
    assert token not in run.output()
    released = real_cluster.request("GET", PATHS["Lease"].format(ns=namespace) + "/asgard-syncer")
    assert released["spec"].get("holderIdentity", "") == ""

    def refused_start(name: str, rules: list[dict[str, Any]], *, denied: tuple[str, str, str, str]) -> str:
        """Replace the Role's rules, start ``syncer run``: exit 2 and one error line, returned."""
        path = PATHS["Role"].format(ns=namespace) + "/" + role["metadata"]["name"]
        current = real_cluster.request("GET", path)
        real_cluster.request("PUT", path, {**current, "rules": rules})
        verb, resource, obj, group = denied
        wait_for(lambda: not can(real_cluster, token, namespace, verb, resource, obj, group), 10,
                 "the narrower Role to take effect")
        refused = syncers(name, run_args(origin, sa_config), POD_NAME=name, **chart_env)
        try:
            code = refused.proc.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"syncer run did not stop on the missing permission:\n{refused.output()[-3000:]}")
        errors = [ln for ln in refused.output().splitlines() if ln.startswith("syncer: error:")]
        assert code == 2 and len(errors) == 1, refused.output()[-3000:]
        assert errors[0].startswith("syncer: error: missing permission (fix the Role): ")
        assert token not in refused.output()
        return errors[0]

    def without(resource: str, verb: str) -> list[dict[str, Any]]:
        rules = json.loads(json.dumps(role["rules"]))
        for rule in rules:
            if rule["resources"] == [resource] and verb in rule["verbs"] and \
                    (verb != "create" or "resourceNames" not in rule):
                rule["verbs"].remove(verb)
        return [r for r in rules if r["verbs"]]

    # The chart's Role without `watch` on endpoints: a tracked object the account cannot read
    # is no reason to exit (a restart would not grant it). The sidecar starts, is ready, counts
    # the gap per kind and logs it once per object with the verb, the resource and the grant.
    path = PATHS["Role"].format(ns=namespace) + "/" + role["metadata"]["name"]
    real_cluster.request("PUT", path, {**real_cluster.request("GET", path), "rules": without("endpoints", "watch")})
    wait_for(lambda: not can(real_cluster, token, namespace, "watch", "endpoints", "mac-ollama", ""), 10,
             "the narrower Role to take effect")
    degraded = syncers("no-watch", run_args(origin, sa_config), POD_NAME="no-watch", **chart_env)
    degraded.wait_ready()
    wait_for(lambda: degraded.metric("syncer_unreadable_objects", 0, kind="Endpoints") == 2, 20,
             "the unreadable Endpoints counted")
    assert degraded.terminate() == 0
    said = [str(json.loads(ln).get("error")) for ln in degraded.output().splitlines()
            if ln.startswith("{") and "may not read" in ln]
    assert len(said) == 2, degraded.output()[-3000:]  # mac-ollama and m1-ollama, once each
    assert all('cannot watch resource "endpoints" in API group ""' in ln and "tracked.kinds.Endpoints" in ln
               for ln in said), said
    assert token not in degraded.output()
    real_cluster.request("PUT", path, {**real_cluster.request("GET", path), "rules": role["rules"]})

    # Without `create` on leases, and no Lease yet (the first run released it; delete it): the
    # line names create and not update. The server also refuses the dry-run PUT of the absent
    # Lease, as a create, with an empty reason; that must not read as a missing `update`.
    real_cluster.request("DELETE", PATHS["Lease"].format(ns=namespace) + "/asgard-syncer")
    line = refused_start("no-lease-create", without("leases", "create"),
                         denied=("create", "leases", "", "coordination.k8s.io"))
    assert f"cannot create Lease {namespace}/asgard-syncer" in line, line
    assert 'cannot create resource "leases" in API group "coordination.k8s.io"' in line
    assert "cannot update" not in line, line


def test_two_replicas_share_a_real_lease(real_cluster: RealCluster, namespace: str, tmp_path: Path,
                                         syncers: Callable[..., SyncerRun]) -> None:
    origin = asgard_repo(tmp_path, namespace, ignore_outside_role=True)
    kubectl_apply_all(real_cluster, origin, namespace)
    admin = real_cluster.kubeconfig(tmp_path / "admin.kubeconfig", namespace=namespace)
    duration, renew = 4.0, 4.0 / 3
    args = run_args(origin, admin, "--leader-elect", "--lease-duration", "4s")
    runs = {pod: syncers(pod, args, POD_NAME=pod) for pod in ("pod-a", "pod-b")}
    for run in runs.values():
        run.wait_ready()

    def holder() -> str:
        return str(real_cluster.request("GET", PATHS["Lease"].format(ns=namespace) + "/syncer-asgard")
                   ["spec"].get("holderIdentity") or "")

    def leaders() -> list[str]:
        return [pod for pod, run in runs.items() if run.alive() and run.metric("syncer_leader") == 1]

    [first] = wait_for(lambda: leaders() if len(leaders()) == 1 else None, 15, "exactly one leader")
    assert holder() == first
    [second] = [pod for pod in runs if pod != first]
    leader, follower = runs[first], runs[second]

    # One change, seen by both: exactly one commit.
    follower_passes = follower.metric("syncer_passes_total", 0, result="follower")
    kubectl_edit(admin, namespace, {"INTERVAL_SECONDS": "30"})
    wait_for(lambda: len(main_log(origin)) == 2, 30, "the leader's commit")
    wait_for(lambda: follower.metric("syncer_passes_total", 0, result="follower") > follower_passes, 15,
             "the follower's pass over the same change")
    time.sleep(1.5)  # give a wrong second writer the time to show up
    assert len(main_log(origin)) == 2, main_log(origin)
    assert leaders() == [first]

    # SIGTERM to the leader: it releases the Lease; the follower takes over and writes the next change.
    killed = time.monotonic()
    assert leader.terminate() == 0
    wait_for(lambda: follower.metric("syncer_leader") == 1, duration + renew + 3, "the follower to take over")
    takeover = time.monotonic() - killed
    assert holder() == second
    assert any(e.get("msg") == "released the lease" for e in leader.events())
    kubectl_edit(admin, namespace, {"INTERVAL_SECONDS": "45"})
    wait_for(lambda: len(main_log(origin)) == 3, 30, "the new leader's commit")
    assert changed_lines(origin) == ['+  INTERVAL_SECONDS: "45"', '-  INTERVAL_SECONDS: "30"']

    # A third replica joins as follower; the leader is SIGKILLed (no release): the Lease has
    # to expire first, judged on the follower's own clock (record unchanged for `duration`,
    # noticed at its next look, `renew` later at most).
    third = syncers("pod-c", args, POD_NAME="pod-c")
    runs["pod-c"] = third
    third.wait_ready()
    assert third.metric("syncer_leader") == 0 and holder() == second
    crashed = time.monotonic()
    follower.proc.kill()
    follower.proc.wait(10)
    wait_for(lambda: third.metric("syncer_leader") == 1, duration + 2 * renew + 3, "pod-c to take over")
    expiry_takeover = time.monotonic() - crashed
    assert holder() == "pod-c"
    kubectl_edit(admin, namespace, {"INTERVAL_SECONDS": "60"})
    wait_for(lambda: len(main_log(origin)) == 4, 30, "pod-c's commit")
    time.sleep(1.0)

    assert [line.split("|")[0] for line in main_log(origin)] == ["syncer", "syncer", "syncer", "Ops"]
    assert changed_lines(origin) == ['+  INTERVAL_SECONDS: "60"', '-  INTERVAL_SECONDS: "45"']
    pushes = {pod: sum(1 for e in run.events() if str(e.get("msg", "")).startswith("pushed "))
              for pod, run in runs.items()}
    assert pushes == {first: 1, second: 1, "pod-c": 1}, pushes  # one writer per change, never two
    lease = real_cluster.request("GET", PATHS["Lease"].format(ns=namespace) + "/syncer-asgard")
    assert lease["spec"]["leaseTransitions"] >= 2 and lease["spec"]["leaseDurationSeconds"] == 4
    assert third.metric("syncer_sync_errors_total") == 0, third.metrics()
    assert third.terminate() == 0
    print(f"\ntakeover after SIGTERM (released) {takeover:.1f}s, after SIGKILL (expired) {expiry_takeover:.1f}s; "
          f"lease {duration:.0f}s, renew {renew:.1f}s")
