"""Per-object watches multiplexed over HTTP/2 (syncer/sidecar/h2watch.py) against a loopback
TLS + h2 server that advertises SETTINGS_MAX_CONCURRENT_STREAMS=100 (tests/fakes/h2_kube.py)."""

from __future__ import annotations

import logging
import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from syncer.errors import ClusterError
from syncer.kube import Connection, KubeClient, Timeouts
from syncer.model import ObjectRef
from syncer.sidecar.h2watch import Multiplexer
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.watch import Target, WatchSettings
from syncer.sidecar.watchset import WatchSet
from tests.fakes.h2_kube import FakeKubeH2
from tests.test_sidecar import wait_for

NS = "ai"
FAST = WatchSettings(backoff_base=0.02, backoff_cap=0.1)


class Client(KubeClient):
    """The real client; its discovery answered here (the fake serves the watches only)."""

    def collection_path(self, ref: ObjectRef) -> str:
        return f"/api/v1/namespaces/{ref.namespace}/configmaps"


def client(fake: FakeKubeH2, token: str | None = None, ca: bytes | None = None) -> Client:
    return Client(Connection(server=fake.url, token=token or fake.token, ca_data=ca or fake.cert_pem))


def ref(i: int) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", NS, f"app-{i:03}")


def level(cache: LiveCache, r: ObjectRef) -> str | None:
    try:
        obj = cache.get(r)
    except ClusterError:  # not listed yet
        return None
    return obj["data"]["LOG_LEVEL"] if obj else None


@pytest.fixture
def fake() -> Iterator[FakeKubeH2]:
    server = FakeKubeH2(NS, max_streams=100)
    yield server
    server.stop()


def watching(fake: FakeKubeH2, n: int, settings: WatchSettings = FAST) -> tuple[WatchSet, LiveCache]:
    for i in range(n):
        fake.put(ref(i).name, {"LOG_LEVEL": "info"})
    cache = LiveCache()
    ws = WatchSet(client(fake), cache, settings, list_from=10**6)  # never the kind-wide watch
    ws.reconcile(ref(i) for i in range(n))
    assert ws.wait_first(30) == []
    return ws, cache


def test_250_objects_use_3_connections_and_no_stream_waits_behind_the_limit(
        fake: FakeKubeH2, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "syncer.watch")
    ws, cache = watching(fake, 250)
    try:
        wait_for(lambda: all(level(cache, ref(i)) == "info" for i in range(250)), 30, "every list")
        assert ws.mux is not None and ws.mux.opened == 3 and fake.connections == 3
        assert fake.peak_streams <= 90 and fake.refused == 0
        assert [t.name for t in threading.enumerate() if t.name.startswith("watch")] == ["watch (HTTP/2)"]
        # the objects whose streams came last (past 2 x 90) are as live as the first ones
        for i in (0, 120, 249):
            fake.put(ref(i).name, {"LOG_LEVEL": "debug"})
        wait_for(lambda: all(level(cache, ref(i)) == "debug" for i in (0, 120, 249)), 10, "the edits")
        assert level(cache, ref(1)) == "info"
        said = [getattr(r, "syncer_fields", {}) for r in caplog.records if r.getMessage() == "watching"]
        assert said == [{"path": "one watch per object", "objects": 250,
                     "over": "HTTP/2 multiplexed over 3 connections"}], said
    finally:
        ws.stop()


def test_a_server_limit_below_ours_shards_by_the_server_s(fake: FakeKubeH2) -> None:
    fake.max_streams = 40
    ws, cache = watching(fake, 100)
    try:
        wait_for(lambda: all(level(cache, ref(i)) == "info" for i in range(100)), 30, "every list")
        assert ws.mux is not None and ws.mux.per_connection == 36 and ws.mux.opened == 3  # 90 % of 40
        assert fake.refused == 0 and fake.peak_streams <= 36
    finally:
        ws.stop()


def test_410_relists_and_loses_no_change_made_around_it(fake: FakeKubeH2) -> None:
    ws, cache = watching(fake, 3)
    try:
        wait_for(lambda: sum("watch=1" in p for p in fake.requests) == 3, 10, "the watches")
        fake.expire()
        fake.put(ref(1).name, {"LOG_LEVEL": "warn"})
        wait_for(lambda: level(cache, ref(1)) == "warn", 10, "the change made around the 410")
        wait_for(lambda: sum("watch=1" in p for p in fake.requests) == 6, 10, "the new watches")
    finally:
        ws.stop()
    mine = [p for p in fake.requests if "app-001" in p]
    assert ["watch=1" in p for p in mine] == [False, True, False, True]  # list, watch, 410 -> list, watch
    expired = int(mine[1].split("resourceVersion=")[1].split("&")[0])
    assert int(mine[3].split("resourceVersion=")[1].split("&")[0]) > expired


def test_a_watch_ended_by_the_server_resumes_from_the_bookmark_without_relisting(fake: FakeKubeH2) -> None:
    ws, cache = watching(fake, 2, WatchSettings(backoff_base=0.02, backoff_cap=0.1, watch_seconds=1))
    try:
        fake.put("other", {"LOG_LEVEL": "info"})  # the store's version moves on: a bookmark carries it
        latest = fake.rv
        fake.bookmark()
        wait_for(lambda: sum("app-000" in p and "watch=1" in p for p in fake.requests) >= 2, 10,
                 "the watch after timeoutSeconds")
    finally:
        ws.stop()
    mine = [p for p in fake.requests if "app-000" in p]
    assert ["watch=1" in p for p in mine][:3] == [False, True, True]
    assert f"resourceVersion={latest}&" in mine[2]


