"""The live side: read the declared objects from the Kubernetes API or from snapshot files.

``LiveSource`` is all the engine needs: ``get(ref)`` returns the live object as plain
JSON data, or ``None`` when it does not exist. Two sources:

* ``KubeSource``   the API server, through the official ``kubernetes`` client; reads by
                   name only (never lists a namespace), never writes.
* ``SnapshotSource``  ``kubectl get -o yaml`` output (a ``List`` or multi-document YAML).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from syncer.errors import ClusterError, ConfigError
from syncer.manifests import object_ref, parse_documents
from syncer.model import ObjectRef

#: Connect and read timeouts for one API request, in seconds: an API server that does not
#: accept a connection within 5 s is down for our purposes; 15 s covers a slow etcd read.
REQUEST_TIMEOUT = (5.0, 15.0)


class LiveSource(Protocol):
    def get(self, ref: ObjectRef) -> dict[str, Any] | None: ...

    def describe(self) -> str: ...


def _documents(text: str, display: str) -> list[Any]:
    """Documents of a snapshot; ``kubectl get -o json`` output takes the (much faster) JSON path."""
    if text.lstrip().startswith("{"):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # not plain JSON after all: let the YAML parser say what is wrong
    return parse_documents(text, display)


class SnapshotSource:
    """Live objects read from files; objects absent from every file are absent live."""

    def __init__(self, files: list[Path], default_namespace: str) -> None:
        self.files = files
        self.objects: dict[ObjectRef, dict[str, Any]] = {}
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ClusterError(f"{path}: cannot read live snapshot: {exc}") from exc
            for i, doc in enumerate(_documents(text, str(path))):
                items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
                for j, obj in enumerate(items if isinstance(items, list) else [doc]):
                    if obj is None:
                        continue
                    where = f"{path} (document {i + 1}{f' item {j}' if items is not None else ''})"
                    if not isinstance(obj, dict):
                        raise ClusterError(f"{where}: not a Kubernetes object")
                    try:
                        ref = object_ref(obj, default_namespace, where)
                    except ConfigError as exc:
                        raise ClusterError(str(exc)) from exc
                    self.objects[ref] = obj

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        return self.objects.get(ref)

    def describe(self) -> str:
        return "snapshot " + ", ".join(str(f) for f in self.files)


def _status_message(body: Any) -> str:
    """The ``message`` of a Kubernetes ``Status`` body, truncated for logs."""
    try:
        data = json.loads(body) if isinstance(body, (str, bytes)) else None
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])[:300]
    return str(body or "")[:300]


class KubeSource:
    """Objects read by name from the API server with the official client.

    ``api_client`` is a ``kubernetes.client.ApiClient``; the CLI builds it (kubeconfig or
    in-cluster). Resource names (plurals) come from API discovery, cached per groupVersion.
    """

    def __init__(self, api_client: Any, timeout: tuple[float, float] | None = None) -> None:
        self.api = api_client
        self.timeout = timeout or REQUEST_TIMEOUT
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

    def describe(self) -> str:
        return f"API server {self.api.configuration.host}"

    def request(self, path: str, query: list[tuple[str, str]] | None = None, what: str = "") -> Any:
        """GET ``path``; returns parsed JSON, ``None`` on 404; ClusterError otherwise."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            # kubernetes >= 35: build the request with param_serialize, then call_api; a
            # non-2xx answer comes back as a response (not an exception).
            method, url, headers, body, post = self.api.param_serialize(
                "GET", path, query_params=query or [], header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = self.api.call_api(method, url, header_params=headers, body=body, post_params=post,
                                         _request_timeout=self.timeout)
            data = response.read()
        except (ApiException, HTTPError, OSError) as exc:
            raise ClusterError(
                f"cannot reach the API server at {self.api.configuration.host} ({what or path}): {type(exc).__name__}",
                transient=True,
            ) from None
        if response.status == 404:
            return None
        if not 200 <= response.status < 300:
            msg = _status_message(data)
            if response.status in (401, 403):
                raise ClusterError(f"API server refused {what or path} ({response.status}): {msg}", transient=False)
            raise ClusterError(f"API server error on {what or path} ({response.status}): {msg}", transient=True)
        try:
            return json.loads(data)
        except ValueError as exc:
            raise ClusterError(f"API server sent non-JSON for {what or path}") from exc

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) for a kind, from discovery."""
        if api_version not in self._resources:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            found = self.request(path, what=f"discovery of {api_version}") or {}
            table: dict[str, tuple[str, bool]] = {}
            for res in found.get("resources", []):
                if "/" not in res.get("name", ""):
                    table.setdefault(res["kind"], (res["name"], bool(res.get("namespaced"))))
            self._resources[api_version] = table
        table = self._resources[api_version]
        if kind not in table:
            raise ClusterError(f"the API server does not serve {kind} in {api_version}")
        return table[kind]

    def object_path(self, ref: ObjectRef) -> str:
        plural, namespaced = self.resource(ref.api_version, ref.kind)
        prefix = "/api/v1" if ref.api_version == "v1" else f"/apis/{ref.api_version}"
        if namespaced:
            return f"{prefix}/namespaces/{ref.namespace}/{plural}/{ref.name}"
        return f"{prefix}/{plural}/{ref.name}"

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        obj = self.request(self.object_path(ref), what=f"get {ref}")
        if obj is not None and not isinstance(obj, dict):
            raise ClusterError(f"{ref}: API server returned an unexpected shape ({type(obj).__name__})")
        return obj


def kube_api_client(kubeconfig: str | None, context: str | None) -> Any:
    """An ``ApiClient`` from a kubeconfig (explicit, $KUBECONFIG, ~/.kube/config) or in-cluster."""
    import os

    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    conf = client.Configuration()
    try:
        if kubeconfig or os.environ.get("KUBECONFIG") or Path("~/.kube/config").expanduser().exists() or context:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, client_configuration=conf)
        else:
            config.load_incluster_config(client_configuration=conf)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "in-cluster service account"
        raise ConfigError(f"kubeconfig {where}: {exc}") from exc
    conf.retries = 1  # one quick retry; the caller decides about longer ones
    return client.ApiClient(conf)
