"""The Endpoints family (syncer/detect/endpoints.py): Endpoints and EndpointSlices against candidates.

Pure detection over the vanaheim example (hosts/vanaheim, whose manager writes slices) and
its snapshot examples/vanaheim-live.yaml; write-back planned on a copy of the files.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLE_LIVE, NOW, ROOT

from syncer.detect import endpoints
from syncer.gather.collect import detect_live
from syncer.gather.live import LiveSource, SnapshotSource
from syncer.model import Action, DriftClass, ObjectRef, Result
from syncer.writeback.deliver import load_installation
from syncer.writeback.plan import plan_changes

VANAHEIM_LIVE = ROOT / "examples" / "vanaheim-live.yaml"
NS = "ai"
V1 = "discovery.k8s.io/v1"
IPV4 = ObjectRef(V1, "EndpointSlice", NS, "mac-ollama-ipv4")
IPV6 = ObjectRef(V1, "EndpointSlice", NS, "mac-ollama-ipv6")
FQDN = ObjectRef(V1, "EndpointSlice", NS, "m1-ollama-fqdn")
CM = ObjectRef("v1", "ConfigMap", NS, "slice-endpoint-manager")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of hosts/vanaheim and hosts/asgard to plan edits on."""
    for name in ("vanaheim", "asgard"):
        shutil.copytree(ROOT / "hosts" / name, tmp_path / "hosts" / name)
    return tmp_path


@pytest.fixture
def live() -> SnapshotSource:
    return SnapshotSource([VANAHEIM_LIVE], NS)


def run(repo: Path, live: SnapshotSource, installation: str = "vanaheim") -> tuple[Result, dict[str, str]]:
    """Detect, then plan the writable drifts: (result, {file: new text})."""
    loaded = load_installation(repo, installation)
    result = detect_live(loaded.config, loaded.manifests, live, NOW)
    changes = plan_changes(repo, installation, result.writable(), loaded.manifests.objects)
    return result, {c.file: c.new for c in changes}


def point(live: SnapshotSource, ref: ObjectRef, *endpoints_: dict[str, Any]) -> None:
    live.objects[ref] = {**live.objects[ref], "endpoints": list(endpoints_) or None}


def ep(address: str, **conditions: bool) -> dict[str, Any]:
    return {"addresses": [address], "conditions": conditions}


def family(result: Result) -> list[tuple[str, str, str, str]]:
    return sorted((d.ref.name, d.path_text, d.cls.value, d.action.value) for d in result.drifts
                  if d.ref.kind in ("EndpointSlice", "Endpoints"))


def changed_lines(old: str, new: str) -> list[tuple[str, str]]:
    a, b = old.splitlines(), new.splitlines()
    assert len(a) == len(b), "a line was added or removed"
    return [(x, y) for x, y in zip(a, b) if x != y]


# -- pure rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(("conditions", "ready"), [
    ({}, True),  # ready absent: the API says treat as ready
    ({"ready": True}, True),
    ({"ready": False}, False),
    ({"ready": True, "serving": True, "terminating": False}, True),
    ({"ready": False, "serving": True, "terminating": True}, False),  # still serving, but leaving
    ({"serving": True, "terminating": True}, False),
    ({"serving": False}, False),
    ({"serving": True}, True),
])
def test_an_endpoint_is_ready_as_the_api_defines_it(conditions: dict[str, bool], ready: bool) -> None:
    assert endpoints.endpoint_ready({"addresses": ["10.0.0.1"], "conditions": conditions}) is ready
    assert endpoints.endpoint_ready({"addresses": ["10.0.0.1"]}) is True  # no conditions at all


def test_addresses_of_every_type_have_one_spelling() -> None:
    cands = endpoints.candidate_hosts("192.168.68.75:11434 [FD7A:115C:A1E0:0:0:0:0:5A]:11434 M1-Laptop.Tail4a2b.ts.net")
    assert cands == {"192.168.68.75", "fd7a:115c:a1e0::5a", "m1-laptop.tail4a2b.ts.net"}
    slice_ = {"endpoints": [ep("fd7a:115c:a1e0:0::5a", ready=True), ep("M1-LAPTOP.tail4a2b.ts.net"),
                            ep("10.1.1.1", ready=False)]}
    assert endpoints.ready_addresses("EndpointSlice", slice_) == ["fd7a:115c:a1e0::5a", "m1-laptop.tail4a2b.ts.net"]
    assert endpoints.address_class(endpoints.ready_addresses("EndpointSlice", slice_), cands) is DriftClass.PICK


