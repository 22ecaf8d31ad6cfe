"""Writes: create, replace, patch (merge, strategic, JSON; apply answers 415), delete."""

from __future__ import annotations

import copy
import json
import random
import string
from typing import Any

from .http import _Handler
from .patches import _strategic_merge, json_patch, merge_patch
from .resources import Resource
from .selectors import _Pred
from .status import _ApiError, _bad_request, _conflict, _not_found
from .validation import _DNS_SUBDOMAIN, _DNS_SUBDOMAIN_MSG


class WritesMixin:
    """POST / PUT / PATCH / DELETE (and DELETE collection) on a resource."""

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
