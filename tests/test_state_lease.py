"""The state record (ConfigMap, optimistic concurrency) and leader election (Lease)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from tests.test_sidecar import (  # noqa: F401 - fixtures
    CM, NS, FakeClock, _loopback_only, agreed, api_client, fake, origin_commits, seed, sidecar,
)

from tests.fakes.kube_api import FakeKubeAPI
from syncer.model import ObjectRef
from syncer.sidecar.lease import LeaderElector
from syncer.sidecar.state import ConfigMapStore
from syncer.writeback.deliver import Mode

REF = ObjectRef("v1", "ConfigMap", NS, "ollama-endpoint-manager")
SECRET = ObjectRef("v1", "Secret", NS, "token")
LEASES = "/apis/coordination.k8s.io/v1/namespaces/ai/leases"


def stored(fake: FakeKubeAPI, key: str = "asgard.json") -> Any:
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    return json.loads(cm["data"][key]) if cm else None


def writes(fake: FakeKubeAPI, path: str) -> list[tuple[str, Any]]:
    out = []
    for r in fake.requests:
        if r.path.startswith(path) and r.method in ("POST", "PUT"):
            out.append((r.method, json.loads(r.body)["metadata"].get("resourceVersion")))
    return out


# -- state -----------------------------------------------------------------------------


def test_state_is_created_then_replaced_with_its_resource_version(fake: FakeKubeAPI, tmp_path: Path) -> None:
    api = api_client(fake, tmp_path)
    store = ConfigMapStore(api, NS, "asgard")
    store.refresh()
    assert store.base(REF) is None
    data = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": REF.name, "namespace": NS},
            "data": {"A": "1"}}
    assert store.record({REF: data}, keep=[REF])
    assert stored(fake) == {"v1/ConfigMap/ai/ollama-endpoint-manager": data}
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    assert cm is not None and cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "syncer"
    rv = cm["metadata"]["resourceVersion"]
    assert not store.record({REF: data}, keep=[REF])  # unchanged: no write at all
    assert store.record({REF: {**data, "data": {"A": "2"}}}, keep=[REF])
    assert writes(fake, "/api/v1/namespaces/ai/configmaps") == [("POST", None), ("PUT", rv)]
    assert store.base(REF) == {**data, "data": {"A": "2"}}
    again = ConfigMapStore(api, NS, "asgard")  # a restart reads it back
    again.refresh()
    assert again.base(REF) == {**data, "data": {"A": "2"}}


def test_pushed_branch_heads_are_recorded_with_the_proposals_and_survive_a_restart(fake: FakeKubeAPI,
                                                                                   tmp_path: Path) -> None:
    api = api_client(fake, tmp_path)
    store = ConfigMapStore(api, NS, "asgard")
    store.refresh()
    assert store.pushed_heads() is None  # never recorded: sync_pr falls back to the commit emails
    data = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": REF.name, "namespace": NS},
            "data": {"A": "1"}}
    assert store.record({REF: data}, keep=[REF])
    assert "pushed" not in stored(fake) and store.pushed_heads() is None
    heads = [f"{n:040x}" for n in range(1, 11)]
    assert store.propose([], head=heads[0])  # one write: the head is the whole change
    assert stored(fake)["pushed"] == heads[:1]
    assert not store.propose([], head=heads[0])  # recorded already: no write
    for head in heads[1:]:
        store.propose([], head=head)
    assert store.pushed_heads() == heads[-8:]  # the newest few
    assert store.record({REF: {**data, "data": {"A": "2"}}}, keep=[REF])  # recording agreement keeps them
    again = ConfigMapStore(api, NS, "asgard")  # a restart, or the next leader, reads them back
    again.refresh()
    assert again.pushed_heads() == heads[-8:] and again.base(REF) == {**data, "data": {"A": "2"}}


def test_a_concurrent_write_is_detected_and_redone_at_the_next_pass(fake: FakeKubeAPI, tmp_path: Path) -> None:
    api = api_client(fake, tmp_path)
    mine, theirs = ConfigMapStore(api, NS, "asgard"), ConfigMapStore(api, NS, "other")
    mine.refresh()
    theirs.refresh()
    assert theirs.record({REF: {"v": 1}}, keep=[REF])  # creates the ConfigMap
    mine.refresh()
    theirs.record({REF: {"v": 2}}, keep=[REF])  # moves it on behind our back
    assert not mine.record({REF: {"v": "mine"}}, keep=[REF])  # 409: re-read, no second write now
    assert mine.record({REF: {"v": "mine"}}, keep=[REF])  # next pass
    assert stored(fake) == {"v1/ConfigMap/ai/ollama-endpoint-manager": {"v": "mine"}}
    assert stored(fake, "other.json") == {"v1/ConfigMap/ai/ollama-endpoint-manager": {"v": 2}}  # kept
    assert [m for m, _ in writes(fake, "/api/v1/namespaces/ai/configmaps")] == ["POST", "PUT", "PUT", "PUT"]


def test_secrets_are_never_recorded_and_undeclared_objects_dropped(fake: FakeKubeAPI, tmp_path: Path) -> None:
    store = ConfigMapStore(api_client(fake, tmp_path), NS, "asgard")
    store.refresh()
    other = ObjectRef("v1", "ConfigMap", NS, "gone")
    assert store.record({REF: {"v": 1}, other: {"v": 2}, SECRET: {"data": {"t": "c2VjcmV0"}}}, keep=[REF, other, SECRET])
    assert sorted(stored(fake)) == ["v1/ConfigMap/ai/gone", "v1/ConfigMap/ai/ollama-endpoint-manager"]
    assert store.record({}, keep=[REF])
    assert sorted(stored(fake)) == ["v1/ConfigMap/ai/ollama-endpoint-manager"]


@pytest.mark.parametrize("with_state", [True, False])
def test_the_record_gives_a_direction_across_restarts(agreed: Path, fake: FakeKubeAPI, tmp_path: Path,
                                                      with_state: bool) -> None:
    # Created (not applied: no last-applied annotation to go by) after git's commit, as in life:
    # git's history must not mistake the commit for a change made since.
    seed(fake, agreed, applied=False, at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    clock = FakeClock(datetime(2026, 8, 21, 7, 0, tzinfo=timezone.utc))
    kw: dict[str, Any] = dict(mode=Mode.COMMIT, clock=clock, state_configmap="syncer-state" if with_state else None)
    first = sidecar(fake, agreed, tmp_path, "first", **kw)
    first.start(run_loop=False)
    assert first.loop.step() is not None
    first.stop()
    assert (stored(fake) is not None) is with_state
    fake.patch(*CM, {"data": {"INTERVAL_SECONDS": "30"}}, manager="kubectl-edit")
    second = sidecar(fake, agreed, tmp_path, "second", **kw)  # a new process
    second.start(run_loop=False)
    report = second.loop.step()
    second.stop()
    assert report is not None and report.outcome is not None
    [drift] = report.outcome.result.drifts
    # With the record, it decides (an equal value is direct evidence). Without it, managedFields
    # still say kubectl-edit (not an applier) moved the field (issue #11): also a cluster move.
    assert (drift.direction.value, drift.base) == ("cluster", "record" if with_state else "ownership"), drift.base_why
    assert report.outcome.commit is not None and len(origin_commits(agreed)) == 3


# -- lease -----------------------------------------------------------------------------


def electors(fake: FakeKubeAPI, tmp_path: Path) -> tuple[LeaderElector, LeaderElector, FakeClock, FakeClock]:
    api = api_client(fake, tmp_path)
    ca, cb = FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc)), FakeClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    a = LeaderElector(api, NS, "syncer-asgard", "pod-a", monotonic=ca, wall=ca)
    b = LeaderElector(api, NS, "syncer-asgard", "pod-b", monotonic=cb, wall=cb)
    return a, b, ca, cb


def lease(fake: FakeKubeAPI) -> dict[str, Any]:
    found = fake.get("coordination.k8s.io/v1", "Lease", NS, "syncer-asgard")
    assert found is not None
    return dict(found["spec"])


def test_one_replica_holds_the_lease_and_renews_it_with_put(fake: FakeKubeAPI, tmp_path: Path) -> None:
    a, b, ca, cb = electors(fake, tmp_path)
    assert a.try_acquire_or_renew() and a.is_leader()
    assert not b.try_acquire_or_renew() and not b.is_leader()
    spec = lease(fake)
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == ("pod-a", 15, 0)
    fake.clear_requests()
    ca.advance(5)
    assert a.try_acquire_or_renew()
    [(method, rv)] = writes(fake, LEASES)
    assert method == "PUT" and rv is not None and fake.count("GET", LEASES) == 0  # renewal costs one request
    ca.advance(11)  # no renewal for longer than the renew deadline (10 s): stop acting as leader
    assert not a.is_leader()


def test_an_expired_lease_is_taken_over_on_the_observers_own_clock(fake: FakeKubeAPI, tmp_path: Path) -> None:
    a, b, ca, cb = electors(fake, tmp_path)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    cb.advance(14)
    assert not b.try_acquire_or_renew()  # the record has not changed for 14 s: not expired yet
    cb.advance(2)
    assert b.try_acquire_or_renew() and b.is_leader()
    spec = lease(fake)
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("pod-b", 1)
    ca.advance(16)
    assert not a.try_acquire_or_renew() and not a.is_leader()  # 409, then sees pod-b's fresh record


def test_releasing_hands_over_at_once(fake: FakeKubeAPI, tmp_path: Path) -> None:
    a, b, ca, cb = electors(fake, tmp_path)
    changes: list[bool] = []
    a.on_change = changes.append
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert lease(fake)["holderIdentity"] == "" and changes == [True, False]
    assert b.try_acquire_or_renew()  # no waiting for expiry


def test_losing_the_race_for_a_free_lease_is_a_409_not_two_leaders(fake: FakeKubeAPI, tmp_path: Path) -> None:
    a, b, ca, cb = electors(fake, tmp_path)
    assert a.try_acquire_or_renew()
    a.release()

    class Racer(LeaderElector):
        def _put(self, lease_obj: dict[str, Any], spec: dict[str, Any]) -> bool:
            assert a.try_acquire_or_renew()  # a takes the free Lease between our GET and our PUT
            return super()._put(lease_obj, spec)

    racer = Racer(api_client(fake, tmp_path), NS, "syncer-asgard", "pod-b", monotonic=cb, wall=cb)
    assert not racer.try_acquire_or_renew()
    assert a.is_leader() and lease(fake)["holderIdentity"] == "pod-a"
    assert fake.count("PUT", LEASES, status=409) == 1


def test_the_same_record_text_is_parsed_once_and_a_refusal_clears(fake: FakeKubeAPI, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import syncer.sidecar.state as state

    parsed: list[str] = []
    real = state.check_json  # what every parse of a record's text begins with
    monkeypatch.setattr(state, "check_json", lambda text, where, **kw: parsed.append(text) or real(text, where, **kw))
    store = ConfigMapStore(api_client(fake, tmp_path), NS, "asgard")
    data = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": REF.name, "namespace": NS},
            "data": {"A": "1"}}
    store.refresh()  # no ConfigMap yet: nothing to parse
    assert store.record({REF: data}, keep=[REF])
    store.refresh()  # what it wrote itself: not parsed again
    store.refresh()
    assert parsed == [] and store.base(REF) == data
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    assert cm is not None
    # Someone else's record (a proposal key that is no path among them): parsed once, bad key dropped.
    fake.put({**cm, "data": {"asgard.json": json.dumps({
        "v1/ConfigMap/ai/ollama-endpoint-manager": data,
        "proposed": {"v1/ConfigMap/ai/ollama-endpoint-manager": {'["data","A"]': ["1"], "not json": ["x"],
                                                                  "{}": ["y"]}}})}})
    store.refresh()
    store.refresh()
    assert len(parsed) == 1 and store.proposed(REF) == {("data", "A"): ["1"]}
    # A refused record, then an empty one: the refusal does not outlive it.
    fake.put({**cm, "data": {"asgard.json": "[" * 500}})
    store.refresh()
    assert store.rejected is not None and store.base(REF) is None
    fake.put({**cm, "data": {}})
    store.refresh()
    assert store.rejected is None


def _many(n: int, filler: str = "") -> dict[ObjectRef, dict[str, Any]]:
    """``n`` ConfigMaps as git declares them (about 400 bytes of JSON each, like bench/gen's)."""
    out = {}
    for i in range(n):
        ref = ObjectRef("v1", "ConfigMap", NS, f"app-{i:05d}")
        out[ref] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": ref.name, "namespace": NS, "labels": {"app.kubernetes.io/name": f"app-{i:05d}",
                                                          "app.kubernetes.io/part-of": "shop"}},
            "data": {"UPSTREAM_ADDRS": f"10.{i // 250}.{i % 250}.1 10.{i // 250}.{i % 250}.2",
                     "LOG_LEVEL": "info", "TIMEOUT_SECONDS": "30", "FILLER": filler or f"replica-{i}"}}
    return out