def test_a_v1beta1_slice_reads_as_v1() -> None:
    beta = {"apiVersion": "discovery.k8s.io/v1beta1", "endpoints": [
        {"addresses": ["10.0.0.1"], "topology": {"kubernetes.io/hostname": "node-a",
                                                 "topology.kubernetes.io/zone": "z1", "rack": "r7"}}]}
    assert endpoints.as_v1(beta)["endpoints"] == [
        {"addresses": ["10.0.0.1"], "nodeName": "node-a", "zone": "z1", "deprecatedTopology": {"rack": "r7"}}]
    assert endpoints.as_v1({"endpoints": None})["endpoints"] == []


# -- the example --------------------------------------------------------------------------


def test_vanaheim_example_pick_is_one_line_with_its_comment_and_cleared_is_not_written(
        repo: Path, live: SnapshotSource) -> None:
    result, new = run(repo, live)
    assert family(result) == [("m1-ollama-fqdn", "endpoints", "cleared", "report"),
                              ("mac-ollama-ipv4", "endpoints", "pick", "write")]
    pick = next(d for d in result.drifts if d.ref == IPV4)
    assert (pick.git, pick.live, pick.manager, pick.service) == (
        "192.168.68.58", "192.168.68.75", "slice-endpoint-manager", "mac-ollama")
    cleared = next(d for d in result.drifts if d.ref == FQDN)
    assert cleared.edits == () or cleared.action is Action.REPORT
    assert "since 2026-08-21T07:58:51Z" in cleared.detail
    old = (repo / "hosts/vanaheim/ollama-backends.yaml").read_text()
    assert changed_lines(old, new["hosts/vanaheim/ollama-backends.yaml"]) == [
        ("      - 192.168.68.58   # Mac Studio, LAN", "      - 192.168.68.75   # Mac Studio, LAN")]
    assert "hosts/vanaheim/ollama-backends-ipv6.yaml" not in new


def test_candidate_names_with_a_final_dot_match_the_live_names(repo: Path, live: SnapshotSource) -> None:
    """Was: a list of FQDNs spelled with their final dot was no address list, so every live
    name was ``undeclared``; names compare without a final dot (docs/endpoints.md)."""
    live.objects[CM] = copy.deepcopy(live.objects[CM])
    live.objects[CM]["data"]["M1_ADDRS"] = "m1-laptop.tail4a2b.ts.net. m1-lan.tail4a2b.ts.net."
    point(live, FQDN, ep("m1-lan.tail4a2b.ts.net", ready=True))
    result, new = run(repo, live)
    [d] = [d for d in result.drifts if d.ref == FQDN]
    assert (d.cls, d.action, d.git, d.live) == (DriftClass.PICK, Action.WRITE, "m1-laptop.tail4a2b.ts.net",
                                                "m1-lan.tail4a2b.ts.net")
    old = (repo / "hosts/vanaheim/ollama-backends.yaml").read_text()
    assert ("      - m1-laptop.tail4a2b.ts.net   # M1 laptop, tailnet name",
            "      - m1-lan.tail4a2b.ts.net   # M1 laptop, tailnet name") in changed_lines(
        old, new["hosts/vanaheim/ollama-backends.yaml"])


def test_undeclared_slice_address_is_reported_never_written(repo: Path, live: SnapshotSource) -> None:
    point(live, IPV4, ep("10.9.8.7", ready=True))  # hand-patched
    result, new = run(repo, live)
    [d] = [d for d in result.drifts if d.ref == IPV4]
    assert (d.cls, d.action, d.live) == (DriftClass.UNDECLARED, Action.REPORT, "10.9.8.7")
    assert "hosts/vanaheim/ollama-backends.yaml" not in new


