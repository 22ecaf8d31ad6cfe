"""``syncer run`` end to end: the fake API server over loopback, real git on a bare origin.

The helpers at the top are shared by test_server.py, test_state_lease.py and
test_filewatch.py. Time-dependent behaviour (debounce, stableFor, outages) runs on an
injected clock and ``loop.step()``; only the tests about threads and processes (event ->
commit, leader election, SIGTERM) use real time, with short settings.
"""

from __future__ import annotations

import io
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import ROOT, git
from tests.helpers import _loopback_only, fake  # noqa: F401 - fixtures, imported from here by other test modules

from tests.fakes.kube_api import FakeKubeAPI
from syncer.cli import main
from syncer.forges.base import PullRequest
from syncer.gitrepo import Workspace
from syncer.kube import kube_client
from syncer.sources.manifests import parse_documents
from syncer.writeback.notify import Notifier
from syncer.sidecar.app import Sidecar, SidecarSettings, StartupError
from syncer.sidecar.loop import LoopSettings
from syncer.sidecar.schedule import Timing
from syncer.sidecar.watch import WatchSettings
from syncer.writeback.deliver import Mode, load_installation

NS = "ai"
MAC = ("v1", "Endpoints", NS, "mac-ollama")
CM = ("v1", "ConfigMap", NS, "ollama-endpoint-manager")
UTC = timezone.utc


# -- shared helpers --------------------------------------------------------------------


def kubeconfig(fake: FakeKubeAPI, tmp_path: Path, url: str | None = None) -> Path:
    path = fake.kubeconfig(tmp_path / "kubeconfig", namespace=NS)
    if url is not None:
        path.write_text(path.read_text().replace(fake.url, url))
    return path


def api_client(fake: FakeKubeAPI, tmp_path: Path, url: str | None = None) -> Any:
    return kube_client(str(kubeconfig(fake, tmp_path, url)), None, read_yaml=parse_documents, pool_size=64)  # as `syncer run`: one per watch


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def agree_with_live(work: Path) -> None:
    """Git catches up with the live values of the example (the copy-back done by hand)."""
    cm = work / "hosts" / "asgard" / "ollama-endpoint-manager.yaml"
    cm.write_text(cm.read_text().replace("192.168.68.58 100.115.97.90", "192.168.68.75 100.115.97.90")
                  .replace('"100.127.6.20"', '"192.168.68.89 100.127.6.20"'))
    eps = work / "hosts" / "asgard" / "ollama-backends.yaml"
    eps.write_text(eps.read_text().replace("192.168.68.58", "192.168.68.75").replace("100.127.6.20 ", "192.168.68.89"))
    git(work, "commit", "-qam", "copy live values back by hand")
    git(work, "push", "-q", "origin", "main")


def seed(fake: FakeKubeAPI, work: Path, *, applied: bool = True, at: str = "2026-06-02T18:40:11Z") -> None:
    """Every object git declares, created live as ``kubectl apply`` would (or create)."""
    for obj in load_installation(work, "asgard").manifests.objects.values():
        fake.put(obj.data, applied=applied, time=at)


def live_like_example(fake: FakeKubeAPI) -> None:
    """The live values of examples/asgard-live.yaml: a kubectl edit, and the manager's picks."""
    fake.patch(*CM, {"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90", "M1_ADDRS": "192.168.68.89 100.127.6.20"}},
               manager="kubectl-edit", time="2026-08-20T09:14:00Z")
    set_endpoints(fake, "mac-ollama", "192.168.68.75", "2026-08-21T08:03:24Z")
    set_endpoints(fake, "m1-ollama", "192.168.68.89", "2026-08-21T06:52:40Z")


