"""Gather, then detect (issue #25): detection reads nothing but the gathered ``Inputs`` (built
here directly: no API server, no git), a failed read costs its object, a bug is raised, git's
history is asked what decides a direction, and one rule says which live objects are read."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT
from tests.gathered import gathered

from syncer.detect import engine
from syncer.config import Candidates, Config, load_config
from syncer.errors import Forbidden
from syncer.gather.collect import detect_live, objects_to_read
from syncer.model import GitSays
from syncer.gather.live import SnapshotSource
from syncer.sources.manifests import Manifests, load_manifests
from syncer.sources.plain import ManifestsSource
from syncer.model import Direction, ObjectRef
from syncer.sidecar.loop import tracked_refs
from syncer.writeback.deliver import Loaded

MAC = ObjectRef("v1", "Endpoints", "ai", "mac-ollama")
CM = ObjectRef("v1", "ConfigMap", "ai", "ollama-endpoint-manager")


def _asgard() -> tuple[Config, Manifests, dict[ObjectRef, Any]]:
    config = load_config(ROOT / "hosts" / "asgard", "asgard", "hosts/asgard/syncer.conf")
    return config, load_manifests(ROOT, "asgard", config.namespace), SnapshotSource([EXAMPLE_LIVE], "ai").objects


def test_detection_of_gathered_inputs_is_the_detection_of_the_source() -> None:
    config, manifests, objects = _asgard()
    pure = engine.detect(config, gathered(config, manifests, objects), NOW)
    assert pure.drifts and pure == detect_live(config, manifests, SnapshotSource([EXAMPLE_LIVE], "ai"), NOW)


def test_a_read_refused_for_one_object_costs_that_object_only() -> None:
    config, manifests, objects = _asgard()
    inputs = gathered(config, manifests, objects)
    refused = dataclasses.replace(inputs, live={**inputs.live, MAC: Forbidden("endpoints is forbidden")})
    result = engine.detect(config, refused, NOW)
    assert result.unreadable == (MAC,) and MAC not in result.checked
    about = [e.message for e in (*result.errors, *result.warnings) if str(MAC) in e.message]
    assert len(about) == 1 and about[0].startswith(f"{MAC}: syncer's account may not read it (endpoints is forbidden)")
    assert set(result.checked) == set(engine.detect(config, inputs, NOW).checked) - {MAC}


def test_a_bug_is_raised_not_reported_as_a_bad_object() -> None:
    config, manifests, objects = _asgard()
    inputs = gathered(config, manifests, objects)
    incomplete = dataclasses.replace(inputs, live={r: v for r, v in inputs.live.items() if r != MAC})
    with pytest.raises(KeyError):  # inputs that do not hold what detection reads: a bug, raised
        engine.detect(config, incomplete, NOW)


def test_git_history_is_asked_what_decides_and_its_answer_decides() -> None:
    config, manifests, objects = _asgard()
    detection = engine.Detection(config, gathered(config, manifests, objects, history={}), NOW)
    asked = [q for q in detection.compare() if q[0] == MAC]
    assert [q[1] for q in asked] == [("subsets", 0, "addresses", 0, "ip")]  # only the moved address of MAC
    unanswered = engine.detect(config, gathered(config, manifests, objects), NOW)
    moved = detection.finish({q: (GitSays.MOVED, "git changed it after the apply") for q in asked})
    mac = next(d for d in moved.drifts if d.ref == MAC and d.path == ("subsets",))
    assert (mac.direction, mac.base) == (Direction.CONFLICT, "last-applied vs git-history")
    assert "git changed it after the apply" in mac.base_why
    before = next(d for d in unanswered.drifts if d.ref == MAC and d.path == ("subsets",))
    assert before.direction is Direction.CLUSTER  # without history: the annotation alone decides
    # every other finding as without an answer, in its place
    assert [(d.ref, d.path) for d in moved.drifts] == [(d.ref, d.path) for d in unanswered.drifts]
    assert moved.checked == unanswered.checked


def test_the_sidecar_watches_what_detection_reads() -> None:
    config, manifests, _ = _asgard()
    # A candidate list bound to a Service git does not declare: nothing of it is read.
    extra = Candidates("no-such-service", "unrelated-config", "ADDRS", "ai")
    config = dataclasses.replace(config, candidates=(*config.candidates, extra))
    read = objects_to_read(config, manifests)
    assert CM in read and ObjectRef("v1", "ConfigMap", "ai", "unrelated-config") not in read
    assert tracked_refs(Loaded(config, manifests, ManifestsSource(ROOT, "asgard", config))) == set(read)


def test_a_records_base_is_read_when_first_asked_and_once() -> None:
    """The first pass compares every object, but only one with differences asks for its base:
    the others' were parsed for nothing (tens of MiB at 50,000 objects, kept as RSS)."""
    from syncer.detect.inputs import Record

    calls: list[int] = []
    record = Record(proposed={}, read=lambda: calls.append(1) or {"data": {"A": "1"}})
    assert calls == []
    assert record.base == {"data": {"A": "1"}} and record.base == {"data": {"A": "1"}} and calls == [1]
    assert Record({"data": {}}, {}).base == {"data": {}} and Record().base is None and Record().proposed == {}
