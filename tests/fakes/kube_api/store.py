"""The object store: objects, the global resourceVersion, managedFields bookkeeping, events."""

from __future__ import annotations

import bisect
import copy
import datetime as _dt
import uuid
from typing import Any

from .managed_fields import (_SKELETONS, _STRIPPED_META, ManagerKey, Path, _FieldDiff, _ManagedEntry, _merge_skeleton,
                             _paths_from_fields_v1, _render_managed)
from .patches import merge_patch
from .resources import Resource
from .validation import _validate_configmap, _validate_endpoint_slice
from .watch import _Event
from .wire import _go_json, _ordered, _rfc3339


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class StoreMixin:
    """Objects, the one global resourceVersion, the event history and the test-side state API."""

    def add_resource(self, res: Resource) -> None:
        with self._lock:
            self._resources.append(res)

    def _resource_for_kind(self, api_version: str, kind: str) -> Resource:
        for r in self._resources:
            if r.api_version == api_version and r.kind == kind:
                return r
        raise KeyError(f"fake kube API does not serve {api_version} {kind}")

    # -- state API (thread-safe)

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

    # -- storage internals (lock held)

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
        elif res.kind == "ConfigMap":
            _validate_configmap(res, name, desired)
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