def set_endpoints(fake: FakeKubeAPI, name: str, ip: str | None, at: str) -> None:
    subsets = [] if ip is None else [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": 11434}]}]
    fake.patch("v1", "Endpoints", NS, name, {"subsets": subsets}, manager="ollama-endpoint-manager", time=at)


def origin(work: Path) -> Path:
    return work.parent / "origin.git"


def origin_commits(work: Path, ref: str = "main") -> list[str]:
    return git(origin(work), "log", "--format=%an %s", ref).splitlines()


def origin_branches(work: Path) -> list[str]:
    return sorted(git(origin(work), "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


class FakeClock:
    def __init__(self, start: datetime) -> None:
        self.now = start.timestamp()

    def __call__(self) -> float:
        return self.now

    def set(self, when: datetime) -> datetime:
        self.now = when.timestamp()
        return when

    def advance(self, seconds: float) -> None:
        self.now += seconds


def run_until(sc: Sidecar, clock: FakeClock, when: datetime) -> list[Any]:
    """What the loop thread would do until ``when``: wake at each due time and step."""
    reports = []
    for _ in range(1000):
        wake = sc.loop.next_wakeup(clock())
        if wake > when.timestamp():
            break
        clock.now = max(clock.now, wake)
        report = sc.loop.step()
        if report is None:
            break
        reports.append(report)
    clock.set(when)
    return reports


class RecordingForge:
    """A ``Forge`` in memory that records every write call. Given the ``remote`` (bare
    repository), its open PR's head is the branch's commit there, as a forge reports it."""

    kind = "fake"
    max_body = 65536

    def __init__(self, remote: Path | None = None) -> None:
        self.open: PullRequest | None = None
        self.writes: list[str] = []
        self.remote = remote

    def find_open(self, head: str, base: str) -> PullRequest | None:
        if self.open is not None and self.remote is not None:
            import dataclasses

            sha = git(self.remote, "rev-parse", f"refs/heads/{head}")
            self.open = dataclasses.replace(self.open, head_sha=sha, same_repo=True)
        return self.open

    def find_latest_closed(self, head: str, base: str) -> PullRequest | None:
        return None

    def create(self, head: str, base: str, title: str, body: str, labels: Any) -> PullRequest:
        self.writes.append("create")
        self.open = PullRequest(1, "http://127.0.0.1/pr/1", "open", title, body, tuple(labels), head, base)
        return self.open

    def update(self, pr: PullRequest, *, title: str | None = None, body: str | None = None,
               labels: Any = None) -> PullRequest:
        self.writes.append("update")
        assert self.open is not None
        self.open = PullRequest(pr.number, pr.url, "open", title or pr.title, body or pr.body,
                                tuple(labels) if labels is not None else pr.labels, pr.head, pr.base)
        return self.open

    def comment(self, pr: PullRequest, text: str) -> None:
        self.writes.append("comment")

    def list_comments(self, pr: PullRequest) -> list[str]:
        return []

    def close(self, pr: PullRequest) -> PullRequest:
        self.writes.append("close")
        self.open = None
        return pr


def recording_notifier() -> tuple[Notifier, list[dict[str, Any]]]:
    """A ``Notifier`` whose posts land in a list (httpx's mock transport: no network)."""
    posted: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        posted.append(json.loads(request.content))
        return httpx.Response(204)

    return Notifier(["http://127.0.0.1:9/hook"], httpx.Client(transport=httpx.MockTransport(handler))), posted


def settings(mode: Mode = Mode.COMMIT, **kw: Any) -> SidecarSettings:
    loop = LoopSettings("asgard", mode, "syncer diff asgard",
                        timing=Timing(debounce=kw.pop("debounce", 5.0), debounce_max=kw.pop("debounce_max", 30.0),
                                      resync=kw.pop("resync", 600.0), tick=kw.pop("tick", 0.2),
                                      retry_base=kw.pop("retry_base", 5.0)))
    kw.setdefault("listen", None)
    kw.setdefault("watch", WatchSettings(backoff_base=0.05, backoff_cap=0.2))
    kw.setdefault("startup_timeout", 5.0)
    return SidecarSettings(loop=loop, **kw)


def sidecar(fake: FakeKubeAPI, work: Path, tmp_path: Path, name: str = "clone", *, api: Any = None,
            **kw: Any) -> Sidecar:
    ws = Workspace.open_or_clone(str(origin(work)), "main", tmp_path / name)
    forge, notifier, clock = kw.pop("forge", None), kw.pop("notifier", None), kw.pop("clock", time.time)
    return Sidecar(api or api_client(fake, tmp_path), ws, settings(**kw), forge=forge, notifier=notifier,
                   clock=clock)


class TcpProxy:
    """A loopback TCP forwarder that can be cut and restored on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.port = 0
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "TcpProxy":
        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", self.port))
        lst.listen(16)
        self.port = lst.getsockname()[1]
        self._listener = lst
        threading.Thread(target=self._accept, args=(lst,), daemon=True).start()
        return self

    def _accept(self, lst: socket.socket) -> None:
        while True:
            try:
                client, _ = lst.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                self._conns += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 0.5)
                for src in ready:
                    data = src.recv(65536)
                    if not data:
                        return
                    (b if src is a else a).sendall(data)
        except OSError:
            return
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        """Refuse new connections and kill the open ones (the API server is gone)."""
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() so the port really closes
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
                c.close()
            except OSError:
                pass


@pytest.fixture
def agreed(asgard_repo: Path) -> Path:
    agree_with_live(asgard_repo)
    return asgard_repo


# -- the tests -------------------------------------------------------------------------


def test_asgard_morning_flapping_gives_no_commit_no_pr_update_and_two_outage_reports(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)  # git and the cluster agree: mac-ollama -> 192.168.68.75
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    forge = RecordingForge()
    notifier, posted = recording_notifier()
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.PR, forge=forge, notifier=notifier, clock=clock)
    sc.start(run_loop=False)
    try:
        first = sc.loop.step()
        assert first is not None and first.reason == "start" and first.outcome is not None
        assert first.outcome.result.in_sync, first.outcome.result.drifts
        timeline = [("07:11:09", None), ("07:14:21", "192.168.68.75"), ("07:19:29", None),
                    ("08:03:24", "192.168.68.75")]
        reasons = []
        for hhmmss, ip in timeline:
            when = datetime.fromisoformat(f"2026-08-21T{hhmmss}+00:00")
            reasons += [r.reason for r in run_until(sc, clock, when)]  # resyncs in between
            seen = sc.cache.version
            set_endpoints(fake, "mac-ollama", ip, when.strftime("%Y-%m-%dT%H:%M:%SZ"))
            wait_for(lambda: sc.cache.version > seen, what="the watch event")
            assert sc.loop.step() is None  # still within the debounce window
            [report] = run_until(sc, clock, when + timedelta(seconds=5))
            assert report.reason == "change" and report.error is None
        reports = run_until(sc, clock, datetime(2026, 8, 21, 9, 0, tzinfo=UTC))  # the rest of the morning
        assert reasons == ["resync"] * 5 and [r.reason for r in reports] == ["resync"] * 5
        assert all(r.error is None for r in reports) and reports[-1].outcome.result.in_sync
    finally:
        sc.stop()
    assert origin_branches(agreed) == ["main"]
    assert len(origin_commits(agreed)) == 2  # the initial commit and the hand copy-back only
    assert forge.writes == []
    outages = [p["outage"] for p in posted if p["event"] == "drift.cleared"]
    assert [(o["name"], o["started_at"], o["ended_at"]) for o in outages] == [
        ("mac-ollama", "2026-08-21T07:11:09Z", "2026-08-21T07:14:21Z"),
        ("mac-ollama", "2026-08-21T07:19:29Z", "2026-08-21T08:03:24Z")]
    assert [o["duration_seconds"] for o in outages] == [192.0, 2635.0]
    assert len(sc.loop.outages) == 2 and len(posted) == 2


def test_a_pick_is_written_only_after_holding_stable_for(agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.COMMIT, clock=clock)
    sc.start(run_loop=False)
    try:
        assert sc.loop.step() is not None
        # The manager falls back to the tailnet candidate (declared in MAC_ADDRS): a pick.
        seen = sc.cache.version
        set_endpoints(fake, "mac-ollama", "100.115.97.90", "2026-08-21T07:00:00Z")
        wait_for(lambda: sc.cache.version > seen)
        clock.advance(5)
        report = sc.loop.step()
        assert report is not None and report.outcome is not None
        [drift] = report.outcome.result.drifts
        assert (drift.cls.value, drift.action.value, drift.reason) == ("pick", "wait", "held 5s of 10m00s")
        assert sc.loop.next_wakeup(clock()) == datetime(2026, 8, 21, 7, 10, tzinfo=UTC).timestamp()
        clock.advance(60)
        assert sc.loop.step() is None  # nothing to do until the pick has held for stableFor
        assert len(origin_commits(agreed)) == 2
        clock.set(datetime(2026, 8, 21, 7, 10, tzinfo=UTC))
        report = sc.loop.step()
        assert report is not None and report.reason == "stable" and report.outcome is not None
        assert report.outcome.commit is not None
    finally:
        sc.stop()
    log = origin_commits(agreed)
    assert len(log) == 3 and log[0].startswith("syncer syncer(asgard): copy 1 live value")
    assert "100.115.97.90" in git(origin(agreed), "show", "main:hosts/asgard/ollama-backends.yaml")


def test_an_event_becomes_a_commit_within_the_debounce_window(agreed: Path, fake: FakeKubeAPI,
                                                              tmp_path: Path) -> None:
    seed(fake, agreed)
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.COMMIT, debounce=0.3).start()
    try:
        wait_for(lambda: sc.loop.passes >= 1 and sc.loop.last is not None, what="the first pass")
        assert len(origin_commits(agreed)) == 2
        edited = time.monotonic()
        fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "30"}}, manager="kubectl-edit")
        wait_for(lambda: len(origin_commits(agreed)) == 3, what="the commit")
        elapsed = time.monotonic() - edited
    finally:
        sc.stop()
    assert 0.3 <= elapsed < 5.0
    assert origin_commits(agreed)[0].startswith("syncer syncer(asgard): copy 1 live value")
    assert 'INTERVAL_SECONDS: "30"' in git(origin(agreed), "show", "main:hosts/asgard/ollama-endpoint-manager.yaml")


def test_a_burst_of_events_is_one_pass(agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.DRY_RUN, clock=clock)
    sc.start(run_loop=False)
    try:
        sc.loop.step()
        for i in range(5):  # one event per second: never quiet for the 5 s debounce
            seen = sc.cache.version
            fake.patch(*CM, {"data": {"INTERVAL_SECONDS": str(20 + i)}}, manager="kubectl-edit")
            wait_for(lambda: sc.cache.version > seen)
            assert sc.loop.step() is None
            clock.advance(1)
        clock.advance(4)
        report = sc.loop.step()
        assert report is not None and report.reason == "change"
        assert sc.loop.step() is None and sc.loop.passes == 2
        # One Caches for the installation, kept across the passes (syncer/cache.py).
        assert sc.loop.caches is sc.caches and sc.loop.runner.caches is sc.caches
        assert sc.caches.counters()["files"][1] > 0  # the passes loaded the manifests through it
    finally:
        sc.stop()


def test_a_bug_in_a_pass_is_logged_with_its_traceback_counted_and_retried_after_the_longest_backoff(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception outside syncer's error tree is a bug, not a transient failure: it raises out
    of the pass (``PassRunner.run``), and the loop logs it with its traceback, counts it
    (``syncer_internal_errors_total``), drops what the installation remembers, and waits the
    longest retry; readiness is left to the upstreams, and the next pass runs as ever."""
    seed(fake, agreed)
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.DRY_RUN, clock=clock, retry_base=5.0)
    sc.start(run_loop=False)
    try:
        def remembered() -> int:
            return sum(entries for _, _, entries in sc.caches.counters().values())

        assert sc.loop.step() is not None and remembered() > 0
        ready = sc.health.readyz()
        import syncer.sidecar.passes as passes

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise KeyError("a bug")

        monkeypatch.setattr(passes, "deliver", broken)
        sc.loop.poke()
        with pytest.raises(KeyError) as raised:
            sc.loop.step()  # out of the pass, not turned into a transient SyncerError
        caplog.set_level(logging.ERROR, "syncer.loop")
        sc.loop.crashed(raised.value)  # what Loop.run does with it
        [line] = [r for r in caplog.records if r.getMessage().startswith("pass failed: a bug in syncer")]
        fields = getattr(line, "syncer_fields", {})
        assert fields["error"] == "KeyError: 'a bug'" and "Traceback" in fields["traceback"]
        metrics = sc.metrics.registry.get_sample_value
        assert metrics("syncer_internal_errors_total", {"installation": "asgard"}) == 1.0
        assert remembered() == 0  # dropped: the next pass derives it afresh
        assert sc.health.readyz() == ready
        monkeypatch.undo()
        seen = sc.cache.version
        fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "30"}}, manager="kubectl-edit")
        wait_for(lambda: sc.cache.version > seen)
        clock.advance(10)  # past the debounce
        assert sc.loop.step() is None  # a change waits out the longest retry: no tight loop
        clock.advance(sc.settings.loop.timing.retry_cap)
        report = sc.loop.step()
        assert report is not None and report.reason == "change" and report.error is None
    finally:
        sc.stop()


