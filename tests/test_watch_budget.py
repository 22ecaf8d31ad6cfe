"""Hostile watch streams: one memory budget for every stream together (issue #33).

Was: each watch buffered up to 16 MiB of a line that never ended, on its own; seven per-object
watches of a hostile API server took the sidecar to 265 MiB (the chart's limit is 128 MiB;
``python -m bench.watchflood`` measures the process). Now each line is bounded (4 MiB: that
object's error, retried), all streams together hold at most 32 MiB, and what a stream held is
given back when it ends. Tested on each path: HTTP/1.1 per-object watches and a kind-wide watch
(the fake API server, ``FakeKubeAPI.flood_watches``) and the HTTP/2 streams (``FakeKubeH2.flood``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from syncer.errors import ClusterError
from syncer.kube import Connection, KubeClient
from syncer.kube.budget import BUDGET, MAX_EVENT, Budget, EventTooLarge, Lines, OverBudget
from syncer.model import ObjectRef
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.watch import Target, WatchSettings, decode_event, lines
from syncer.sidecar.watchset import WatchSet
from tests.fakes.h2_kube import FakeKubeH2
from tests.fakes.kube_api import FakeKubeAPI
from tests.test_sidecar import wait_for

NS = "ai"
FAST = WatchSettings(backoff_base=0.05, backoff_cap=0.2)


def cm(name: str, level: str = "info") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS},
            "data": {"LOG_LEVEL": level}}


def said(caplog: pytest.LogCaptureFixture, *words: str) -> int:
    """Log records whose message or fields say any of ``words``."""
    return sum(any(w in r.getMessage() + str(vars(r)) for w in words) for r in caplog.records)


def ref(name: str) -> ObjectRef:
    return ObjectRef("v1", "ConfigMap", NS, name)


# -- the splitter -----------------------------------------------------------------------------


def test_lines_split_across_pieces_and_give_back_what_they_held() -> None:
    budget = Budget(total=1024, per_event=100)
    reader = Lines("watch x", budget)
    assert reader.feed(b'{"a":') == [] and budget.used == 5
    got = reader.feed(b'1}\n\n  {"b":2}\n{"c"')
    assert got == [b'{"a":1}', b'{"b":2}']
    assert budget.used == len(b'{"a":1}') + len(b'{"b":2}') + len(b'{"c"')  # handed out lines count until released
    for line in got:
        reader.release(len(line))
    assert budget.used == 4
    assert reader.feed(b":3}") == [] and reader.rest() == b'{"c":3}'
    reader.close()
    assert budget.used == 0


def test_a_line_longer_than_the_event_limit_is_that_stream_s_error() -> None:
    budget = Budget(total=10_000, per_event=100)
    reader = Lines("watch ConfigMap/ai/x", budget)
    reader.feed(b"x" * 60)
    with pytest.raises(EventTooLarge, match=r"watch ConfigMap/ai/x: an event of more than 0 MiB"):
        reader.feed(b"x" * 60)
    reader.close()
    assert budget.used == 0


def test_the_streams_together_stop_at_the_total() -> None:
    budget = Budget(total=250, per_event=100)
    readers = [Lines(f"watch {i}", budget) for i in range(3)]
    readers[0].feed(b"x" * 90)
    readers[1].feed(b"x" * 90)
    with pytest.raises(OverBudget, match="watch 2: the watch streams together hold"):
        readers[2].feed(b"x" * 90)
    readers[0].close()
    assert readers[2].feed(b"x" * 90) == []  # room again once another stream ended
    for r in readers:
        r.close()
    assert budget.used == 0 and budget.peak == 180


def test_a_newline_free_megabyte_is_split_in_linear_time() -> None:
    """The old splitter searched the whole buffer for a newline at every piece (quadratic)."""
    import time

    budget = Budget(total=64 * 2 ** 20, per_event=32 * 2 ** 20)
    start = time.process_time()
    out = list(lines((b"y" * 256 for _ in range(64 * 1024)), "watch x", budget))  # 16 MiB in 256-byte pieces
    assert out == [b"y" * (16 * 2 ** 20)]
    assert time.process_time() - start < 5  # quadratic: minutes
    assert budget.used == 0


def test_an_event_line_that_is_no_object_is_an_error_not_a_dead_thread() -> None:
    """Was: ``[1]`` or ``7`` raised AttributeError, which ended the object's watch thread for good."""
    for line in (b"[1]", b"7", b'"x"', b"null"):
        with pytest.raises(ClusterError, match="no JSON object"):
            decode_event(line, "watch ConfigMap/ai/x")


def test_a_large_event_with_too_many_values_is_refused_before_parsing() -> None:
    line = json.dumps({"type": "ADDED", "object": {"data": {"k": [0] * 600_000}}}).encode()
    assert len(line) < MAX_EVENT
    with pytest.raises(ClusterError):
        decode_event(line, "watch ConfigMap/ai/x")


# -- HTTP/1.1: per-object and kind-wide watches ------------------------------------------------


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI() as fake:
        yield fake


