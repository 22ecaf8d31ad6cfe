"""Who changed a field and when (``detect.provenance``), as the real API server records it: an
entry's time moves only when its manager's set of fields changes, so the watch's own sight of a
field's change corrects it; the watch's event line names the manager of the field that changed;
an applier credited with a value it never applied (``kubectl scale`` on v1.20) is "attribution
uncertain", in the JSON, the text and the PR.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLE_LIVE, NOW, ROOT

from syncer.detect.provenance import changed_paths, of_field, seen_at
from syncer.gather.live import SnapshotSource
from syncer.model import ObjectRef, Observed
from syncer.sidecar.livecache import LiveCache
from syncer.writeback.deliver import dry_run
from syncer.writeback.report import pr_body, render_text

CM = ObjectRef("v1", "ConfigMap", "ai", "ollama-endpoint-manager")
T0 = datetime(2026, 8, 25, 10, 0, tzinfo=timezone.utc)


def test_changed_paths_are_the_leaves_that_differ_and_lists_whole() -> None:
    old = {"data": {"A": "1", "B": "1"}, "subsets": [{"addresses": [{"ip": "1"}]}]}
    new = {"data": {"A": "2", "B": "1", "C": "x"}, "subsets": [{"addresses": [{"ip": "2"}]}]}
    assert changed_paths(old, new) == [("data", "A"), ("data", "C"), ("subsets",)]
    times = {("data", "A"): T0, ("subsets",): T0 + timedelta(minutes=1)}
    assert seen_at(times, ("data", "A")) == T0
    assert seen_at(times, ("data",)) == T0  # a map the drift is about: the newest change inside it
    assert seen_at(times, ("subsets", 0, "addresses")) == T0 + timedelta(minutes=1)  # inside a list changed whole
    assert seen_at(times, ("data", "B")) is None


def test_a_second_edit_by_the_same_manager_carries_its_own_time_as_the_watch_saw_it() -> None:
    """kube-apiserver keeps kubectl-edit's entry time at the first edit when the second edit
    touches the same field (tests/realapi/test_realapi_provenance.py): the watch saw the second."""
    objects = SnapshotSource([EXAMPLE_LIVE], "ai").objects
    clock = [T0.timestamp()]
    cache = LiveCache(clock=lambda: clock[0])
    for ref, obj in objects.items():
        cache.put(ref, obj)
    again = copy.deepcopy(objects[CM])
    again["data"]["MAC_ADDRS"] = "192.168.68.76 100.115.97.90"  # kubectl edit again: managedFields unchanged
    clock[0] += 3600
    cache.put(CM, again)
    observed = cache.observed_since()
    assert isinstance(observed, Observed) and list(observed.fields[CM]) == [("data", "MAC_ADDRS")]
    assert cache.changed_by(CM) == ("kubectl-edit",)

    out = dry_run(ROOT, "asgard", cache, NOW, "syncer diff asgard", observed_since=observed)
    by_path = {d.path_text: d for d in out.result.drifts if d.ref == CM}
    assert by_path["data.MAC_ADDRS"].manager == "kubectl-edit"
    assert by_path["data.MAC_ADDRS"].changed_at == "2026-08-25T11:00:00Z"  # the second edit, not 2026-08-20
    assert by_path["data.M1_ADDRS"].changed_at == "2026-08-20T09:14:00Z"  # unchanged since: the server's time

    # A one-shot run has no watch: managedFields' time is all there is.
    out = dry_run(ROOT, "asgard", SnapshotSource([EXAMPLE_LIVE], "ai"), NOW, "syncer diff asgard")
    assert {d.path_text: d.changed_at for d in out.result.drifts if d.ref == CM}["data.MAC_ADDRS"] == \
        "2026-08-20T09:14:00Z"


def test_the_event_line_names_the_manager_of_the_changed_field_not_the_newest_entry() -> None:
    objects = SnapshotSource([EXAMPLE_LIVE], "ai").objects
    cache = LiveCache()
    cache.put(CM, objects[CM])
    later = copy.deepcopy(objects[CM])
    later["data"]["PORT"] = "11435"  # PORT is kubectl-client-side-apply's (applied), not kubectl-edit's
    later["metadata"]["managedFields"].append({"manager": "someone-newer", "operation": "Update",
                                               "time": "2026-09-01T00:00:00Z", "apiVersion": "v1",
                                               "fieldsType": "FieldsV1",
                                               "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}})
    cache.put(CM, later)
    assert cache.changed_by(CM) == ("kubectl-client-side-apply",)


def scaled_deployment() -> dict[str, Any]:
    """A Deployment applied with replicas 1, then ``kubectl scale --replicas=3`` on v1.20: the
    server keeps ``spec.replicas`` owned by kubectl-client-side-apply at the apply's time."""
    applied = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ai"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}}
    live = copy.deepcopy(applied)
    live["spec"]["replicas"] = 3
    live["metadata"].update({
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied)},
        "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                           "time": "2026-08-01T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {
                               "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
                               "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {}}}}]})
    return live


def test_scale_credited_to_the_applier_is_attribution_uncertain(tmp_path: Path) -> None:
    live = scaled_deployment()
    applied = json.loads(live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    prov = of_field(live, ("spec", "replicas"), ("kubectl-client-side-apply",), applied)
    assert (prov.manager, prov.changed_at, prov.uncertain) == (None, None, True)
    assert of_field(live, ("spec", "template"), ("kubectl-client-side-apply",), applied).uncertain is False

    host = tmp_path / "hosts" / "t"
    host.mkdir(parents=True)
    (host / "syncer.conf").write_text("installation: t\nnamespace: ai\ntrack:\n  Deployment: writeback\n")
    (host / "web.yaml").write_text(json.dumps(applied))
    (tmp_path / "live.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [live]}))
    out = dry_run(tmp_path, "t", SnapshotSource([tmp_path / "live.json"], "ai"), NOW, "syncer diff t")
    [drift] = out.result.drifts
    assert drift.path_text == "spec.replicas" and drift.direction.value == "cluster"
    doc = drift.to_json()
    assert (doc["manager"], doc["changed_at"], doc["attribution"]) == (None, None, "uncertain")
    assert "attribution uncertain" in render_text(out.result)
    body = pr_body(out.result, out.written, "syncer diff t")
    row = next(line for line in body.splitlines() if "spec.replicas" in line)
    assert "attribution uncertain" in row and "kubectl-client-side-apply" not in row