def test_undeclared_address_is_reported_once(agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    notifier, posted = recording_notifier()
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.COMMIT, clock=clock, notifier=notifier)
    sc.start(run_loop=False)
    try:
        sc.loop.step()
        seen = sc.cache.version
        set_endpoints(fake, "mac-ollama", "10.9.8.7", "2026-08-21T07:00:00Z")  # hand-patched
        wait_for(lambda: sc.cache.version > seen)
        for _ in range(3):
            clock.advance(700)
            sc.loop.step()
    finally:
        sc.stop()
    assert [p["event"] for p in posted] == ["drift.undeclared"]
    assert posted[0]["drifts"][0]["live"] == "10.9.8.7"
    assert len(origin_commits(agreed)) == 2  # never written


def test_two_replicas_with_leader_election_make_one_commit(agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    kw: dict[str, Any] = dict(mode=Mode.COMMIT, debounce=0.2, leader_elect=True, lease_duration=1.5,
                              lease_renew=0.3)
    a = sidecar(fake, agreed, tmp_path, "a", holder="pod-a", **kw).start()
    b = sidecar(fake, agreed, tmp_path, "b", holder="pod-b", **kw).start()
    try:
        assert [a.is_leader(), b.is_leader()].count(True) == 1
        leader, follower = (a, b) if a.is_leader() else (b, a)
        fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "30"}}, manager="kubectl-edit")
        wait_for(lambda: len(origin_commits(agreed)) == 3, what="one commit")
        wait_for(lambda: follower.loop.passes >= 2, what="the follower's pass")
        time.sleep(0.5)
        assert len(origin_commits(agreed)) == 3
        # The leader goes away (SIGTERM): it releases the Lease, the follower takes over at once.
        leader.stop()
        wait_for(follower.is_leader, timeout=5, what="the follower to take over")
        fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "45"}}, manager="kubectl-edit")
        wait_for(lambda: len(origin_commits(agreed)) == 4, what="the new leader's commit")
        time.sleep(0.5)
    finally:
        a.stop()
        b.stop()
    log = origin_commits(agreed)
    assert len(log) == 4 and all(line.startswith("syncer ") for line in log[:2])
    lease = fake.get("coordination.k8s.io/v1", "Lease", NS, "syncer-asgard")
    assert lease is not None and lease["spec"]["leaseTransitions"] >= 1


