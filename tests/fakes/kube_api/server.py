"""A fake Kubernetes API server that speaks the real JSON wire format.

It runs a ``ThreadingHTTPServer`` on 127.0.0.1 (ephemeral port) in a daemon
thread, so the product's real client stack (the official ``kubernetes``
client, urllib3, ``kubernetes.watch``) is exercised end to end.

What it models, as the real kube-apiserver does:

* discovery (``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}``, ``/apis/{g}/{v}``,
  ``/version``), bearer-token authentication (401), RBAC-style 403 messages;
* get / list (``fieldSelector``, ``labelSelector``, ``limit``/``continue``
  served from a consistent snapshot) / watch (replay from a resourceVersion,
  synthetic ADDED for rv "0" or unset, BOOKMARKs, ``timeoutSeconds``,
  410 after compaction, chunked newline-delimited JSON);
* create (POST, 409 AlreadyExists), replace (PUT, 409 Conflict on a stale
  ``metadata.resourceVersion``), PATCH (merge, strategic merge, JSON patch;
  server-side apply answers 415), DELETE and DELETE-collection;
* one global, etcd-like resourceVersion counter shared by every kind;
* ``metadata.managedFields`` with ``FieldsV1`` sets and ownership transfer
  between managers, following the structured-merge-diff update rules;
* ``Status`` bodies with the real reasons and messages.

Deliberate simplifications: no defaulting (e.g. ``protocol: TCP``) or schema
validation beyond object names, no finalizers / graceful deletion, no
namespace existence checks, a small built-in schema for list keys and atomic
fields, incoming ``metadata.managedFields`` are ignored.
"""

from __future__ import annotations

import base64
import bisect
import copy
import dataclasses
import datetime as _dt
import json
import pathlib
import random
import re
import select
import socket
import string
import threading
import time as _time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["FakeKubeAPI", "RequestRecord", "Resource", "DEFAULT_RESOURCES", "LAST_APPLIED"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEFAULT_USER = "system:serviceaccount:ai:syncer"
_NEVER = float("inf")  # a bookmark time that never comes

# --------------------------------------------------------------------------
# resource registry
# --------------------------------------------------------------------------

_RW = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclasses.dataclass(frozen=True)
class Resource:
    """One REST resource the fake serves."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool = True
    verbs: tuple[str, ...] = _RW
    short_names: tuple[str, ...] = ()
    has_generation: bool = False
    status_subresource: bool = False
    create_on_update: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``configmaps`` or ``deployments.apps`` as used in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def details(self, name: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        if name:
            out["name"] = name
        if self.group:
            out["group"] = self.group
        out["kind"] = self.plural
        return out


def _res(group: str, plural: str, singular: str, kind: str, **kw: Any) -> Resource:
    return Resource(group, "v1", plural, singular, kind, **kw)


DEFAULT_RESOURCES: tuple[Resource, ...] = (
    _res("", "configmaps", "configmap", "ConfigMap", short_names=("cm",)),
    _res("", "endpoints", "endpoints", "Endpoints", short_names=("ep",), create_on_update=True),
    _res("", "services", "service", "Service", short_names=("svc",), status_subresource=True,
         create_on_update=True),
    _res("", "secrets", "secret", "Secret"),
    _res("", "serviceaccounts", "serviceaccount", "ServiceAccount", short_names=("sa",)),
    _res("", "pods", "pod", "Pod", short_names=("po",), status_subresource=True),
    _res("", "namespaces", "namespace", "Namespace", namespaced=False, short_names=("ns",),
         verbs=("create", "delete", "get", "list", "patch", "update", "watch"), status_subresource=True),
    _res("", "events", "event", "Event", short_names=("ev",), create_on_update=True),
    _res("apps", "deployments", "deployment", "Deployment", short_names=("deploy",),
         has_generation=True, status_subresource=True),
    _res("apps", "statefulsets", "statefulset", "StatefulSet", short_names=("sts",),
         has_generation=True, status_subresource=True),
    _res("apps", "daemonsets", "daemonset", "DaemonSet", short_names=("ds",),
         has_generation=True, status_subresource=True),
    _res("apps", "replicasets", "replicaset", "ReplicaSet", short_names=("rs",),
         has_generation=True, status_subresource=True),
    _res("rbac.authorization.k8s.io", "roles", "role", "Role", create_on_update=True),
    _res("rbac.authorization.k8s.io", "rolebindings", "rolebinding", "RoleBinding", create_on_update=True),
    _res("rbac.authorization.k8s.io", "clusterroles", "clusterrole", "ClusterRole", namespaced=False,
         create_on_update=True),
    _res("rbac.authorization.k8s.io", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding",
         namespaced=False, create_on_update=True),
    _res("coordination.k8s.io", "leases", "lease", "Lease", create_on_update=True),
    _res("discovery.k8s.io", "endpointslices", "endpointslice", "EndpointSlice"),
    _res("networking.k8s.io", "ingresses", "ingress", "Ingress", short_names=("ing",),
         has_generation=True, status_subresource=True),
    _res("networking.k8s.io", "networkpolicies", "networkpolicy", "NetworkPolicy",
         short_names=("netpol",), has_generation=True),
    _res("batch", "jobs", "job", "Job", has_generation=True, status_subresource=True),
    _res("batch", "cronjobs", "cronjob", "CronJob", short_names=("cj",), has_generation=True,
         status_subresource=True),
)

# extra field selectors the real server supports per kind (metadata.name and
# metadata.namespace work everywhere)
_EXTRA_FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "Secret": ("type",),
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"),
    "Namespace": ("status.phase",),
    "Event": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
              "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
              "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"),
    "Job": ("status.successful",),
}

# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------


def _rfc3339(when: _dt.datetime | str | None = None) -> str:
    if isinstance(when, str):
        return when
    if when is None:
        when = _dt.datetime.now(_dt.timezone.utc)
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(ts: str | None) -> float:
    if not ts:
        return 0.0
    try:
        return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _go_json(value: Any) -> str:
    """Compact JSON with sorted keys and Go's HTML escaping (``encoding/json``)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

_MD_ORDER = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
             "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
             "annotations", "ownerReferences", "finalizers", "managedFields")


def _ordered(obj: dict[str, Any]) -> dict[str, Any]:
    """Key order of the real server: kind, apiVersion, metadata, the rest."""
    md = obj.get("metadata") or {}
    new_md = {k: md[k] for k in _MD_ORDER if k in md}
    new_md.update({k: v for k, v in md.items() if k not in new_md})
    out: dict[str, Any] = {}
    for k in ("kind", "apiVersion"):
        if k in obj:
            out[k] = obj[k]
    out["metadata"] = new_md
    out.update({k: v for k, v in obj.items() if k not in out})
    return out


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``meta/v1 Status`` failure body as the apiserver writes it."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {},
                            "status": "Failure", "message": message, "reason": reason}
    if details:
        body["details"] = details
    body["code"] = code
    return body


_DEFAULT_REASON = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                   405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
                   413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
                   429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
                   504: "Timeout"}


class _ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.body = status_body(code, reason, message, details)
        self.code = code
        self.headers = headers or {}


def _not_found(res: Resource, name: str) -> _ApiError:
    return _ApiError(404, "NotFound", f'{res.qualified} "{name}" not found', res.details(name))


def _conflict(res: Resource, name: str, why: str = "the object has been modified; please apply your "
              "changes to the latest version and try again") -> _ApiError:
    return _ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res.qualified} "{name}": {why}',
                     res.details(name))


def _bad_request(message: str) -> _ApiError:
    return _ApiError(400, "BadRequest", message)


def _invalid(res: Resource, name: str, causes: list[tuple[str, str, str]]) -> _ApiError:
    """422 Invalid with one cause per (reason, field, detail), worded as the apiserver does."""
    text = ", ".join(f"{f}: {d}" for _, f, d in causes)
    if len(causes) > 1:
        text = "[" + text + "]"
    return _ApiError(422, "Invalid", f'{res.kind}.{res.group} "{name}" is invalid: {text}' if res.group
                     else f'{res.kind} "{name}" is invalid: {text}',
                     {"name": name, **({"group": res.group} if res.group else {}), "kind": res.kind,
                      "causes": [{"reason": r, "message": d, "field": f} for r, f, d in causes]})


_ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")


def _address_ok(address_type: str, text: str) -> str:
    """'' when ``text`` is a valid address of ``address_type``, else the apiserver's complaint."""
    import ipaddress

    if address_type == "FQDN":
        ok = len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None
        return "" if ok else _DNS_SUBDOMAIN_MSG
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        ip = None
    want = 4 if address_type == "IPv4" else 6
    return "" if ip is not None and ip.version == want else f"must be a valid {address_type} address"


