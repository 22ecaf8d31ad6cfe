"""Incremental detection (issue #14): a sidecar pass compares again only what a change can
affect, and its result is always the one a from-scratch detection gives on the same inputs.

Each check runs ``detect`` twice on the same config, manifests, clock and state: once on the
watch cache (objects never modified, so detection may remember what it found) and once on a
wrapper of it that does not say so (everything compared afresh), and demands equal results.
"""

from __future__ import annotations

import copy
import dataclasses
import shutil
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncer.sources import manifests
from syncer.yamledit import _tree as yamledit_tree
from syncer.detect.classify import parse_time
from syncer.config import Config, load_config
from syncer.cache import Caches
from syncer.errors import ClusterError
from syncer.gather.collect import detect_live
from syncer.gather.live import LiveSource, SnapshotSource
from syncer.sources.manifests import Manifests, host_dir, load_manifests
from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef, Path as ObjPath, Result
from syncer.sidecar.livecache import LiveCache
from syncer.writeback.plan import plan_changes

CM = ObjectRef("v1", "ConfigMap", "ai", "ollama-endpoint-manager")
MAC = ObjectRef("v1", "Endpoints", "ai", "mac-ollama")
M1 = ObjectRef("v1", "Endpoints", "ai", "m1-ollama")


class Fresh(LiveSource):
    """The same live objects, without the promise that they are never modified: ``detect``
    then remembers nothing and compares every object."""

    def __init__(self, cache: LiveCache) -> None:
        self.cache = cache

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        return self.cache.get(ref)

    def describe(self) -> str:
        return self.cache.describe()


class Store:
    """syncer's record in memory: a base per object, values proposed per field."""

    def __init__(self) -> None:
        self.records: dict[ObjectRef, dict[str, Any]] = {}
        self.loaded = True

    def base(self, ref: ObjectRef) -> dict[str, Any] | None:
        if not self.loaded:
            raise ClusterError("state ConfigMap/ai/syncer-state not read yet", transient=True)
        rec = self.records.get(ref)
        return copy.deepcopy(rec) if rec is not None else None

    def proposed(self, ref: ObjectRef) -> Mapping[ObjPath, Sequence[Any]]:
        if not self.loaded:
            raise ClusterError("state ConfigMap/ai/syncer-state not read yet", transient=True)
        return {}

    def propose(self, drifts: Sequence[Drift], head: str | None = None) -> bool:
        return True

    def pushed_heads(self) -> list[str] | None:
        return None


