"""Discovery documents: ``/api``, ``/apis``, ``/apis/{g}``, ``/apis/{g}/{v}``, ``/version``."""

from __future__ import annotations

import re
from typing import Any

from .resources import Resource


class DiscoveryMixin:
    """``/api``, ``/apis``, ``/version`` and the root path list."""

    def _resources_in(self, group: str, version: str) -> list[Resource]:
        return [r for r in self._resources if r.group == group and r.version == version]

    def _groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for r in self._resources:
            if r.group and r.version not in out.setdefault(r.group, []):
                out[r.group].append(r.version)
        return out

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