def _watchset(api: FakeKubeAPI, names: list[str], list_from: int) -> tuple[WatchSet, LiveCache]:
    kube = KubeClient(Connection(server=api.url, token=api.token))
    cache = LiveCache()
    ws = WatchSet(kube, cache, FAST, list_from=list_from, multiplex=False)
    ws.reconcile(ref(n) for n in names)
    return ws, cache


@pytest.mark.parametrize("framing", ["chunked", "one-chunk", "close"])
def test_a_flooded_per_object_watch_fails_alone_and_holds_no_memory(api: FakeKubeAPI, framing: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    names = ["calm", "flooded"]
    for n in names:
        api.put(cm(n))
    flood = api.flood_watches("metadata.name%3Dflooded", framing=framing)
    caplog.set_level(logging.WARNING, "syncer.watch")
    ws, cache = _watchset(api, names, list_from=10**6)
    try:
        wait_for(lambda: said(caplog, "an event of more than 4 MiB"), timeout=60, what="the flooded watch to fail")
        assert flood.sent >= MAX_EVENT
        assert BUDGET.used <= BUDGET.total
        api.put(cm("calm", "debug"))  # the other object's watch still delivers
        wait_for(lambda: (cache.get(ref("calm")) or {}).get("data", {}).get("LOG_LEVEL") == "debug", timeout=30,
                 what="the calm object's change")
    finally:
        ws.stop()
    wait_for(lambda: BUDGET.used == 0, timeout=10, what="the budget to be given back")


def test_a_flooded_kind_wide_watch_fails_and_gives_its_budget_back(api: FakeKubeAPI,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    names = [f"cm-{i}" for i in range(3)]
    for n in names:
        api.put(cm(n))
    api.flood_watches()
    caplog.set_level(logging.WARNING, "syncer.watch")
    ws, _ = _watchset(api, names, list_from=1)  # one watch for the kind
    try:
        wait_for(lambda: said(caplog, "an event of more than 4 MiB"), timeout=60, what="the kind-wide watch to fail")
    finally:
        ws.stop()
    wait_for(lambda: BUDGET.used == 0, timeout=10, what="the budget to be given back")


def test_the_sidecar_s_lists_draw_from_the_same_budget(api: FakeKubeAPI) -> None:
    """A list answer that never ends (a per-object list is one object): refused at the budget, not
    at 64 MiB per answer, each of seven threads at once."""
    api.put(cm("x"))
    api.flood_watches("/configmaps", lists=True)
    kube = KubeClient(Connection(server=api.url, token=api.token))
    kube.budget = Budget(total=8 * 2 ** 20)
    with pytest.raises(OverBudget, match="list x: the watch streams together hold"):
        kube.call("GET", f"/api/v1/namespaces/{NS}/configmaps", query=[("fieldSelector", "metadata.name=x")],
                  what="list x")
    assert kube.budget.used == 0
    api.clear_faults()
    doc = kube.call("GET", f"/api/v1/namespaces/{NS}/configmaps", what="list all")  # the connection still works
    assert doc is not None and kube.budget.used == 0 and kube.budget.peak > 0


# -- HTTP/2 streams -----------------------------------------------------------------------------


@pytest.fixture
def h2() -> Iterator[FakeKubeH2]:
    server = FakeKubeH2(NS, max_streams=100)
    yield server
    server.stop()


def test_flooded_http2_streams_fail_alone_within_the_budget(h2: FakeKubeH2,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    from syncer.sidecar.h2watch import Multiplexer

    class Client(KubeClient):
        def collection_path(self, r: ObjectRef) -> str:
            return f"/api/v1/namespaces/{r.namespace}/configmaps"

    for n in ("calm", "flooded", "flooded-list"):
        h2.put(n, {"LOG_LEVEL": "info"})
    h2.flood = {"flooded"}
    h2.flood_lists = {"flooded-list"}
    budget = Budget(total=6 * 2 ** 20)  # tighter than the process's: the total is what is tested
    caplog.set_level(logging.WARNING, "syncer.watch")
    cache = LiveCache()
    mux, why = Multiplexer.open(Client(Connection(server=h2.url, token=h2.token, ca_data=h2.cert_pem)), cache,
                                FAST, on_restart=lambda: None, on_error=lambda: None)
    assert mux is not None, why
    mux.budget = budget
    try:
        watches = {n: mux.watch(_target(n)) for n in ("calm", "flooded", "flooded-list")}
        wait_for(lambda: said(caplog, "watch ConfigMap/ai/flooded: an event of more than") and
                 said(caplog, "list ConfigMap/ai/flooded-list: an answer of more than",
                      "list ConfigMap/ai/flooded-list: the watch streams together hold"), timeout=60,
                 what="both flooded streams to fail")
        assert budget.peak <= budget.total and h2.flooded >= MAX_EVENT
        h2.put("calm", {"LOG_LEVEL": "debug"})
        wait_for(lambda: (cache.get(ref("calm")) or {}).get("data", {}).get("LOG_LEVEL") == "debug", timeout=30,
                 what="the calm stream's change")
        for w in watches.values():
            w.stop()
    finally:
        mux.stop()
    wait_for(lambda: budget.used == 0, timeout=10, what="the budget to be given back")


def _target(name: str) -> Target:
    return Target(ref(name), f"/api/v1/namespaces/{NS}/configmaps")
