"""What a real kube-apiserver (v1.20.2 + etcd 3.4) does with the objects syncer reads.

Every test talks to the server through the official Python client, built from a
kubeconfig that ``RealCluster.kubeconfig()`` wrote. Observed objects and error
bodies are written to ``tests/realapi/observed/`` when ``SYNCER_REALAPI_RECORD=1``,
so the fast fake server (tests/fakes/kube_api/) can be compared with reality.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from .cluster import RealCluster

pytestmark = pytest.mark.realapi

OBSERVED = Path(__file__).resolve().parent / "observed"
RECORD = os.environ.get("SYNCER_REALAPI_RECORD") == "1"
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")  # RFC 3339, whole seconds, UTC
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
WATCHED = ["ollama-endpoint-manager", "mac-ollama", "m1-ollama"]


# ----------------------------------------------------------------- helpers --
def api_from(kubeconfig: Path) -> client.ApiClient:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    return client.ApiClient(cfg)


def raw_get(fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call a client read function, return the server's JSON untouched (no model round-trip)."""
    resp = fn(*args, _preload_content=False, **kwargs)
    return json.loads(resp.data)


def kubectl_apply_body(obj: dict[str, Any]) -> dict[str, Any]:
    """The body ``kubectl apply`` POSTs for a new object: the manifest plus the
    last-applied annotation (compact JSON, keys sorted, ``annotations: {}`` inside,
    trailing newline)."""
    manifest = json.loads(json.dumps(obj))
    manifest["metadata"].setdefault("annotations", {})
    annotation = json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n"
    body = json.loads(json.dumps(manifest))
    body["metadata"]["annotations"] = {LAST_APPLIED: annotation}
    return body


def normalize(value: Any, namespace: str, into: str = "ai") -> Any:
    """Replace the per-test namespace name so recorded files are stable to diff."""
    text = json.dumps(value).replace(namespace, into)
    return json.loads(text)


def record(name: str, value: Any, namespace: str | None = None) -> None:
    if not RECORD:
        return
    if namespace:
        value = normalize(value, namespace)
    OBSERVED.mkdir(exist_ok=True)
    (OBSERVED / name).write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")


def managed(obj: dict[str, Any], manager: str) -> list[dict[str, Any]]:
    return [e for e in obj["metadata"].get("managedFields", []) if e["manager"] == manager]


def status_body(exc: ApiException) -> dict[str, Any]:
    return json.loads(exc.body) if exc.body else {}


CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "ollama-endpoint-manager", "labels": {"app.kubernetes.io/name": "ollama-endpoint-manager"}},
    "data": {
        "INTERVAL_SECONDS": "15",
        "M1_ADDRS": "100.127.6.20",
        "MAC_ADDRS": "192.168.68.58 100.115.97.90",
        "PORT": "11434",
        "PROBE_TIMEOUT_SECONDS": "2",
    },
}


def endpoints(name: str, ip: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name},
        "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "http", "port": 11434}]}],
    }


