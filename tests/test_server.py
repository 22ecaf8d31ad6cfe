"""/healthz, /readyz and /metrics of a running sidecar, over real HTTP on loopback."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.test_sidecar import (  # noqa: F401 - fixtures
    FakeClock, TcpProxy, _loopback_only, agreed, api_client, fake, live_like_example, origin, seed, sidecar,
    wait_for,
)

from tests.fakes.kube_api import FakeKubeAPI
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.metrics import Metrics
from syncer.sidecar.server import MAX_PASS, Health, parse_listen
from syncer.writeback.deliver import Mode

LOCAL = ("127.0.0.1", 0)


def get(url: str) -> httpx.Response:
    return httpx.get(url, timeout=5, trust_env=False)


def test_readyz_follows_the_api_server_and_the_git_remote(agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, agreed)
    proxy = TcpProxy(int(fake.url.rsplit(":", 1)[1])).start()
    sc = sidecar(fake, agreed, tmp_path, api=api_client(fake, tmp_path, proxy.url), mode=Mode.DRY_RUN,
                 listen=LOCAL, debounce=0.1, retry_base=0.1).start()
    assert sc.server is not None
    base = f"http://127.0.0.1:{sc.server.port}"
    try:
        wait_for(lambda: get(f"{base}/readyz").status_code == 200, what="ready")
        assert get(f"{base}/healthz").text == "ok\n"

        proxy.cut()  # the API server goes away
        down = wait_for(lambda: (r := get(f"{base}/readyz")).status_code == 503 and r, what="unready")
        # the open watches drop first ("connection lost"), then re-connecting fails ("cannot reach")
        assert down.text.startswith("API server: "), down.text
        wait_for(lambda: "cannot reach the API server" in get(f"{base}/readyz").text, what="the reconnect failing")
        assert get(f"{base}/healthz").status_code == 200  # alive all the same: no restart for that
        proxy.start()
        wait_for(lambda: get(f"{base}/readyz").status_code == 200, what="ready again (API)")

        moved = tmp_path / "moved.git"
        origin(agreed).rename(moved)  # the git remote goes away
        sc.loop.poke()
        down = wait_for(lambda: (r := get(f"{base}/readyz")).status_code == 503 and r, what="unready (git)")
        assert down.text.startswith("git remote: git fetch failed")
        moved.rename(origin(agreed))
        sc.loop.poke()
        wait_for(lambda: get(f"{base}/readyz").status_code == 200, what="ready again (git)")
        assert get(f"{base}/nope").status_code == 404
    finally:
        sc.stop()
        proxy.cut()


def test_api_server_down_at_start_is_not_ready_then_ready_never_an_exit(
        agreed: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    """The API server is not there when the sidecar starts: start() returns (no StartupError),
    /healthz 200, /readyz 503 naming the API server; once it answers, the sidecar is ready."""
    seed(fake, agreed)
    proxy = TcpProxy(int(fake.url.rsplit(":", 1)[1])).start()
    api = api_client(fake, tmp_path, proxy.url)
    proxy.cut()  # down before the first request
    sc = sidecar(fake, agreed, tmp_path, api=api, mode=Mode.DRY_RUN, listen=LOCAL, debounce=0.1, retry_base=0.1,
                 startup_timeout=1.0).start()
    assert sc.server is not None
    base = f"http://127.0.0.1:{sc.server.port}"
    try:
        down = get(f"{base}/readyz")
        assert down.status_code == 503 and "API server: " in down.text, down.text
        assert get(f"{base}/healthz").status_code == 200
        proxy.start()
        wait_for(lambda: get(f"{base}/readyz").status_code == 200, timeout=30, what="ready once the API answers")
    finally:
        sc.stop()
        proxy.cut()


def test_metrics_parse_and_show_the_drift(asgard_repo: Path, fake: FakeKubeAPI, tmp_path: Path) -> None:
    seed(fake, asgard_repo)
    live_like_example(fake)  # git is stale: the example's real drift
    clock = FakeClock(datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc))
    sc = sidecar(fake, asgard_repo, tmp_path, mode=Mode.DRY_RUN, listen=LOCAL, clock=clock)
    sc.start(run_loop=False)
    try:
        report = sc.loop.step()
        assert report is not None and report.error is None
        assert sc.server is not None
        resp = get(f"http://127.0.0.1:{sc.server.port}/metrics")
    finally:
        sc.stop()
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(resp.text)}
    assert all(name.startswith("syncer_") for name in families)
    objects = {s.labels["class"]: s.value for s in families["syncer_drift_objects"].samples}
    assert objects == {"value": 1.0, "added": 0.0, "removed": 0.0, "pick": 2.0, "undeclared": 0.0, "cleared": 0.0,
                       "untracked": 0.0}
    ages = {(s.labels["installation"], s.labels["kind"], s.labels["name"]): s.value
            for s in families["syncer_drift_age_seconds"].samples}
    edited = datetime(2026, 8, 20, 9, 14, tzinfo=timezone.utc)
    picked = datetime(2026, 8, 21, 8, 3, 24, tzinfo=timezone.utc)
    assert ages[("asgard", "ConfigMap", "ollama-endpoint-manager")] == (clock.set(
        datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)) - edited).total_seconds()
    assert ages[("asgard", "Endpoints", "mac-ollama")] == (datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)
                                                          - picked).total_seconds()
    [last] = families["syncer_last_sync_timestamp_seconds"].samples
    assert last.value == clock()
    errors = {s.labels["stage"]: s.value for s in families["syncer_sync_errors"].samples if s.name.endswith("_total")}
    assert errors == {"watch": 0.0, "git": 0.0, "forge": 0.0, "detect": 0.0, "state": 0.0, "object": 0.0}
    assert [s.value for s in families["syncer_pull_request_open"].samples] == [0.0]
    assert [s.value for s in families["syncer_watch_restarts"].samples if s.name.endswith("_total")] == [0.0]


def test_drift_age_series_disappear_when_the_drift_does() -> None:
    from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef, Result

    metrics = Metrics("asgard")
    Metrics("asgard")  # a second registry in the same process is fine
    ref = ObjectRef("v1", "ConfigMap", "ai", "x")
    drift = Drift(ref, "f", ("data", "A"), "1", "2", Direction.CLUSTER, DriftClass.VALUE, Action.WRITE,
                  changed_at="2026-01-01T00:00:00Z")
    now = datetime(2026, 1, 1, 0, 1, tzinfo=timezone.utc)
    metrics.observe(Result("asgard", (drift,)), now, {})
    assert b'syncer_drift_age_seconds{installation="asgard",kind="ConfigMap",name="x"} 60.0' in metrics.render()
    metrics.observe(Result("asgard"), now, {})
    assert b"syncer_drift_age_seconds{" not in metrics.render()


def test_healthz_fails_when_the_loop_stops_ticking() -> None:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    health = Health(LiveCache(), tick=5.0, resync=600.0, clock=clock)
    health.loop_ticked()
    clock.advance(14)
    assert health.healthz()[0]
    clock.advance(2)
    ok, text = health.healthz()
    assert not ok and text.startswith("loop stuck: last tick 16s ago")
    health.pass_started()  # a long git push is not a stuck loop...
    clock.advance(MAX_PASS - 1)
    assert health.healthz()[0]
    clock.advance(2)  # ...up to a point
    assert not health.healthz()[0]


def test_readyz_needs_both_upstreams_within_the_resync_interval() -> None:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    cache = LiveCache(clock=clock)
    health = Health(cache, tick=5.0, resync=600.0, clock=clock)
    assert health.readyz() == (False, "API server: not reached yet\ngit remote: not reached yet\n")
    cache.api_reached()
    health.git_reached()
    assert health.readyz() == (True, "ok\n")
    clock.advance(600 + 31)
    cache.api_reached()
    assert health.readyz() == (False, "git remote: not reached for 631s\n")


@pytest.mark.parametrize("text,expected", [("0.0.0.0:8080", ("0.0.0.0", 8080)), (":9090", ("0.0.0.0", 9090)),
                                           ("[::]:8080", ("::", 8080)), ("127.0.0.1:0", ("127.0.0.1", 0))])
def test_parse_listen(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


def test_parse_listen_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_listen("8080")