def mark_optional(work: Path, *kinds: str) -> None:
    """``optional: [...]`` in asgard's config: a 403 of those report kinds is only a warning."""
    conf = work / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text() + f"optional: [{', '.join(kinds)}]\n")
    git(work, "commit", "-qam", "optional kinds")
    git(work, "push", "-q", "origin", "main")


@pytest.mark.parametrize("optional", [True, False], ids=["optional", "not-optional"])
def test_objects_the_role_does_not_grant_are_one_line_each_and_the_rest_syncs(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture, optional: bool) -> None:
    """The chart's Role without the report kinds (Service, Deployment, ...): the sidecar starts,
    is ready (the API server answered), says once per object which grant is missing, counts the
    gap per kind, and still copies a ConfigMap edit back. Kinds marked ``optional`` are warnings;
    others are errors (the installation is not known to be in sync)."""
    if optional:
        mark_optional(agreed, "Service", "Deployment")
    commits = len(origin_commits(agreed))
    seed(fake, agreed)
    fake.forbid("watch", "services")
    fake.forbid("list", "deployments.apps")
    sc = sidecar(fake, agreed, tmp_path, debounce=0.1, listen=("127.0.0.1", 0))
    with caplog.at_level("DEBUG", logger="syncer"):
        sc.start()
        try:
            base = f"http://127.0.0.1:{sc.server.port if sc.server else 0}"
            wait_for(lambda: sc.loop.passes >= 1, what="the first pass")
            fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "45"}}, manager="kubectl-edit")
            wait_for(lambda: len(origin_commits(agreed)) == commits + 1, what="the ConfigMap edit committed")
            ready = httpx.get(base + "/readyz")
            metrics = httpx.get(base + "/metrics").text
            time.sleep(0.5)  # refused watches keep retrying (backoff 0.05-0.2 s): no more warnings
        finally:
            sc.stop()
    assert ready.status_code == 200, ready.text
    assert 'syncer_unreadable_objects{installation="asgard",kind="Service"} 2.0' in metrics
    assert 'syncer_unreadable_objects{installation="asgard",kind="Deployment"} 1.0' in metrics
    said = [(r.levelname, str(getattr(r, "syncer_fields", {}).get("error", ""))) for r in caplog.records]
    level = "WARNING" if optional else "ERROR"
    warned = [text for lvl, text in said if lvl == level and "may not read" in text]
    assert len(warned) == 3, warned  # two Services, one Deployment: once each, not per retry
    assert any("Service/ai/mac-ollama" in w and "tracked.kinds.Service" in w for w in warned)
    assert any("Deployment/ai/ollama-endpoint-manager" in w and "tracked.kinds.Deployment" in w for w in warned)
    assert not [text for lvl, text in said if lvl == "ERROR" and "may not read" not in text]
    assert f'syncer_failing_objects{{installation="asgard"}} {0.0 if optional else 3.0}' in metrics


