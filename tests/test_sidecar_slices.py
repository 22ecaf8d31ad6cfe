"""``syncer run`` on vanaheim, whose manager writes EndpointSlices (discovery.k8s.io/v1).

The fake API server over loopback, real git on a bare origin, the loop stepped on an injected
clock -- the EndpointSlice twins of the Endpoints tests in test_sidecar.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ROOT, git, pushed_repo
from tests.helpers import _loopback_only, fake  # noqa: F401 - fixtures
from tests.test_sidecar import (
    FakeClock, RecordingForge, api_client, origin, origin_branches, origin_commits, recording_notifier, run_until,
    wait_for,
)

from tests.fakes.kube_api import FakeKubeAPI
from syncer.gitrepo import Workspace
from syncer.sidecar.app import Sidecar, SidecarSettings
from syncer.sidecar.loop import LoopSettings
from syncer.sidecar.schedule import Timing
from syncer.sidecar.watch import WatchSettings
from syncer.writeback.deliver import Mode, load_installation

NS = "ai"
V1 = "discovery.k8s.io/v1"
UTC = timezone.utc
BACKENDS = "hosts/vanaheim/ollama-backends.yaml"


@pytest.fixture
def vanaheim(tmp_path: Path, fake: FakeKubeAPI) -> Path:
    """hosts/vanaheim on main of a bare origin, and the same objects live (git and cluster agree)."""
    work = pushed_repo(tmp_path, "vanaheim")
    for obj in load_installation(work, "vanaheim").manifests.objects.values():
        fake.put(obj.data, applied=True, time="2026-07-14T16:02:37Z")
    return work


def sidecar(fake: FakeKubeAPI, work: Path, tmp_path: Path, mode: Mode, clock: Any, **kw: Any) -> Sidecar:
    ws = Workspace.open_or_clone(str(origin(work)), "main", tmp_path / "clone")
    loop = LoopSettings("vanaheim", mode, "syncer diff vanaheim", timing=Timing(debounce=5.0, resync=600.0, tick=0.2))
    settings = SidecarSettings(loop=loop, listen=None, watch=WatchSettings(backoff_base=0.05, backoff_cap=0.2),
                               startup_timeout=5.0)
    return Sidecar(api_client(fake, tmp_path), ws, settings, forge=kw.get("forge"), notifier=kw.get("notifier"),
                   clock=clock)


def point(fake: FakeKubeAPI, name: str, address: str | None, at: str, *, ready: bool = True) -> None:
    """What slice-endpoint-manager sends: the slice's endpoints replaced (None: emptied)."""
    eps = [] if address is None else [{"addresses": [address],
                                       "conditions": {"ready": ready, "serving": ready, "terminating": False}}]
    fake.patch(V1, "EndpointSlice", NS, name, {"endpoints": eps}, manager="slice-endpoint-manager", time=at)


def event_then_step(sc: Sidecar, clock: FakeClock, fake: FakeKubeAPI, when: datetime, change: Any) -> Any:
    seen = sc.cache.version
    change()
    wait_for(lambda: sc.cache.version > seen, what="the watch event")
    reports = run_until(sc, clock, when + timedelta(seconds=5))  # a commit adds a "recheck" pass
    assert [r.reason for r in reports][:1] == ["change"] and all(r.error is None for r in reports)
    return reports[0]