def test_a_record_of_5000_objects_fits_the_configmap_compressed(fake: FakeKubeAPI, tmp_path: Path) -> None:
    """Was: the record was plain JSON in ``data``; past ~2,700 objects it broke the apiserver's
    1 MiB ConfigMap limit (the fake now enforces it as the real one does) and every pass
    failed to record. Large records are gzip in ``binaryData``; small ones stay readable."""
    import base64
    import gzip

    api = api_client(fake, tmp_path)
    store = ConfigMapStore(api, NS, "asgard")
    store.refresh()
    small = _many(10)
    assert store.record(small, keep=small)
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    assert cm is not None and "asgard.json" in cm["data"] and not cm.get("binaryData")
    objects = _many(5000)
    plain = len(json.dumps({str(r): d for r, d in objects.items()}))
    assert plain > 1024 * 1024  # this record would not fit uncompressed
    assert store.record(objects, keep=objects)
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    assert cm is not None and "asgard.json" not in (cm.get("data") or {})
    packed = cm["binaryData"]["asgard.json.gz"]
    assert len(packed) < plain // 10
    text = gzip.decompress(base64.b64decode(packed)).decode()  # what an operator can read with base64 -d | gunzip
    assert json.loads(text)["v1/ConfigMap/ai/app-04999"] == objects[ObjectRef("v1", "ConfigMap", NS, "app-04999")]
    again = ConfigMapStore(api, NS, "asgard")  # a restart, or the next leader, reads it back
    again.refresh()
    assert again.rejected is None
    assert again.base(ObjectRef("v1", "ConfigMap", NS, "app-02500")) == objects[ObjectRef("v1", "ConfigMap", NS,
                                                                                           "app-02500")]
    assert again.record(small, keep=small)  # shrunk: back to readable JSON, the packed key removed
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    assert cm is not None and "asgard.json" in cm["data"] and "asgard.json.gz" not in (cm.get("binaryData") or {})


