"""The resource registry: what the fake serves, its verbs, scope and field selectors."""

from __future__ import annotations

import dataclasses
from typing import Any


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