class World:
    """The asgard example: its manifests in a temporary repository, its live objects in a
    watch cache with a settable clock."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.config = load_config(host_dir(repo, "asgard"), "asgard", "hosts/asgard/syncer.conf")
        self.snapshot = SnapshotSource([EXAMPLE_LIVE], self.config.namespace)
        self.now = NOW
        self.clock = NOW.timestamp()
        self.cache = LiveCache(clock=lambda: self.clock)
        self.objects: dict[ObjectRef, dict[str, Any]] = {}  # what was last put, failed or not
        for ref, obj in self.snapshot.objects.items():
            self.put(ref, copy.deepcopy(obj))
        self.store: Store | None = None
        self.caches = Caches()  # one installation's, kept across passes as the sidecar keeps it
        self.manifests = self.load()

    def load(self) -> Manifests:
        return load_manifests(self.repo, "asgard", self.config.namespace, caches=self.caches)

    def live(self, ref: ObjectRef) -> dict[str, Any]:
        return copy.deepcopy(self.objects[ref])

    def put(self, ref: ObjectRef, obj: dict[str, Any]) -> None:
        self.objects[ref] = obj
        self.cache.put(ref, obj)  # a new object, as a watch event brings

    def as_git(self, ref: ObjectRef) -> dict[str, Any]:
        """The live object holding exactly what git declares (in sync)."""
        obj = self.live(ref)
        git = self.manifests.objects[ref].data
        for key in ("data", "subsets", "spec"):
            if key in git:
                obj[key] = copy.deepcopy(git[key])
        return obj

    def detect(self, *, config: Config | None = None, since: Mapping[ObjectRef, datetime] | None = None) -> Result:
        """Incremental and from-scratch detection on the same inputs: they must agree."""
        cfg = config or self.config
        incremental = detect_live(cfg, self.manifests, self.cache, self.now, store=self.store,
                                  observed_since=since, caches=self.caches)
        scratch = detect_live(cfg, self.manifests, Fresh(self.cache), self.now, store=self.store,
                              observed_since=since)
        assert incremental == scratch
        return incremental


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setattr(manifests, "RACY_NS", 0)
    shutil.copytree(ROOT / "hosts" / "asgard", tmp_path / "hosts" / "asgard")
    return World(tmp_path)


class Counted:
    """What one detection did, as ``Caches.counters()`` tells: objects with differences judged
    afresh (their last-applied base looked up: an object without differences needs no base) and
    objects compared anew (not remembered)."""

    def __init__(self, world: World) -> None:
        before = world.caches.counters()
        self.result = detect_live(world.config, world.manifests, world.cache, world.now, store=world.store,
                                  caches=world.caches)
        after = world.caches.counters()
        self.judged = sum(after["last_applied"][:2]) - sum(before["last_applied"][:2])
        self.compared = after["compared"][1] - before["compared"][1]


def _drift(result: Result, ref: ObjectRef) -> Drift:
    return next(d for d in result.drifts if d.ref == ref and d.path == ("subsets",))


def _only_incremental(world: World) -> Result:
    return Counted(world).result


def test_a_pass_after_one_change_compares_that_object_and_the_ones_with_differences(world: World) -> None:
    first = _only_incremental(world)
    drifted = {d.ref for d in first.drifts}
    assert drifted and set(first.checked) - drifted  # some in sync, some not
    again = Counted(world)
    assert again.result == first
    assert (again.judged, again.compared) == (len(drifted), 0)  # nothing in sync judged, nothing compared again
    svc = ObjectRef("v1", "Service", "ai", "mac-ollama")
    assert svc not in drifted
    edited = world.live(svc)
    edited["spec"]["ports"][0]["port"] = 8080
    world.put(svc, edited)
    after = Counted(world)
    assert (after.judged, after.compared) == (len(drifted) + 1, 1) and any(d.ref == svc for d in after.result.drifts)
    assert world.detect() == after.result


def test_a_change_of_a_candidate_list_re_evaluates_the_endpoints_bound_to_it(world: World) -> None:
    before = world.detect()
    assert _drift(before, MAC).cls is DriftClass.PICK
    live_addr = _drift(before, MAC).live
    cm = world.live(CM)
    cm["data"]["MAC_ADDRS"] = "192.168.68.58"  # the address the Endpoints points at is no candidate now
    world.put(CM, cm)
    after = world.detect()
    assert _drift(after, MAC).cls is DriftClass.UNDECLARED and _drift(after, MAC).live == live_addr
    cm = world.live(CM)
    cm["data"]["MAC_ADDRS"] = f"{live_addr} 192.168.68.58"
    world.put(CM, cm)
    assert _drift(world.detect(), MAC).cls is DriftClass.PICK


def test_an_endpoints_in_sync_still_fails_when_its_candidate_configmap_cannot_be_read(world: World) -> None:
    world.put(MAC, world.as_git(MAC))
    first = world.detect()
    assert MAC in first.checked and not any(d.ref == MAC for d in first.drifts)
    again = Counted(world)  # known in sync: not judged again ...
    assert again.judged == len({d.ref for d in first.drifts}) and again.compared == 0
    world.cache.fail(CM, "configmaps \"ollama-endpoint-manager\" is forbidden")
    after = world.detect()  # ... yet an unreadable candidate list still costs it, as before
    assert MAC not in after.checked and any(str(MAC) in e.message for e in after.errors)
    world.put(CM, world.live(CM))
    assert MAC in world.detect().checked


def test_a_change_in_git_re_evaluates_the_objects_of_that_file(world: World) -> None:
    first = world.detect()
    path = world.repo / "hosts" / "asgard" / "ollama-backends.yaml"
    path.write_text(path.read_text().replace("targetPort: 11434", "targetPort: 11435", 1))
    world.manifests = world.load()
    again = Counted(world)
    in_file = {r for r, o in world.manifests.objects.items() if o.file.endswith("ollama-backends.yaml")}
    drifted = {d.ref for d in first.drifts}
    assert in_file - drifted  # the other file's objects: not judged again
    # compared anew: the file's objects; judged: those of them with differences, and the drifted
    assert (again.judged, again.compared) == (len({d.ref for d in again.result.drifts} | drifted), len(in_file))
    after = world.detect()
    changed = [d for d in after.drifts if d.path == ("spec", "ports", 0, "targetPort")]
    assert changed and changed[0] not in first.drifts
    path.write_text(path.read_text().replace("targetPort: 11435", "targetPort: 11434", 1))
    world.manifests = world.load()
    assert world.detect() == first


def test_a_change_of_the_state_record_re_evaluates(world: World) -> None:
    world.store = Store()
    first = world.detect()
    assert _drift(first, MAC).direction is Direction.CLUSTER
    # A record holding the live addresses: git moved too since they agreed -- a conflict.
    world.store.records[MAC] = world.live(MAC)
    second = world.detect()
    assert _drift(second, MAC).direction is Direction.CONFLICT and _drift(second, MAC).action is Action.REPORT
    # The record not readable: every object compared fails, those known in sync too.
    world.store.loaded = False
    broken = world.detect()
    assert not broken.checked and len(broken.errors) == len(first.checked)
    world.store.loaded = True
    assert world.detect() == second
    del world.store.records[MAC]
    assert world.detect() == first


def test_stability_timing_advances_with_the_clock(world: World) -> None:
    pick = _drift(world.detect(), MAC)
    changed = parse_time(pick.changed_at)
    assert changed is not None
    world.now = changed + timedelta(minutes=3)
    held = _drift(world.detect(), MAC)
    assert held.action is Action.WAIT and held.reason.startswith("held 3m")
    world.now = changed + timedelta(minutes=4)
    later = _drift(world.detect(), MAC)
    assert later.action is Action.WAIT and later.reason.startswith("held 4m")
    world.now = changed + timedelta(minutes=11)
    assert _drift(world.detect(), MAC).action is Action.WRITE


def test_observed_since_and_a_stale_watch_are_honoured(world: World) -> None:
    world.detect()
    # Without managedFields the watch's own observation is the only change time of the pick.
    bare = world.live(MAC)
    del bare["metadata"]["managedFields"]
    world.put(MAC, bare)
    unknown = _drift(world.detect(), MAC)
    since = {MAC: world.now - timedelta(minutes=1)}
    held = _drift(world.detect(since=since), MAC)
    assert unknown.action is Action.WAIT and unknown.reason.startswith("change time unknown")
    assert held.action is Action.WAIT and held.reason.startswith("held 1m")
    world.cache.stream_down(M1)
    world.clock += 3600  # the watch has been down for an hour: its object is not compared
    after = world.detect()
    assert M1 not in after.checked and any(str(M1) in e.message for e in after.errors)


def test_a_new_config_is_a_new_comparison(world: World) -> None:
    deployment = next(r for r in world.manifests.objects if r.kind == "Deployment")
    first = world.detect()
    assert deployment in first.checked and not any(d.ref == deployment for d in first.drifts)
    live = world.live(deployment)
    live["spec"]["replicas"] = 3  # ignored by the config (scaled live)
    world.put(deployment, live)
    assert not any(d.ref == deployment for d in world.detect().drifts)
    strict = dataclasses.replace(world.config, ignore=())
    assert any(d.ref == deployment for d in world.detect(config=strict).drifts)
    assert not any(d.ref == deployment for d in world.detect().drifts)


_ADDRESSES = ["192.168.68.58", "192.168.68.75", "100.115.97.90", "100.127.6.20", "10.9.9.9"]
_ops = st.one_of(
    st.tuples(st.just("candidates"), st.sampled_from(["MAC_ADDRS", "M1_ADDRS"]),
              st.lists(st.sampled_from(_ADDRESSES), max_size=3)),
    st.tuples(st.just("point"), st.sampled_from([MAC, M1]), st.lists(st.sampled_from(_ADDRESSES), max_size=2)),
    st.tuples(st.just("as-git"), st.sampled_from([MAC, M1, CM]), st.none()),
    st.tuples(st.just("value"), st.just(CM), st.sampled_from(["15", "30", "debug"])),
    st.tuples(st.just("clock"), st.none(), st.integers(min_value=0, max_value=900)),
    st.tuples(st.just("fail"), st.sampled_from([CM, MAC]), st.none()),
    st.tuples(st.just("record"), st.sampled_from([CM, MAC]), st.booleans()),
    st.tuples(st.just("store-down"), st.none(), st.booleans()),
    st.tuples(st.just("git"), st.sampled_from(["ollama-backends.yaml", "ollama-endpoint-manager.yaml"]),
              st.sampled_from([("11434", "11435"), ("11435", "11434"), ('"15"', '"20"'), ('"20"', '"15"')])),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_ops, min_size=1, max_size=12))
def test_incremental_detection_equals_detection_from_scratch(world: World, ops: list[tuple[str, Any, Any]]) -> None:
    world.store = Store()
    world.detect()
    for op, ref, arg in ops:
        if op == "candidates":
            cm = world.live(CM)
            cm["data"][ref] = " ".join(arg)
            world.put(CM, cm)
        elif op == "point":
            obj = world.live(ref)
            obj["subsets"] = [{"addresses": [{"ip": a} for a in arg], "ports": [{"name": "http", "port": 11434}]}] \
                if arg else []
            world.put(ref, obj)
        elif op == "as-git":
            world.put(ref, world.as_git(ref))
        elif op == "value":
            cm = world.live(CM)
            cm["data"]["INTERVAL_SECONDS"] = arg
            world.put(CM, cm)
        elif op == "clock":
            world.now += timedelta(seconds=arg)
            world.clock += arg
        elif op == "fail":
            world.cache.fail(ref, f"{ref}: forbidden")
        elif op == "record":
            if arg:
                world.store.records[ref] = copy.deepcopy(world.manifests.objects[ref].data)
            else:
                world.store.records.pop(ref, None)
        elif op == "store-down":
            world.store.loaded = not arg
        elif op == "git":
            path = world.repo / "hosts" / "asgard" / ref
            path.write_text(path.read_text().replace(*arg))
            world.manifests = world.load()
        world.detect()
        world.detect(since={MAC: world.now - timedelta(minutes=2)})


def test_planning_again_from_the_remembered_parse_gives_what_a_fresh_parse_gives(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    parses: list[str] = []  # by the editor's pure-Python parser
    real = yamledit_tree.load

    def counting(text: str) -> Any:
        parses.append(text)
        return real(text)

    monkeypatch.setattr(yamledit_tree, "load", counting)
    drifts = [d for d in world.detect().writable() if d.edits]
    assert {d.ref for d in drifts} >= {MAC, M1, CM}
    plans = []
    caches = Caches()
    for subset in (drifts, [d for d in drifts if d.ref == MAC], [d for d in drifts if d.ref == M1], drifts):
        plans.append(plan_changes(world.repo, "asgard", subset, world.manifests.objects, caches=caches))
    # Each file read once: later plans start from the remembered cut and data. The editor
    # parses only the documents it edits, never a whole file of several documents.
    old = {(world.repo / d.file).read_text() for d in drifts}
    assert caches.counters()["parsed"] == (2, len(old), len(old))  # the MAC and M1 plans: remembered parses
    assert caches.counters()["planned"][0] == len(old)  # the last plan: the first one again, every file
    assert parses and not any(p in old and yamledit_tree.count_documents(p) != 1 for p in parses)
    for subset, planned in zip((drifts, [d for d in drifts if d.ref == MAC], [d for d in drifts if d.ref == M1]),
                               plans):
        assert plan_changes(world.repo, "asgard", subset, world.manifests.objects) == planned  # parsed afresh
    assert plans[0] == plans[3]
    # An edit of one document never shows in a later plan of another document of the file.
    only_mac, only_m1 = plans[1][0].new, plans[2][0].new
    assert "- ip: 100.127.6.20    # M1 laptop, tailnet" in only_mac
    assert "- ip: 192.168.68.58   # Mac Studio, LAN" in only_m1
    assert "100.127.6.20    # M1" not in plans[0][0].new and "192.168.68.58   # Mac" not in plans[0][0].new