def test_a_record_too_large_even_compressed_is_one_clear_error(fake: FakeKubeAPI, tmp_path: Path) -> None:
    import os

    from syncer.errors import ClusterError

    store = ConfigMapStore(api_client(fake, tmp_path), NS, "asgard")
    store.refresh()
    noisy = {r: {**d, "data": {"NOISE": os.urandom(300).hex()}} for r, d in _many(3000).items()}
    with pytest.raises(ClusterError, match=r"the record of 3000 objects takes \d+ bytes \(compressed\), more than "
                                           r"the 1048576 a ConfigMap holds; not written") as info:
        store.record(noisy, keep=noisy)
    assert not info.value.transient
    assert fake.get("v1", "ConfigMap", NS, "syncer-state") is None  # nothing sent that the apiserver would refuse


def test_a_gzip_bomb_in_the_record_is_refused_unexpanded(fake: FakeKubeAPI, tmp_path: Path) -> None:
    import base64
    import gzip

    bomb = gzip.compress(b'{"a":"' + b"0" * (80 * 1024 * 1024) + b'"}')
    assert len(bomb) < 200 * 1024
    fake.put({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "syncer-state", "namespace": NS},
              "binaryData": {"asgard.json.gz": base64.b64encode(bomb).decode()}})
    store = ConfigMapStore(api_client(fake, tmp_path), NS, "asgard")
    store.refresh()
    from syncer.sidecar.state import MAX_RECORD_JSON  # 32 MiB since issue #17's audit (was 64 MiB)

    assert store.rejected is not None and f"expands to more than {MAX_RECORD_JSON} bytes" in store.rejected
    assert store.base(REF) is None


