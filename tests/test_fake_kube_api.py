"""The fake kube-apiserver, driven through the official ``kubernetes`` client (v37).

Every test goes over loopback HTTP through ``load_kube_config`` ->
``Configuration`` -> ``ApiClient`` -> urllib3, the same path the product uses.

Client behaviours these tests pin down (kubernetes 37.x, urllib3 2.x):

* ``ApiClient.call_api`` is now ``call_api(method, url, header_params=None, body=None,
  post_params=None, _request_timeout=None)``: build the request with
  ``param_serialize(...)`` first.  It returns a ``RESTResponse`` and does NOT raise
  on 4xx/5xx; ``response_deserialize(resp, {})`` (after ``resp.read()``) raises.
  The legacy-generator keywords (``path_params=``, ``auth_settings=``, ``_preload_content=``)
  raise ``TypeError``.
* Watch + 410: the server sends HTTP 200 with an ``ERROR`` event.  ``Watch.stream``
  raises ``ApiException(status=410, reason="Expired: <message>")`` (``body`` is
  None).  Without ``timeout_seconds`` it first re-watches once from the last seen
  resourceVersion, transparently; with ``timeout_seconds`` it raises at once.
* A watch connection closed abruptly surfaces as ``urllib3.exceptions.ProtocolError``.
* urllib3's default ``Retry(3)`` retries GET/PUT/DELETE on 413/429/503 *with a
  Retry-After header* (sleeping that long) and on read timeouts: one slow answer
  is invisible to the caller, a dead server costs 4 x ``_request_timeout`` and
  ends in ``urllib3.exceptions.MaxRetryError`` (not ``ApiException``).
"""

from __future__ import annotations

import json
import os
import pathlib
import threading
import time
from typing import Any, Iterator

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import (
    ApiException,
    ConflictException,
    ForbiddenException,
    NotFoundException,
    UnauthorizedException,
)

# the ``fake_kube`` fixture comes from tests/conftest.py (``tests.fakes.kube_api.fake_kube_fixture``)
from tests.fakes.kube_api import LAST_APPLIED, FakeKubeAPI
from tests.helpers import _loopback_only  # noqa: F401 - fixture: no test request leaves 127.0.0.1 through a proxy

NS = "ai"
USER = "system:serviceaccount:ai:syncer"


def _configuration(fake: FakeKubeAPI, tmp_path: pathlib.Path) -> client.Configuration:
    kubeconfig = fake.kubeconfig(tmp_path / "kubeconfig", context="fake", namespace=NS)
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), context="fake", client_configuration=cfg)
    assert cfg.host == fake.url
    return cfg


@pytest.fixture
def api(fake_kube: FakeKubeAPI, tmp_path: pathlib.Path) -> Iterator[client.ApiClient]:
    with client.ApiClient(_configuration(fake_kube, tmp_path)) as api_client:
        yield api_client


