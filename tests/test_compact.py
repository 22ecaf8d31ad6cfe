"""The watch cache's compact form (syncer/sidecar/compact.py) on objects real tools produced.

The live objects are the fidelity pairs' (tests/data/fidelity: what real API servers returned in
gitops-engine's, argo-cd's and kubectl-neat's test suites) and what the real kube-apiserver sent
after ``kubectl apply`` and ``kubectl edit`` (tests/realapi/observed). For each, detection over
the compact form must give exactly the result it gives over the object as the server sent it:
the same drifts (direction, class, action, manager, change time), errors and notes; the cache's
change digest must not see a difference either.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, NOW, ROOT

from syncer.detect.normalize import LAST_APPLIED, PackedText, last_applied, normalize
from syncer.gather.collect import detect_live
from syncer.gather.live import SnapshotSource
from syncer.model import ObjectRef
from syncer.sidecar.compact import PACK_OVER, Shared, compact
from syncer.sidecar.livecache import LiveCache, _digest
from syncer.writeback.deliver import load_installation

PAIRS = DATA / "fidelity"
CASES = sorted(p.name for p in PAIRS.iterdir() if (p / "hosts").is_dir())
OBSERVED = ROOT / "tests" / "realapi" / "observed"
REAL = sorted(p.name for p in OBSERVED.glob("*-after-*.json"))


def _live_file(case: Path) -> Path:
    return next(p for p in sorted(case.iterdir()) if p.name.startswith("live."))


class _Compacted(SnapshotSource):
    """The snapshot's objects as the watch cache keeps them."""

    def __init__(self, files: list[Path], namespace: str) -> None:
        super().__init__(files, namespace)
        shared = Shared()
        self.objects = {ref: compact(obj, shared) for ref, obj in self.objects.items()}
        self._cluster = {key: compact(obj, shared) for key, obj in self._cluster.items()}


def _detect(repo: Path, live: Path, source_type: type[SnapshotSource]) -> Any:
    loaded = load_installation(repo, "t")
    source = source_type([live], loaded.config.namespace or "default")
    return detect_live(loaded.config, loaded.manifests, source, NOW)


@pytest.mark.parametrize("name", CASES)
def test_detection_over_the_compact_form_equals_the_full_objects(name: str, tmp_path: Path) -> None:
    case = PAIRS / name
    shutil.copytree(case / "hosts", tmp_path / "hosts")
    full = _detect(tmp_path, _live_file(case), SnapshotSource)
    small = _detect(tmp_path, _live_file(case), _Compacted)
    assert small == full
    assert full.checked or full.errors  # the pair was compared at all


def _objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in CASES:
        source = SnapshotSource([_live_file(PAIRS / name)], "default")
        out += source.objects.values()
    out += [json.loads((OBSERVED / name).read_text()) for name in REAL]
    return out


def test_the_compact_form_compares_as_the_object_and_leaves_it_unchanged() -> None:
    objects = _objects()
    assert len(objects) > 40
    shared = Shared()
    for obj in objects:
        before = copy.deepcopy(obj)
        small = compact(obj, shared)
        assert obj == before  # the decoded object is not modified (it may be shared by the caller)
        assert normalize(small) == normalize(obj)
        assert _digest(small) == _digest(obj)
        assert "status" not in small and "creationTimestamp" not in small.get("metadata", {})
        meta = small.get("metadata", {})
        assert meta.get("managedFields") == obj.get("metadata", {}).get("managedFields")  # every entry kept
        for key in ("resourceVersion", "uid", "generation"):
            assert meta.get(key) == obj.get("metadata", {}).get(key)
        # every annotation kept; the last-applied configuration packed, read back whole
        notes = obj.get("metadata", {}).get("annotations")
        held = meta.get("annotations")
        assert (None if held is None else
                {k: v.text() if isinstance(v, PackedText) else v for k, v in held.items()}) == notes
        assert last_applied(small) == last_applied(obj)


def test_a_long_last_applied_configuration_is_held_packed() -> None:
    """The annotation is a copy of the manifest, the longest string of most objects, read only
    for an object with differences: held compressed against the first one of its kind."""
    applied = json.loads((OBSERVED / "configmap-after-apply.json").read_text())
    text = applied["metadata"]["annotations"][LAST_APPLIED]
    assert len(text) > PACK_OVER
    shared = Shared()
    first, second = compact(applied, shared), compact(copy.deepcopy(applied), shared)
    packed = first["metadata"]["annotations"][LAST_APPLIED]
    assert isinstance(packed, PackedText) and packed.text() == text
    assert packed == second["metadata"]["annotations"][LAST_APPLIED]  # the same text, the same bytes
    other = copy.deepcopy(applied)
    other["metadata"]["annotations"][LAST_APPLIED] = text.replace('"data"', '"data" ')
    assert compact(other, shared)["metadata"]["annotations"][LAST_APPLIED] != packed
    assert len(packed._packed) < len(text) // 3  # against the first of its kind: the same text, some bytes


