"""``metadata.managedFields``: a small approximation of structured-merge-diff."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from .wire import _epoch


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
