"""Detection on the asgard example: pure pipeline over the snapshot, no git, no network."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT
from tests.gathered import gathered

from syncer.config import load_config
from syncer.detect.engine import detect
from syncer.gather.live import SnapshotSource
from syncer.sources.manifests import load_manifests
from syncer.model import Action, Direction, DriftClass, ObjectRef


def _detect(live: SnapshotSource, now=NOW):  # type: ignore[no-untyped-def]
    config = load_config(ROOT / "hosts" / "asgard", "asgard")
    manifests = load_manifests(ROOT, "asgard", config.namespace)
    return detect(config, gathered(config, manifests, live.objects), now)


@pytest.fixture
def live() -> SnapshotSource:
    return SnapshotSource([EXAMPLE_LIVE], "ai")


def _by(result, kind, path):  # type: ignore[no-untyped-def]
    found = [d for d in result.drifts if d.ref.kind == kind and d.path_text == path]
    assert len(found) == 1, [(d.ref, d.path_text) for d in result.drifts]
    return found[0]


def test_asgard_finds_exactly_the_real_drift(live: SnapshotSource) -> None:
    result = _detect(live)
    got = sorted((d.ref.kind, d.ref.name, d.path_text, d.cls.value, d.direction.value, d.action.value)
                 for d in result.drifts)
    assert got == [
        ("ConfigMap", "ollama-endpoint-manager", "data.M1_ADDRS", "value", "cluster", "write"),
        ("ConfigMap", "ollama-endpoint-manager", "data.MAC_ADDRS", "value", "cluster", "write"),
        ("Endpoints", "m1-ollama", "subsets", "pick", "cluster", "write"),
        ("Endpoints", "mac-ollama", "subsets", "pick", "cluster", "write"),
    ]
    assert result.errors == ()
    assert len(result.checked) == 9


def test_value_level_detail_and_provenance(live: SnapshotSource) -> None:
    result = _detect(live)
    mac = _by(result, "ConfigMap", "data.MAC_ADDRS")
    assert mac.detail == "+192.168.68.75 -192.168.68.58"
    assert (mac.manager, mac.changed_at) == ("kubectl-edit", "2026-08-20T09:14:00Z")
    eps = {d.ref.name: d for d in result.drifts if d.ref.kind == "Endpoints"}
    assert eps["mac-ollama"].git == "192.168.68.58" and eps["mac-ollama"].live == "192.168.68.75"
    assert eps["mac-ollama"].manager == "ollama-endpoint-manager"
    assert eps["mac-ollama"].changed_at == "2026-08-21T08:03:24Z"


def test_json_document_has_the_contract_keys(live: SnapshotSource) -> None:
    doc = json.loads(json.dumps(_detect(live).to_json()))
    assert doc["installation"] == "asgard" and doc["in_sync"] is False
    for item in doc["drifts"]:
        for key in ("kind", "namespace", "name", "file", "path", "git", "live", "direction", "class",
                    "manager", "changed_at", "action"):
            assert key in item
    assert {d["file"] for d in doc["drifts"]} == {"hosts/asgard/ollama-endpoint-manager.yaml",
                                                  "hosts/asgard/ollama-backends.yaml"}


def _mutate(live: SnapshotSource, kind: str, name: str) -> dict:  # type: ignore[type-arg]
    ref = ObjectRef("apps/v1" if kind == "Deployment" else "v1", kind, "ai", name)
    live.objects[ref] = copy.deepcopy(live.objects[ref])
    return live.objects[ref]


def test_cleared_endpoints_is_reported_never_written(live: SnapshotSource) -> None:
    ep = _mutate(live, "Endpoints", "mac-ollama")
    ep.pop("subsets")
    d = [d for d in _detect(live).drifts if d.ref.name == "mac-ollama"][0]
    assert (d.cls, d.action) == (DriftClass.CLEARED, Action.REPORT)
    assert "no ready address" in d.reason


def test_undeclared_address_is_reported(live: SnapshotSource) -> None:
    ep = _mutate(live, "Endpoints", "m1-ollama")
    ep["subsets"][0]["addresses"][0]["ip"] = "192.168.68.200"
    d = [d for d in _detect(live).drifts if d.ref.name == "m1-ollama"][0]
    assert (d.cls, d.action) == (DriftClass.UNDECLARED, Action.REPORT)


def test_fresh_pick_waits_for_stable_for(live: SnapshotSource) -> None:
    just_now = NOW - timedelta(minutes=3)
    ep = _mutate(live, "Endpoints", "mac-ollama")
    for entry in ep["metadata"]["managedFields"]:
        if entry["manager"] == "ollama-endpoint-manager":
            entry["time"] = just_now.strftime("%Y-%m-%dT%H:%M:%SZ")
    d = [d for d in _detect(live).drifts if d.ref.name == "mac-ollama"][0]
    assert (d.cls, d.action) == (DriftClass.PICK, Action.WAIT)
    assert d.reason == "held 3m00s of 10m00s"


def test_unknown_change_time_waits(live: SnapshotSource) -> None:
    ep = _mutate(live, "Endpoints", "mac-ollama")
    ep["metadata"].pop("managedFields")
    d = [d for d in _detect(live).drifts if d.ref.name == "mac-ollama"][0]
    assert d.action is Action.WAIT and d.changed_at is None


def test_git_side_edit_is_pending_apply_not_reverted(live: SnapshotSource, tmp_path: Path) -> None:
    # git moved M1_ADDRS after the last apply; the cluster still has the applied value.
    cm = _mutate(live, "ConfigMap", "ollama-endpoint-manager")
    cm["data"]["M1_ADDRS"] = "100.127.6.20"  # equals last-applied: the cluster did not move
    cm["data"]["MAC_ADDRS"] = "192.168.68.58 100.115.97.90"
    config = load_config(ROOT / "hosts" / "asgard", "asgard", "x")
    manifests = load_manifests(ROOT, "asgard", "ai")
    ref = ObjectRef("v1", "ConfigMap", "ai", "ollama-endpoint-manager")
    # A copy: the parse cache hands the same objects to every later load of this checkout.
    obj = replace(manifests.objects[ref], data=copy.deepcopy(manifests.objects[ref].data))
    obj.data["data"]["M1_ADDRS"] = "100.127.6.21"  # a human's commit, not applied yet
    manifests = replace(manifests, objects={**manifests.objects, ref: obj})
    result = detect(config, gathered(config, manifests, live.objects), NOW)
    d = [d for d in result.drifts if d.path_text == "data.M1_ADDRS"][0]
    assert (d.direction, d.action) == (Direction.GIT, Action.REPORT)
    assert "pending apply" in d.reason


def test_key_added_live_counts(live: SnapshotSource) -> None:
    cm = _mutate(live, "ConfigMap", "ollama-endpoint-manager")
    cm["data"]["NEW_ADDRS"] = "10.0.0.7"
    d = _by(_detect(live), "ConfigMap", "data.NEW_ADDRS")
    assert (d.cls, d.direction, d.action) == (DriftClass.ADDED, Direction.CLUSTER, Action.WRITE)
    assert d.edits[0].add is True


def test_object_absent_live_is_removed_not_error(live: SnapshotSource) -> None:
    del live.objects[ObjectRef("v1", "Service", "ai", "m1-ollama")]
    d = _by(_detect(live), "Service", "")
    assert (d.cls, d.action) == (DriftClass.REMOVED, Action.REPORT)


def test_no_base_means_unknown_direction(live: SnapshotSource) -> None:
    # No last-applied, no record, and no managedFields (a stripped export): nothing says who moved.
    cm = _mutate(live, "ConfigMap", "ollama-endpoint-manager")
    del cm["metadata"]["annotations"]
    del cm["metadata"]["managedFields"]
    d = _by(_detect(live), "ConfigMap", "data.MAC_ADDRS")
    assert d.direction is Direction.UNKNOWN and d.action is Action.WRITE
    assert "never committed directly" in d.reason
    assert d.base == "none"


def test_without_last_applied_the_field_owner_decides(live: SnapshotSource) -> None:
    # Server-side apply, Helm, Argo CD leave no annotation: managedFields still say kubectl-edit wrote it.
    cm = _mutate(live, "ConfigMap", "ollama-endpoint-manager")
    del cm["metadata"]["annotations"]
    d = _by(_detect(live), "ConfigMap", "data.MAC_ADDRS")
    assert (d.direction, d.action, d.base, d.manager) == (Direction.CLUSTER, Action.WRITE, "ownership", "kubectl-edit")
    assert "kubectl-edit" in d.base_why and "not an applier" in d.base_why


def test_server_defaults_and_ignore_rules_do_not_count(live: SnapshotSource) -> None:
    dep = _mutate(live, "Deployment", "ollama-endpoint-manager")
    dep["spec"]["replicas"] = 0  # ignored by syncer.conf pointer /spec/replicas
    assert not [d for d in _detect(live).drifts if d.ref.kind == "Deployment"]
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = "python:3.13-alpine"
    d = _by(_detect(live), "Deployment", "spec.template.spec.containers[0].image")
    assert d.action is Action.REPORT  # Deployment is tracked as report


def test_json_snapshot_reads_like_yaml(tmp_path: Path) -> None:
    from ruamel.yaml import YAML

    as_json = tmp_path / "live.json"
    as_json.write_text(json.dumps(YAML(typ="safe").load(EXAMPLE_LIVE.read_text()), indent=2))
    a = _detect(SnapshotSource([EXAMPLE_LIVE], "ai")).to_json()
    b = _detect(SnapshotSource([as_json], "ai")).to_json()
    assert a == b and len(a["drifts"]) == 4


def test_normalize_leaves_the_live_object_alone(live: SnapshotSource) -> None:
    from syncer.detect.normalize import normalize

    obj = live.objects[ObjectRef("v1", "ConfigMap", "ai", "ollama-endpoint-manager")]
    before = copy.deepcopy(obj)
    out = normalize(obj)
    assert obj == before
    assert "managedFields" not in out["metadata"] and "annotations" not in out["metadata"]


def test_the_deciding_base_and_a_set_aside_annotation_are_in_every_output(live: SnapshotSource) -> None:
    from syncer.writeback.report import pr_body, render_json, render_text

    # The editor's search-and-replace also rewrote the annotation, and kubectl-edit owns it now.
    cm = _mutate(live, "ConfigMap", "ollama-endpoint-manager")
    ann = "kubectl.kubernetes.io/last-applied-configuration"
    cm["metadata"]["annotations"][ann] = cm["metadata"]["annotations"][ann].replace("192.168.68.58", "192.168.68.75")
    for e in cm["metadata"]["managedFields"]:
        if e["manager"] == "kubectl-edit":
            e["fieldsV1"]["f:metadata"] = {"f:annotations": {f"f:{ann}": {}}}
        elif e["manager"] == "kubectl-client-side-apply":
            e["fieldsV1"]["f:metadata"] = {"f:annotations": {}}
    result = _detect(live)
    d = _by(result, "ConfigMap", "data.MAC_ADDRS")
    assert (d.direction, d.action, d.base) == (Direction.CLUSTER, Action.WRITE, "ownership")
    note = ("last-applied ignored: its annotation was last written by kubectl-edit at 2026-08-20T09:14:00Z, "
            "not by an applier")
    assert d.base_note == note
    text = render_text(result)
    assert "      base: ownership (the field is owned by kubectl-edit (Update at 2026-08-20T09:14:00Z), " \
           "not an applier)" in text
    assert f"      note: {note}" in text
    [item] = [i for i in json.loads(render_json(result))["drifts"] if i["path"] == "data.MAC_ADDRS"]
    assert (item["base"], item["base_note"]) == ("ownership", note)
    assert {i["base"] for i in json.loads(render_json(result))["drifts"] if i["kind"] == "Endpoints"} == {"last-applied"}
    body = pr_body(result, result.writable(), "syncer diff asgard")
    assert "| direction | base | field manager |" in body
    assert "| value | cluster | ownership | kubectl-edit |" in body
    assert f"- ⚠️ ConfigMap/ai/ollama-endpoint-manager: {note}" in body