def test_equal_managed_fields_are_held_once() -> None:
    applied = json.loads((OBSERVED / "configmap-after-apply.json").read_text())
    other = copy.deepcopy(applied)
    other["metadata"]["name"] = "another"
    shared = Shared()
    a, b = compact(applied, shared), compact(other, shared)
    assert a["metadata"]["managedFields"] is b["metadata"]["managedFields"]
    assert a["metadata"]["name"] != b["metadata"]["name"]
    edited = json.loads((OBSERVED / "configmap-after-kubectl-edit.json").read_text())
    c = compact(edited, shared)
    # the applier's entry of the edited object is another (its fields changed); the lists differ
    assert c["metadata"]["managedFields"] is not a["metadata"]["managedFields"]
    assert [e["manager"] for e in c["metadata"]["managedFields"]] == \
        [e["manager"] for e in edited["metadata"]["managedFields"]]


def test_a_full_table_is_emptied_and_sharing_starts_anew() -> None:
    applied = json.loads((OBSERVED / "configmap-after-apply.json").read_text())
    shared = Shared(limit=2)
    held = []
    for i in range(5):
        obj = copy.deepcopy(applied)
        obj["metadata"]["managedFields"][0]["time"] = f"2026-11-29T16:0{i}:00Z"  # each entry its own
        held.append(compact(obj, shared))
    assert all(len(t) <= 2 for t in (shared.trees, shared.entries, shared.lists))
    assert [h["metadata"]["managedFields"][0]["time"] for h in held] == [f"2026-11-29T16:0{i}:00Z" for i in range(5)]


def test_the_cache_keeps_the_compact_form_and_sees_the_edit_and_its_manager() -> None:
    applied = json.loads((OBSERVED / "configmap-after-apply.json").read_text())
    edited = json.loads((OBSERVED / "configmap-after-kubectl-edit.json").read_text())
    applied["status"] = {"note": "never compared"}  # a field normalization drops anyway
    ref = ObjectRef("v1", "ConfigMap", "ai", applied["metadata"]["name"])
    now = [1000.0]
    cache = LiveCache(clock=lambda: now[0])
    assert cache.put(ref, applied)
    held = cache.get(ref)
    assert held is not None and "status" not in held and held["data"] == applied["data"]
    assert not cache.put(ref, json.loads(json.dumps(applied)))  # the same content again: no change
    now[0] = 1010.0
    assert cache.put(ref, edited)
    assert "kubectl-edit" in cache.changed_by(ref)
    changed = cache.observed_since().fields[ref]
    assert ("data", "MAC_ADDRS") in changed or ("data", "M1_ADDRS") in changed


def test_a_field_the_same_in_git_is_held_as_git_s_own_and_only_then() -> None:
    live = json.loads((OBSERVED / "configmap-after-apply.json").read_text())
    git = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": live["metadata"]["name"], "labels": dict(live["metadata"].get("labels") or {})},
           "data": dict(reversed(list(live["data"].items())))}  # git's key order is its author's
    small = compact(live, Shared(), git)
    assert small["data"] is git["data"] and small["data"] == live["data"]
    if git["metadata"]["labels"]:
        assert small["metadata"]["labels"] is git["metadata"]["labels"]
    # a value of another type or content is the live one: 1 is not True, "80" is not 80
    for changed in (True, 1, 1.0, "1"):
        other = {**git, "data": {**git["data"], "PORT": changed}}
        held = compact({**live, "data": {**live["data"], "PORT": 1}}, Shared(), other)
        assert (held["data"] is other["data"]) == (type(changed) is int)
        assert held["data"]["PORT"] == 1 and type(held["data"]["PORT"]) is int


@pytest.mark.parametrize("name", CASES)
def test_detection_equals_when_the_compact_form_shares_git_s_fields(name: str, tmp_path: Path) -> None:
    case = PAIRS / name
    shutil.copytree(case / "hosts", tmp_path / "hosts")
    loaded = load_installation(tmp_path, "t")
    full = _detect(tmp_path, _live_file(case), SnapshotSource)
    source = SnapshotSource([_live_file(case)], loaded.config.namespace or "default")
    shared = Shared()
    declared = {ref: obj.data for ref, obj in loaded.manifests.objects.items()}
    source.objects = {ref: compact(obj, shared, declared.get(ref)) for ref, obj in source.objects.items()}
    source._cluster = {key: compact(obj, shared) for key, obj in source._cluster.items()}
    assert detect_live(loaded.config, loaded.manifests, source, NOW) == full