def test_slices_are_watched_by_name(vanaheim: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    sc = sidecar(fake, vanaheim, tmp_path, Mode.COMMIT, clock)
    sc.start(run_loop=False)
    try:
        first = sc.loop.step()
        assert first is not None and first.outcome is not None and first.outcome.result.in_sync
    finally:
        sc.stop()
    watches = [r for r in fake.requests if r.is_watch and "endpointslices" in r.path]
    assert {r.query.get("fieldSelector") for r in watches} == {
        "metadata.name=mac-ollama-ipv4", "metadata.name=mac-ollama-ipv6", "metadata.name=m1-ollama-fqdn"}
    assert all(r.path == "/apis/discovery.k8s.io/v1/namespaces/ai/endpointslices" for r in watches)


def test_slice_pick_after_dwell_is_one_line_with_its_comment(vanaheim: Path, fake: FakeKubeAPI,
                                                             tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    sc = sidecar(fake, vanaheim, tmp_path, Mode.COMMIT, clock)
    sc.start(run_loop=False)
    try:
        assert sc.loop.step() is not None
        # Ops add the Mac's new LAN address live; written at once (ConfigMap: writeback).
        event_then_step(sc, clock, fake, datetime(2026, 8, 21, 7, 0, tzinfo=UTC), lambda: fake.patch(
            "v1", "ConfigMap", NS, "slice-endpoint-manager",
            {"data": {"MAC_ADDRS": "192.168.68.75 192.168.68.58 fd7a:115c:a1e0::5a"}}, manager="kubectl-edit"))
        assert len(origin_commits(vanaheim)) == 2
        # The manager picks it: waits for stableFor, then one commit of one line.
        when = datetime(2026, 8, 21, 7, 1, tzinfo=UTC)
        run_until(sc, clock, when)
        report = event_then_step(sc, clock, fake, when,
                                 lambda: point(fake, "mac-ollama-ipv4", "192.168.68.75", "2026-08-21T07:01:00Z"))
        [pick] = report.outcome.result.drifts
        assert (pick.cls.value, pick.action.value, pick.reason) == ("pick", "wait", "held 5s of 10m00s")
        assert len(origin_commits(vanaheim)) == 2
        reports = run_until(sc, clock, datetime(2026, 8, 21, 7, 12, tzinfo=UTC))
        assert [r.reason for r in reports][:1] == ["stable"] and reports[0].outcome.commit is not None
    finally:
        sc.stop()
    log = origin_commits(vanaheim)
    assert len(log) == 3 and log[0].startswith("syncer syncer(vanaheim): copy 1 live value")
    diff = git(origin(vanaheim), "diff", "main~1", "main", "--", BACKENDS)
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed == ["-      - 192.168.68.58   # Mac Studio, LAN", "+      - 192.168.68.75   # Mac Studio, LAN"]


def test_cleared_slice_is_reported_with_start_and_end_and_never_written(vanaheim: Path, fake: FakeKubeAPI,
                                                                        tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    notifier, posted = recording_notifier()
    sc = sidecar(fake, vanaheim, tmp_path, Mode.COMMIT, clock, notifier=notifier)
    sc.start(run_loop=False)
    try:
        sc.loop.step()
        start = datetime(2026, 8, 21, 7, 11, 9, tzinfo=UTC)
        run_until(sc, clock, start)
        report = event_then_step(sc, clock, fake, start, lambda: point(
            fake, "m1-ollama-fqdn", "m1-laptop.tail4a2b.ts.net", "2026-08-21T07:11:09Z", ready=False))
        [d] = report.outcome.result.drifts
        assert (d.cls.value, d.action.value) == ("cleared", "report")
        run_until(sc, clock, datetime(2026, 8, 21, 8, 0, tzinfo=UTC))  # long past stableFor
        end = datetime(2026, 8, 21, 8, 3, 24, tzinfo=UTC)
        run_until(sc, clock, end)
        event_then_step(sc, clock, fake, end, lambda: point(
            fake, "m1-ollama-fqdn", "m1-laptop.tail4a2b.ts.net", "2026-08-21T08:03:24Z"))
    finally:
        sc.stop()
    assert len(origin_commits(vanaheim)) == 1
    [outage] = [p["outage"] for p in posted if p["event"] == "drift.cleared"]
    assert (outage["kind"], outage["name"], outage["started_at"], outage["ended_at"]) == (
        "Service", "m1-ollama", "2026-08-21T07:11:09Z", "2026-08-21T08:03:24Z")


def test_undeclared_slice_address_is_reported_once_never_written(vanaheim: Path, fake: FakeKubeAPI,
                                                                 tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    notifier, posted = recording_notifier()
    sc = sidecar(fake, vanaheim, tmp_path, Mode.COMMIT, clock, notifier=notifier)
    sc.start(run_loop=False)
    try:
        sc.loop.step()
        event_then_step(sc, clock, fake, clock_at(clock),
                        lambda: point(fake, "mac-ollama-ipv4", "10.9.8.7", "2026-08-21T07:00:00Z"))
        for _ in range(3):
            clock.advance(700)
            sc.loop.step()
    finally:
        sc.stop()
    assert [p["event"] for p in posted] == ["drift.undeclared"]
    assert posted[0]["drifts"][0]["live"] == "10.9.8.7" and "Service/ai/mac-ollama" in posted[0]["summary"]
    assert len(origin_commits(vanaheim)) == 1


def clock_at(clock: FakeClock) -> datetime:
    return datetime.fromtimestamp(clock(), UTC)


def test_a_morning_of_slice_flapping_gives_no_commit_and_no_pr_update(vanaheim: Path, fake: FakeKubeAPI,
                                                                     tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    forge = RecordingForge()
    notifier, posted = recording_notifier()
    sc = sidecar(fake, vanaheim, tmp_path, Mode.PR, clock, forge=forge, notifier=notifier)
    sc.start(run_loop=False)
    try:
        first = sc.loop.step()
        assert first is not None and first.outcome is not None and first.outcome.result.in_sync
        # The Mac sleeps and wakes; the manager marks its endpoint not ready, then ready,
        # and once falls back to its tailnet IPv6 address for a few minutes.
        timeline: list[tuple[str, list[tuple[str, str | None, bool]]]] = [
            ("07:11:09", [("mac-ollama-ipv4", "192.168.68.58", False)]),
            ("07:14:21", [("mac-ollama-ipv4", "192.168.68.58", True)]),
            ("07:19:29", [("mac-ollama-ipv4", None, True)]),  # emptied, nothing ready anywhere
            ("07:22:02", [("mac-ollama-ipv6", "fd7a:115c:a1e0::5a", True)]),  # tailnet for 4 minutes
            ("07:26:40", [("mac-ollama-ipv6", None, True), ("mac-ollama-ipv4", "192.168.68.58", True)]),
            ("07:41:13", [("mac-ollama-ipv4", "192.168.68.58", False)]),
            ("08:03:24", [("mac-ollama-ipv4", "192.168.68.58", True)]),
        ]
        for hhmmss, changes in timeline:
            when = datetime.fromisoformat(f"2026-08-21T{hhmmss}+00:00")
            run_until(sc, clock, when)
            stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")

            def apply(changes: list[tuple[str, str | None, bool]] = changes, stamp: str = stamp) -> None:
                for name, address, ready in changes:
                    point(fake, name, address, stamp, ready=ready)

            event_then_step(sc, clock, fake, when, apply)
        reports = run_until(sc, clock, datetime(2026, 8, 21, 9, 0, tzinfo=UTC))
        assert reports and all(r.error is None for r in reports) and reports[-1].outcome.result.in_sync
    finally:
        sc.stop()
    assert origin_branches(vanaheim) == ["main"]
    assert len(origin_commits(vanaheim)) == 1
    assert forge.writes == []
    outages = [p["outage"] for p in posted if p["event"] == "drift.cleared"]
    assert [(o["kind"], o["name"], o["started_at"], o["ended_at"]) for o in outages] == [
        ("Service", "mac-ollama", "2026-08-21T07:11:09Z", "2026-08-21T07:14:21Z"),
        ("Service", "mac-ollama", "2026-08-21T07:19:29Z", "2026-08-21T07:22:02Z"),
        ("Service", "mac-ollama", "2026-08-21T07:41:13Z", "2026-08-21T08:03:24Z")]
    assert [p["event"] for p in posted] == ["drift.cleared"] * 3


def test_a_proposed_slice_pick_stays_on_the_open_pr_while_the_backend_flaps(vanaheim: Path, fake: FakeKubeAPI,
                                                                           tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=UTC))
    forge = RecordingForge(origin(vanaheim))
    sc = sidecar(fake, vanaheim, tmp_path, Mode.PR, clock, forge=forge)
    sc.start(run_loop=False)
    try:
        sc.loop.step()
        event_then_step(sc, clock, fake, clock_at(clock), lambda: fake.patch(
            "v1", "ConfigMap", NS, "slice-endpoint-manager",
            {"data": {"MAC_ADDRS": "192.168.68.75 192.168.68.58 fd7a:115c:a1e0::5a"}}, manager="kubectl-edit"))
        when = datetime(2026, 8, 21, 7, 1, tzinfo=UTC)
        run_until(sc, clock, when)
        event_then_step(sc, clock, fake, when,
                        lambda: point(fake, "mac-ollama-ipv4", "192.168.68.75", "2026-08-21T07:01:00Z"))
        run_until(sc, clock, datetime(2026, 8, 21, 7, 12, tzinfo=UTC))  # the pick held stableFor: proposed
        assert forge.open is not None and "192.168.68.75" in git(origin(vanaheim), "show",
                                                                 f"syncer/vanaheim:{BACKENDS}")
        branch = git(origin(vanaheim), "rev-parse", "syncer/vanaheim")
        writes = list(forge.writes)
        for hhmmss, ready in (("07:20:00", False), ("07:24:30", True), ("07:31:00", False), ("07:33:10", True)):
            at = datetime.fromisoformat(f"2026-08-21T{hhmmss}+00:00")
            run_until(sc, clock, at)
            event_then_step(sc, clock, fake, at, lambda r=ready, s=at.strftime("%Y-%m-%dT%H:%M:%SZ"): point(
                fake, "mac-ollama-ipv4", "192.168.68.75", s, ready=r))
        reports = run_until(sc, clock, datetime(2026, 8, 21, 9, 0, tzinfo=UTC))
        assert all(r.error is None for r in reports)
        assert {r.outcome.pr.outcome.value for r in reports if r.outcome and r.outcome.pr} == {"unchanged"}
    finally:
        sc.stop()
    assert git(origin(vanaheim), "rev-parse", "syncer/vanaheim") == branch
    assert forge.writes == writes


def test_one_shot_diff_reads_v1beta1_slices_where_v1_is_not_served(tmp_path: Path) -> None:
    """A Kubernetes 1.20 API (discovery.k8s.io/v1beta1 only, topology instead of nodeName):
    git's v1 slices are read under v1beta1, in one LIST or GETs, and compared in the v1 shape."""
    import io
    import json

    from tests.fakes.kube_api import DEFAULT_RESOURCES, Resource
    from syncer.cli import main

    beta = Resource("discovery.k8s.io", "v1beta1", "endpointslices", "endpointslice", "EndpointSlice")
    resources = tuple(r for r in DEFAULT_RESOURCES if r.kind != "EndpointSlice") + (beta,)
    with FakeKubeAPI(resources=resources, git_version="v1.20.2") as old:
        for obj in load_installation(ROOT, "vanaheim").manifests.objects.values():
            data = dict(obj.data)
            if data["kind"] == "EndpointSlice":  # kubectl apply of git's manifest, as v1beta1
                data["apiVersion"] = beta.api_version
            old.put(data, applied=True, time="2026-07-14T16:02:37Z")
        old.patch(beta.api_version, "EndpointSlice", NS, "mac-ollama-ipv6",
                  {"endpoints": [{"addresses": ["fd7a:115c:a1e0::5a"], "conditions": {"ready": True},
                                  "topology": {"kubernetes.io/hostname": "node-b"}}]},
                  manager="slice-endpoint-manager", time="2026-08-21T07:00:00Z")
        old.patch(beta.api_version, "EndpointSlice", NS, "mac-ollama-ipv4", {"endpoints": []},
                  manager="slice-endpoint-manager", time="2026-08-21T07:00:00Z")
        kubeconfig = old.kubeconfig(tmp_path / "kubeconfig", namespace=NS)
        out, err = io.StringIO(), io.StringIO()
        code = main(["diff", "vanaheim", "--repo", str(ROOT), "--kubeconfig", str(kubeconfig), "-o", "json"],
                    now=datetime(2026, 9, 1, tzinfo=UTC), stdout=out, stderr=err)
        paths = {r.path for r in old.requests}
    assert (code, err.getvalue()) == (1, ""), out.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["errors"] == []
    assert sorted((d["name"], d["class"], d["action"], d["live"]) for d in doc["drifts"]) == [
        ("mac-ollama-ipv4", "pick", "write", None),  # the Service moved to its IPv6 slice
        ("mac-ollama-ipv6", "pick", "write", "fd7a:115c:a1e0::5a")]
    assert not any(p.startswith("/apis/discovery.k8s.io/v1/") for p in paths)
    assert any(p.startswith("/apis/discovery.k8s.io/v1beta1/namespaces/ai/endpointslices") for p in paths)