def configmap(name: str, data: dict[str, str], **labels: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": NS}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}


def raw_get(api_client: client.ApiClient, resource_path: str, path_params: dict[str, str],
            query: list[tuple[str, Any]] | None = None, timeout: float = 5) -> Any:
    """The v37 way to make a raw call: param_serialize, then call_api."""
    method, url, headers, body, post = api_client.param_serialize(
        "GET", resource_path, path_params=path_params, query_params=query or [],
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    return api_client.call_api(method, url, header_params=headers, body=body, post_params=post,
                               _request_timeout=timeout)


# ---------------------------------------------------------------- reads


def test_typed_read_and_last_applied(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    given = configmap("asgard-hosts", {"MAC_ADDRS": "aa:bb", "HOST_IP": "192.168.1.10"}, app="syncer")
    stored = fake_kube.put(given, applied=True, time="2026-08-01T10:00:00Z")

    cm = client.CoreV1Api(api).read_namespaced_config_map("asgard-hosts", NS)
    assert cm.data == {"MAC_ADDRS": "aa:bb", "HOST_IP": "192.168.1.10"}
    assert cm.metadata.uid == stored["metadata"]["uid"]
    assert cm.metadata.resource_version == stored["metadata"]["resourceVersion"] == fake_kube.resource_version
    [entry] = cm.metadata.managed_fields
    assert (entry.manager, entry.operation, entry.api_version, entry.fields_type) == (
        "kubectl-client-side-apply", "Update", "v1", "FieldsV1")
    assert entry.fields_v1 == {
        "f:data": {".": {}, "f:HOST_IP": {}, "f:MAC_ADDRS": {}},
        "f:metadata": {"f:annotations": {".": {}, f"f:{LAST_APPLIED}": {}},
                       "f:labels": {".": {}, "f:app": {}}},
    }
    raw = stored["metadata"]["managedFields"][0]
    assert raw["time"] == "2026-08-01T10:00:00Z"
    assert stored["metadata"]["creationTimestamp"] == "2026-08-01T10:00:00Z"

    # kubectl apply: compact, key-sorted JSON of the manifest (+ namespace,
    # "annotations": {}), newline-terminated
    last = cm.metadata.annotations[LAST_APPLIED]
    assert last.endswith("}\n") and ", " not in last
    expected = json.loads(json.dumps(given))
    expected["metadata"]["annotations"] = {}
    assert json.loads(last) == expected
    assert last == json.dumps(expected, sort_keys=True, separators=(",", ":")) + "\n"


def test_raw_call_api_endpoints_v37_signature(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "asgard", "namespace": NS},
                   "subsets": [{"addresses": [{"ip": "100.64.0.7"}], "ports": [{"port": 8080}]}]},
                  manager="endpoints-controller")

    resp = raw_get(api, "/api/v1/namespaces/{namespace}/endpoints/{name}", {"namespace": NS, "name": "asgard"})
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/json"
    doc = json.loads(resp.read())
    assert doc["kind"] == "Endpoints" and doc["apiVersion"] == "v1"
    assert doc["subsets"][0]["addresses"] == [{"ip": "100.64.0.7"}]
    # Endpoints subsets are atomic
    assert doc["metadata"]["managedFields"][0]["fieldsV1"] == {"f:subsets": {}}
    assert fake_kube.requests[-1].headers["authorization"] == "Bearer test-token"

    # non-2xx is returned, not raised; response_deserialize raises
    resp = raw_get(api, "/api/v1/namespaces/{namespace}/endpoints/{name}", {"namespace": NS, "name": "nope"})
    assert resp.status == 404
    resp.read()
    assert json.loads(resp.data) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'endpoints "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "kind": "endpoints"}, "code": 404}
    with pytest.raises(NotFoundException):
        api.response_deserialize(resp, {})

    # the pre-v35 call style no longer exists
    with pytest.raises(TypeError):
        api.call_api("/api/v1/namespaces/{namespace}/endpoints/{name}", "GET",  # type: ignore[call-arg]
                      path_params={"namespace": NS, "name": "asgard"}, auth_settings=["BearerToken"],
                      _preload_content=False, _request_timeout=5)

    # generated methods still take _preload_content=False (raw urllib3 response back, errors raised)
    raw = client.CoreV1Api(api).read_namespaced_endpoints("asgard", NS, _preload_content=False)
    assert isinstance(raw, urllib3.BaseHTTPResponse)
    assert json.loads(raw.data)["metadata"]["name"] == "asgard"


def test_not_found_and_unknown_paths(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    with pytest.raises(NotFoundException) as err:
        client.CoreV1Api(api).read_namespaced_config_map("missing", NS)
    assert json.loads(err.value.body)["message"] == 'configmaps "missing" not found'
    with pytest.raises(NotFoundException) as err:
        client.AppsV1Api(api).read_namespaced_deployment("gone", NS)
    body = json.loads(err.value.body)
    assert body["message"] == 'deployments.apps "gone" not found'
    assert body["details"] == {"name": "gone", "group": "apps", "kind": "deployments"}

    for path in ("/api/v1/namespaces/ai/widgets", "/apis/example.com/v1/things", "/nope"):
        resp = raw_get(api, path, {})
        assert resp.status == 404
        assert resp.read() == b"404 page not found\n"
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"


def test_list_shape_selectors_and_pagination(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    for i in range(5):
        fake_kube.put(configmap(f"cm-{i}", {"i": str(i)}, tier="odd" if i % 2 else "even"))
    fake_kube.put({**configmap("elsewhere", {}), "metadata": {"name": "elsewhere", "namespace": "other"}})
    v1 = client.CoreV1Api(api)

    resp = raw_get(api, "/api/v1/namespaces/{namespace}/configmaps", {"namespace": NS})
    doc = json.loads(resp.read())
    assert doc["kind"] == "ConfigMapList" and doc["apiVersion"] == "v1"
    assert doc["metadata"] == {"resourceVersion": fake_kube.resource_version}
    assert [i["metadata"]["name"] for i in doc["items"]] == [f"cm-{i}" for i in range(5)]
    assert all("kind" not in i and "apiVersion" not in i for i in doc["items"])

    assert [c.metadata.name for c in v1.list_namespaced_config_map(NS, field_selector="metadata.name=cm-3").items] == ["cm-3"]
    assert [c.metadata.name for c in v1.list_namespaced_config_map(NS, label_selector="tier=odd").items] == ["cm-1", "cm-3"]
    assert len(v1.list_config_map_for_all_namespaces().items) == 6
    with pytest.raises(ApiException) as err:
        v1.list_namespaced_config_map(NS, field_selector="spec.nope=1")
    assert err.value.status == 400
    assert json.loads(err.value.body)["message"] == "field label not supported: spec.nope"

    first = v1.list_namespaced_config_map(NS, limit=2)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1"]
    assert first.metadata.remaining_item_count == 3 and first.metadata._continue
    # a consistent snapshot: later writes do not leak into the continued list
    fake_kube.put(configmap("cm-9", {"late": "yes"}))
    fake_kube.delete("v1", "ConfigMap", NS, "cm-4")
    names = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = v1.list_namespaced_config_map(NS, limit=2, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert names == [f"cm-{i}" for i in range(5)]


# ---------------------------------------------------------------- watch


def test_watch_replay_live_events_and_bookmark(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.bookmark_interval = 0.2
    fake_kube.put(configmap("asgard-hosts", {"MAC_ADDRS": "a"}))
    fake_kube.put(configmap("noise", {"x": "1"}))
    v1 = client.CoreV1Api(api)
    listed = v1.list_namespaced_config_map(NS, field_selector="metadata.name=asgard-hosts")
    start_rv = listed.metadata.resource_version
    # happened after the list: must be replayed from start_rv
    fake_kube.patch("v1", "ConfigMap", NS, "asgard-hosts", {"data": {"MAC_ADDRS": "b"}}, manager="kubectl-edit")
    fake_kube.patch("v1", "ConfigMap", NS, "noise", {"data": {"x": "2"}}, manager="kubectl-edit")
    timer = threading.Timer(0.1, fake_kube.patch, args=("v1", "ConfigMap", NS, "asgard-hosts",
                                                        {"data": {"MAC_ADDRS": "c"}}, "kubectl-edit"))

    seen: list[tuple[str, str]] = []
    w = watch.Watch()
    stream = w.stream(v1.list_namespaced_config_map, namespace=NS, field_selector="metadata.name=asgard-hosts",
                      resource_version=start_rv, allow_watch_bookmarks=True, timeout_seconds=5)
    started = time.monotonic()
    try:
        for event in stream:
            if not seen:
                timer.start()
            obj = event["raw_object"]
            if event["type"] == "BOOKMARK":
                assert set(obj["metadata"]) == {"resourceVersion"}
                assert obj["kind"] == "ConfigMap"
                seen.append(("BOOKMARK", obj["metadata"]["resourceVersion"]))
                break
            assert obj["kind"] == "ConfigMap" and obj["apiVersion"] == "v1"
            assert isinstance(event["object"], client.V1ConfigMap)
            seen.append((event["type"], obj["data"]["MAC_ADDRS"]))
            if obj["data"]["MAC_ADDRS"] == "c":  # as on kube-apiserver 1.20, a bookmark needs something
                fake_kube.patch("v1", "ConfigMap", NS, "noise", {"data": {"x": "3"}}, manager="kubectl-edit")  # newer
    finally:
        stream.close()
        timer.cancel()
    assert seen[:2] == [("MODIFIED", "b"), ("MODIFIED", "c")]
    assert seen[2] == ("BOOKMARK", fake_kube.resource_version)
    assert w.resource_version == fake_kube.resource_version  # the client keeps the bookmark rv
    assert time.monotonic() - started < 4
    query = fake_kube.requests[-1].query
    assert query["watch"] == "true" and query["allowWatchBookmarks"] == "true"

    # rv "0" / unset: synthetic ADDED for what exists, then live events
    stream = watch.Watch().stream(v1.list_namespaced_config_map, namespace=NS, timeout_seconds=5)
    got = [(e["type"], e["raw_object"]["metadata"]["name"]) for _, e in zip(range(2), stream)]
    stream.close()
    assert got == [("ADDED", "asgard-hosts"), ("ADDED", "noise")]


def test_watch_gets_410_after_expire(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put(configmap("asgard-hosts", {"MAC_ADDRS": "a"}))
    v1 = client.CoreV1Api(api)
    old_rv = fake_kube.resource_version

    # 1. open stream with timeout_seconds: ERROR event -> ApiException(410) at once
    stream = watch.Watch().stream(v1.list_namespaced_config_map, namespace=NS, timeout_seconds=5)
    assert next(stream)["type"] == "ADDED"
    fake_kube.expire_watches()
    with pytest.raises(ApiException) as err:
        next(stream)
    assert err.value.status == 410
    assert err.value.reason.startswith("Expired: too old resource version: ")
    assert err.value.body is None

    # 2. without timeout_seconds the client re-watches once from its last rv, then raises
    fake_kube.clear_requests()
    stream = watch.Watch().stream(v1.list_namespaced_config_map, namespace=NS, _request_timeout=5)
    assert next(stream)["type"] == "ADDED"
    fake_kube.expire_watches()
    with pytest.raises(ApiException) as err:
        next(stream)
    assert err.value.status == 410
    assert fake_kube.count("GET", "/configmaps", watch=True) == 2

    # 3. a new watch at a compacted rv: HTTP 200 + ERROR event on the wire ...
    resp = raw_get(api, "/api/v1/namespaces/{namespace}/configmaps", {"namespace": NS},
                   [("watch", "true"), ("resourceVersion", old_rv)])
    assert resp.status == 200
    [line] = [ln for ln in resp.read().splitlines() if ln]
    event = json.loads(line)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    assert event["object"]["kind"] == "Status" and event["object"]["status"] == "Failure"
    # ... which the Watch helper turns into ApiException(410)
    with pytest.raises(ApiException) as err:
        list(watch.Watch().stream(v1.list_namespaced_config_map, namespace=NS, resource_version=old_rv,
                                  timeout_seconds=2))
    assert err.value.status == 410

    # 4. relist + watch from the fresh rv works again
    fresh = v1.list_namespaced_config_map(NS).metadata.resource_version
    threading.Timer(0.1, fake_kube.patch, args=("v1", "ConfigMap", NS, "asgard-hosts",
                                                {"data": {"MAC_ADDRS": "z"}}, "kubectl-edit")).start()
    stream = watch.Watch().stream(v1.list_namespaced_config_map, namespace=NS, resource_version=fresh,
                                  timeout_seconds=3)
    assert next(stream)["raw_object"]["data"] == {"MAC_ADDRS": "z"}
    stream.close()


def test_watch_follows_label_selector_transitions(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put(configmap("a", {"k": "1"}, sync="yes"))
    rv = fake_kube.resource_version
    fake_kube.patch("v1", "ConfigMap", NS, "a", {"metadata": {"labels": {"sync": "no"}}}, manager="m")
    fake_kube.patch("v1", "ConfigMap", NS, "a", {"metadata": {"labels": {"sync": "yes"}}}, manager="m")
    client.CoreV1Api(api).delete_namespaced_config_map("a", NS)
    stream = watch.Watch().stream(client.CoreV1Api(api).list_namespaced_config_map, namespace=NS,
                                  label_selector="sync=yes", resource_version=rv, timeout_seconds=5)
    got = [(e["type"], int(e["raw_object"]["metadata"]["resourceVersion"]) - int(rv))
           for _, e in zip(range(3), stream)]
    stream.close()
    # leaving the selector is a DELETED (of the previous state), re-entering an ADDED
    assert got == [("DELETED", 1), ("ADDED", 2), ("DELETED", 3)]


def test_drop_watches_closes_abruptly(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put(configmap("asgard-hosts", {"MAC_ADDRS": "a"}))
    stream = watch.Watch().stream(client.CoreV1Api(api).list_namespaced_config_map, namespace=NS,
                                  timeout_seconds=5)
    assert next(stream)["type"] == "ADDED"
    assert fake_kube.open_watches == 1
    fake_kube.drop_watches()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        next(stream)


# ---------------------------------------------------------------- authn / authz


def test_forbidden_message(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put(configmap("x", {"a": "b"}))
    fake_kube.put(configmap("y", {"a": "b"}))
    fake_kube.forbid("get", "configmaps", "x")
    fake_kube.forbid("list", "deployments")
    v1 = client.CoreV1Api(api)
    with pytest.raises(ForbiddenException) as err:
        v1.read_namespaced_config_map("x", NS)
    assert json.loads(err.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'configmaps "x" is forbidden: User "{USER}" cannot get resource "configmaps" '
                   f'in API group "" in the namespace "ai"',
        "reason": "Forbidden", "details": {"name": "x", "kind": "configmaps"}, "code": 403}
    assert v1.read_namespaced_config_map("y", NS).data == {"a": "b"}
    with pytest.raises(ForbiddenException) as err:
        client.AppsV1Api(api).list_namespaced_deployment(NS)
    assert json.loads(err.value.body)["message"] == (
        f'deployments.apps is forbidden: User "{USER}" cannot list resource "deployments" '
        f'in API group "apps" in the namespace "ai"')


def test_unauthorized_without_or_with_wrong_token(fake_kube: FakeKubeAPI) -> None:
    for token in (None, "wrong"):
        cfg = client.Configuration(host=fake_kube.url)
        if token:
            cfg.api_key = {"authorization": f"Bearer {token}"}
        with client.ApiClient(cfg) as anon:
            with pytest.raises(UnauthorizedException) as err:
                client.CoreV1Api(anon).list_namespaced_config_map(NS)
        assert err.value.status == 401
        assert json.loads(err.value.body) == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                              "status": "Failure", "message": "Unauthorized",
                                              "reason": "Unauthorized", "code": 401}


# ---------------------------------------------------------------- managed fields


def test_managed_fields_ownership_transfer(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put(configmap("asgard-hosts", {"MAC_ADDRS": "aa", "OTHER": "1"}), applied=True,
                  time="2026-08-01T10:00:00Z")
    fake_kube.patch("v1", "ConfigMap", NS, "asgard-hosts", {"data": {"MAC_ADDRS": "bb"}},
                    manager="kubectl-edit", time="2026-08-02T10:00:00Z")

    cm = client.CoreV1Api(api).read_namespaced_config_map("asgard-hosts", NS)
    entries = {e.manager: e for e in cm.metadata.managed_fields}
    assert list(entries) == ["kubectl-client-side-apply", "kubectl-edit"]  # sorted by time like the server
    assert entries["kubectl-edit"].fields_v1 == {"f:data": {"f:MAC_ADDRS": {}}}
    assert entries["kubectl-edit"].operation == "Update"
    assert entries["kubectl-client-side-apply"].fields_v1["f:data"] == {".": {}, "f:OTHER": {}}
    raw = fake_kube.get("v1", "ConfigMap", NS, "asgard-hosts")
    assert raw["metadata"]["managedFields"][1]["time"] == "2026-08-02T10:00:00Z"
    owners = [e["manager"] for e in raw["metadata"]["managedFields"]
              if ("f:data", "f:MAC_ADDRS") in fake_kube.managed_paths(raw, e["manager"])]
    assert owners == ["kubectl-edit"]

    # a manager that loses its last field disappears
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "syncer", "namespace": NS}, "spec": {"holderIdentity": "pod-a"}}
    fake_kube.put(lease, manager="first")
    changed = fake_kube.patch("coordination.k8s.io/v1", "Lease", NS, "syncer", {"spec": {"holderIdentity": "pod-b"}},
                              manager="second")
    assert [(e["manager"], e["fieldsV1"]) for e in changed["metadata"]["managedFields"]] == [
        ("second", {"f:spec": {"f:holderIdentity": {}}})]


def test_writes_lease_and_state_configmap(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(api)
    body = client.V1Lease(metadata=client.V1ObjectMeta(name="syncer", namespace=NS),
                          spec=client.V1LeaseSpec(holder_identity="pod-a", lease_duration_seconds=15))
    created = coord.create_namespaced_lease(NS, body, field_manager="syncer")
    assert created.spec.holder_identity == "pod-a"
    assert created.metadata.managed_fields[0].manager == "syncer"
    assert fake_kube.requests[-1].status == 201

    stale = created.metadata.resource_version
    created.spec.holder_identity = "pod-b"
    updated = coord.replace_namespaced_lease("syncer", NS, created)
    assert updated.metadata.resource_version != stale
    # The update's manager is the user-agent prefix. Rows sort by time (whole seconds), then by
    # manager: which one comes first depends on whether a second boundary fell in between.
    assert sorted(e.manager for e in updated.metadata.managed_fields) == ["OpenAPI-Generator", "syncer"]

    created.spec.holder_identity = "pod-c"  # still carries the stale resourceVersion
    with pytest.raises(ConflictException) as err:
        coord.replace_namespaced_lease("syncer", NS, created)
    body409 = json.loads(err.value.body)
    assert body409["reason"] == "Conflict"
    assert body409["message"] == ('Operation cannot be fulfilled on leases.coordination.k8s.io "syncer": the '
                                  "object has been modified; please apply your changes to the latest version "
                                  "and try again")
    assert body409["details"] == {"name": "syncer", "group": "coordination.k8s.io", "kind": "leases"}

    patched = coord.patch_namespaced_lease("syncer", NS, {"spec": {"holderIdentity": "pod-d"}},
                                           field_manager="syncer")
    assert patched.spec.holder_identity == "pod-d"
    assert fake_kube.requests[-1].headers["Content-Type"] == "application/strategic-merge-patch+json"

    v1 = client.CoreV1Api(api)
    state = {"metadata": {"name": "syncer-state"}, "data": {"last": "1"}}
    v1.create_namespaced_config_map(NS, state)
    with pytest.raises(ConflictException) as err:
        v1.create_namespaced_config_map(NS, state)
    assert json.loads(err.value.body)["reason"] == "AlreadyExists"
    assert json.loads(err.value.body)["message"] == 'configmaps "syncer-state" already exists'
    with pytest.raises(ApiException) as err:
        v1.patch_namespaced_config_map("syncer-state", NS, {"data": {"last": "2"}},
                                       _content_type="application/apply-patch+yaml")
    assert err.value.status == 415
    v1.delete_namespaced_config_map("syncer-state", NS)
    assert fake_kube.get("v1", "ConfigMap", NS, "syncer-state") is None


def test_patch_flavours(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                       {"name": "web", "image": "nginx:1"}, {"name": "side", "image": "busybox:1"}]}}}})
    apps = client.AppsV1Api(api)
    # dict body -> strategic merge: containers merge by name
    d = apps.patch_namespaced_deployment("web", NS, {"spec": {"template": {"spec": {"containers": [
        {"name": "side", "image": "busybox:2"}]}}}}, field_manager="kubectl-set")
    assert [(c.name, c.image) for c in d.spec.template.spec.containers] == [("web", "nginx:1"), ("side", "busybox:2")]
    mine = {e.manager: e.fields_v1 for e in d.metadata.managed_fields}["kubectl-set"]
    assert mine == {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"side"}': {"f:image": {}}}}}}}
    # list body -> JSON patch
    d = apps.patch_namespaced_deployment("web", NS, [{"op": "replace", "path": "/spec/replicas", "value": 3}])
    assert fake_kube.requests[-1].headers["Content-Type"] == "application/json-patch+json"
    assert d.spec.replicas == 3 and d.metadata.generation == 3
    # status subresource: its own managedFields entry, ignored by main-resource updates
    d = apps.patch_namespaced_deployment_status("web", NS, {"status": {"readyReplicas": 3}},
                                                field_manager="kube-controller-manager")
    [status_entry] = [e for e in d.metadata.managed_fields if e.subresource == "status"]
    assert status_entry.fields_v1 == {"f:status": {"f:readyReplicas": {}}}
    d.status.ready_replicas = 0
    assert apps.replace_namespaced_deployment("web", NS, d).status.ready_replicas == 3


def test_group_resources_and_generation(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "web", "image": "nginx:1",
                                                             "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}}
    fake_kube.put(deploy)
    apps = client.AppsV1Api(api)
    got = apps.read_namespaced_deployment("web", NS)
    assert got.metadata.generation == 1
    fields = got.metadata.managed_fields[0].fields_v1
    assert fields["f:spec"]["f:selector"] == {}  # atomic LabelSelector
    container = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert container["."] == {} and container["f:image"] == {}
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in container["f:ports"]
    fake_kube.patch("apps/v1", "Deployment", NS, "web", {"spec": {"replicas": 3}}, manager="kubectl-scale")
    assert apps.read_namespaced_deployment("web", NS).metadata.generation == 2
    fake_kube.put({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                   "metadata": {"name": "syncer-read"}, "rules": []})
    assert client.RbacAuthorizationV1Api(api).read_cluster_role("syncer-read").metadata.name == "syncer-read"
    assert client.CoreV1Api(api).list_namespace().items == []


def test_discovery_and_version(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    core = {r.name: r for r in client.CoreV1Api(api).get_api_resources().resources}
    assert {"configmaps", "endpoints", "services", "secrets", "serviceaccounts", "pods", "namespaces"} <= set(core)
    assert core["configmaps"].kind == "ConfigMap" and core["configmaps"].namespaced
    assert not core["namespaces"].namespaced and "watch" in core["configmaps"].verbs
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"apps", "rbac.authorization.k8s.io", "coordination.k8s.io", "networking.k8s.io", "batch"} <= groups
    apps = client.AppsV1Api(api).get_api_resources()
    assert apps.group_version == "apps/v1"
    assert {"deployments", "statefulsets", "daemonsets"} <= {r.name for r in apps.resources}
    assert client.VersionApi(api).get_code().git_version == fake_kube.git_version


# ---------------------------------------------------------------- faults


def test_fail_next_with_retry_after(fake_kube: FakeKubeAPI, tmp_path: pathlib.Path) -> None:
    fake_kube.put(configmap("asgard-hosts", {"MAC_ADDRS": "a"}))
    cfg = _configuration(fake_kube, tmp_path)
    cfg.retries = False  # see the raw answer (urllib3 would otherwise retry 429/503 + Retry-After)
    with client.ApiClient(cfg) as raw_client:
        fake_kube.fail_next(503, retry_after=7, path_contains="/configmaps/asgard-hosts")
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(raw_client).read_namespaced_config_map("asgard-hosts", NS)
    assert err.value.status == 503
    assert err.value.headers["Retry-After"] == "7"
    body = json.loads(err.value.body)
    assert (body["reason"], body["code"], body["details"]["retryAfterSeconds"]) == ("ServiceUnavailable", 503, 7)

    # default client: urllib3 sleeps Retry-After and retries, the caller never sees the 429
    with client.ApiClient(_configuration(fake_kube, tmp_path)) as default_client:
        fake_kube.clear_requests()
        fake_kube.fail_next(429, retry_after=1)
        started = time.monotonic()
        cm = client.CoreV1Api(default_client).read_namespaced_config_map("asgard-hosts", NS)
    assert cm.data == {"MAC_ADDRS": "a"}
    assert 0.9 <= time.monotonic() - started < 5
    assert [r.status for r in fake_kube.requests] == [429, 200]


def test_hang_next_and_request_timeout(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    fake_kube.put(configmap("asgard-hosts", {"MAC_ADDRS": "a"}))
    v1 = client.CoreV1Api(api)

    # one hung answer: urllib3 retries the read timeout and the call succeeds
    fake_kube.hang_next(3)
    started = time.monotonic()
    assert v1.read_namespaced_config_map("asgard-hosts", NS, _request_timeout=0.5).data == {"MAC_ADDRS": "a"}
    assert 0.45 <= time.monotonic() - started < 3
    assert fake_kube.count("GET", "/configmaps/asgard-hosts") == 2

    # a server that keeps hanging: 1 try + 3 retries, then MaxRetryError (not ApiException)
    fake_kube.clear_requests()
    fake_kube.hang_next(5, path_contains="/configmaps/", count=10)
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.MaxRetryError) as err:
        v1.read_namespaced_config_map("asgard-hosts", NS, _request_timeout=0.15)
    assert isinstance(err.value.reason, urllib3.exceptions.ReadTimeoutError)
    assert 0.55 <= time.monotonic() - started < 4
    assert fake_kube.count("GET", "/configmaps/asgard-hosts") == 4


def test_kubeconfig_is_loadable(fake_kube: FakeKubeAPI, tmp_path: pathlib.Path) -> None:
    path = fake_kube.kubeconfig(tmp_path / "kc" / "config", context="ctx", namespace="ai")
    contexts, active = config.list_kube_config_contexts(config_file=str(path))
    assert active["name"] == "ctx" and active["context"]["namespace"] == "ai"
    assert os.path.exists(path)


def test_endpointslices_v1_through_the_typed_client(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    """EndpointSlices as a manager writes them and the real server answers (the 422 wording and
    the null for an empty list are checked against the real one in tests/realapi)."""
    disc = client.DiscoveryV1Api(api)
    body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": "mac-ollama-ipv4", "labels": {"kubernetes.io/service-name": "mac-ollama"}},
            "endpoints": [{"addresses": ["192.168.68.58"], "conditions": {"ready": True}}],
            "ports": [{"name": "http", "port": 11434, "protocol": "TCP"}]}
    disc.create_namespaced_endpoint_slice(NS, body, field_manager="slice-endpoint-manager")
    disc.patch_namespaced_endpoint_slice("mac-ollama-ipv4", NS, {"endpoints": []}, field_manager="slice-endpoint-manager",
                                         _content_type="application/merge-patch+json")
    raw = json.loads(raw_get(api, "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices/{name}",
                             {"namespace": NS, "name": "mac-ollama-ipv4"}).read())
    assert raw["endpoints"] is None and raw["addressType"] == "IPv4"
    [entry] = raw["metadata"]["managedFields"]
    assert entry["manager"] == "slice-endpoint-manager" and entry["fieldsV1"]["f:endpoints"] == {}  # atomic
    found = disc.list_namespaced_endpoint_slice(NS, label_selector="kubernetes.io/service-name=mac-ollama")
    assert [s.metadata.name for s in found.items] == ["mac-ollama-ipv4"]
    with pytest.raises(ApiException) as exc:
        disc.patch_namespaced_endpoint_slice("mac-ollama-ipv4", NS, {"addressType": "IPv6"},
                                             _content_type="application/merge-patch+json")
    assert exc.value.status == 422
    assert json.loads(exc.value.body)["message"] == (
        'EndpointSlice.discovery.k8s.io "mac-ollama-ipv4" is invalid: addressType: Invalid value: "IPv6": '
        "field is immutable")
    discovery = json.loads(raw_get(api, "/apis/discovery.k8s.io/v1", {}).read())
    assert {r["name"]: r["kind"] for r in discovery["resources"]} == {"endpointslices": "EndpointSlice"}


def test_bookmarks_as_kube_apiserver_1_20_sends_them(fake_kube: FakeKubeAPI, api: client.ApiClient) -> None:
    """Like tests/realapi's test_watch_by_name_gets_added_modified_and_bookmark: a bookmark 2 s
    before a watch's timeoutSeconds (and every minute), only when the resource's newest
    resourceVersion moved past what the watch delivered: an idle watch gets none."""
    fake_kube.put(configmap("watched", {"a": "1"}))
    fake_kube.put(configmap("unrelated", {"a": "1"}))
    v1 = client.CoreV1Api(api)

    def run(timeout: int, move: bool) -> list[tuple[str, float, str]]:
        rv = v1.list_namespaced_config_map(NS, field_selector="metadata.name=watched").metadata.resource_version
        if move:
            threading.Timer(0.3, fake_kube.patch, args=("v1", "ConfigMap", NS, "unrelated", {"data": {"a": "2"}},
                                                        "kubectl-edit")).start()
        t0 = time.monotonic()
        events = [(e["type"], round(time.monotonic() - t0, 1), e["raw_object"]["metadata"]["resourceVersion"])
                  for e in watch.Watch().stream(v1.list_namespaced_config_map, namespace=NS,
                                                field_selector="metadata.name=watched", resource_version=rv,
                                                allow_watch_bookmarks=True, timeout_seconds=timeout)]
        return events

    assert run(3, move=False) == []  # idle, nothing moved: silence for the whole watch
    [(kind, at, rv)] = run(4, move=True)
    assert kind == "BOOKMARK" and 1.8 <= at <= 3.2 and rv == fake_kube.resource_version