def with_ns(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    out = json.loads(json.dumps(obj))
    out["metadata"]["namespace"] = namespace
    return out


def apply_like_kubectl(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(
        namespace, kubectl_apply_body(with_ns(CM, namespace)), field_manager="kubectl-client-side-apply"
    )
    for name, ip in (("mac-ollama", "192.168.68.58"), ("m1-ollama", "100.127.6.20")):
        core.create_namespaced_endpoints(
            namespace, kubectl_apply_body(with_ns(endpoints(name, ip), namespace)), field_manager="kubectl-client-side-apply"
        )


# ------------------------------------------------------------------- tests --
def test_kubectl_apply_edit_and_manager_patch_managed_fields(
    real_cluster: RealCluster, namespace: str, admin_kubeconfig: Path
) -> None:
    core = client.CoreV1Api(api_from(admin_kubeconfig))
    apply_like_kubectl(core, namespace)

    created = raw_get(core.read_namespaced_config_map, "ollama-endpoint-manager", namespace)
    [entry] = created["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-client-side-apply"
    assert entry["operation"] == "Update"  # a POST is recorded as Update, never as Create
    assert entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1"
    assert TIME_RE.match(entry["time"]), entry["time"]
    assert set(entry["fieldsV1"]["f:data"]) == {".", *(f"f:{k}" for k in CM["data"])}
    assert entry["fieldsV1"]["f:metadata"] == {
        "f:annotations": {".": {}, f"f:{LAST_APPLIED}": {}},
        "f:labels": {".": {}, "f:app.kubernetes.io/name": {}},
    }
    annotation = created["metadata"]["annotations"][LAST_APPLIED]
    assert annotation.endswith("}\n") and json.loads(annotation)["metadata"]["annotations"] == {}
    record("configmap-after-apply.json", created, namespace)

    # `kubectl edit`: a strategic merge patch of the changed keys, manager kubectl-edit.
    time.sleep(1.1)  # managedFields times have one-second resolution; make them differ
    core.patch_namespaced_config_map(
        "ollama-endpoint-manager",
        namespace,
        {"data": {"MAC_ADDRS": "192.168.68.75 100.115.97.90", "M1_ADDRS": "192.168.68.89 100.127.6.20"}},
        field_manager="kubectl-edit",
        _content_type=STRATEGIC,
    )
    edited = raw_get(core.read_namespaced_config_map, "ollama-endpoint-manager", namespace)
    apply_entry, edit_entry = edited["metadata"]["managedFields"]
    assert apply_entry["manager"] == "kubectl-client-side-apply"
    assert edit_entry["manager"] == "kubectl-edit" and edit_entry["operation"] == "Update"
    # The keys edit changed moved to kubectl-edit; apply keeps only the untouched ones.
    assert edit_entry["fieldsV1"] == {"f:data": {"f:M1_ADDRS": {}, "f:MAC_ADDRS": {}}}
    assert set(apply_entry["fieldsV1"]["f:data"]) == {".", "f:INTERVAL_SECONDS", "f:PORT", "f:PROBE_TIMEOUT_SECONDS"}
    assert TIME_RE.match(edit_entry["time"]) and edit_entry["time"] > apply_entry["time"]
    # edit did not touch the last-applied annotation: it still holds the applied values.
    assert json.loads(edited["metadata"]["annotations"][LAST_APPLIED])["data"]["MAC_ADDRS"] == CM["data"]["MAC_ADDRS"]
    record("configmap-after-kubectl-edit.json", edited, namespace)

    # The endpoint manager points mac-ollama at a new address (JSON merge patch).
    before = raw_get(core.read_namespaced_endpoints, "mac-ollama", namespace)
    assert before["metadata"]["managedFields"][0]["fieldsV1"]["f:subsets"] == {}
    record("endpoints-after-apply.json", before, namespace)
    core.patch_namespaced_endpoints(
        "mac-ollama",
        namespace,
        {"subsets": [{"addresses": [{"ip": "192.168.68.75"}], "ports": [{"name": "http", "port": 11434}]}]},
        field_manager="ollama-endpoint-manager",
        _content_type=MERGE,
    )
    ep = raw_get(core.read_namespaced_endpoints, "mac-ollama", namespace)
    apply_entry, mgr_entry = ep["metadata"]["managedFields"]
    # subsets is an atomic list: recorded as one leaf `f:subsets: {}`, and the whole
    # of it changes hands to whoever last changed it.
    assert mgr_entry["manager"] == "ollama-endpoint-manager" and mgr_entry["operation"] == "Update"
    assert mgr_entry["fieldsV1"] == {"f:subsets": {}}
    assert apply_entry["manager"] == "kubectl-client-side-apply"
    assert apply_entry["fieldsV1"] == {"f:metadata": {"f:annotations": {".": {}, f"f:{LAST_APPLIED}": {}}}}
    assert ep["subsets"] == [
        {"addresses": [{"ip": "192.168.68.75"}], "ports": [{"name": "http", "port": 11434, "protocol": "TCP"}]}
    ]
    record("endpoints-after-manager-patch.json", ep, namespace)

    # A patch that changes nothing is a no-op: same resourceVersion, no managedFields entry.
    m1 = raw_get(core.read_namespaced_endpoints, "m1-ollama", namespace)
    core.patch_namespaced_endpoints(
        "m1-ollama",
        namespace,
        {"subsets": [{"addresses": [{"ip": "100.127.6.20"}], "ports": [{"name": "http", "port": 11434}]}]},
        field_manager="ollama-endpoint-manager",
        _content_type=MERGE,
    )
    m1_after = raw_get(core.read_namespaced_endpoints, "m1-ollama", namespace)
    assert m1_after["metadata"]["resourceVersion"] == m1["metadata"]["resourceVersion"]
    assert [e["manager"] for e in m1_after["metadata"]["managedFields"]] == ["kubectl-client-side-apply"]


def _timed_watch(core: client.CoreV1Api, namespace: str, **kwargs: Any) -> tuple[watch.Watch, list[tuple[str, float, dict[str, Any]]]]:
    """Run one bounded watch to its end; return (watch, [(type, seconds after start, raw object)])."""
    events: list[tuple[str, float, dict[str, Any]]] = []
    w = watch.Watch()
    t0 = time.monotonic()
    for ev in w.stream(core.list_namespaced_config_map, namespace, **kwargs):
        events.append((ev["type"], round(time.monotonic() - t0, 1), ev["raw_object"]))
    return w, events


#: timeoutSeconds of the bookmark test's watch (its bookmark comes 2 s before it ends), and of
#: the quiet watch after it (a bookmark, were one sent, would come 1 s into it).
WATCH_S, QUIET_S = 6, 3


def test_watch_by_name_gets_added_modified_and_bookmark(namespace: str, admin_kubeconfig: Path) -> None:
    core = client.CoreV1Api(api_from(admin_kubeconfig))
    list_rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, with_ns(CM, namespace))  # replayed as ADDED
    core.create_namespaced_config_map(
        namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated"}, "data": {"a": "1"}}
    )
    changed: dict[str, str] = {}

    def change_while_watching() -> None:
        mod = core.patch_namespaced_config_map(
            "ollama-endpoint-manager", namespace, {"data": {"PORT": "11435"}}, _content_type=MERGE
        )
        changed["watched"] = mod.metadata.resource_version
        other = core.patch_namespaced_config_map("unrelated", namespace, {"data": {"a": "2"}}, _content_type=MERGE)
        changed["unrelated"] = other.metadata.resource_version

    timer = threading.Timer(1.0, change_while_watching)
    timer.start()
    # timeout_seconds bounds the watch; the 1.20 watch cache sends a bookmark 2 s
    # before that deadline (and every minute), but only when the resource's newest
    # resourceVersion has moved past what this watch already delivered.
    w, events = _timed_watch(
        core,
        namespace,
        field_selector="metadata.name=ollama-endpoint-manager",
        allow_watch_bookmarks=True,
        resource_version=list_rv,
        timeout_seconds=WATCH_S,
    )
    timer.join()
    types = [t for t, _, _ in events]
    assert types[:2] == ["ADDED", "MODIFIED"], types
    assert events[1][2]["metadata"]["resourceVersion"] == changed["watched"]
    assert {o["metadata"].get("name") for t, _, o in events if t != "BOOKMARK"} == {"ollama-endpoint-manager"}
    bookmarks = [(s, o) for t, s, o in events if t == "BOOKMARK"]
    assert bookmarks and set(types[2:]) == {"BOOKMARK"}, types
    at, bookmark = bookmarks[0]
    assert WATCH_S - 3.5 <= at <= WATCH_S, f"bookmark at {at}s of a {WATCH_S} s watch"
    # A bookmark carries only kind/apiVersion and metadata.resourceVersion (+ a null
    # creationTimestamp). Its resourceVersion is the newest of the whole resource,
    # so it moves past the watched object's own: here to the unrelated ConfigMap's.
    assert bookmark["kind"] == "ConfigMap" and bookmark["apiVersion"] == "v1"
    assert bookmark["metadata"]["resourceVersion"] == changed["unrelated"]
    assert set(bookmark) <= {"kind", "apiVersion", "metadata"}
    assert set(bookmark["metadata"]) <= {"resourceVersion", "creationTimestamp"}
    assert w.resource_version == bookmark["metadata"]["resourceVersion"]  # the client tracks it
    record(
        "watch-by-name-with-bookmarks.json",
        {
            "query": {"fieldSelector": "metadata.name=ollama-endpoint-manager", "allowWatchBookmarks": True,
                      "timeoutSeconds": WATCH_S, "resourceVersion": "<list RV, before the create>"},
            "events": [{"type": t, "seconds_after_start": s, "object": o} for t, s, o in events],
        },
        namespace,
    )

    # Nothing changed since: a new watch from the newest RV gets no bookmark at all.
    _, quiet = _timed_watch(
        core,
        namespace,
        field_selector="metadata.name=ollama-endpoint-manager",
        allow_watch_bookmarks=True,
        resource_version=changed["unrelated"],
        timeout_seconds=QUIET_S,
    )
    assert quiet == [], quiet


@pytest.mark.slow
def test_bookmark_roughly_every_minute_without_timeout(namespace: str, admin_kubeconfig: Path) -> None:
    """No timeoutSeconds: the server picks 30-60 min; bookmarks come about every 60 s."""
    core = client.CoreV1Api(api_from(admin_kubeconfig))
    list_rv = core.list_namespaced_config_map(namespace).metadata.resource_version
    threading.Timer(1.0, lambda: core.create_namespaced_config_map(namespace, with_ns(CM, namespace))).start()
    w = watch.Watch()
    seen: list[tuple[str, float]] = []
    t0 = time.monotonic()
    for ev in w.stream(
        core.list_namespaced_config_map, namespace, allow_watch_bookmarks=True, resource_version=list_rv,
        _request_timeout=(5, 75),
    ):
        seen.append((ev["type"], round(time.monotonic() - t0, 1)))
        if ev["type"] == "BOOKMARK":
            w.stop()
    assert [t for t, _ in seen] == ["ADDED", "BOOKMARK"], seen
    assert 55 <= seen[1][1] <= 66, seen


def test_watch_at_compacted_resource_version_is_410(real_cluster: RealCluster, namespace: str, admin_kubeconfig: Path) -> None:
    core = client.CoreV1Api(api_from(admin_kubeconfig))
    created = core.create_namespaced_config_map(namespace, with_ns(CM, namespace))
    old_rv = created.metadata.resource_version
    for port in ("1", "2", "3"):
        core.patch_namespaced_config_map("ollama-endpoint-manager", namespace, {"data": {"PORT": port}}, _content_type=MERGE)
    compacted = real_cluster.compact_etcd()
    assert compacted > int(old_rv)

    # 1. Served from the watch cache: the cache still holds the events after old_rv, so
    #    etcd's compaction is invisible here - the watch replays them.
    replay = [
        ev["type"]
        for ev in watch.Watch().stream(
            core.list_namespaced_config_map, namespace, resource_version=old_rv, timeout_seconds=2
        )
    ]
    assert replay == ["MODIFIED"] * 3, replay

    # 2. A LIST at that exact resourceVersion is answered by etcd: 410 Gone at once.
    with pytest.raises(ApiException) as listed:
        core.list_namespaced_config_map(namespace, resource_version=old_rv, resource_version_match="Exact")
    assert listed.value.status == 410
    list_body = status_body(listed.value)
    assert list_body["reason"] == "Expired" and list_body["code"] == 410

    # 3. After a restart the watch cache starts empty at the current revision; a watch
    #    at old_rv then gets HTTP 200 and a single ERROR event carrying Status 410.
    real_cluster.restart_apiserver()
    core = client.CoreV1Api(api_from(admin_kubeconfig))
    raw = core.list_namespaced_config_map(
        namespace, watch=True, resource_version=old_rv, timeout_seconds=5, _preload_content=False
    )
    assert raw.status == 200
    lines = [json.loads(line) for line in raw.data.decode().splitlines() if line.strip()]
    assert [ev["type"] for ev in lines] == ["ERROR"]
    err = lines[0]["object"]
    assert err["kind"] == "Status" and err["code"] == 410 and err["reason"] == "Expired"
    assert err["message"].startswith(f"too old resource version: {old_rv} (")

    # 4. The official client turns that ERROR event into ApiException(status=410):
    #    with timeout_seconds at once; without it, after one silent retry at the same RV.
    with pytest.raises(ApiException) as with_timeout:
        list(watch.Watch().stream(core.list_namespaced_config_map, namespace, resource_version=old_rv, timeout_seconds=5))
    assert with_timeout.value.status == 410
    assert with_timeout.value.reason == f"Expired: {err['message']}"
    assert with_timeout.value.body is None  # nothing but status and reason
    with pytest.raises(ApiException) as without_timeout:
        list(watch.Watch().stream(core.list_namespaced_config_map, namespace, resource_version=old_rv))
    assert without_timeout.value.status == 410

    record(
        "error-410.json",
        {
            "list_exact_old_rv": {"status": listed.value.status, "body": list_body},
            "watch_old_rv_after_restart_event": lines[0],
            "client_exception": {"status": with_timeout.value.status, "reason": with_timeout.value.reason},
        },
        namespace,
    )


def _least_privilege_setup(real_cluster: RealCluster, namespace: str, admin: client.ApiClient) -> str:
    core = client.CoreV1Api(admin)
    rbac = client.RbacAuthorizationV1Api(admin)
    apply_like_kubectl(core, namespace)
    core.create_namespaced_config_map(
        namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}, "data": {"x": "1"}}
    )
    rbac.create_namespaced_role(
        namespace,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "syncer-read"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps", "endpoints"],
                    "resourceNames": WATCHED,
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "syncer-read"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "syncer-read"},
            "subjects": [{"kind": "ServiceAccount", "name": "syncer", "namespace": namespace}],
        },
    )
    return real_cluster.service_account_token(namespace, "syncer")


