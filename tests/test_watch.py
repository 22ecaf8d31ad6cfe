"""The watch protocol against the fake API server: list, watch, bookmarks, 410, reconnects."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.test_sidecar import TcpProxy, _loopback_only, api_client, fake, wait_for  # noqa: F401 - fixtures

from tests.fakes.kube_api import FakeKubeAPI
from syncer.errors import ClusterError
from syncer.model import ObjectRef
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.watch import ObjectWatcher, Target, WatchSettings, lines
from syncer.sidecar.watchset import WatchSet

NS = "ai"
REF = ObjectRef("v1", "Endpoints", NS, "mac-ollama")
TARGET = Target(REF, "/api/v1/namespaces/ai/endpoints")
FAST = WatchSettings(backoff_base=0.02, backoff_cap=0.1)


def endpoints(ip: str, name: str = "mac-ollama") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": NS},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 11434}]}]}


def ip_of(cache: LiveCache, ref: ObjectRef = REF) -> str | None:
    obj = cache.get(ref)
    return obj["subsets"][0]["addresses"][0]["ip"] if obj and obj.get("subsets") else None


def watches(fake: FakeKubeAPI, path: str = TARGET.path) -> list[dict[str, str]]:
    return [r.query for r in fake.requests if r.path == path and r.is_watch]


def start(api: Any, cache: LiveCache, settings: WatchSettings = FAST, **kw: Any) -> ObjectWatcher:
    restarts: list[int] = kw.setdefault("restarts", [])
    del kw["restarts"]
    w = ObjectWatcher(api, TARGET, cache, settings, on_restart=lambda: restarts.append(1), **kw).start()
    assert w.first.wait(5) and w.first_error is None
    return w


def test_list_then_watch_from_its_version_narrowed_to_the_name(fake: FakeKubeAPI, tmp_path: Path) -> None:
    fake.put(endpoints("192.168.68.75"))
    fake.put(endpoints("192.168.68.89", "m1-ollama"))
    cache = LiveCache()
    w = start(api_client(fake, tmp_path), cache)
    try:
        assert ip_of(cache) == "192.168.68.75"
        [listing] = [r for r in fake.requests if r.path == TARGET.path and not r.is_watch]
        assert listing.query == {"fieldSelector": "metadata.name=mac-ollama"}
        [watch] = watches(fake)
        assert watch == {"fieldSelector": "metadata.name=mac-ollama", "watch": "1", "resourceVersion": "1002",
                         "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
        fake.patch("v1", "Endpoints", NS, "m1-ollama", {"subsets": []}, manager="ollama-endpoint-manager")
        fake.patch("v1", "Endpoints", NS, "mac-ollama", {"subsets": [{"addresses": [{"ip": "100.115.97.90"}]}]},
                   manager="ollama-endpoint-manager")
        wait_for(lambda: ip_of(cache) == "100.115.97.90")
        assert cache.get(REF)["kind"] == "Endpoints"  # type: ignore[index]
        fake.delete("v1", "Endpoints", NS, "mac-ollama")
        wait_for(lambda: cache.get(REF) is None, what="the deletion")
    finally:
        w.stop()
    assert len(watches(fake)) == 1  # one stream did all of it


def test_410_mid_stream_relists_never_rewatches_the_expired_version_and_loses_nothing(
        fake: FakeKubeAPI, tmp_path: Path) -> None:
    fake.put(endpoints("192.168.68.75"))
    cache = LiveCache()
    restarts: list[int] = []
    w = start(api_client(fake, tmp_path), cache, restarts=restarts)
    try:
        expired = watches(fake)[0]["resourceVersion"]
        fake.expire_watches()  # etcd compaction: the stream ends with ERROR 410 Expired
        fake.patch("v1", "Endpoints", NS, "mac-ollama", {"subsets": [{"addresses": [{"ip": "100.115.97.90"}]}]},
                   manager="ollama-endpoint-manager")
        wait_for(lambda: ip_of(cache) == "100.115.97.90", what="the change made around the 410")
        wait_for(lambda: len(watches(fake)) == 2, what="the new watch")
    finally:
        w.stop()
    kinds = ["watch" if r.is_watch else "list" for r in fake.requests if r.path == TARGET.path]
    assert kinds == ["list", "watch", "list", "watch"]
    first, second = watches(fake)
    assert first["resourceVersion"] == expired and int(second["resourceVersion"]) > int(expired)
    assert len(restarts) == 1


def test_a_dropped_stream_resumes_from_the_last_version_without_relisting(fake: FakeKubeAPI, tmp_path: Path) -> None:
    fake.put(endpoints("192.168.68.75"))
    cache = LiveCache()
    restarts: list[int] = []
    w = start(api_client(fake, tmp_path), cache, restarts=restarts)
    try:
        # Writes to another object move the global version; bookmarks carry it to the watch.
        fake.put(endpoints("192.168.68.89", "m1-ollama"))
        fake.put(endpoints("100.127.6.20", "m1-ollama"))
        latest = fake.resource_version
        wait_for(lambda: fake.count("GET", TARGET.path) >= 2 and w._raw is not None)
        time.sleep(0.5)  # a couple of bookmarks (every 0.2 s)
        fake.drop_watches()
        wait_for(lambda: len(watches(fake)) == 2, what="the reconnect")
        fake.patch("v1", "Endpoints", NS, "mac-ollama", {"subsets": [{"addresses": [{"ip": "100.115.97.90"}]}]},
                   manager="ollama-endpoint-manager")
        wait_for(lambda: ip_of(cache) == "100.115.97.90")
    finally:
        w.stop()
    assert [r.is_watch for r in fake.requests if r.path == TARGET.path] == [False, True, True]
    assert watches(fake)[1]["resourceVersion"] == latest  # from the bookmark, not the object's own version
    assert len(restarts) == 1


def test_api_server_gone_and_back_on_the_same_port(fake: FakeKubeAPI, tmp_path: Path) -> None:
    fake.put(endpoints("192.168.68.75"))
    proxy = TcpProxy(int(fake.url.rsplit(":", 1)[1])).start()
    cache = LiveCache()
    restarts: list[int] = []
    w = start(api_client(fake, tmp_path, proxy.url), cache, restarts=restarts)
    try:
        proxy.cut()
        wait_for(lambda: cache.api_error is not None, what="the watch to notice")
        fake.patch("v1", "Endpoints", NS, "mac-ollama", {"subsets": [{"addresses": [{"ip": "100.115.97.90"}]}]},
                   manager="ollama-endpoint-manager")  # while we cannot see it
        wait_for(lambda: len(restarts) >= 3, what="a few refused reconnects")
        proxy.start()
        wait_for(lambda: ip_of(cache) == "100.115.97.90", what="the change made during the outage")
        assert cache.api_error is None
    finally:
        w.stop()
        proxy.cut()


def test_a_silent_stream_is_abandoned_after_the_inactivity_timeout(tmp_path: Path) -> None:
    with FakeKubeAPI(bookmark_interval=3600) as quiet:  # a server that never sends a bookmark
        quiet.put(endpoints("192.168.68.75"))
        cache = LiveCache()
        restarts: list[int] = []
        w = start(api_client(quiet, tmp_path), cache, WatchSettings(read_timeout=0.3, backoff_base=0.01),
                  restarts=restarts)
        try:
            wait_for(lambda: len(watches(quiet)) >= 3, timeout=5, what="reconnects after silence")
        finally:
            w.stop()
        rvs = {q["resourceVersion"] for q in watches(quiet)}
        assert len(rvs) == 1 and quiet.count("GET", TARGET.path, watch=False) == 1  # resumed, never re-listed
        assert len(restarts) >= 2


def test_server_errors_on_the_watch_are_retried_with_backoff(fake: FakeKubeAPI, tmp_path: Path) -> None:
    fake.put(endpoints("192.168.68.75"))
    cache = LiveCache()
    sleeps: list[float] = []
    fake.fail_next(503, count=2, path_contains="watch=1")
    w = ObjectWatcher(api_client(fake, tmp_path), TARGET, cache, WatchSettings(backoff_base=1.0, backoff_cap=8.0),
                      sleep=sleeps.append, rand=lambda: 0.5).start()
    try:
        wait_for(lambda: len(watches(fake)) == 3, what="the third watch attempt")
        wait_for(lambda: cache.api_error is None)
    finally:
        w.stop()
    assert sleeps == [0.5, 1.0]  # full jitter (rand=0.5) over 1 s, 2 s
    assert ip_of(cache) == "192.168.68.75"


def test_backoff_is_exponential_capped_and_jittered(tmp_path: Path) -> None:
    settings = WatchSettings(backoff_base=0.5, backoff_cap=30.0)
    assert [settings.backoff(n, lambda: 1.0) for n in range(1, 10)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    assert settings.backoff(3, lambda: 0.25) == 0.5
    assert settings.backoff(5000, lambda: 1.0) == 30  # hours of failures: capped, never an OverflowError
    # Against a port nobody listens on: every attempt fails, each sleep longer, up to the cap.
    with FakeKubeAPI() as gone:
        api = api_client(gone, tmp_path)
    sleeps: list[float] = []
    cache = LiveCache()
    watcher: list[ObjectWatcher] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 9:
            watcher[0].stop()

    w = ObjectWatcher(api, TARGET, cache, settings, sleep=sleep, rand=lambda: 1.0)
    watcher.append(w)
    w.run()  # in this thread: ends when stopped
    assert sleeps == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    assert cache.api_error is not None and "cannot reach the API server" in cache.api_error
    with pytest.raises(ClusterError, match="not listed yet"):
        cache.get(REF)


def test_forbidden_list_is_the_first_answer_and_the_object_reports_it(fake: FakeKubeAPI, tmp_path: Path) -> None:
    fake.put(endpoints("192.168.68.75"))
    fake.forbid("list", "endpoints")
    cache = LiveCache()
    ws = WatchSet(api_client(fake, tmp_path), cache, FAST)
    ws.reconcile([REF])
    [error] = ws.wait_first(5)
    ws.stop()
    assert 'cannot list resource "endpoints"' in error.message and "list Endpoints/ai/mac-ollama" in error.message
    with pytest.raises(ClusterError, match="forbidden"):
        cache.get(REF)


def test_watch_set_follows_the_declared_objects(fake: FakeKubeAPI, tmp_path: Path) -> None:
    fake.put(endpoints("192.168.68.75"))
    cache = LiveCache()
    ws = WatchSet(api_client(fake, tmp_path), cache, FAST)
    other = ObjectRef("v1", "ConfigMap", NS, "ollama-endpoint-manager")
    try:
        ws.reconcile([REF])
        ws.wait_first(5)
        ws.reconcile([other])
        ws.wait_first(5)
        assert set(ws.watchers) == {other} and cache.refs() == [other]
        assert cache.get(other) is None  # listed: does not exist
        ws.reconcile([REF, ObjectRef("example.com/v1", "Widget", NS, "w")])  # a kind the server lacks
        with pytest.raises(ClusterError, match="does not serve"):
            cache.get(ObjectRef("example.com/v1", "Widget", NS, "w"))
    finally:
        ws.stop()


class _Raw:
    chunked = True

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amt: Any, decode_content: bool) -> Any:
        return iter(self.chunks)


def test_lines_are_reassembled_across_chunks() -> None:
    raw = _Raw([b'{"type":"ADDED"', b',"object":{}}\n{"type":"BOOK', b'MARK"}\n\n', b'{"type":"x"}'])
    assert list(lines(raw.chunks)) == [b'{"type":"ADDED","object":{}}', b'{"type":"BOOKMARK"}', b'{"type":"x"}']


def test_observed_since_follows_content_changes_and_forgotten_objects() -> None:
    now = [1000.0]
    cache = LiveCache(clock=lambda: now[0])
    other = ObjectRef("v1", "Endpoints", NS, "m1-ollama")
    cache.expect(REF)
    assert cache.observed_since() == {}  # expected, not listed yet
    cache.put(REF, {"kind": "Endpoints", "subsets": []})
    cache.put(other, {"kind": "Endpoints", "subsets": []})
    first = cache.observed_since()
    assert set(first) == {REF, other} and first[REF].timestamp() == 1000.0
    now[0] = 1060.0
    cache.put(REF, {"kind": "Endpoints", "subsets": []})  # the same content: no change time
    assert cache.observed_since() == first
    cache.put(REF, {"kind": "Endpoints", "subsets": [{"addresses": [{"ip": "192.168.68.75"}]}]})
    assert cache.observed_since()[REF].timestamp() == 1060.0 and cache.observed_since()[other] == first[other]
    cache.observed_since().clear()  # a caller's copy: the cache keeps its own
    cache.forget(other)
    assert set(cache.observed_since()) == {REF}


def test_equal_managed_fields_trees_are_held_once_and_read_the_same() -> None:
    cache = LiveCache()
    other = ObjectRef("v1", "Endpoints", NS, "m1-ollama")

    def managed(ip: str, name: str, tree: dict[str, Any]) -> dict[str, Any]:
        obj = endpoints(ip, name)
        obj["metadata"]["managedFields"] = [{"manager": "ollama-endpoint-manager", "operation": "Update",
                                             "apiVersion": "v1", "time": "2026-12-01T11:00:00Z",
                                             "fieldsType": "FieldsV1", "fieldsV1": tree}]
        return obj

    tree = {"f:subsets": {}}
    cache.put(REF, managed("192.168.68.75", "mac-ollama", json.loads(json.dumps(tree))))
    cache.put(other, managed("192.168.68.89", "m1-ollama", json.loads(json.dumps(tree))))
    a, b = cache.get(REF), cache.get(other)
    assert a is not None and b is not None
    fa, fb = a["metadata"]["managedFields"][0], b["metadata"]["managedFields"][0]
    assert fa["fieldsV1"] is fb["fieldsV1"] and fa["fieldsV1"] == tree  # one tree, same content
    assert fa["manager"] is fb["manager"]
    assert ip_of(cache, REF) == "192.168.68.75" and ip_of(cache, other) == "192.168.68.89"
    cache.put(other, managed("192.168.68.89", "m1-ollama", {"f:subsets": {}, "f:metadata": {}}))
    assert cache.get(other)["metadata"]["managedFields"][0]["fieldsV1"] is not fa["fieldsV1"]  # type: ignore[index]