@pytest.mark.parametrize("goaway", [False, True], ids=["connection lost", "GOAWAY"])
def test_connections_ended_by_the_server_resume_every_watch_from_its_version(fake: FakeKubeH2, goaway: bool) -> None:
    ws, cache = watching(fake, 120)  # 2 connections
    try:
        wait_for(lambda: sum("watch=1" in p for p in fake.requests) == 120, 10, "the watches")
        before = len(fake.requests)
        fake.drop_connections(goaway)
        fake.put(ref(119).name, {"LOG_LEVEL": "warn"})
        wait_for(lambda: level(cache, ref(119)) == "warn", 10, "the change made while reconnecting")
        # every watch again (one that landed on the second connection before it ended, twice)
        wait_for(lambda: len({re.search(r"app-\d+", p).group() for p in fake.requests[before:]  # type: ignore[union-attr]
                              if "watch=1" in p}) == 120, 10, "the new watches")
        assert fake.connections >= 4 and ws.mux is not None and ws.mux.opened == fake.connections
    finally:
        ws.stop()
    assert sum("watch=1" not in p for p in fake.requests) == 120  # no object listed again


def test_failures_back_off_with_the_injected_jitter_and_mark_the_api_unreachable(fake: FakeKubeH2) -> None:
    fake.put(ref(0).name, {"LOG_LEVEL": "info"})
    fake.failing_lists = 3
    draws: list[int] = []
    cache = LiveCache()
    restarts: list[int] = []
    mux, _ = Multiplexer.open(client(fake), cache, WatchSettings(backoff_base=0.05, backoff_cap=0.2),
                              on_restart=lambda: restarts.append(1), on_error=lambda: None,
                              rand=lambda: draws.append(1) or 1.0)
    assert mux is not None
    cache.expect(ref(0))
    try:
        w = mux.watch(Target(ref(0), f"/api/v1/namespaces/{NS}/configmaps"))
        wait_for(lambda: cache.api_error is not None, 10, "the first 500")
        assert "(500)" in cache.api_error and "etcdserver: request timed out" in cache.api_error
        wait_for(lambda: level(cache, ref(0)) == "info", 10, "the list after three 500s")
        assert len(draws) == 3 and len(restarts) == 3  # one jittered backoff per failure
        assert w.first.wait(10) and w.first_error is None
        assert cache.api_error is None
    finally:
        mux.stop()


def test_an_unexpected_error_on_one_stream_costs_only_that_object_a_retry(fake: FakeKubeH2) -> None:
    class Flaky(LiveCache):
        failed = False

        def put(self, r: ObjectRef, obj: dict[str, Any] | None) -> bool:
            if r == ref(1) and not self.failed:
                self.failed = True
                raise RuntimeError("a bug")
            return super().put(r, obj)

    for i in range(3):
        fake.put(ref(i).name, {"LOG_LEVEL": "info"})
    cache = Flaky()
    ws = WatchSet(client(fake), cache, FAST, list_from=10**6)
    ws.reconcile(ref(i) for i in range(3))
    try:
        wait_for(lambda: all(level(cache, ref(i)) == "info" for i in range(3)), 10, "every object, the flaky one too")
        assert cache.failed
        fake.put(ref(1).name, {"LOG_LEVEL": "debug"})
        wait_for(lambda: level(cache, ref(1)) == "debug", 10, "its watch")
    finally:
        ws.stop()


def test_a_refused_token_fails_startup(fake: FakeKubeH2) -> None:
    fake.put(ref(0).name, {"LOG_LEVEL": "info"})
    cache = LiveCache()
    ws = WatchSet(client(fake, token="wrong"), cache, FAST, list_from=10**6)
    ws.reconcile([ref(0)])
    try:
        [error] = ws.wait_first(10)
        assert error.status == 401
    finally:
        ws.stop()


def test_the_certificate_is_verified_with_the_kubeconfig_s_ca(fake: FakeKubeH2) -> None:
    other = FakeKubeH2(NS)
    try:
        with pytest.raises(ClusterError, match="cannot reach the API server"):
            Multiplexer.open(client(fake, ca=other.cert_pem), LiveCache(), FAST, on_restart=lambda: None,
                             on_error=lambda: None)
    finally:
        other.stop()


def test_a_server_trickling_its_handshake_cannot_hold_the_connect(fake: FakeKubeH2) -> None:
    """connect + TLS + SETTINGS are bounded as a whole (Timeouts.connect), not per read."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"\x16\x03\x03\x40\x00")  # a TLS record of 16 KiB that never comes
            while not stop.wait(0.05):
                try:
                    conn.sendall(b"\x00")
                except OSError:
                    return

    threading.Thread(target=trickle, daemon=True).start()
    api = Client(Connection(server=f"https://127.0.0.1:{listener.getsockname()[1]}", token="t", ca_data=fake.cert_pem),
                 timeouts=Timeouts(connect=0.5))
    try:
        with pytest.raises(ClusterError, match="handshake within 0.5s"):
            Multiplexer.open(api, LiveCache(), FAST, on_restart=lambda: None, on_error=lambda: None)
    finally:
        stop.set()
        listener.close()


def test_no_h2_by_alpn_keeps_a_thread_per_object() -> None:
    plain = FakeKubeH2(NS, alpn=("http/1.1",))
    try:
        mux, why = Multiplexer.open(client(plain), LiveCache(), FAST, on_restart=lambda: None,
                                    on_error=lambda: None)
        assert mux is None and "did not choose HTTP/2" in why
    finally:
        plain.stop()


def test_not_the_real_client_or_not_https_is_not_tried(fake: FakeKubeH2) -> None:
    api: Any = Client(Connection(server="http://127.0.0.1:1"))
    assert Multiplexer.open(api, LiveCache(), FAST, on_restart=lambda: None, on_error=lambda: None) == (None, "")