def test_least_privilege_resource_names(real_cluster: RealCluster, namespace: str, admin_kubeconfig: Path, tmp_path: Path) -> None:
    token = _least_privilege_setup(real_cluster, namespace, api_from(admin_kubeconfig))
    core = client.CoreV1Api(api_from(real_cluster.kubeconfig(tmp_path / "sa.kubeconfig", token=token, namespace=namespace)))
    user = f"system:serviceaccount:{namespace}:syncer"

    # get by name: allowed for each listed name
    assert core.read_namespaced_config_map("ollama-endpoint-manager", namespace).data["PORT"] == "11434"
    assert core.read_namespaced_endpoints("mac-ollama", namespace).subsets[0].addresses[0].ip == "192.168.68.58"

    # list + watch narrowed to one name with metadata.name=: allowed
    listed = core.list_namespaced_endpoints(namespace, field_selector="metadata.name=mac-ollama")
    assert [i.metadata.name for i in listed.items] == ["mac-ollama"]
    events = [
        (ev["type"], ev["raw_object"]["metadata"].get("name"))
        for ev in watch.Watch().stream(
            core.list_namespaced_endpoints,
            namespace,
            field_selector="metadata.name=mac-ollama",
            resource_version=listed.metadata.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=1,
        )
    ]
    assert all(t in ("BOOKMARK",) for t, _ in events), events  # nothing changed since the list
    # resourceVersion "0" (any cached state) + fieldSelector: allowed as well
    assert [i.metadata.name for i in core.list_namespaced_config_map(
        namespace, field_selector="metadata.name=ollama-endpoint-manager", resource_version="0").items] == ["ollama-endpoint-manager"]

    forbidden: dict[str, Any] = {}

    def expect_403(label: str, fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        with pytest.raises(ApiException) as info:
            fn(*args, **kwargs)
        assert info.value.status == 403, (label, info.value)
        body = status_body(info.value)
        assert body["reason"] == "Forbidden" and body["code"] == 403
        forbidden[label] = body
        return body

    # list without the fieldSelector: 403
    body = expect_403("list_configmaps_no_selector", core.list_namespaced_config_map, namespace)
    assert body["message"] == (
        f'configmaps is forbidden: User "{user}" cannot list resource "configmaps" '
        f'in API group "" in the namespace "{namespace}"'
    )
    assert body["details"] == {"kind": "configmaps"}
    # watch without the fieldSelector: 403 on the HTTP response itself (no ERROR event)
    body = expect_403(
        "watch_endpoints_no_selector",
        lambda: list(watch.Watch().stream(core.list_namespaced_endpoints, namespace, timeout_seconds=1)),
    )
    assert f'cannot watch resource "endpoints"' in body["message"]
    # get of a name not in resourceNames: 403
    body = expect_403("get_other_name", core.read_namespaced_config_map, "other", namespace)
    assert body["message"] == (
        f'configmaps "other" is forbidden: User "{user}" cannot get resource "configmaps" '
        f'in API group "" in the namespace "{namespace}"'
    )
    assert body["details"] == {"name": "other", "kind": "configmaps"}
    # list narrowed to a name not in resourceNames: 403, and the message names it
    body = expect_403(
        "list_other_name_selector", core.list_namespaced_config_map, namespace, field_selector="metadata.name=other"
    )
    assert body["message"].startswith('configmaps "other" is forbidden:')
    # a selector that does not pin exactly one name does not count
    expect_403(
        "list_name_not_equal_selector",
        core.list_namespaced_config_map,
        namespace,
        field_selector="metadata.name!=other",
    )
    # other namespaces: nothing
    expect_403("list_default_namespace", core.list_namespaced_config_map, "default", field_selector="metadata.name=mac-ollama")
    record("error-403-resource-names.json", forbidden, namespace)


def test_client_retrying_reconnects_after_apiserver_restart(
    real_cluster: RealCluster, namespace: str, admin_kubeconfig: Path
) -> None:
    core = client.CoreV1Api(api_from(admin_kubeconfig))
    core.create_namespaced_config_map(namespace, with_ns(CM, namespace))
    seen_errors: list[str] = []
    restarted = threading.Event()
    down_for: list[float] = []

    def restart() -> None:
        down_for.append(real_cluster.restart_apiserver())
        restarted.set()

    worker = threading.Thread(target=restart, daemon=True)
    worker.start()
    # Retry like a controller would: bounded attempts, short back-off, reuse the client.
    deadline = time.monotonic() + 90
    saw_failure = False
    ok_after_failure = False
    while time.monotonic() < deadline:
        try:
            cm = core.read_namespaced_config_map("ollama-endpoint-manager", namespace, _request_timeout=(2, 5))
            if saw_failure:
                ok_after_failure = cm.data["PORT"] == "11434"
                break
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as e:
            saw_failure = True
            seen_errors.append(type(e).__name__ + (f"({e.status})" if isinstance(e, ApiException) else ""))
        time.sleep(0.1)
    worker.join(timeout=90)
    assert restarted.is_set()
    assert saw_failure, "the restart went unnoticed (no failed request)"
    assert ok_after_failure, seen_errors
    if RECORD:
        record("restart-client-errors.json", {"errors_seen": sorted(set(seen_errors)), "down_seconds": down_for})


def test_state_record_of_5000_objects_and_the_configmap_size_limit(namespace: str, admin_kubeconfig: Path) -> None:
    """The real apiserver refuses a ConfigMap over 1 MiB (the fake models the same 422), and
    takes syncer's compressed record of 5,000 objects in ``binaryData``."""
    from tests.test_state_lease import _many

    from syncer.kube import ApiError, kube_client
    from syncer.sources.manifests import parse_documents
    from syncer.model import ObjectRef
    from syncer.sidecar.state import ConfigMapStore

    api = kube_client(str(admin_kubeconfig), None, read_yaml=parse_documents, pool_size=4)
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "too-big", "namespace": namespace},
           "data": {"a": "x" * (1024 * 1024 + 1)}}
    with pytest.raises(ApiError) as info:
        api.call("POST", f"/api/v1/namespaces/{namespace}/configmaps", body=big, what="create too-big")
    assert info.value.status == 422 and "must have at most 1048576 bytes" in info.value.message
    store = ConfigMapStore(api, namespace, "asgard")
    store.refresh()
    objects = {ObjectRef(r.api_version, r.kind, namespace, r.name): {**d, "metadata": {**d["metadata"],
                                                                                        "namespace": namespace}}
               for r, d in _many(5000).items()}
    assert store.record(objects, keep=objects)
    again = ConfigMapStore(api, namespace, "asgard")
    again.refresh()
    one = ObjectRef("v1", "ConfigMap", namespace, "app-04321")
    assert again.rejected is None and again.base(one) == objects[one]
