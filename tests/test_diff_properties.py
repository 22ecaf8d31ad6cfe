"""Property tests for normalize + diff: no false drift, and every real change found exactly."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from syncer.detect.diff import compare
from syncer.model import DriftClass
from syncer.detect.normalize import get_path, normalize

keys = st.text(alphabet="abcdefghij", min_size=1, max_size=4)
scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.text(alphabet="xyz ", max_size=5))
trees = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, min_size=1, max_size=3),
                                                      st.dictionaries(keys, inner, min_size=1, max_size=3)),
                     max_leaves=12)
objects = st.dictionaries(keys, trees, min_size=1, max_size=4)


def leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in leaves(v, path + (k,))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in leaves(v, path + (i,))]
    return [path]


def with_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    live = copy.deepcopy(obj)
    meta = live.setdefault("metadata", {}) if isinstance(live.get("metadata", {}), dict) else {}
    meta.update({"uid": "u", "resourceVersion": "7", "managedFields": [{"manager": "m"}]})
    live["status"] = {"ready": True}
    return live


@settings(max_examples=150, deadline=None)
@given(objects)
def test_identical_objects_never_drift(obj: dict[str, Any]) -> None:
    obj = {"spec": obj}
    assert compare("Widget", normalize(obj), normalize(with_server_fields(obj))) == []


@settings(max_examples=150, deadline=None)
@given(objects, st.data())
def test_a_changed_leaf_is_reported_exactly_once_at_its_path(obj: dict[str, Any], data: st.DataObject) -> None:
    obj = {"spec": obj}
    path = data.draw(st.sampled_from(leaves(obj)))
    old = get_path(obj, path)
    new = data.draw(scalars.filter(lambda v: not (v == old and type(v) is type(old))))
    live = copy.deepcopy(obj)
    parent = get_path(live, path[:-1])
    parent[path[-1]] = new
    diffs = compare("Widget", normalize(obj), normalize(with_server_fields(live)))
    assert [(d.path, d.git, d.live, d.cls) for d in diffs] == [(path, old, new, DriftClass.VALUE)]


@settings(max_examples=100, deadline=None)
@given(objects, keys, scalars)
def test_live_only_fields_count_only_in_data_maps(obj: dict[str, Any], key: str, value: Any) -> None:
    git = {"data": {k: str(v) for k, v in obj.items()}, "spec": obj}
    live = copy.deepcopy(git)
    extra = "zz" + key
    live["data"][extra] = "1"
    live["spec"][extra] = value  # a server default outside the data map: not drift
    diffs = compare("ConfigMap", normalize(git), normalize(live))
    assert [(d.path, d.cls) for d in diffs] == [(("data", extra), DriftClass.ADDED)]