def _validate_endpoint_slice(res: Resource, name: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """The checks of ``ValidateEndpointSlice`` that a reconciler or a test can trip over:
    addressType required, supported and immutable; each endpoint has 1-100 addresses of
    that type; at most 1000 endpoints and 100 ports."""
    causes: list[tuple[str, str, str]] = []
    atype = obj.get("addressType")
    if not atype:
        causes.append(("FieldValueRequired", "addressType", "Required value"))
    elif atype not in _ADDRESS_TYPES:
        causes.append(("FieldValueNotSupported", "addressType", f'Unsupported value: "{atype}": supported values: '
                       + ", ".join(f'"{t}"' for t in _ADDRESS_TYPES)))
    elif old is not None and old.get("addressType") != atype:
        causes.append(("FieldValueInvalid", "addressType", f'Invalid value: "{atype}": field is immutable'))
    endpoints = obj.get("endpoints") or []
    if len(endpoints) > 1000:
        causes.append(("FieldValueTooMany", "endpoints", f"Too many: {len(endpoints)}: must have at most 1000 items"))
    for i, ep in enumerate(endpoints if isinstance(endpoints, list) else []):
        addresses = ep.get("addresses") if isinstance(ep, dict) else None
        if not addresses:
            causes.append(("FieldValueRequired", f"endpoints[{i}].addresses",
                           "Required value: must contain at least 1 address"))
            continue
        if len(addresses) > 100:
            causes.append(("FieldValueTooMany", f"endpoints[{i}].addresses",
                           f"Too many: {len(addresses)}: must have at most 100 items"))
        for j, addr in enumerate(addresses):
            why = _address_ok(str(atype), str(addr)) if atype in _ADDRESS_TYPES else ""
            if why:
                causes.append(("FieldValueInvalid", f"endpoints[{i}].addresses[{j}]", f'Invalid value: "{addr}": {why}'))
    if len(obj.get("ports") or []) > 100:
        causes.append(("FieldValueTooMany", "ports", f"Too many: {len(obj['ports'])}: must have at most 100 items"))
    if causes:
        raise _invalid(res, name, causes)


# --------------------------------------------------------------------------
# managed fields (a small approximation of structured-merge-diff)
# --------------------------------------------------------------------------

Path = tuple[str, ...]

# associative lists and their keys, by field name
_KEYED_LISTS: dict[str, tuple[str, ...]] = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "env": ("name",), "volumes": ("name",), "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",), "imagePullSecrets": ("name",), "ownerReferences": ("uid",),
    "conditions": ("type",), "hostAliases": ("ip",), "resourceClaims": ("name",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
_SET_LISTS = {"finalizers"}
_ATOMIC_MAP_FIELDS = {"selector", "podSelector", "namespaceSelector", "labelSelector", "roleRef"}
_GRANULAR_SELECTOR_KINDS = {"Service", "ReplicationController"}
_CONTAINER_LISTS = {"f:containers", "f:initContainers", "f:ephemeralContainers"}

# Non-pointer Go structs / non-omitempty fields are present in the typed empty
# object, so the real server never reports them with a ".": {} marker.
_TEMPLATE_SKELETON: dict[str, Any] = {"metadata": {}, "spec": {"containers": None}}
_SKELETONS: dict[str, dict[str, Any]] = {
    "Deployment": {"spec": {"template": _TEMPLATE_SKELETON, "strategy": {}}},
    "StatefulSet": {"spec": {"template": _TEMPLATE_SKELETON, "updateStrategy": {}}},
    "DaemonSet": {"spec": {"template": _TEMPLATE_SKELETON, "updateStrategy": {}}},
    "ReplicaSet": {"spec": {"template": _TEMPLATE_SKELETON}},
    "Job": {"spec": {"template": _TEMPLATE_SKELETON}},
    "CronJob": {"spec": {"jobTemplate": {"metadata": {}, "spec": {"template": _TEMPLATE_SKELETON}}}},
    "Pod": {"spec": {"containers": None}},
    "Service": {"spec": {}}, "Namespace": {"spec": {}}, "Ingress": {"spec": {}},
    "NetworkPolicy": {"spec": {}}, "Lease": {"spec": {}},
}
_STRIPPED_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                  "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}


def _field(path: Path) -> str:
    return path[-1][2:] if path and path[-1].startswith("f:") else ""


def _list_key_fields(path: Path, kind: str) -> tuple[str, ...] | None:
    name = _field(path)
    if name == "ports":
        if any(el in _CONTAINER_LISTS for el in path):
            return ("containerPort", "protocol")
        if kind == "Service" and path == ("f:spec", "f:ports"):
            return ("port", "protocol")
        return None
    return _KEYED_LISTS.get(name)


def _key_element(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    return "k:" + json.dumps({k: item[k] for k in sorted(keys) if k in item}, separators=(",", ":"))


def _value_element(value: Any) -> str:
    return "v:" + json.dumps(value, separators=(",", ":"))


def _merge_skeleton(obj: Any, skel: Any) -> Any:
    if not isinstance(skel, dict) or not isinstance(obj, dict):
        return obj
    out = dict(obj)
    for k, v in skel.items():
        if k not in out:
            out[k] = copy.deepcopy(v)
        else:
            out[k] = _merge_skeleton(out[k], v)
    return out


class _FieldDiff:
    """Compare two objects and collect added / modified / removed field paths."""

    def __init__(self, kind: str, apply_semantics: bool = False) -> None:
        self.kind = kind
        self.apply = apply_semantics
        self.added: set[Path] = set()
        self.modified: set[Path] = set()
        self.removed: set[Path] = set()

    def shape(self, value: Any, path: Path) -> str:
        if isinstance(value, dict):
            name = _field(path)
            if name in _ATOMIC_MAP_FIELDS and not (name == "selector" and self.kind in _GRANULAR_SELECTOR_KINDS):
                return "atomic"
            return "map"
        if isinstance(value, list):
            if _field(path) in _SET_LISTS and all(not isinstance(v, (dict, list)) for v in value):
                return "set"
            keys = _list_key_fields(path, self.kind)
            if keys and all(isinstance(i, dict) and any(k in i for k in keys) for i in value):
                return "keyed"
        return "atomic"

    def subtree(self, value: Any, path: Path, out: set[Path], include_self: bool = True) -> None:
        shape = self.shape(value, path)
        if include_self and path:
            # ToFieldSet (apply) does not list struct/map nodes themselves
            if not (self.apply and shape in ("map", "keyed", "set") and value):
                out.add(path)
        if shape == "map":
            for k, v in value.items():
                self.subtree(v, path + ("f:" + k,), out)
        elif shape == "keyed":
            keys = _list_key_fields(path, self.kind) or ()
            for item in value:
                ip = path + (_key_element(item, keys),)
                out.add(ip)
                for k, v in item.items():
                    self.subtree(v, ip + ("f:" + k,), out)
        elif shape == "set":
            for v in value:
                out.add(path + (_value_element(v),))

    def diff(self, old: Any, new: Any, path: Path = ()) -> None:
        so, sn = self.shape(old, path), self.shape(new, path)
        if old is None and sn in ("map", "keyed", "set"):
            old, so = ({} if sn == "map" else []), sn
        if so == sn == "map":
            self._diff_map(old, new, path)
        elif so == sn == "keyed":
            keys = _list_key_fields(path, self.kind) or ()
            om = {_key_element(i, keys): i for i in old}
            nm = {_key_element(i, keys): i for i in new}
            for el, item in nm.items():
                ip = path + (el,)
                if el not in om:
                    self.added.add(ip)
                    self.subtree(item, ip, self.added, include_self=False)
                else:
                    self._diff_map(om[el], item, ip)
            for el, item in om.items():
                if el not in nm:
                    ip = path + (el,)
                    self.removed.add(ip)
                    self.subtree(item, ip, self.removed, include_self=False)
        elif so == sn == "set":
            oe = {_value_element(v) for v in old}
            ne = {_value_element(v) for v in new}
            self.added |= {path + (e,) for e in ne - oe}
            self.removed |= {path + (e,) for e in oe - ne}
        elif old != new:
            self.modified.add(path)
            if so != "atomic" and isinstance(old, (dict, list)):
                self.subtree(old, path, self.removed, include_self=False)

    def _diff_map(self, old: dict[str, Any], new: dict[str, Any], path: Path) -> None:
        for k, v in new.items():
            cp = path + ("f:" + k,)
            if k not in old:
                self.subtree(v, cp, self.added)
            else:
                self.diff(old[k], v, cp)
        for k, v in old.items():
            if k not in new:
                self.subtree(v, path + ("f:" + k,), self.removed)


def _fields_v1(paths: set[Path]) -> dict[str, Any]:
    """Render a set of paths as the FieldsV1 JSON trie."""
    root: dict[str, Any] = {}
    for p in paths:
        node = root
        for el in p:
            node = node.setdefault(el, {})
        node["."] = {}

    order = {"f": 1, "k": 2, "v": 3, "i": 4}

    def finish(node: dict[str, Any]) -> dict[str, Any]:
        children = {k: v for k, v in node.items() if k != "."}
        if not children:
            return {}
        out: dict[str, Any] = {}
        if "." in node:
            out["."] = {}
        for k in sorted(children, key=lambda s: (order.get(s[:1], 9), s)):
            out[k] = finish(children[k])
        return out

    return finish(root)


def _paths_from_fields_v1(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    """Inverse of :func:`_fields_v1` (handy for assertions)."""
    out: set[Path] = set()
    for k, v in tree.items():
        if k == ".":
            out.add(prefix)
            continue
        p = prefix + (k,)
        if not v:
            out.add(p)
        else:
            out |= _paths_from_fields_v1(v, p)
    return out


@dataclasses.dataclass
class _ManagedEntry:
    api_version: str
    time: str
    paths: set[Path]


ManagerKey = tuple[str, str, str]  # (manager, operation, subresource)


def _render_managed(managed: dict[ManagerKey, _ManagedEntry]) -> list[dict[str, Any]]:
    rows = []
    for (manager, op, sub), e in managed.items():
        row: dict[str, Any] = {"manager": manager, "operation": op, "apiVersion": e.api_version,
                               "time": e.time, "fieldsType": "FieldsV1", "fieldsV1": _fields_v1(e.paths)}
        if sub:
            row["subresource"] = sub
        rows.append(row)
    rows.sort(key=lambda r: (r["operation"], int(_epoch(r["time"])), r["manager"], r["apiVersion"]))
    return rows


# --------------------------------------------------------------------------
# patches
# --------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


_DELETE = object()


def _strategic_merge(target: Any, patch: Any, path: Path, kind: str) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            fname = k.split("/", 1)[1]
            out[fname] = [x for x in out.get(fname) or [] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
            continue
        cp = path + ("f:" + k,)
        cur = out.get(k)
        if isinstance(v, list) and isinstance(cur, list):
            keys = _list_key_fields(cp, kind)
            if keys and all(isinstance(i, dict) for i in v + cur):
                mk = keys[0]
                merged = [copy.deepcopy(i) for i in cur]
                for item in v:
                    idx = next((n for n, m in enumerate(merged) if m.get(mk) == item.get(mk)), None)
                    if item.get("$patch") == "delete":
                        if idx is not None:
                            merged.pop(idx)
                    elif idx is None:
                        merged.append({a: b for a, b in item.items() if a != "$patch"})
                    else:
                        merged[idx] = _strategic_merge(merged[idx], item, cp, kind)
                out[k] = merged
            elif _field(cp) in _SET_LISTS:
                out[k] = cur + [x for x in v if x not in cur]
            else:
                out[k] = copy.deepcopy(v)
        else:
            result = _strategic_merge(cur if isinstance(cur, dict) else {}, v, cp, kind)
            if result is _DELETE:
                out.pop(k, None)
            else:
                out[k] = result
    return out


def _pointer(ptr: str) -> list[str]:
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise ValueError(f"invalid JSON pointer {ptr!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in ptr[1:].split("/")]


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    doc = copy.deepcopy(doc)

    def parent(parts: list[str]) -> tuple[Any, str]:
        node = doc
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node, parts[-1]

    def get(parts: list[str]) -> Any:
        node = doc
        for p in parts:
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node

    def add(parts: list[str], value: Any) -> None:
        nonlocal doc
        if not parts:
            doc = value
            return
        node, last = parent(parts)
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), value)
        else:
            node[last] = value

    def remove(parts: list[str]) -> Any:
        node, last = parent(parts)
        return node.pop(int(last)) if isinstance(node, list) else node.pop(last)

    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        if kind == "add":
            add(parts, copy.deepcopy(op["value"]))
        elif kind == "remove":
            remove(parts)
        elif kind == "replace":
            remove(parts)
            add(parts, copy.deepcopy(op["value"]))
        elif kind == "move":
            add(parts, remove(_pointer(op["from"])))
        elif kind == "copy":
            add(parts, copy.deepcopy(get(_pointer(op["from"]))))
        elif kind == "test":
            if get(parts) != op.get("value"):
                raise ValueError(f"testing value {op.get('path')} failed")
        else:
            raise ValueError(f"Unexpected kind: {kind}")
    return doc


# --------------------------------------------------------------------------
# selectors
# --------------------------------------------------------------------------

_Pred = Callable[[dict[str, Any]], bool]


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _labels(o: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = (o.get("metadata") or {}).get("labels") or {}
    return found


def _label_pred(key: str, op: str, values: frozenset[str] = frozenset()) -> _Pred:
    def pred(o: dict[str, Any]) -> bool:
        labels = _labels(o)
        if op == "exists":
            return key in labels
        if op == "!exists":
            return key not in labels
        if op in ("in", "="):
            return key in labels and labels[key] in values
        return labels.get(key) not in values  # "notin", "!="

    return pred


def _field_pred(field: str, op: str, value: str) -> _Pred:
    def pred(o: dict[str, Any]) -> bool:
        return (_dotted(o, field) == value) == (op != "!=")

    return pred


def parse_label_selector(text: str) -> list[_Pred]:
    preds: list[_Pred] = []

    for raw in _split_outside_parens(text or ""):
        part = raw.strip()
        if not part:
            continue
        m = re.fullmatch(r"([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)", part)
        if m:
            key, op = m.group(1), m.group(2)
            vals = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            preds.append(_label_pred(key, op, vals))
            continue
        m = re.fullmatch(r"([^\s!=(),]+)\s*(==|!=|=)\s*([^\s!=(),]*)", part)
        if m:
            key, op, val = m.groups()
            preds.append(_label_pred(key, "!=" if op == "!=" else "=", frozenset([val])))
            continue
        m = re.fullmatch(r"(!?)\s*([^\s!=(),]+)", part)
        if m:
            neg, key = m.groups()
            preds.append(_label_pred(key, "!exists" if neg else "exists"))
            continue
        raise _bad_request(f"unable to parse requirement: found '{part}', expected: '=', '!=', '==', 'in', notin'")
    return preds


def _dotted(obj: dict[str, Any], dotted: str) -> str:
    node: Any = obj
    for p in dotted.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(p)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def parse_field_selector(text: str, res: Resource) -> tuple[list[_Pred], str]:
    """Returns predicates and the name pinned by ``metadata.name=`` (for authz)."""
    preds: list[_Pred] = []
    pinned = ""
    allowed = {"metadata.name", "metadata.namespace", *_EXTRA_FIELD_LABELS.get(res.kind, ())}
    for raw in (text or "").split(","):
        part = raw.strip()
        if not part:
            continue
        m = re.fullmatch(r"([^=!]+?)\s*(==|!=|=)\s*(.*)", part)
        if not m:
            raise _bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, val = m.group(1).strip(), m.group(2), m.group(3).strip()
        if field not in allowed:
            raise _bad_request(f"field label not supported: {field}")
        preds.append(_field_pred(field, op, val))
        if op != "!=" and field == "metadata.name":
            pinned = val
    return preds, pinned


# --------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------


@dataclasses.dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    time: float
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: bytes = b""
    status: int | None = None

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("1", "true", "True") or "/watch/" in self.path


@dataclasses.dataclass
class _Event:
    rv: int
    res: Resource
    ns: str
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None


@dataclasses.dataclass
class _Fault:
    count: int
    path_contains: str
    method: str
    status: int = 0
    reason: str = ""
    message: str = ""
    retry_after: int | None = None
    seconds: float = 0.0

    def matches(self, method: str, raw_path: str) -> bool:
        if self.method and self.method.upper() != method:
            return False
        return not self.path_contains or self.path_contains in raw_path or self.path_contains in unquote(raw_path)


@dataclasses.dataclass
class _Watcher:
    res: Resource
    ns: str
    expire_gen: int
    drop_gen: int


# --------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: "FakeKubeAPI"

    def handle_error(self, request: Any, client_address: Any) -> None:  # noqa: D401 - quiet
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Go's net/http sets TCP_NODELAY; without it, headers and body written separately on a
    # keep-alive connection stall ~40 ms each on Nagle + delayed ACK.
    disable_nagle_algorithm = True
    server: _Server
    record: RequestRecord | None = None

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        # like the apiserver: no "Server:" header
        if self.record is not None:
            self.record.status = code
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def _dispatch(self) -> None:
        self.server.fake._handle(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch


# --------------------------------------------------------------------------
# the fake
# --------------------------------------------------------------------------


class FakeKubeAPI:
    """An in-memory kube-apiserver on ``http://127.0.0.1:<port>``.

    State (thread-safe; every write bumps one global resourceVersion and emits
    watch events): :meth:`put`, :meth:`patch`, :meth:`delete`, :meth:`get`,
    :meth:`list_objects`, :attr:`resource_version`, :meth:`managed_paths`.
    Faults: :meth:`fail_next`, :meth:`forbid`, :meth:`hang_next`,
    :meth:`expire_watches`, :meth:`drop_watches`, :meth:`clear_faults`.
    Observation: :attr:`requests`, :meth:`count`, :attr:`open_watches`,
    :meth:`wait_for_watches`, :attr:`errors`.

    Extra keyword-only knobs: ``user`` (name in 403 messages),
    ``bookmark_interval`` (seconds between periodic watch BOOKMARKs, 60 as kube-apiserver v1.20;
    None: only the one 2 s before a watch's timeoutSeconds; every BOOKMARK only when there is
    a newer resourceVersion than the watch delivered, so a quiet watch gets none),
    ``resources`` (registry; defaults to :data:`DEFAULT_RESOURCES`),
    ``git_version`` (reported by ``/version``).
    """

    too_large_rv_wait = 3.0  # seconds a watch waits for a future resourceVersion

    def __init__(self, token: str = "test-token", *, user: str = DEFAULT_USER,
                 bookmark_interval: float | None = 60.0, resources: tuple[Resource, ...] = DEFAULT_RESOURCES,
                 git_version: str = "v1.31.0") -> None:
        self.token = token
        self.user = user
        self.bookmark_interval = bookmark_interval
        self.git_version = git_version
        self.requests: list[RequestRecord] = []
        self.errors: list[str] = []  # tracebacks of bugs inside the fake (answered as 500)
        self.url = ""
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._resources: list[Resource] = list(resources)
        self._rv = 1000
        self._min_watch_rv = 0
        self._objects: dict[tuple[Resource, str, str], dict[str, Any]] = {}
        self._managed: dict[tuple[Resource, str, str], dict[ManagerKey, _ManagedEntry]] = {}
        self._events: list[_Event] = []
        self._event_rvs: list[int] = []
        self._watchers: list[_Watcher] = []
        self._expire_gen = 0
        self._drop_gen = 0
        self._fails: list[_Fault] = []
        self._hangs: list[_Fault] = []
        self._forbidden: list[tuple[str, str, str]] = []
        self._conns: set[socket.socket] = set()
        self._stopping = False
        self._stop_event = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._flow_uid = str(uuid.uuid4())
        self._level_uid = str(uuid.uuid4())

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> "FakeKubeAPI":
        if self._httpd is not None:
            return self
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-kube-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping = True
        self._stop_event.set()
        with self._cond:
            self._cond.notify_all()
        httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> "FakeKubeAPI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def kubeconfig(self, path: pathlib.Path, context: str = "fake", namespace: str = "default") -> pathlib.Path:
        """Write a kubeconfig (JSON, which is valid YAML) pointing at this server."""
        if not self.url:
            raise RuntimeError("start() the fake before writing a kubeconfig")
        path = pathlib.Path(path)
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": f"{context}-user", "user": {"token": self.token}}],
            "contexts": [{"name": context,
                          "context": {"cluster": context, "user": f"{context}-user", "namespace": namespace}}],
            "current-context": context,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cfg, indent=2) + "\n")
        return path

    # ---------------------------------------------------------------- registry

    def add_resource(self, res: Resource) -> None:
        with self._lock:
            self._resources.append(res)

    def _resource_for_kind(self, api_version: str, kind: str) -> Resource:
        for r in self._resources:
            if r.api_version == api_version and r.kind == kind:
                return r
        raise KeyError(f"fake kube API does not serve {api_version} {kind}")

    def _resources_in(self, group: str, version: str) -> list[Resource]:
        return [r for r in self._resources if r.group == group and r.version == version]

    def _groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for r in self._resources:
            if r.group and r.version not in out.setdefault(r.group, []):
                out[r.group].append(r.version)
        return out

    # ---------------------------------------------------------------- state API (thread-safe)

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    def put(self, obj: dict[str, Any], manager: str = "kubectl-client-side-apply", operation: str = "Update",
            time: str | _dt.datetime | None = None, applied: bool = False) -> dict[str, Any]:
        """Create or replace ``obj`` (a full manifest). Returns the stored object."""
        res = self._resource_for_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        md = obj.get("metadata") or {}
        name = md.get("name")
        if not name:
            raise ValueError("put() needs metadata.name")
        ns = (md.get("namespace") or "default") if res.namespaced else ""
        desired = copy.deepcopy(obj)
        if applied:
            given = copy.deepcopy(obj)
            gmd = given.setdefault("metadata", {})
            if res.namespaced:
                gmd.setdefault("namespace", ns)
            ann = dict(gmd.get("annotations") or {})
            ann.pop(LAST_APPLIED, None)
            gmd["annotations"] = ann
            dmd = desired.setdefault("metadata", {})
            dmd["annotations"] = dict(dmd.get("annotations") or {})
            dmd["annotations"][LAST_APPLIED] = _go_json(given) + "\n"
        with self._cond:
            return self._write(res, ns, name, desired, manager=manager, operation=operation,
                               ts=_rfc3339(time) if time else None)

    def patch(self, api_version: str, kind: str, namespace: str | None, name: str, changes: dict[str, Any],
              manager: str, time: str | _dt.datetime | None = None) -> dict[str, Any]:
        """Apply a JSON merge patch as ``manager`` (e.g. ``kubectl-edit``)."""
        res = self._resource_for_kind(api_version, kind)
        ns = (namespace or "default") if res.namespaced else ""
        with self._cond:
            old = self._objects.get((res, ns, name))
            if old is None:
                raise KeyError(f"{res.qualified} {ns}/{name} not found")
            desired = merge_patch(copy.deepcopy(old), changes)
            return self._write(res, ns, name, desired, manager=manager, operation="Update",
                               ts=_rfc3339(time) if time else None)

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        res = self._resource_for_kind(api_version, kind)
        ns = (namespace or "default") if res.namespaced else ""
        with self._cond:
            if (res, ns, name) not in self._objects:
                raise KeyError(f"{res.qualified} {ns}/{name} not found")
            self._remove(res, ns, name)

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        res = self._resource_for_kind(api_version, kind)
        ns = (namespace or "default") if res.namespaced else ""
        with self._lock:
            obj = self._objects.get((res, ns, name))
            return copy.deepcopy(obj) if obj is not None else None

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        res = self._resource_for_kind(api_version, kind)
        with self._lock:
            return [copy.deepcopy(o) for (r, ns, _), o in sorted(self._objects.items(), key=lambda kv: kv[0][1:])
                    if r == res and (namespace is None or ns == namespace)]

    def managed_paths(self, obj: dict[str, Any], manager: str, operation: str = "Update") -> set[Path]:
        """Paths owned by ``manager`` in ``obj['metadata']['managedFields']`` (for assertions)."""
        out: set[Path] = set()
        for e in (obj.get("metadata") or {}).get("managedFields") or []:
            if e.get("manager") == manager and e.get("operation") == operation:
                out |= _paths_from_fields_v1(e.get("fieldsV1") or {})
        return out

    # ---------------------------------------------------------------- fault injection

    def fail_next(self, status: int, count: int = 1, path_contains: str = "", reason: str = "",
                  retry_after: int | None = None, *, message: str = "", method: str = "") -> None:
        with self._lock:
            self._fails.append(_Fault(count, path_contains, method, status=status, reason=reason,
                                      message=message, retry_after=retry_after))

    def forbid(self, verb: str, resource: str, name: str = "") -> None:
        """Deny ``verb`` on ``resource`` (``configmaps``, ``deployments.apps`` or ``*``) [for ``name``]."""
        with self._lock:
            self._forbidden.append((verb, resource, name))

    def hang_next(self, seconds: float, path_contains: str = "", *, count: int = 1, method: str = "") -> None:
        """Accept matching requests and say nothing for ``seconds`` (then answer normally)."""
        with self._lock:
            self._hangs.append(_Fault(count, path_contains, method, seconds=seconds))

    def clear_faults(self) -> None:
        with self._lock:
            self._fails.clear()
            self._hangs.clear()
            self._forbidden.clear()

    def expire_watches(self) -> None:
        """Compact history: open and future watches at any rv seen so far get 410 Expired.

        The global resourceVersion is bumped once (like a compaction revision), so
        a fresh list returns an rv that can be watched again.
        """
        with self._cond:
            self._rv += 1
            self._min_watch_rv = self._rv
            self._expire_gen += 1
            self._cond.notify_all()

    def drop_watches(self) -> None:
        """Abruptly close every open watch connection (no terminating chunk)."""
        with self._cond:
            self._drop_gen += 1
            self._cond.notify_all()

    @property
    def open_watches(self) -> int:
        with self._lock:
            return len(self._watchers)

    def wait_for_watches(self, n: int = 1, timeout: float = 5.0) -> bool:
        deadline = _time.monotonic() + timeout
        with self._cond:
            while len(self._watchers) < n:
                left = deadline - _time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    # ---------------------------------------------------------------- request log

    def count(self, method: str | None = None, path_contains: str = "", *, watch: bool | None = None,
              status: int | None = None) -> int:
        with self._lock:
            recs = list(self.requests)
        n = 0
        for r in recs:
            if method and r.method != method.upper():
                continue
            if path_contains and path_contains not in r.path and path_contains not in _full_path(r):
                continue
            if watch is not None and r.is_watch != watch:
                continue
            if status is not None and r.status != status:
                continue
            n += 1
        return n

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    # ---------------------------------------------------------------- storage internals (lock held)

    def _fields_view(self, res: Resource, obj: dict[str, Any] | None, subresource: str) -> dict[str, Any]:
        skeleton = _SKELETONS.get(res.kind, {})
        if obj is None:
            empty: dict[str, Any] = _merge_skeleton({"metadata": {}}, skeleton)
            return empty
        md = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _STRIPPED_META}
        view = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        view["metadata"] = md
        if res.status_subresource:
            if subresource == "status":
                return {"status": obj.get("status") or {}}
            view.pop("status", None)
        merged: dict[str, Any] = _merge_skeleton(view, skeleton)
        return merged

    def _write(self, res: Resource, ns: str, name: str, desired: dict[str, Any], *, manager: str,
               operation: str, ts: str | None, subresource: str = "", dry_run: bool = False) -> dict[str, Any]:
        key = (res, ns, name)
        old = self._objects.get(key)
        if res.kind == "EndpointSlice":
            _validate_endpoint_slice(res, name, desired, old)
        now = ts or _rfc3339()
        obj = copy.deepcopy(desired)
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        if res.kind == "EndpointSlice" and not obj.get("endpoints"):
            obj["endpoints"] = None  # a required list without omitempty: empty comes back as null
        md = obj.setdefault("metadata", {})
        for k in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "selfLink"):
            md.pop(k, None)
        md["name"] = name
        if res.namespaced:
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        if old is not None:
            omd = old["metadata"]
            md["uid"] = omd["uid"]
            md["creationTimestamp"] = omd["creationTimestamp"]
            if res.has_generation:
                gen = int(omd.get("generation") or 1)
                if obj.get("spec") != old.get("spec"):
                    gen += 1
                md["generation"] = gen
        else:
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now
            if res.has_generation:
                md["generation"] = 1

        managed = {k: _ManagedEntry(e.api_version, e.time, set(e.paths))
                   for k, e in self._managed.get(key, {}).items()}
        diff = _FieldDiff(res.kind)
        diff.diff(self._fields_view(res, old, subresource), self._fields_view(res, obj, subresource))
        changed = diff.added | diff.modified
        mkey: ManagerKey = (manager, operation, subresource)
        if operation == "Apply":
            applied = _FieldDiff(res.kind, apply_semantics=True)
            applied.subtree(self._fields_view(res, obj, subresource), (), applied.added, include_self=False)
            # metadata holding only what the server strips (name, namespace) is owned by nobody:
            # the real server lists no `f:metadata` for it (tests/realapi/test_realapi_who_moved.py)
            applied.added.discard(("f:metadata",))
            for other, e in list(managed.items()):
                if other != mkey:
                    e.paths -= changed | diff.removed
                    if not e.paths:
                        del managed[other]
            managed[mkey] = _ManagedEntry(res.api_version, now, applied.added)
        else:
            for other, e in list(managed.items()):
                e.paths -= changed | diff.removed
                if not e.paths:
                    del managed[other]
            if changed:
                prev = managed.get(mkey)
                managed[mkey] = _ManagedEntry(res.api_version, now, (prev.paths if prev else set()) | changed)

        if old is not None:
            # a no-op update is not written (no new resourceVersion, no event)
            same = {k: v for k, v in old.items() if k != "metadata"} == {k: v for k, v in obj.items() if k != "metadata"}
            omd = {k: v for k, v in old["metadata"].items() if k not in ("managedFields", "resourceVersion")}
            nmd = {k: v for k, v in md.items() if k not in ("managedFields", "resourceVersion")}
            old_managed = self._managed.get(key, {})
            same_managed = old_managed.keys() == managed.keys() and all(
                old_managed[k].paths == managed[k].paths for k in managed)
            if same and omd == nmd and same_managed:
                return copy.deepcopy(old)

        md["managedFields"] = _render_managed(managed)
        if dry_run:
            md["resourceVersion"] = old["metadata"]["resourceVersion"] if old else ""
            if old is None:
                md.pop("resourceVersion")
            return _ordered(obj)
        self._rv += 1
        md["resourceVersion"] = str(self._rv)
        obj = _ordered(obj)
        self._objects[key] = obj
        self._managed[key] = managed
        self._append_event(res, ns, "MODIFIED" if old is not None else "ADDED", obj, old)
        return copy.deepcopy(obj)

    def _remove(self, res: Resource, ns: str, name: str) -> dict[str, Any]:
        old = self._objects.pop((res, ns, name))
        self._managed.pop((res, ns, name), None)
        self._rv += 1
        gone = copy.deepcopy(old)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        self._append_event(res, ns, "DELETED", gone, old)
        return gone

    def _append_event(self, res: Resource, ns: str, etype: str, obj: dict[str, Any],
                      old: dict[str, Any] | None) -> None:
        self._events.append(_Event(self._rv, res, ns, etype, copy.deepcopy(obj), old))
        self._event_rvs.append(self._rv)
        self._cond.notify_all()

    def _snapshot(self, res: Resource, rv: int) -> dict[tuple[str, str], dict[str, Any]]:
        state: dict[tuple[str, str], dict[str, Any]] = {}
        for ev in self._events[: bisect.bisect_right(self._event_rvs, rv)]:
            if ev.res != res:
                continue
            k = (ev.ns, ev.obj["metadata"]["name"])
            if ev.type == "DELETED":
                state.pop(k, None)
            else:
                state[k] = ev.obj
        return state

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    # ---------------------------------------------------------------- HTTP handling

    def _handle(self, h: _Handler) -> None:
        try:
            self._handle_inner(h)
        except OSError:  # client went away (broken pipe, reset, ...)
            h.close_connection = True
        except Exception as exc:  # a bug in the fake: make it visible instead of dropping the connection
            import traceback

            with self._lock:
                self.errors.append(traceback.format_exc())
            try:
                self._send_json(h, 500, status_body(500, "InternalError",
                                                    f"Internal error occurred: fake kube API bug: {exc!r}"))
            except OSError:
                pass
            h.close_connection = True

    def _handle_inner(self, h: _Handler) -> None:
        url = urlsplit(h.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        body = b""
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    h.rfile.readline()
                    break
                chunks.append(h.rfile.read(size))
                h.rfile.readline()
            body = b"".join(chunks)
        else:
            length = int(h.headers.get("Content-Length") or 0)
            if length:
                body = h.rfile.read(length)
        rec = RequestRecord(h.command, url.path, query, _time.time(),
                            {k: v for k, v in h.headers.items()}, body)
        h.record = rec
        with self._lock:
            self.requests.append(rec)
            hang = self._take(self._hangs, h.command, h.path)
            fail = self._take(self._fails, h.command, h.path)
        if hang is not None:
            self._stop_event.wait(hang.seconds)
            if self._stopping:
                self._abort(h)
                return
        try:
            if fail is not None:
                raise self._injected(fail, h.command, url.path, query)
            self._authenticate(h, url.path)
            self._route(h, h.command, url.path, query, body)
        except _ApiError as err:
            self._send_json(h, err.code, err.body, err.headers)

    @staticmethod
    def _take(rules: list[_Fault], method: str, raw_path: str) -> _Fault | None:
        for rule in rules:
            if rule.count > 0 and rule.matches(method, raw_path):
                rule.count -= 1
                if rule.count <= 0:
                    rules.remove(rule)
                return rule
        return None

    def _injected(self, fault: _Fault, method: str, path: str, query: dict[str, str]) -> _ApiError:
        code = fault.status
        reason = fault.reason or _DEFAULT_REASON.get(code, "")
        details: dict[str, Any] = {}
        message = fault.message
        target = self._parse_resource_path(path)
        res, name = (target[0], target[2]) if target else (None, "")
        if res is not None:
            details = res.details(name)
        if not message:
            if code == 404 and res is not None and name:
                message = f'{res.qualified} "{name}" not found'
            elif code == 403 and res is not None:
                message = self._forbidden_message(res, self._verb(method, name, query, target), name,
                                                  target[1] if target else "", target[3] if target else "")
            elif code == 409 and res is not None and name:
                message = (f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been '
                           "modified; please apply your changes to the latest version and try again")
            elif code == 410:
                message = f"too old resource version: {query.get('resourceVersion') or 1} ({self._rv})"
            else:
                message = {
                    400: "the server rejected our request for an unknown reason",
                    401: "Unauthorized",
                    404: "the server could not find the requested resource",
                    422: "the server rejected our request due to an error in our request",
                    429: "Too many requests, please try again later.",
                    500: "Internal error occurred: injected fault",
                    503: "the server is currently unable to handle the request",
                    504: "the server was unable to return a response in the time allotted, but may "
                         "still be processing the request",
                }.get(code, f"the server responded with the status code {code} but did not return more "
                            "information")
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
            details["retryAfterSeconds"] = fault.retry_after
        if code == 401:
            details = {}
        return _ApiError(code, reason, message, details or None, headers)

    def _authenticate(self, h: _Handler, path: str) -> None:
        auth = h.headers.get("Authorization")
        public = path in ("/version", "/version/", "/healthz", "/livez", "/readyz")
        if auth is None and public:
            return  # system:anonymous may read these (system:public-info-viewer)
        if auth != f"Bearer {self.token}":
            raise _ApiError(401, "Unauthorized", "Unauthorized")

    # -- responses

    def _common_headers(self, h: _Handler) -> None:
        h.send_header("Audit-Id", str(uuid.uuid4()))
        h.send_header("Cache-Control", "no-cache, private")
        h.send_header("X-Kubernetes-Pf-Flowschema-Uid", self._flow_uid)
        h.send_header("X-Kubernetes-Pf-Prioritylevel-Uid", self._level_uid)

    def _send_json(self, h: _Handler, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(body, separators=(",", ":")) + "\n").encode()
        h.send_response(code)
        self._common_headers(h)
        h.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _send_text(self, h: _Handler, code: int, text: str) -> None:
        data = text.encode()
        h.send_response(code)
        self._common_headers(h)
        h.send_header("Content-Type", "text/plain; charset=utf-8")
        h.send_header("X-Content-Type-Options", "nosniff")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _page_not_found(self, h: _Handler) -> None:
        self._send_text(h, 404, "404 page not found\n")

    @staticmethod
    def _abort(h: _Handler) -> None:
        h.close_connection = True
        try:
            h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- routing

    def _route(self, h: _Handler, method: str, path: str, query: dict[str, str], body: bytes) -> None:
        segs = [unquote(s) for s in path.split("/") if s]
        if not segs:
            return self._send_json(h, 200, {"paths": self._root_paths()})
        head = segs[0]
        if head in ("healthz", "livez", "readyz") and len(segs) == 1:
            return self._send_text(h, 200, "ok")
        if head == "version" and len(segs) == 1:
            return self._send_json(h, 200, self._version())
        if head == "api":
            if len(segs) == 1:
                return self._send_json(h, 200, {"kind": "APIVersions", "versions": ["v1"],
                                                "serverAddressByClientCIDRs": [
                                                    {"clientCIDR": "0.0.0.0/0",
                                                     "serverAddress": self.url.split("//", 1)[1]}]})
            if segs[1] != "v1":
                return self._page_not_found(h)
            if len(segs) == 2:
                return self._send_json(h, 200, self._resource_list("", "v1"))
        elif head == "apis":
            groups = self._groups()
            if len(segs) == 1:
                return self._send_json(h, 200, {"kind": "APIGroupList", "apiVersion": "v1",
                                                "groups": [self._group_doc(g) for g in groups]})
            if segs[1] not in groups:
                return self._page_not_found(h)
            if len(segs) == 2:
                return self._send_json(h, 200, self._group_doc(segs[1]))
            if segs[2] not in groups[segs[1]]:
                return self._page_not_found(h)
            if len(segs) == 3:
                return self._send_json(h, 200, self._resource_list(segs[1], segs[2]))
        else:
            return self._page_not_found(h)
        target = self._parse_resource_path(path)
        if target is None:
            return self._page_not_found(h)
        res, ns, name, sub, legacy_watch = target
        self._serve_resource(h, method, res, ns, name, sub, legacy_watch, query, body)

    def _parse_resource_path(self, path: str) -> tuple[Resource, str, str, str, bool] | None:
        segs = [unquote(s) for s in path.split("/") if s]
        if len(segs) < 3:
            return None
        if segs[0] == "api" and segs[1] == "v1":
            group, version, rest = "", "v1", segs[2:]
        elif segs[0] == "apis" and len(segs) >= 4:
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            return None
        by_plural = {r.plural: r for r in self._resources_in(group, version)}
        if not by_plural:
            return None
        watch = False
        if rest and rest[0] == "watch":
            watch, rest = True, rest[1:]
        if not rest:
            return None
        ns = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] in by_plural and by_plural[rest[2]].namespaced:
            ns, rest = rest[1], rest[2:]
        res = by_plural.get(rest[0])
        if res is None or len(rest) > 3:
            return None
        if res.namespaced and not ns and len(rest) > 1:
            return None
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and not (sub == "status" and res.status_subresource):
            return None
        if watch and sub:
            return None
        return res, ns, name, sub, watch

    @staticmethod
    def _verb(method: str, name: str, query: dict[str, str],
              target: tuple[Resource, str, str, str, bool] | None = None) -> str:
        watch = query.get("watch") in ("1", "true", "True") or bool(target and target[4])
        if method in ("GET", "HEAD"):
            if watch:
                return "watch"
            return "get" if name else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())

    def _forbidden_message(self, res: Resource, verb: str, name: str, ns: str, sub: str) -> str:
        resource = f"{res.plural}/{sub}" if sub else res.plural
        who = f'{res.qualified} "{name}"' if name else res.qualified
        scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
        return (f'{who} is forbidden: User "{self.user}" cannot {verb} resource "{resource}" '
                f'in API group "{res.group}" {scope}')

    def _check_forbidden(self, res: Resource, verb: str, name: str, ns: str, sub: str) -> None:
        with self._lock:
            rules = list(self._forbidden)
        for r_verb, r_res, r_name in rules:
            if r_verb not in ("*", verb):
                continue
            if r_res not in ("*", res.plural, res.qualified, f"{res.plural}/{sub}" if sub else res.plural):
                continue
            if r_name and r_name != name:
                continue
            raise _ApiError(403, "Forbidden", self._forbidden_message(res, verb, name, ns, sub),
                            res.details(name))

    def _serve_resource(self, h: _Handler, method: str, res: Resource, ns: str, name: str, sub: str,
                        legacy_watch: bool, query: dict[str, str], body: bytes) -> None:
        watch = legacy_watch or query.get("watch") in ("1", "true", "True")
        verb = self._verb(method, name, query, (res, ns, name, sub, legacy_watch))
        if method in ("GET", "HEAD") and not name or verb == "deletecollection":
            fpreds, pinned = parse_field_selector(query.get("fieldSelector", ""), res)
            lpreds = parse_label_selector(query.get("labelSelector", ""))
            if legacy_watch and name:
                pinned = name
            self._check_forbidden(res, verb, pinned, ns, sub)
            if verb == "deletecollection":
                return self._delete_collection(h, res, ns, fpreds + lpreds, query)
            if watch:
                return self._serve_watch(h, res, ns, fpreds + lpreds, query)
            return self._serve_list(h, res, ns, fpreds, lpreds, query)
        if method in ("GET", "HEAD") and watch:  # legacy /watch/.../{name}
            self._check_forbidden(res, "watch", name, ns, sub)
            return self._serve_watch(h, res, ns, [_field_pred("metadata.name", "=", name)], query)
        if res.namespaced and not ns and method != "GET":
            raise _ApiError(405, "MethodNotAllowed",
                            "the server does not allow this method on the requested resource", {})
        if method == "POST" and name:
            raise _ApiError(405, "MethodNotAllowed",
                            "the server does not allow this method on the requested resource", {})
        if method in ("PUT", "PATCH") and not name:
            raise _ApiError(405, "MethodNotAllowed",
                            "the server does not allow this method on the requested resource", {})
        self._check_forbidden(res, verb, "" if method == "POST" else name, ns, sub)
        if method in ("GET", "HEAD"):
            with self._lock:
                obj = self._objects.get((res, ns, name))
                obj = copy.deepcopy(obj) if obj is not None else None
            if obj is None:
                raise _not_found(res, name)
            return self._send_json(h, 200, obj)
        if method == "POST":
            return self._create(h, res, ns, body, query)
        if method == "PUT":
            return self._replace(h, res, ns, name, sub, body, query)
        if method == "PATCH":
            return self._patch(h, res, ns, name, sub, body, query)
        if method == "DELETE":
            return self._delete(h, res, ns, name, body)
        raise _ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                        {})

    # -- discovery

    def _root_paths(self) -> list[str]:
        paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
        for g, versions in self._groups().items():
            paths.append(f"/apis/{g}")
            paths += [f"/apis/{g}/{v}" for v in versions]
        return sorted(paths)

    def _version(self) -> dict[str, Any]:
        m = re.match(r"v(\d+)\.(\d+)", self.git_version)
        major, minor = (m.group(1), m.group(2)) if m else ("1", "31")
        return {"major": major, "minor": minor, "gitVersion": self.git_version,
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2024-08-13T07:28:49Z", "goVersion": "go1.22.5", "compiler": "gc",
                "platform": "linux/amd64"}

    def _group_doc(self, group: str) -> dict[str, Any]:
        versions = self._groups()[group]
        docs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": docs,
                "preferredVersion": docs[0]}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        items = []
        for r in self._resources_in(group, version):
            entry: dict[str, Any] = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                                     "kind": r.kind, "verbs": list(r.verbs)}
            if r.short_names:
                entry["shortNames"] = list(r.short_names)
            items.append(entry)
            if r.status_subresource:
                items.append({"name": f"{r.plural}/status", "singularName": "", "namespaced": r.namespaced,
                              "kind": r.kind, "verbs": ["get", "patch", "update"]})
        doc: dict[str, Any] = {"kind": "APIResourceList"}
        if group:
            doc["apiVersion"] = "v1"
        doc["groupVersion"] = f"{group}/{version}" if group else version
        doc["resources"] = items
        return doc

    # -- reads

    @staticmethod
    def _encode_continue(rv: int, start: str) -> str:
        raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @staticmethod
    def _decode_continue(token: str) -> tuple[int, str]:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            doc = json.loads(raw)
            if doc.get("v") != "meta.k8s.io/v1":
                raise ValueError
            return int(doc["rv"]), str(doc["start"])
        except (ValueError, KeyError, TypeError):
            raise _bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                               "(version meta.k8s.io/v1)") from None

    def _serve_list(self, h: _Handler, res: Resource, ns: str, fpreds: list[_Pred], lpreds: list[_Pred],
                    query: dict[str, str]) -> None:
        limit_s = query.get("limit") or "0"
        try:
            limit = max(int(limit_s), 0)
        except ValueError:
            raise _bad_request(f'strconv.ParseInt: parsing "{limit_s}": invalid syntax') from None
        token = query.get("continue") or ""
        with self._lock:
            if token:
                rv, start = self._decode_continue(token)
                if rv < self._min_watch_rv:
                    raise _ApiError(410, "Expired",
                                    "The provided continue parameter is too old to display a consistent list "
                                    "result. You can start a new list without the continue parameter, or use "
                                    "the continue token in this response to retrieve the remainder of the "
                                    "results. Continuing with the provided token results in an inconsistent "
                                    "list - objects that were created, modified, or deleted between the time "
                                    "the first chunk was returned and now may show up in the list.")
                state = self._snapshot(res, rv)
            else:
                rv, start = self._rv, ""
                state = {(k[1], k[2]): o for k, o in self._objects.items() if k[0] == res}
            rows = []
            for (ons, oname), obj in state.items():
                if ns and ons != ns:
                    continue
                key = f"{ons}/{oname}" if res.namespaced else oname
                if start and key < start:
                    continue
                if all(p(obj) for p in fpreds + lpreds):
                    rows.append((key, obj))
            rows.sort(key=lambda kv: kv[0])
            meta: dict[str, Any] = {"resourceVersion": str(rv)}
            if limit and len(rows) > limit:
                meta["continue"] = self._encode_continue(rv, rows[limit - 1][0] + "\x00")
                if not fpreds and not lpreds:
                    meta["remainingItemCount"] = len(rows) - limit
                rows = rows[:limit]
            items = []
            for _, obj in rows:
                item = copy.deepcopy(obj)
                item.pop("kind", None)
                item.pop("apiVersion", None)
                items.append(item)
        self._send_json(h, 200, {"kind": res.list_kind, "apiVersion": res.api_version, "metadata": meta,
                                 "items": items})

    # -- watch

    def _serve_watch(self, h: _Handler, res: Resource, ns: str, preds: list[_Pred], query: dict[str, str]) -> None:
        rv_param = query.get("resourceVersion", "")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1", "True")
        send_initial = query.get("sendInitialEvents") in ("true", "1", "True")
        timeout_s = query.get("timeoutSeconds")
        try:
            timeout = float(timeout_s) if timeout_s else None
        except ValueError:
            raise _bad_request(f'strconv.ParseInt: parsing "{timeout_s}": invalid syntax') from None

        def matches(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            if ns and obj["metadata"].get("namespace", "") != ns:
                return False
            return all(p(obj) for p in preds)

        initial: list[dict[str, Any]] = []
        error: dict[str, Any] | None = None
        with self._cond:
            if rv_param in ("", "0") or send_initial:
                cursor = len(self._events)
                initial = [copy.deepcopy(o) for k, o in sorted(self._objects.items(), key=lambda kv: kv[0][1:])
                           if k[0] == res and matches(o)]
                start_rv = self._rv
            else:
                try:
                    start_rv = int(rv_param)
                except ValueError:
                    raise _bad_request(f'resourceVersion: Invalid value: "{rv_param}": '
                                       "strconv.ParseUint: parsing " f'"{rv_param}": invalid syntax') from None
                if start_rv < self._min_watch_rv:
                    error = status_body(410, "Expired", f"too old resource version: {start_rv} "
                                                        f"({self._min_watch_rv})")
                elif start_rv > self._rv:
                    deadline = _time.monotonic() + self.too_large_rv_wait
                    while start_rv > self._rv and _time.monotonic() < deadline and not self._stopping:
                        self._cond.wait(max(0.0, min(0.1, deadline - _time.monotonic())))
                    if start_rv > self._rv:
                        error = status_body(504, "Timeout",
                                            f"Too large resource version: {start_rv}, current: {self._rv}",
                                            {"causes": [{"reason": "ResourceVersionTooLarge",
                                                         "message": "Too large resource version"}],
                                             "retryAfterSeconds": 1})
                cursor = bisect.bisect_right(self._event_rvs, start_rv)
            watcher = _Watcher(res, ns, self._expire_gen, self._drop_gen)
            if error is None:
                self._watchers.append(watcher)
                self._cond.notify_all()

        h.send_response(200)
        self._common_headers(h)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def emit(etype: str, obj: dict[str, Any]) -> None:
            line = json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"
            h.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))

        def finish() -> None:
            h.wfile.write(b"0\r\n\r\n")

        if error is not None:
            emit("ERROR", error)
            finish()
            return
        try:
            self._watch_loop(h, watcher, res, initial, cursor, start_rv, bookmarks, send_initial, timeout,
                             matches, emit, finish)
        finally:
            with self._cond:
                if watcher in self._watchers:
                    self._watchers.remove(watcher)
                self._cond.notify_all()

    def _watch_loop(self, h: _Handler, watcher: _Watcher, res: Resource, initial: list[dict[str, Any]],
                    cursor: int, last_rv: int, bookmarks: bool, send_initial: bool, timeout: float | None,
                    matches: Callable[[dict[str, Any] | None], bool],
                    emit: Callable[[str, dict[str, Any]], None], finish: Callable[[], None]) -> None:
        def bookmark(rv: int, initial_end: bool = False) -> None:
            md: dict[str, Any] = {"resourceVersion": str(rv)}
            if initial_end:
                md["annotations"] = {"k8s.io/initial-events-end": "true"}
            emit("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version, "metadata": md})

        for obj in initial:
            emit("ADDED", obj)
        if send_initial and bookmarks:
            bookmark(last_rv, initial_end=True)
        started = _time.monotonic()
        deadline = started + timeout if timeout else None
        # kube-apiserver v1.20 (the tests/realapi tier, docs/realapi.md): a BOOKMARK 2 s before
        # the watch's timeoutSeconds and about every ``bookmark_interval`` (60 s), each only when
        # the resource's newest resourceVersion has moved past what the watch delivered -- so
        # an idle watch in a quiet cluster gets none at all.
        interval = self.bookmark_interval
        sent_rv = last_rv  # the newest resourceVersion this watch has delivered
        next_bookmark = min(x for x in (started + interval if interval else None,
                                        deadline - 2.0 if deadline is not None else None, _NEVER) if x is not None)
        while True:
            with self._cond:
                while True:
                    now = _time.monotonic()
                    if (self._stopping or watcher.expire_gen != self._expire_gen
                            or watcher.drop_gen != self._drop_gen or cursor < len(self._events)):
                        break
                    if deadline is not None and now >= deadline:
                        break
                    if bookmarks and now >= next_bookmark:
                        break
                    if self._client_gone(h):
                        return
                    wake = min(x for x in (deadline, next_bookmark if bookmarks else None, now + 0.25)
                               if x is not None)
                    self._cond.wait(max(0.0, wake - now))
                batch = self._events[cursor:]
                cursor = len(self._events)
                current_rv = self._rv
                expired = watcher.expire_gen != self._expire_gen
                dropped = watcher.drop_gen != self._drop_gen
                stopping = self._stopping
            if dropped or stopping:
                self._abort(h)
                return
            for ev in batch:
                out = self._convert(ev, watcher, matches)
                if out is not None:
                    emit(*out)
                    sent_rv = ev.rv
                last_rv = ev.rv
            if expired:
                emit("ERROR", status_body(410, "Expired",
                                          f"too old resource version: {last_rv} ({self._min_watch_rv})"))
                finish()
                return
            now = _time.monotonic()
            if deadline is not None and now >= deadline:
                finish()
                return
            if bookmarks and now >= next_bookmark:
                near_end = deadline is not None and now >= deadline - 2.0
                if current_rv > sent_rv:
                    bookmark(current_rv)
                    sent_rv = current_rv
                periodic = now + interval if interval else _NEVER
                next_bookmark = min(periodic, deadline if near_end or deadline is None else deadline - 2.0) \
                    if deadline is not None else periodic

    @staticmethod
    def _convert(ev: _Event, watcher: _Watcher,
                 matches: Callable[[dict[str, Any] | None], bool]) -> tuple[str, dict[str, Any]] | None:
        if ev.res != watcher.res or (watcher.ns and ev.ns != watcher.ns):
            return None
        if ev.type in ("ADDED", "DELETED"):
            return (ev.type, copy.deepcopy(ev.obj)) if matches(ev.obj) else None
        now_ok, before_ok = matches(ev.obj), matches(ev.old)
        if now_ok and before_ok:
            return "MODIFIED", copy.deepcopy(ev.obj)
        if now_ok:
            return "ADDED", copy.deepcopy(ev.obj)
        if before_ok and ev.old is not None:
            gone = copy.deepcopy(ev.old)
            gone["metadata"]["resourceVersion"] = str(ev.rv)
            return "DELETED", gone
        return None

    @staticmethod
    def _client_gone(h: _Handler) -> bool:
        try:
            readable, _, _ = select.select([h.connection], [], [], 0)
            if readable:
                return bool(h.connection.recv(1, socket.MSG_PEEK) == b"")
        except (OSError, ValueError):
            return True
        return False

    # -- writes

    @staticmethod
    def _decode_body(body: bytes) -> Any:
        try:
            return json.loads(body or b"null")
        except ValueError as e:
            raise _bad_request(f"couldn't get version/kind; json parse error: {e}") from None

    def _check_body(self, res: Resource, obj: Any) -> dict[str, Any]:
        if not isinstance(obj, dict):
            raise _bad_request("the body of the request was in an unknown format - accepted media types "
                               "include: application/json, application/yaml, application/vnd.kubernetes.protobuf")
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if av and av != res.api_version:
            raise _bad_request(f"the API version in the data ({av}) does not match the expected API version "
                               f"({res.api_version})")
        if kind and kind != res.kind:
            raise _bad_request(f"the kind in the data ({kind}) does not match the expected kind ({res.kind})")
        return obj

    def _manager(self, h: _Handler, query: dict[str, str]) -> str:
        if query.get("fieldManager"):
            return query["fieldManager"]
        ua = h.headers.get("User-Agent") or ""
        return ua.split("/", 1)[0] or "unknown"

    def _create(self, h: _Handler, res: Resource, ns: str, body: bytes, query: dict[str, str]) -> None:
        obj = self._check_body(res, self._decode_body(body))
        md = obj.get("metadata") or {}
        if res.namespaced and md.get("namespace") and md["namespace"] != ns:
            raise _bad_request("the namespace of the provided object does not match the namespace sent on "
                               "the request")
        name = md.get("name") or ""
        if not name and md.get("generateName"):
            name = md["generateName"] + "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
        self._validate_name(res, name)
        dry = query.get("dryRun") == "All"
        with self._cond:
            if (res, ns, name) in self._objects:
                raise _ApiError(409, "AlreadyExists", f'{res.qualified} "{name}" already exists',
                                res.details(name))
            desired = copy.deepcopy(obj)
            if res.status_subresource:
                desired.pop("status", None)
            out = self._write(res, ns, name, desired, manager=self._manager(h, query), operation="Update",
                              ts=None, dry_run=dry)
        self._send_json(h, 201, out)

    @staticmethod
    def _validate_name(res: Resource, name: str) -> None:
        if not name:
            msg = "name or generateName is required"
            raise _ApiError(422, "Invalid", f'{res.kind} "" is invalid: metadata.name: Required value: {msg}',
                            {"kind": res.kind, **({"group": res.group} if res.group else {}),
                             "causes": [{"reason": "FieldValueRequired", "message": f"Required value: {msg}",
                                         "field": "metadata.name"}]})
        if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
            detail = f'Invalid value: "{name}": {_DNS_SUBDOMAIN_MSG}'
            raise _ApiError(422, "Invalid", f'{res.kind} "{name}" is invalid: metadata.name: {detail}',
                            {"name": name, **({"group": res.group} if res.group else {}), "kind": res.kind,
                             "causes": [{"reason": "FieldValueInvalid", "message": detail,
                                         "field": "metadata.name"}]})

    def _replace(self, h: _Handler, res: Resource, ns: str, name: str, sub: str, body: bytes,
                 query: dict[str, str]) -> None:
        obj = self._check_body(res, self._decode_body(body))
        md = obj.get("metadata") or {}
        if md.get("name") and md["name"] != name:
            raise _bad_request(f"the name of the object ({md['name']}) does not match the name on the URL ({name})")
        if res.namespaced and md.get("namespace") and md["namespace"] != ns:
            raise _bad_request("the namespace of the provided object does not match the namespace sent on "
                               "the request")
        dry = query.get("dryRun") == "All"
        manager = self._manager(h, query)
        with self._cond:
            old = self._objects.get((res, ns, name))
            if old is None:
                if not res.create_on_update or sub:
                    raise _not_found(res, name)
                self._check_create_on_update(res, name, ns)
                self._validate_name(res, name)
                desired = copy.deepcopy(obj)
                if res.status_subresource:
                    desired.pop("status", None)
                out = self._write(res, ns, name, desired, manager=manager, operation="Update", ts=None,
                                  dry_run=dry)
                code = 201
            else:
                want_rv = md.get("resourceVersion")
                if want_rv and want_rv != old["metadata"]["resourceVersion"]:
                    raise _conflict(res, name)
                desired = self._merge_subresource(res, old, obj, sub)
                out = self._write(res, ns, name, desired, manager=manager, operation="Update", ts=None,
                                  subresource=sub, dry_run=dry)
                code = 200
        self._send_json(h, code, out)

    def _check_create_on_update(self, res: Resource, name: str, ns: str) -> None:
        """A PUT that would create the object is authorized as ``create`` as well (with the
        name), after ``update`` passed. kube-apiserver 1.20 refuses it with an empty reason:
        ``leases.coordination.k8s.io "x" is forbidden: `` (tests/realapi, docs/realapi.md)."""
        try:
            self._check_forbidden(res, "create", name, ns, "")
        except _ApiError:
            raise _ApiError(403, "Forbidden", f'{res.qualified} "{name}" is forbidden: ', res.details(name)) from None

    @staticmethod
    def _merge_subresource(res: Resource, old: dict[str, Any], new: dict[str, Any], sub: str) -> dict[str, Any]:
        if sub == "status":
            out = copy.deepcopy(old)
            if "status" in new:
                out["status"] = copy.deepcopy(new["status"])
            else:
                out.pop("status", None)
            return out
        out = copy.deepcopy(new)
        if res.status_subresource:
            if "status" in old:
                out["status"] = copy.deepcopy(old["status"])
            else:
                out.pop("status", None)
        return out

    def _patch(self, h: _Handler, res: Resource, ns: str, name: str, sub: str, body: bytes,
               query: dict[str, str]) -> None:
        ctype = (h.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        accepted = ("application/json-patch+json", "application/merge-patch+json",
                    "application/strategic-merge-patch+json")
        if ctype not in accepted:
            raise _ApiError(415, "UnsupportedMediaType",
                            "the body of the request was in an unknown format - accepted media types include: "
                            + ", ".join(accepted))
        patch = self._decode_body(body)
        if ctype == "application/json-patch+json" and not isinstance(patch, list):
            raise _bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        if ctype != "application/json-patch+json" and not isinstance(patch, dict):
            raise _bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
        dry = query.get("dryRun") == "All"
        with self._cond:
            old = self._objects.get((res, ns, name))
            if old is None:
                raise _not_found(res, name)
            try:
                if ctype == "application/json-patch+json":
                    patched = json_patch(old, patch)
                elif ctype == "application/merge-patch+json":
                    patched = merge_patch(copy.deepcopy(old), patch)
                else:
                    patched = _strategic_merge(copy.deepcopy(old), patch, (), res.kind)
            except (ValueError, KeyError, IndexError, TypeError) as e:
                raise _ApiError(422, "Invalid", f"the server rejected our request due to an error in our "
                                                f"request: {e}", res.details(name)) from None
            if not isinstance(patched, dict):
                raise _bad_request("the patch produced an object that is not a JSON object")
            pmd = patched.get("metadata") or {}
            if pmd.get("resourceVersion") and pmd["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise _conflict(res, name)
            if pmd.get("name", name) != name:
                raise _bad_request(f"the name of the object ({pmd.get('name')}) does not match the name on the "
                                   f"URL ({name})")
            desired = self._merge_subresource(res, old, self._check_body(res, patched), sub)
            out = self._write(res, ns, name, desired, manager=self._manager(h, query), operation="Update",
                              ts=None, subresource=sub, dry_run=dry)
        self._send_json(h, 200, out)

    def _delete(self, h: _Handler, res: Resource, ns: str, name: str, body: bytes) -> None:
        opts = self._decode_body(body) if body else None
        pre = (opts or {}).get("preconditions") or {} if isinstance(opts, dict) else {}
        with self._cond:
            old = self._objects.get((res, ns, name))
            if old is None:
                raise _not_found(res, name)
            omd = old["metadata"]
            if pre.get("resourceVersion") and pre["resourceVersion"] != omd["resourceVersion"]:
                raise _conflict(res, name, f"Precondition failed: ResourceVersion in precondition: "
                                           f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                           f"{omd['resourceVersion']}")
            if pre.get("uid") and pre["uid"] != omd["uid"]:
                raise _conflict(res, name, f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                                           f"object meta: {omd['uid']}")
            gone = self._remove(res, ns, name)
        details = res.details(name)
        details["uid"] = gone["metadata"]["uid"]
        self._send_json(h, 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                 "details": details})

    def _delete_collection(self, h: _Handler, res: Resource, ns: str, preds: list[_Pred],
                           query: dict[str, str]) -> None:
        if res.namespaced and not ns:
            raise _ApiError(405, "MethodNotAllowed",
                            "the server does not allow this method on the requested resource", {})
        items = []
        with self._cond:
            for (r, ons, oname), obj in sorted(self._objects.items(), key=lambda kv: kv[0][1:]):
                if r == res and (not ns or ons == ns) and all(p(obj) for p in preds):
                    items.append((ons, oname))
            deleted = [self._remove(res, ons, oname) for ons, oname in items]
            rv = self._rv
        for d in deleted:
            d.pop("kind", None)
            d.pop("apiVersion", None)
        self._send_json(h, 200, {"kind": res.list_kind, "apiVersion": res.api_version,
                                 "metadata": {"resourceVersion": str(rv)}, "items": deleted})


def _full_path(rec: RequestRecord) -> str:
    if not rec.query:
        return rec.path
    return rec.path + "?" + "&".join(f"{k}={v}" for k, v in rec.query.items())


def iter_events(raw_lines: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """Parse newline-delimited watch JSON (helper for raw ``call_api`` tests)."""
    for line in raw_lines:
        line = line.strip()
        if line:
            yield json.loads(line)


try:  # pytest fixture: register with ``from tests.fakes.kube_api import fake_kube_fixture`` in a conftest
    import pytest as _pytest

    @_pytest.fixture(name="fake_kube")
    def fake_kube_fixture() -> Iterator[FakeKubeAPI]:
        """A started :class:`FakeKubeAPI` (function scope), stopped afterwards."""
        with FakeKubeAPI() as api:
            yield api
        assert not api.errors, "the fake kube API hit an internal error:\n" + api.errors[0]
except ImportError:  # pragma: no cover - pytest is only needed for the fixture
    pass