def test_slices_of_one_service_are_judged_together_each_edit_in_its_own_file(
        repo: Path, live: SnapshotSource) -> None:
    # The LAN address stops answering: the manager empties the IPv4 slice and fills the IPv6 one.
    point(live, IPV4)
    point(live, IPV6, ep("fd7a:115c:a1e0::5a", ready=True))
    result, new = run(repo, live)
    drifts = {d.ref.name: d for d in result.drifts if d.ref in (IPV4, IPV6)}
    assert {n: (d.cls.value, d.action.value) for n, d in drifts.items()} == {
        "mac-ollama-ipv4": ("pick", "write"), "mac-ollama-ipv6": ("pick", "write")}  # not "cleared"
    assert "Service mac-ollama now: fd7a:115c:a1e0::5a" in drifts["mac-ollama-ipv4"].detail
    v4 = load_installation(repo, "vanaheim")  # the edits parse back to the live addresses
    assert set(new) >= {"hosts/vanaheim/ollama-backends.yaml", "hosts/vanaheim/ollama-backends-ipv6.yaml"}
    for rel in ("hosts/vanaheim/ollama-backends.yaml", "hosts/vanaheim/ollama-backends-ipv6.yaml"):
        (repo / rel).write_text(new[rel])
    after = load_installation(repo, "vanaheim").manifests.objects
    assert endpoints.ready_addresses("EndpointSlice", after[IPV4].data) == []
    assert endpoints.ready_addresses("EndpointSlice", after[IPV6].data) == ["fd7a:115c:a1e0::5a"]
    assert "# The IPv6 slice of mac-ollama" in new["hosts/vanaheim/ollama-backends-ipv6.yaml"]
    assert v4.manifests.objects[IPV4].file == "hosts/vanaheim/ollama-backends.yaml"


def test_service_is_cleared_only_when_no_slice_has_a_ready_endpoint(repo: Path, live: SnapshotSource) -> None:
    point(live, IPV4, ep("192.168.68.58", ready=False))  # the sleeping Mac, both families
    result, new = run(repo, live)
    [d] = [d for d in result.drifts if d.ref == IPV4]
    assert (d.cls, d.action) == (DriftClass.CLEARED, Action.REPORT)
    assert "in any of the 2 slices of Service mac-ollama" in d.detail
    assert "hosts/vanaheim/ollama-backends.yaml" not in new
    # terminating but still serving is not a pick either
    point(live, IPV4, ep("192.168.68.75", ready=False, serving=True, terminating=True))
    result, _ = run(repo, live)
    assert [d.cls for d in result.drifts if d.ref == IPV4] == [DriftClass.CLEARED]


def test_a_port_change_is_its_own_value_drift_never_inside_a_pick(repo: Path, live: SnapshotSource) -> None:
    live.objects[IPV4] = {**live.objects[IPV4], "ports": [{"name": "http", "port": 11435, "protocol": "TCP"}]}
    result, new = run(repo, live)
    got = {(d.path_text, d.cls.value) for d in result.drifts if d.ref == IPV4}
    assert got == {("endpoints", "pick"), ("ports[0].port", "value")}
    pick = next(d for d in result.drifts if d.ref == IPV4 and d.cls is DriftClass.PICK)
    assert all(e.path[0] == "endpoints" for e in pick.edits)
    # Ports are tracked as EndpointSlice: stable, so the port waits for its own stableFor.
    port = next(d for d in result.drifts if d.ref == IPV4 and d.path_text == "ports[0].port")
    assert (port.action, port.live) == (Action.WRITE, 11435)
    old = (repo / "hosts/vanaheim/ollama-backends.yaml").read_text()
    assert changed_lines(old, new["hosts/vanaheim/ollama-backends.yaml"]) == [
        ("    port: 11434", "    port: 11435"),
        ("      - 192.168.68.58   # Mac Studio, LAN", "      - 192.168.68.75   # Mac Studio, LAN")]


