"""The source seam: the one dispatch, and the proof every rendering source gives an edit (each
on its own, then together; a refused edit never blocks another)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from tests.conftest import ROOT

from syncer.cache import Caches
from syncer.config import Config
from syncer.errors import ConfigError
from syncer.model import Action, Direction, Drift, DriftClass, Edit, FileError, ObjectRef
from syncer.sources.dispatch import SOURCES, source_for
from syncer.sources.kustomize import KustomizeSource
from syncer.sources.plain import ManifestsSource
from syncer.sources.source import Planner, proven

REF = ObjectRef("v1", "ConfigMap", "ns", "app")


def _drift(key: str, file: str = "hosts/t/app.yaml") -> Drift:
    return Drift(REF, file, ("data", key), "old", "new", Direction.CLUSTER, DriftClass.VALUE, Action.WRITE,
                 edits=(Edit(("data", key), "new"),))


def _plan(refuse: frozenset[str] = frozenset()) -> Planner:
    def plan(chosen: Sequence[Drift]) -> tuple[dict[str, str], list[FileError]]:
        keys = [str(d.path[1]) for d in chosen]
        bad = [k for k in keys if k in refuse]
        if bad:
            return {}, [FileError(chosen[0].file, f"{chosen[0].file}: not written: cannot edit {bad[0]}")]
        return {chosen[0].file: " ".join(sorted(keys))}, []
    return plan


def test_edits_good_together_are_proven_by_one_render() -> None:
    checked: list[str] = []

    def check(texts: Mapping[str, str], drifts: Sequence[Drift]) -> list[str | None]:
        checked.extend(texts.values())
        return [None] * len(drifts)

    a, b, c = _drift("a"), _drift("b"), _drift("c")
    got = proven([a, b, c], _plan(), check)
    assert got.drifts == (a, b, c) and got.refused == ()
    assert checked == ["a b c"]  # what is written is the whole, and the whole was checked


def test_each_edit_is_proven_alone_and_a_refused_one_blocks_no_other() -> None:
    checked: list[str] = []

    def check(texts: Mapping[str, str], drifts: Sequence[Drift]) -> list[str | None]:
        [text] = texts.values()
        checked.append(text)
        return [f"not written: {d.path_text} renders wrong" if d.path[1] == "b" else None for d in drifts]

    a, b, c = _drift("a"), _drift("b"), _drift("c")
    got = proven([a, b, c], _plan(), check)
    assert got.drifts == (a, c)
    assert got.refused == ((b, "not written: data.b renders wrong"),)
    # all together fails: one render each, then the proven ones together
    assert checked == ["a b c", "a", "b", "c", "a c"]


def test_edits_that_disagree_together_are_kept_one_by_one_in_order() -> None:
    def check(texts: Mapping[str, str], drifts: Sequence[Drift]) -> list[str | None]:
        [text] = texts.values()
        clash = "a" in text.split() and "c" in text.split()  # each renders right alone, not both
        return ["not written: a and c set one place" if clash else None for _ in drifts]

    a, b, c = _drift("a"), _drift("b"), _drift("c")
    got = proven([a, b, c], _plan(), check)
    assert got.drifts == (a, b)
    assert got.refused == ((c, "not written: a and c set one place (together with the other edits)"),)


def test_an_edit_that_cannot_be_planned_is_refused_with_the_planners_reason() -> None:
    a, b = _drift("a"), _drift("b")
    got = proven([a, b], _plan(frozenset({"a"})), lambda texts, drifts: [None] * len(drifts))
    assert got.drifts == (b,) and got.refused == ((a, "not written: cannot edit a"),)


def test_the_dispatch_asks_each_source_in_order_and_plain_files_claim_the_rest(tmp_path: Path) -> None:
    assert SOURCES[-1] is ManifestsSource
    assert isinstance(source_for(ROOT, "asgard", Config("asgard")), ManifestsSource)
    assert isinstance(source_for(ROOT, "midgard", Config("midgard")), KustomizeSource)
    overlay = tmp_path / "hosts" / "shop" / "overlays" / "prod"  # no kustomization at the top: still one
    overlay.mkdir(parents=True)
    shutil.copy(ROOT / "hosts" / "midgard" / "kustomization.yaml", overlay)
    assert source_for(tmp_path, "shop", Config("shop")).name == "kustomize"
    with pytest.raises(ConfigError, match="unknown installation 'nowhere'"):
        source_for(ROOT, "nowhere", Config("nowhere"))


def test_what_differs_between_sources_is_said_by_the_source() -> None:
    plain, rendered = source_for(ROOT, "asgard", Config("asgard")), source_for(ROOT, "midgard", Config("midgard"))
    assert (plain.proposes_files, plain.declares) == (True, "manifests")
    assert (rendered.proposes_files, rendered.declares) == (False, "objects kustomize renders")
    assert rendered.new_file_note
    obj = next(iter(plain.load(Caches()).objects.values()))
    assert plain.history_file(obj) == obj.file
    assert rendered.history_file(obj) is None
