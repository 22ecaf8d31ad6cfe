"""Routing: URL path to resource, namespace, name and verb, then to the verb's handler."""

from __future__ import annotations

import copy
from urllib.parse import unquote

from .http import _Handler
from .resources import Resource
from .selectors import _field_pred, parse_field_selector, parse_label_selector
from .status import _ApiError, _not_found


class RoutingMixin:
    """Turning a URL path into (resource, namespace, name, subresource) and a verb."""

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