def test_an_endpoints_port_change_is_its_own_drift_too(repo: Path) -> None:
    live = SnapshotSource([EXAMPLE_LIVE], NS)
    mac = ObjectRef("v1", "Endpoints", NS, "mac-ollama")
    obj = copy.deepcopy(live.objects[mac])
    obj["subsets"][0]["ports"][0]["port"] = 11500
    live.objects[mac] = obj
    result, new = run(repo, live, "asgard")
    got = sorted((d.path_text, d.cls.value) for d in result.drifts if d.ref == mac)
    assert got == [("subsets", "pick"), ("subsets[0].ports[0].port", "value")]
    pick = next(d for d in result.drifts if d.ref == mac and d.cls is DriftClass.PICK)
    assert all("ports" not in e.path for e in pick.edits)
    # The reconciler rewrote whole subsets (two of them now): the pick carries git's ports.
    obj = copy.deepcopy(obj)
    obj["subsets"] = [{"addresses": [{"ip": "192.168.68.75"}], "ports": [{"name": "http", "port": 11500}]},
                      {"addresses": [{"ip": "100.115.97.90"}], "ports": [{"name": "http", "port": 11434}]}]
    live.objects[mac] = obj
    result, new = run(repo, live, "asgard")
    got = sorted((d.path_text, d.cls.value) for d in result.drifts if d.ref == mac)
    assert got == [("subsets", "pick"), ("subsets[0].ports", "value")]
    pick = next(d for d in result.drifts if d.ref == mac and d.cls is DriftClass.PICK)
    [edit] = pick.edits
    assert edit.value[0]["ports"] == [{"name": "http", "port": 11434}]  # git's port, not the live one