def test_an_event_and_what_the_pass_decided_for_it_are_a_few_log_lines(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    seed(fake, agreed)
    sc = sidecar(fake, agreed, tmp_path, debounce=0.1)
    with caplog.at_level("INFO", logger="syncer"):
        sc.start()
        try:
            wait_for(lambda: sc.loop.last is not None and sc.loop._since is not None, what="the first pass")
            first = len(caplog.records)
            fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "45"}}, manager="kubectl-edit")
            wait_for(lambda: len(origin_commits(agreed)) == 3, what="the ConfigMap edit committed")
            wait_for(lambda: any(r.getMessage() == "decided" for r in caplog.records[first:]), what="the decision")
            set_endpoints(fake, "mac-ollama", "100.115.97.90", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            wait_for(lambda: sum(r.getMessage() == "decided" for r in caplog.records[first:]) >= 2,
                     what="the Endpoints decision")
        finally:
            sc.stop()
    lines = [(r.getMessage(), str(getattr(r, "syncer_object", "")), getattr(r, "syncer_fields", {}))
             for r in caplog.records[first:]]
    events = [(obj, f.get("type"), f.get("manager")) for msg, obj, f in lines if msg == "event"]
    assert ("ConfigMap/ai/ollama-endpoint-manager", "MODIFIED", "kubectl-edit") in events
    decided = [(obj, f["decision"]) for msg, obj, f in lines if msg == "decided"]
    assert decided[0] == ("ConfigMap/ai/ollama-endpoint-manager", "written to git")
    assert decided[1][0] == "Endpoints/ai/mac-ollama" and decided[1][1].startswith("held until 20"), decided
    assert len(decided) == 2  # the objects nobody touched get no line


def test_missing_state_permission_is_probed_with_a_dry_run(agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    fake.forbid("create", "configmaps")
    with pytest.raises(StartupError) as err:
        sidecar(fake, agreed, tmp_path).start()
    assert "cannot create ConfigMap ai/syncer-state" in err.value.message
    assert 'cannot create resource "configmaps"' in err.value.message
    assert fake.get("v1", "ConfigMap", NS, "syncer-state") is None  # dry run: nothing created
    writes = [(r.method, r.query.get("dryRun")) for r in fake.requests if r.method in ("POST", "PUT")]
    assert writes == [("POST", "All"), ("PUT", "All")]  # create refused; update allowed (answered 404)
    assert "update" not in err.value.message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_sigterm_mid_sync_exits_quickly_and_leaves_the_remote_consistent(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    # A forge that accepts connections and never answers: the pass hangs right after the push.
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(8)
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(hang.accept()[0]), daemon=True).start()
    token = tmp_path / "token"
    token.write_text("s3cr3t-token-value\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    cmd = [sys.executable, "-m", "syncer.cli", "run", "asgard", "--remote", str(origin(agreed)),
           "--kubeconfig", str(kubeconfig(fake, tmp_path)), "--listen", f"127.0.0.1:{_free_port()}",
           "--clone-dir", str(tmp_path / "run-clone"), "--mode", "pr", "--forge", "gitea",
           "--forge-url", f"http://127.0.0.1:{hang.getsockname()[1]}", "--forge-repo", "ops/asgard",
           "--token-file", str(token), "--debounce", "0.2", "--log-format", "json", "--shutdown-grace", "2s"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: accepted or proc.poll() is not None, timeout=20, what="the pass to reach the forge")
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
        elapsed = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
        hang.close()
    assert proc.returncode == 0, stderr
    assert elapsed < 10.0
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert lines and all("object" in line for line in lines)
    assert "s3cr3t-token-value" not in stderr
    assert any(line["msg"].startswith("sidecar stopped") for line in lines)
    # The remote: main untouched, the branch complete (one syncer commit on top of main) or absent.
    git(origin(agreed), "fsck", "--strict")
    assert len(origin_commits(agreed)) == 2
    branches = origin_branches(agreed)
    assert branches in (["main"], ["main", "syncer/asgard"])
    if "syncer/asgard" in branches:
        ahead = git(origin(agreed), "log", "--format=%an", "main..syncer/asgard").splitlines()
        assert ahead == ["syncer"]
        assert git(origin(agreed), "merge-base", "main", "syncer/asgard") == git(origin(agreed), "rev-parse", "main")


def test_unreachable_git_remote_at_start_is_not_ready_and_retried_never_an_exit(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    """`syncer run` whose remote is not there yet: /healthz 200, /readyz 503 naming the remote,
    a log line per attempt, and once the remote appears it clones and becomes ready."""
    seed(fake, agreed)
    later = tmp_path / "later.git"  # the remote, absent at start
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    cmd = [sys.executable, "-m", "syncer.cli", "run", "asgard", "--remote", str(later), "--base-branch", "main",
           "--kubeconfig", str(kubeconfig(fake, tmp_path)), "--listen", f"127.0.0.1:{port}",
           "--clone-dir", str(tmp_path / "run-clone"), "--mode", "commit", "--log-format", "json", "--debounce", "0.2"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"

    def get(path: str) -> httpx.Response | None:
        try:
            return httpx.get(base + path, timeout=2)
        except httpx.TransportError:
            return None

    try:
        def answered() -> httpx.Response | None:
            assert proc.poll() is None, proc.communicate()
            return get("/readyz")

        first = wait_for(lambda: (r := answered()) is not None and "failed" in r.text and r, timeout=30,
                         what="the probes to answer with the failed attempt")
        assert first.status_code == 503 and "starting: cloning the git remote failed" in first.text, first.text
        health = get("/healthz")
        assert health is not None and health.status_code == 200
        # Backoff 1 s, 2 s: the second failed attempt (at 1 s) is said in /readyz; the
        # process is still running, and the third attempt (2 s later) finds the remote.
        wait_for(lambda: (r := answered()) is not None and "(2 attempt(s))" in r.text, timeout=30,
                 what="the second failed attempt")
        assert proc.poll() is None
        git(tmp_path, "clone", "-q", "--bare", str(origin(agreed)), str(later))
        ready = wait_for(lambda: (r := get("/readyz")) is not None and r.status_code == 200 and r, timeout=40,
                         what="ready once the remote exists")
        assert ready.text == "ok\n"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, stderr = proc.communicate(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, stderr
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    retries = [line for line in lines if line["msg"].startswith("cloning the git remote failed; not ready, retrying")]
    assert 2 <= len(retries) <= 6, [line["msg"] for line in lines]


def test_run_flags_have_the_env_twins_the_chart_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    from syncer.cli import build_parser

    env = {"SYNCER_LISTEN": "0.0.0.0:9090", "SYNCER_LEADER_ELECT": "true", "SYNCER_LOG_FORMAT": "json",
           "SYNCER_STATE_CONFIGMAP": "rel-syncer-state", "SYNCER_RESYNC_INTERVAL": "1h", "SYNCER_DEBOUNCE": "2s",
           "SYNCER_CLONE_DIR": "/work", "SYNCER_CONFIG": "/etc/syncer/syncer.conf", "SYNCER_LEASE_NAME": "rel-leader",
           "SYNCER_LEASE_DURATION": "30s"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args = build_parser().parse_args(["run", "asgard"])
    assert (args.listen, args.leader_elect, args.log_format, args.state_configmap, args.resync, args.debounce,
            args.clone_dir, args.config, args.lease_name, args.lease_duration) == tuple(
                True if v == "true" else v for v in env.values())
    monkeypatch.setenv("SYNCER_RESYNC", "5m")  # the short name works too
    assert build_parser().parse_args(["run"]).resync == "5m"
    assert build_parser().parse_args(["diff", "--watch"]).watch


def test_run_flags_left_unset_take_the_sidecar_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    from syncer.cli import build_parser
    from syncer.commands.run import seconds as _seconds, sidecar_defaults as _sidecar_defaults
    from syncer.sidecar.server import parse_listen

    for name in ("LISTEN", "RESYNC", "RESYNC_INTERVAL", "DEBOUNCE", "LEASE_DURATION", "STATE_CONFIGMAP",
                 "SHUTDOWN_GRACE"):
        monkeypatch.delenv(f"SYNCER_{name}", raising=False)
    args = build_parser().parse_args(["run", "asgard"])
    _sidecar_defaults(args)
    settings = SidecarSettings(loop=LoopSettings("asgard"))
    assert (_seconds(args.debounce, "--debounce"), _seconds(args.resync, "--resync")) == (
        settings.loop.timing.debounce, settings.loop.timing.resync)
    assert (_seconds(args.lease_duration, "--lease-duration"), _seconds(args.shutdown_grace, "--shutdown-grace"),
            parse_listen(args.listen), args.state_configmap) == (
        settings.lease_duration, settings.grace, settings.listen, settings.state_configmap)
    # ...which are what the help and the chart have always said: 5s, 10m, 15s, 7s
    assert (args.debounce, args.resync, args.lease_duration, args.shutdown_grace, args.listen,
            args.state_configmap) == ("5", "600", "15", "7", "0.0.0.0:8080", "syncer-state")
    # a flag given (here through its env twin) is left as it is
    monkeypatch.setenv("SYNCER_DEBOUNCE", "2s")
    args = build_parser().parse_args(["run", "asgard"])
    _sidecar_defaults(args)
    assert args.debounce == "2s"


def test_syncer_run_hands_the_sidecar_its_settings_defaults(asgard_repo: Path, fake: FakeKubeAPI, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The command path, not only the helper: what ``syncer run`` builds when no flag is given."""
    import syncer.sidecar.app as app

    for name in ("LISTEN", "RESYNC", "RESYNC_INTERVAL", "DEBOUNCE", "LEASE_DURATION", "STATE_CONFIGMAP",
                 "SHUTDOWN_GRACE", "MODE"):
        monkeypatch.delenv(f"SYNCER_{name}", raising=False)
    seen: list[SidecarSettings] = []

    class Captured(Exception):
        pass

    def capture(_api: object, _ws: object, settings: SidecarSettings, **_kw: object) -> None:
        seen.append(settings)
        raise Captured

    monkeypatch.setattr(app, "Sidecar", capture)
    with pytest.raises(Captured):
        main(["run", "asgard", "--repo", str(asgard_repo), "--kubeconfig", str(fake.kubeconfig(tmp_path / "kc")),
              "--clone-dir", str(tmp_path / "clone"), "--forge", "none"], stdout=io.StringIO(), stderr=io.StringIO())
    [settings] = seen
    expected = SidecarSettings(loop=LoopSettings("asgard"))
    assert settings.loop.mode is Mode.PR and (settings.loop.timing.debounce, settings.loop.timing.resync) == (5.0, 600.0)
    assert (settings.loop.timing.debounce, settings.loop.timing.resync, settings.lease_duration, settings.grace,
            settings.listen, settings.state_configmap) == (
        expected.loop.timing.debounce, expected.loop.timing.resync, expected.lease_duration, expected.grace, expected.listen,
        expected.state_configmap)


def test_run_without_a_remote_outside_a_repository_is_one_clear_line(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    errs = io.StringIO()
    assert main(["run", "asgard", "--mode", "commit"], stdout=io.StringIO(), stderr=errs) == 2
    assert errs.getvalue() == ("syncer: error: --remote URL is required: the git repository syncer clones from "
                               "and pushes to\n")


def test_json_logs_name_the_object_on_every_line_and_redact_tokens(tmp_path: Path) -> None:
    import logging

    from syncer import logs

    stream = io.StringIO()
    handler = logs.setup("json", installation="asgard", secrets=["tok-123"], stream=stream)
    log = logging.getLogger("syncer.test")
    logs.event(log, logging.WARNING, "push failed with tok-123 in the URL", ref="Endpoints/ai/mac-ollama", n=1)
    logs.event(log, logging.INFO, "plain line")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["object"] == "Endpoints/ai/mac-ollama" and first["n"] == 1 and "tok-123" not in first["msg"]
    assert second["object"] == "installation/asgard" and second["level"] == "info"
    handler = logs.setup("text", installation="asgard", secrets=["tok-123"], stream=stream)
    logs.event(log, logging.INFO, "hello tok-123", ref="ConfigMap/ai/x", path="data.A")
    logging.getLogger("urllib3.connectionpool").warning("Retrying after connection broken")  # libraries: same format
    logging.getLogger().removeHandler(handler)
    text, library = stream.getvalue().splitlines()[-2:]
    assert text.endswith("INFO [ConfigMap/ai/x] hello *** path=data.A")
    assert library.endswith("WARNING [installation/asgard] Retrying after connection broken")
    assert handler not in logging.getLogger().handlers


def test_an_untracked_object_is_proposed_by_a_pass_like_any_drift(agreed: Path, fake: FakeKubeAPI,
                                                                   tmp_path: Path) -> None:
    conf = agreed / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text() + "untracked: {mode: propose, kinds: [ConfigMap]}\n")
    git(agreed, "commit", "-qam", "propose untracked ConfigMaps")
    git(agreed, "push", "-q", "origin", "main")
    seed(fake, agreed)
    flags = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "feature-flags", "namespace": NS},
             "data": {"NEW_UI": "on"}}
    fake.put(flags, manager="kubectl-create")
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.COMMIT, debounce=0.3).start()
    try:
        wait_for(lambda: len(origin_commits(agreed)) == 4, what="the commit of the untracked ConfigMap")
        # A second one, made later, goes in with the next pass (here: an edit of a tracked object).
        fake.put({**flags, "metadata": {"name": "incident-notes", "namespace": NS}}, manager="kubectl-create")
        fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "30"}}, manager="kubectl-edit")
        wait_for(lambda: len(origin_commits(agreed)) == 5, what="the next pass's commit")
    finally:
        sc.stop()
    files = git(origin(agreed), "ls-tree", "-r", "--name-only", "main", "hosts/asgard/untracked").split()
    assert files == [f"hosts/asgard/untracked/{NS}/configmap-feature-flags.yaml",
                     f"hosts/asgard/untracked/{NS}/configmap-incident-notes.yaml"]
    assert 'NEW_UI: "on"' in git(origin(agreed), "show", f"main:{files[0]}")


def test_a_branch_head_syncer_did_not_record_pushing_is_foreign_whatever_its_author_says(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    # F9, second layer: with a state record, syncer's own commits are the heads it recorded
    # pushing. A commit written as syncer (author and committer) by someone who may push is not one.
    seed(fake, agreed)
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    sc = sidecar(fake, agreed, tmp_path, mode=Mode.PR, clock=clock)
    sc.start(run_loop=False)
    try:
        assert sc.loop.step() is not None
        seen = sc.cache.version
        set_endpoints(fake, "mac-ollama", "100.115.97.90", "2026-08-21T07:00:00Z")  # a declared candidate
        wait_for(lambda: sc.cache.version > seen)
        run_until(sc, clock, datetime(2026, 8, 21, 7, 11, tzinfo=UTC))
        own = git(origin(agreed), "rev-parse", "refs/heads/syncer/asgard")
        assert sc.store is not None and sc.store.pushed_heads() == [own]
        state = fake.get("v1", "ConfigMap", NS, "syncer-state")
        assert json.loads(state["data"]["asgard.json"])["pushed"] == [own]
        # Someone pushes a commit on top, as syncer: m1-ollama to its other candidate.
        other = tmp_path / "attacker"
        git(tmp_path, "clone", "-q", "-b", "syncer/asgard", str(origin(agreed)), str(other))
        backends = other / "hosts" / "asgard" / "ollama-backends.yaml"
        backends.write_text(backends.read_text().replace("ip: 192.168.68.89", "ip: 100.127.6.20", 1))
        as_syncer = {"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(other), "GIT_CONFIG_NOSYSTEM": "1",
                     "GIT_AUTHOR_NAME": "syncer", "GIT_AUTHOR_EMAIL": "syncer@users.noreply.local",
                     "GIT_COMMITTER_NAME": "syncer", "GIT_COMMITTER_EMAIL": "syncer@users.noreply.local"}
        subprocess.run(["git", "commit", "-qam", "syncer(asgard): copy 2 live value(s) back from the cluster"],
                       cwd=other, env=as_syncer, check=True, capture_output=True)
        git(other, "push", "-q", "origin", "syncer/asgard")
        forged = git(other, "rev-parse", "HEAD")
        # m1-ollama clears: before, the forged "pick" was kept and re-committed as syncer's own.
        seen = sc.cache.version
        set_endpoints(fake, "m1-ollama", None, "2026-08-21T07:12:00Z")
        wait_for(lambda: sc.cache.version > seen)
        [report] = run_until(sc, clock, datetime(2026, 8, 21, 7, 12, 30, tzinfo=UTC))
        assert report.outcome is not None and report.error is None
        assert "syncer/asgard has 1 commit(s) not made by syncer; leaving it alone" in report.outcome.messages
    finally:
        sc.stop()
    assert git(origin(agreed), "rev-parse", "refs/heads/syncer/asgard") == forged
    assert sc.store.pushed_heads() == [own]
