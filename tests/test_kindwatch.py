"""One watch per kind and namespace (syncer/sidecar/kindwatch.py, watchset.py) against the fake
API server: one list and one stream for a collection, untracked objects dropped, 410 -> re-list,
resume after a drop, new names listed again, and the fall back to per-object watches when the
Role is limited by resourceNames."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from tests.test_sidecar import _loopback_only, api_client, fake, wait_for  # noqa: F401 - fixtures

from tests.fakes.kube_api import FakeKubeAPI
from syncer.errors import ClusterError
from syncer.model import ObjectRef
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.watch import WatchSettings
from syncer.sidecar.watchset import WatchSet

NS = "ai"
PATH = "/api/v1/namespaces/ai/configmaps"
FAST = WatchSettings(backoff_base=0.02, backoff_cap=0.1)


def cm(name: str, value: str = "info") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
            "data": {"LOG_LEVEL": value}}


def ref(i: int) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", NS, f"cm-{i}")


def level(cache: LiveCache, r: ObjectRef) -> str | None:
    try:
        obj = cache.get(r)
    except ClusterError as exc:  # not listed yet
        return exc.message
    return obj["data"]["LOG_LEVEL"] if obj else None


def kinds(fake: FakeKubeAPI) -> list[str]:
    return ["watch" if r.is_watch else "list" for r in fake.requests if r.path == PATH]


def paths_said(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, Any]]]:
    return [(str(getattr(r, "syncer_object")), dict(getattr(r, "syncer_fields")))
            for r in caplog.records if r.getMessage() == "watching"]


@pytest.fixture
def world(fake: FakeKubeAPI, tmp_path: Path) -> tuple[FakeKubeAPI, Any]:
    for i in range(12):
        fake.put(cm(f"cm-{i}"))
    fake.put(cm("untracked"))
    return fake, api_client(fake, tmp_path)


def test_a_collection_is_one_list_and_one_watch_and_untracked_objects_are_dropped(
        world: tuple[FakeKubeAPI, Any], caplog: pytest.LogCaptureFixture) -> None:
    fake, api = world
    caplog.set_level(logging.INFO, "syncer.watch")
    cache = LiveCache()
    ws = WatchSet(api, cache, FAST, list_from=8)
    tracked = [ref(i) for i in range(9)]
    try:
        ws.reconcile(tracked)
        assert ws.wait_first(5) == []
        assert cache.refs() == sorted(tracked) and level(cache, ref(0)) == "info"
        assert set(ws.kinds) == {("v1", "ConfigMap", NS)} and ws.watchers == {}
        [listing, watch] = [r.query for r in fake.requests if r.path == PATH]
        assert listing == {"limit": "500"}  # the whole collection, paged
        assert watch == {"watch": "1", "resourceVersion": fake.requests[-1].query["resourceVersion"],
                         "allowWatchBookmarks": "true", "timeoutSeconds": "3600"}
        assert "fieldSelector" not in watch
        version = cache.version
        fake.patch("v1", "ConfigMap", NS, "untracked", {"data": {"LOG_LEVEL": "debug"}}, manager="kubectl-edit")
        fake.patch("v1", "ConfigMap", NS, "cm-10", {"data": {"LOG_LEVEL": "debug"}}, manager="kubectl-edit")
        fake.patch("v1", "ConfigMap", NS, "cm-3", {"data": {"LOG_LEVEL": "debug"}}, manager="kubectl-edit")
        wait_for(lambda: level(cache, ref(3)) == "debug", what="the tracked change")
        assert cache.version == version + 1  # the two untracked changes never reached the cache
        assert cache.refs() == sorted(tracked)
        fake.delete("v1", "ConfigMap", NS, "cm-4")
        wait_for(lambda: cache.get(ref(4)) is None, what="the deletion")
    finally:
        ws.stop()
    assert kinds(fake) == ["list", "watch"]  # one stream did all of it
    assert paths_said(caplog) == [(f"ConfigMap in {NS}", {"path": "one watch for the kind", "objects": 9})]


def test_paged_list_reads_every_page_at_one_version(world: tuple[FakeKubeAPI, Any]) -> None:
    fake, api = world
    from syncer.sidecar import kindwatch

    cache = LiveCache()
    ws = WatchSet(api, cache, FAST, list_from=8)
    old = kindwatch.PAGE
    kindwatch.PAGE = 5
    try:
        ws.reconcile([ref(i) for i in range(12)])
        assert ws.wait_first(5) == []
        assert all(level(cache, ref(i)) == "info" for i in range(12))
    finally:
        kindwatch.PAGE = old
        ws.stop()
    lists = [r.query for r in fake.requests if r.path == PATH and not r.is_watch]
    assert len(lists) == 3 and "continue" not in lists[0] and all("continue" in q for q in lists[1:])


def test_410_on_the_collection_relists_and_loses_nothing(world: tuple[FakeKubeAPI, Any]) -> None:
    fake, api = world
    cache = LiveCache()
    ws = WatchSet(api, cache, FAST, list_from=8)
    try:
        ws.reconcile([ref(i) for i in range(9)])
        ws.wait_first(5)
        expired = [r.query for r in fake.requests if r.path == PATH and r.is_watch][0]["resourceVersion"]
        fake.expire_watches()
        fake.patch("v1", "ConfigMap", NS, "cm-5", {"data": {"LOG_LEVEL": "debug"}}, manager="kubectl-edit")
        wait_for(lambda: level(cache, ref(5)) == "debug", what="the change made around the 410")
        wait_for(lambda: len(kinds(fake)) == 4, what="the new watch")
    finally:
        ws.stop()
    assert kinds(fake) == ["list", "watch", "list", "watch"]
    second = [r.query for r in fake.requests if r.path == PATH and r.is_watch][1]
    assert int(second["resourceVersion"]) > int(expired)


def test_a_dropped_collection_stream_resumes_without_relisting(world: tuple[FakeKubeAPI, Any]) -> None:
    fake, api = world
    cache = LiveCache()
    ws = WatchSet(api, cache, FAST, list_from=8)
    try:
        ws.reconcile([ref(i) for i in range(9)])
        ws.wait_first(5)
        fake.drop_watches()
        wait_for(lambda: len(kinds(fake)) == 3, what="the reconnect")
        fake.patch("v1", "ConfigMap", NS, "cm-1", {"data": {"LOG_LEVEL": "debug"}}, manager="kubectl-edit")
        wait_for(lambda: level(cache, ref(1)) == "debug")
    finally:
        ws.stop()
    assert kinds(fake) == ["list", "watch", "watch"]


def test_a_name_tracked_later_is_listed_again_on_the_same_single_stream(world: tuple[FakeKubeAPI, Any]) -> None:
    fake, api = world
    cache = LiveCache()
    ws = WatchSet(api, cache, FAST, list_from=8)
    try:
        ws.reconcile([ref(i) for i in range(9)])
        ws.wait_first(5)
        ws.reconcile([ref(i) for i in range(1, 11)])  # cm-9 and cm-10 exist: their events were dropped so far
        wait_for(lambda: level(cache, ref(10)) == "info", what="the new name listed")
        assert cache.refs() == sorted(ref(i) for i in range(1, 11))  # cm-0 forgotten
        wait_for(lambda: fake.open_watches == 1, what="one stream again")
        fake.patch("v1", "ConfigMap", NS, "cm-10", {"data": {"LOG_LEVEL": "debug"}}, manager="kubectl-edit")
        wait_for(lambda: level(cache, ref(10)) == "debug")
    finally:
        ws.stop()
    assert kinds(fake) == ["list", "watch", "list", "watch"]


def test_a_resource_names_role_falls_back_to_one_watch_per_object_and_says_so(
        world: tuple[FakeKubeAPI, Any], caplog: pytest.LogCaptureFixture) -> None:
    fake, api = world
    caplog.set_level(logging.INFO, "syncer.watch")
    fake.names_only("configmaps")
    cache = LiveCache()
    ws = WatchSet(api, cache, FAST, list_from=8)
    tracked = [ref(i) for i in range(9)]
    try:
        ws.reconcile(tracked)
        assert ws.wait_first(5) == []  # the refusal is no startup error: the objects are watched by name
        assert ws.kinds == {} and set(ws.watchers) == set(tracked)
        assert all(level(cache, r) == "info" for r in tracked)
        ws.reconcile(tracked)  # the decision holds: no second attempt on the collection
        assert ws.kinds == {}
    finally:
        ws.stop()
    unnamed = [r for r in fake.requests if r.path == PATH and "fieldSelector" not in r.query]
    assert len(unnamed) == 1 and fake.count("GET", PATH, watch=True) == 9
    [(where, first), (_, then)] = paths_said(caplog)
    assert first == {"path": "one watch for the kind", "objects": 9}
    assert then["path"] == "one watch per object" and then["objects"] == 9
    assert 'cannot list resource "configmaps"' in then["reason"]


def test_a_collection_that_grows_past_the_threshold_gets_its_own_watch(world: tuple[FakeKubeAPI, Any]) -> None:
    fake, api = world
    cache = LiveCache()
    ws = WatchSet(api, cache, FAST, list_from=8)
    try:
        ws.reconcile([ref(i) for i in range(3)])
        ws.wait_first(5)
        assert len(ws.watchers) == 3 and ws.kinds == {}
        wait_for(lambda: fake.open_watches == 3)
        ws.reconcile([ref(i) for i in range(8)])
        ws.wait_first(5)
        assert ws.watchers == {} and len(ws.kinds) == 1
        wait_for(lambda: fake.open_watches == 1, what="the per-object watches closed")
        assert all(level(cache, ref(i)) == "info" for i in range(8))
    finally:
        ws.stop()
    time.sleep(0.1)


def test_a_reconcile_after_stop_starts_no_watch(world: tuple[FakeKubeAPI, Any]) -> None:
    """A pass still running while the sidecar stops may ask for watches: none is started (it
    would never be stopped)."""
    _, api = world
    ws = WatchSet(api, LiveCache(), FAST, list_from=8)
    ws.stop()
    ws.reconcile([ref(i) for i in range(9)] + [ref(11)])
    assert ws.kinds == {} and ws.watchers == {}