def test_a_mirrored_slice_is_not_reported_a_second_time(repo: Path) -> None:
    # asgard's git also keeps the slice the control plane mirrors from Endpoints mac-ollama.
    mirrored = {"apiVersion": V1, "kind": "EndpointSlice", "addressType": "IPv4",
                "metadata": {"name": "mac-ollama-x7k2p", "namespace": NS, "labels": {
                    "kubernetes.io/service-name": "mac-ollama",
                    "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}},
                "ports": [{"name": "http", "port": 11434, "protocol": "TCP"}]}
    import json as _json
    declared = copy.deepcopy(mirrored)
    declared["endpoints"] = [{"addresses": ["192.168.68.58"], "conditions": {"ready": True}}]
    (repo / "hosts/asgard/mirrored.yaml").write_text(_json.dumps(declared))
    (repo / "hosts/asgard/syncer.conf").write_text(
        (repo / "hosts/asgard/syncer.conf").read_text().replace("  Endpoints: stable\n",
                                                               "  Endpoints: stable\n  EndpointSlice: stable\n"))
    live = SnapshotSource([EXAMPLE_LIVE], NS)
    ref = ObjectRef(V1, "EndpointSlice", NS, "mac-ollama-x7k2p")
    live.objects[ref] = {**mirrored, "endpoints": [{"addresses": ["192.168.68.75"], "conditions": {"ready": True}}]}
    result, _ = run(repo, live, "asgard")
    assert [d for d in result.drifts if d.ref == ref] == []
    assert [d.cls.value for d in result.drifts if d.ref.name == "mac-ollama"] == ["pick"]
    assert ref in result.checked


def test_a_v1beta1_snapshot_serves_a_v1_manifest(repo: Path) -> None:
    live = SnapshotSource([VANAHEIM_LIVE], NS)
    for ref in (IPV4, IPV6, FQDN):
        beta = ObjectRef("discovery.k8s.io/v1beta1", ref.kind, ref.namespace, ref.name)
        obj = copy.deepcopy(live.objects.pop(ref))
        obj["apiVersion"] = beta.api_version
        for e in obj.get("endpoints") or []:
            e["topology"] = {"kubernetes.io/hostname": "node-a"}
        live.objects[beta] = obj
    result, new = run(repo, live)
    assert family(result) == [("m1-ollama-fqdn", "endpoints", "cleared", "report"),
                              ("mac-ollama-ipv4", "endpoints", "pick", "write")]
    assert result.errors == ()


class _Refusing(LiveSource):
    """A live source whose API server refuses one object (a Role missing its name)."""

    def __init__(self, inner: SnapshotSource, refused: ObjectRef) -> None:
        self.inner, self.refused = inner, refused

    def get(self, ref: ObjectRef) -> Any:
        if ref == self.refused:
            from syncer.errors import ClusterError

            raise ClusterError(f"API server refused get {ref} (403): forbidden", transient=False)
        return self.inner.get(ref)

    def describe(self) -> str:
        return "refusing"


def test_a_slice_that_cannot_be_read_costs_only_itself(repo: Path, live: SnapshotSource) -> None:
    point(live, IPV4, ep("192.168.68.75", ready=True))
    loaded = load_installation(repo, "vanaheim")
    result = detect_live(loaded.config, loaded.manifests, _Refusing(live, IPV6), NOW)
    assert [(d.ref.name, d.cls.value) for d in result.drifts if d.ref == IPV4] == [("mac-ollama-ipv4", "pick")]
    assert [e.message for e in result.errors] == [f"{IPV6}: API server refused get {IPV6} (403): forbidden"]


def test_a_slice_bound_to_no_candidate_list_is_a_plain_value(repo: Path, live: SnapshotSource) -> None:
    conf = repo / "hosts/vanaheim/syncer.conf"
    conf.write_text(conf.read_text().split("candidates:")[0] + "ignore: []\n")
    result, new = run(repo, live)
    assert family(result) == [("m1-ollama-fqdn", "endpoints", "cleared", "report"),  # no ready address: still
                              ("mac-ollama-ipv4", "endpoints", "value", "write")]  # held stableFor long ago


def test_a_manifest_without_conditions_still_sees_its_endpoint_go_unready(repo: Path, live: SnapshotSource) -> None:
    backends = repo / "hosts/vanaheim/ollama-backends.yaml"
    backends.write_text(backends.read_text().replace(
        "      - m1-laptop.tail4a2b.ts.net   # M1 laptop, tailnet name\n    conditions:\n      ready: true\n",
        "      - m1-laptop.tail4a2b.ts.net   # M1 laptop, tailnet name\n"))
    result, new = run(repo, live)  # live: the same address, `ready: false`
    [d] = [d for d in result.drifts if d.ref == FQDN]
    assert (d.cls, d.action, d.git, d.live) == (DriftClass.CLEARED, Action.REPORT, "m1-laptop.tail4a2b.ts.net", None)
    assert "ready: false" not in new["hosts/vanaheim/ollama-backends.yaml"]  # only mac-ollama's pick is written
    point(live, FQDN, ep("m1-laptop.tail4a2b.ts.net", ready=True, serving=True, terminating=False))  # awake
    result, _ = run(repo, live)
    assert [d for d in result.drifts if d.ref == FQDN] == []


def test_the_order_of_a_slices_endpoints_and_addresses_means_nothing(repo: Path, live: SnapshotSource) -> None:
    backends = repo / "hosts/vanaheim/ollama-backends.yaml"
    backends.write_text(backends.read_text().replace(
        "      - 192.168.68.58   # Mac Studio, LAN\n",
        "      - 192.168.68.58   # Mac Studio, LAN\n      - 192.168.68.59   # its second port\n"
        "    conditions:\n      ready: true\n  - addresses:\n      - 192.168.68.60\n"))
    point(live, IPV4, {"addresses": ["192.168.68.60"], "conditions": {"ready": True}},
          {"addresses": ["192.168.68.59", "192.168.68.58"], "conditions": {"ready": True}})
    result, _ = run(repo, live)
    assert [d for d in result.drifts if d.ref == IPV4] == []


def test_a_slice_applied_as_v1beta1_is_a_base_in_the_v1_shape(repo: Path, live: SnapshotSource) -> None:
    import json as _json

    backends = repo / "hosts/vanaheim/ollama-backends.yaml"
    backends.write_text(backends.read_text().replace(
        "      - 192.168.68.58   # Mac Studio, LAN\n    conditions:\n      ready: true\n",
        "      - 192.168.68.58   # Mac Studio, LAN\n    conditions:\n      ready: true\n    nodeName: node-a\n"))
    obj = copy.deepcopy(live.objects.pop(IPV4))
    applied = {k: v for k, v in obj.items() if k not in ("metadata", "endpoints")}
    applied.update(apiVersion="discovery.k8s.io/v1beta1", metadata={"name": IPV4.name, "namespace": NS}, endpoints=[
        {"addresses": ["192.168.68.58"], "conditions": {"ready": True}, "topology": {"kubernetes.io/hostname": "node-a"}}])
    obj["apiVersion"] = "discovery.k8s.io/v1beta1"
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": _json.dumps(applied)}
    obj["endpoints"] = [{"addresses": ["192.168.68.75"], "conditions": {"ready": True},  # the list is replaced
                         "topology": {"kubernetes.io/hostname": "node-a"}},
                        {"addresses": ["192.168.68.58"], "conditions": {"ready": False},
                         "topology": {"kubernetes.io/hostname": "node-a"}}]
    live.objects[replace_version(IPV4)] = obj
    result, _ = run(repo, live)
    [d] = [d for d in result.drifts if d.ref == IPV4]
    assert (d.cls.value, d.direction.value, d.action.value) == ("pick", "cluster", "write")


def replace_version(ref: ObjectRef) -> ObjectRef:
    return ObjectRef("discovery.k8s.io/v1beta1", ref.kind, ref.namespace, ref.name)


def test_one_shot_sync_notifies_once_per_service_not_per_slice(tmp_path: Path, live: SnapshotSource) -> None:
    import io
    import json as _json

    from tests.conftest import git
    from tests.fakes.webhook import Receiver
    from syncer.cli import main

    work, bare = tmp_path / "work", tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    shutil.copytree(ROOT / "hosts" / "vanaheim", work / "hosts" / "vanaheim")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "vanaheim")
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    snapshot = _json.loads(_json.dumps({"apiVersion": "v1", "kind": "List", "items": list(live.objects.values())}))
    for item in snapshot["items"]:  # both of mac-ollama's slices hand-patched to addresses no list holds
        if item["metadata"]["name"] == "mac-ollama-ipv4":
            item["endpoints"] = [ep("10.9.8.7", ready=True)]
        if item["metadata"]["name"] == "mac-ollama-ipv6":
            item["endpoints"] = [ep("fd00::99", ready=True)]
    (tmp_path / "live.json").write_text(_json.dumps(snapshot))
    hook = Receiver()
    try:
        out, err = io.StringIO(), io.StringIO()
        code = main(["sync", "vanaheim", "--repo", str(work), "--live-file", str(tmp_path / "live.json"),
                     "--mode", "commit", "--notify-url", f"{hook.url}/hook"], now=NOW, stdout=out, stderr=err)
    finally:
        hook.stop()
    assert code == 0, out.getvalue() + err.getvalue()
    events = sorted((body["event"], body["summary"].split(":")[0], len(body["drifts"])) for _, body in hook.posts)
    assert events == [("drift.cleared", "Service/ai/m1-ollama", 1),
                      ("drift.undeclared", "Service/ai/mac-ollama", 2)]


def test_long_candidate_lists_parse_the_same_and_are_not_remembered() -> None:
    from syncer.detect import endpoints as ep

    short = "192.168.68.75 100.115.97.90:11434 fd7a:115c:a1e0::5a Mac-Studio.local"
    long = " ".join([short] + [f"10.0.{i // 256}.{i % 256}" for i in range(600)])  # > 4 KiB
    assert len(long) > ep._REMEMBERED_LIST
    before = ep._candidate_hosts.cache_info().currsize
    hosts = ep.candidate_hosts(long)
    assert ep._candidate_hosts.cache_info().currsize == before  # a megabyte value is never held
    assert ep.candidate_hosts(short) == {"192.168.68.75", "100.115.97.90", "fd7a:115c:a1e0::5a",
                                         "mac-studio.local"}
    assert hosts == ep.candidate_hosts(short) | {f"10.0.{i // 256}.{i % 256}" for i in range(600)}