def test_the_record_is_held_as_packed_texts_and_written_as_the_whole_json(fake: FakeKubeAPI, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Between writes the store holds each object's JSON text packed, never a parsed copy (at
    50,000 objects copies were tens of MiB); the record it writes is still the JSON of the
    whole map, and a record read back (a restart) is read an entry at a time."""
    import base64
    import gzip

    import syncer.sidecar.state as state

    api = api_client(fake, tmp_path)
    store = ConfigMapStore(api, NS, "asgard")
    store.refresh()
    objects = _many(3000)
    assert store.record(objects, keep=objects)
    doc = {f"v1/ConfigMap/{r.namespace}/{r.name}": d for r, d in objects.items()}
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    assert cm is not None
    text = gzip.decompress(base64.b64decode(cm["binaryData"]["asgard.json.gz"])).decode()
    assert text == json.dumps(doc, sort_keys=True, separators=(",", ":"))
    held = list(store._records.values())
    assert all(type(packed) is bytes and len(packed) < 100 for packed, _ in held)
    # The same git objects again: known by identity, not serialized again, not written.
    made: list[object] = []
    real = state.recordtext.canonical
    monkeypatch.setattr(state.recordtext, "canonical", lambda v: made.append(v) or real(v))
    assert not store.record(objects, keep=objects) and made == []
    # Equal copies: serialized and compared as text, not written.
    assert not store.record({r: json.loads(json.dumps(d)) for r, d in objects.items()}, keep=objects)
    assert len(made) == len(objects)
    # An object not agreed this pass keeps its text, not the object it came from.
    one = next(iter(objects))
    assert not store.record({one: objects[one]}, keep=objects)
    assert sum(source is not None for _, source in store._records.values()) == 1
    monkeypatch.undo()
    # A restart reads it back entry by entry: packed texts again, the same bases.
    again = ConfigMapStore(api, NS, "asgard")
    again.refresh()
    assert all(type(packed) is bytes and source is None for packed, source in again._records.values())
    assert again.base(one) == objects[one] and again.base(REF) is None
    changed = {**objects, one: {**objects[one], "data": {"A": "2"}}}
    assert again.record(changed, keep=changed)
    cm = fake.get("v1", "ConfigMap", NS, "syncer-state")
    assert cm is not None
    text = gzip.decompress(base64.b64decode(cm["binaryData"]["asgard.json.gz"])).decode()
    assert json.loads(text) == {**doc, f"v1/ConfigMap/{NS}/{one.name}": changed[one]}
