"""What syncer knows about Kubernetes kinds, in one table. Pure data and lookups.

Every module reads its per-kind facts here (detection, the sources, grants and the chart,
untracked listing, the Kubernetes client); none holds its own list of kinds or versions.

* ``NEVER_WRITTEN``      kinds whose values are never copied into git (they are reported)
                         nor shown anywhere (text, JSON, PR, logs, webhooks).
* ``KINDS``              each known kind: API group, resource, scope, the versions each
                         Kubernetes release serves it in, whether the chart grants it by name;
                         ``CLUSTER_SCOPED``, ``BUILTIN_KINDS``, ``api_versions``, the chart's kinds
                         (``grants.CHART_KINDS``) and ``ALTERNATE_VERSIONS`` are read from it.
* ``DATA_MAPS``          top-level maps holding data: a key that exists only live is drift.
* ``ENDPOINTS_FAMILY``   kinds whose addresses a reconciler repoints.
* ``CONTROLLER_FILLED``  fields a controller fills while another field asks it to (aggregated
                         ClusterRole ``rules``): never compared.
* ``ALTERNATE_VERSIONS`` older versions of a kind an API server may serve instead.
* ``FOLDED``             write-only fields the server folds into another (``stringData``).
* ``list_items``         the items of a ``kind: List`` document (``v1/List``, ``ConfigMapList``).

What the API types say of fields (list merge keys, quantities, pointer fields, unions) is
``apifields``.
"""

from __future__ import annotations

from dataclasses import dataclass

NEVER_WRITTEN = frozenset({"Secret"})


@dataclass(frozen=True)
class Kind:
    """One kind as the API serves it: its API group, resource (plural), scope, and the versions
    Kubernetes serves it in, newest first, each with the releases that serve it."""

    group: str  # "" for the core API
    resource: str
    #: (version, first Kubernetes 1.x minor that serves it, first that no longer does; None: still
    #: served). 0 stands for "before any release syncer supports".
    versions: tuple[tuple[str, int, int | None], ...]
    namespaced: bool = True
    #: The chart's ``tracked.kinds`` grants it by name (``syncer.kindResources`` in
    #: charts/syncer/templates/_helpers.tpl lists the same; tests/test_chart.py checks it).
    chart: bool = False
    #: An object declared in the newest version may be read in an older one the server serves
    #: instead, the shapes being converted (``detect.endpoints.as_v1``): ``ALTERNATE_VERSIONS``.
    read_older: bool = False

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def api_versions(self) -> tuple[str, ...]:
        """Every apiVersion it has been served in, newest first."""
        return tuple(self.api_version(v) for v, _, _ in self.versions)

    def served_by(self, minor: int) -> tuple[str, ...]:
        """The apiVersions Kubernetes 1.``minor`` serves it in, newest first."""
        return tuple(self.api_version(v) for v, since, until in self.versions
                     if since <= minor and (until is None or minor < until))


def _core(resource: str, namespaced: bool = True, chart: bool = False) -> Kind:
    return Kind("", resource, (("v1", 0, None),), namespaced, chart)


def _v1(group: str, resource: str, since: int = 0, namespaced: bool = True, chart: bool = False) -> Kind:
    return Kind(group, resource, (("v1", since, None),), namespaced, chart)


#: The kinds syncer knows, by name: the API server's own (no CRD needed), and two cluster-scoped
#: kinds of widely installed CRDs (cert-manager's ClusterIssuer, the CSI snapshotter's
#: VolumeSnapshotClass). Versions and releases as the Kubernetes deprecation guide gives them.
KINDS: dict[str, Kind] = {
    # core
    "ConfigMap": _core("configmaps", chart=True),
    "Secret": _core("secrets", chart=True),
    "Service": _core("services", chart=True),
    "Endpoints": _core("endpoints", chart=True),
    "ServiceAccount": _core("serviceaccounts", chart=True),
    "Pod": _core("pods", chart=True),
    "PodTemplate": _core("podtemplates"),
    "ReplicationController": _core("replicationcontrollers"),
    "PersistentVolumeClaim": _core("persistentvolumeclaims", chart=True),
    "LimitRange": _core("limitranges"),
    "ResourceQuota": _core("resourcequotas"),
    "Event": _core("events"),
    "Binding": _core("bindings"),
    "Namespace": _core("namespaces", namespaced=False),
    "Node": _core("nodes", namespaced=False),
    "PersistentVolume": _core("persistentvolumes", namespaced=False),
    "ComponentStatus": _core("componentstatuses", namespaced=False),
    # apps, batch, autoscaling, policy
    "Deployment": _v1("apps", "deployments", chart=True),
    "StatefulSet": _v1("apps", "statefulsets", chart=True),
    "DaemonSet": _v1("apps", "daemonsets", chart=True),
    "ReplicaSet": _v1("apps", "replicasets"),
    "ControllerRevision": _v1("apps", "controllerrevisions"),
    "Job": _v1("batch", "jobs", chart=True),
    "CronJob": Kind("batch", "cronjobs", (("v1", 21, None), ("v1beta1", 8, 25)), chart=True),
    "HorizontalPodAutoscaler": Kind("autoscaling", "horizontalpodautoscalers",
                                    (("v2", 23, None), ("v2beta2", 12, 26), ("v2beta1", 8, 25), ("v1", 0, None)),
                                    chart=True),
    "PodDisruptionBudget": Kind("policy", "poddisruptionbudgets", (("v1", 21, None), ("v1beta1", 5, 25)), chart=True),
    # discovery, networking, coordination
    "EndpointSlice": Kind("discovery.k8s.io", "endpointslices", (("v1", 21, None), ("v1beta1", 17, 25)), chart=True,
                          read_older=True),
    "Ingress": Kind("networking.k8s.io", "ingresses", (("v1", 19, None), ("v1beta1", 14, 22)), chart=True),
    "NetworkPolicy": _v1("networking.k8s.io", "networkpolicies", chart=True),
    "IngressClass": _v1("networking.k8s.io", "ingressclasses", since=19, namespaced=False),
    "Lease": _v1("coordination.k8s.io", "leases", since=14),
    # rbac
    "Role": _v1("rbac.authorization.k8s.io", "roles", chart=True),
    "RoleBinding": _v1("rbac.authorization.k8s.io", "rolebindings", chart=True),
    "ClusterRole": _v1("rbac.authorization.k8s.io", "clusterroles", namespaced=False),
    "ClusterRoleBinding": _v1("rbac.authorization.k8s.io", "clusterrolebindings", namespaced=False),
    # storage, scheduling, node
    "StorageClass": _v1("storage.k8s.io", "storageclasses", namespaced=False),
    "CSIDriver": _v1("storage.k8s.io", "csidrivers", since=18, namespaced=False),
    "CSINode": _v1("storage.k8s.io", "csinodes", since=17, namespaced=False),
    "VolumeAttachment": _v1("storage.k8s.io", "volumeattachments", since=13, namespaced=False),
    "CSIStorageCapacity": Kind("storage.k8s.io", "csistoragecapacities", (("v1", 24, None), ("v1beta1", 21, 27))),
    "PriorityClass": _v1("scheduling.k8s.io", "priorityclasses", since=14, namespaced=False),
    "RuntimeClass": _v1("node.k8s.io", "runtimeclasses", since=20, namespaced=False),
    # API extension and admission
    "CustomResourceDefinition": _v1("apiextensions.k8s.io", "customresourcedefinitions", since=16, namespaced=False),
    "APIService": _v1("apiregistration.k8s.io", "apiservices", since=10, namespaced=False),
    "MutatingWebhookConfiguration": _v1("admissionregistration.k8s.io", "mutatingwebhookconfigurations", since=16,
                                        namespaced=False),
    "ValidatingWebhookConfiguration": _v1("admissionregistration.k8s.io", "validatingwebhookconfigurations",
                                          since=16, namespaced=False),
    "ValidatingAdmissionPolicy": Kind("admissionregistration.k8s.io", "validatingadmissionpolicies",
                                      (("v1", 30, None), ("v1beta1", 28, None)), namespaced=False),
    "ValidatingAdmissionPolicyBinding": Kind("admissionregistration.k8s.io", "validatingadmissionpolicybindings",
                                             (("v1", 30, None), ("v1beta1", 28, None)), namespaced=False),
    "FlowSchema": Kind("flowcontrol.apiserver.k8s.io", "flowschemas",
                       (("v1", 29, None), ("v1beta3", 26, 32), ("v1beta2", 23, 29), ("v1beta1", 20, 26)),
                       namespaced=False),
    "PriorityLevelConfiguration": Kind("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations",
                                       (("v1", 29, None), ("v1beta3", 26, 32), ("v1beta2", 23, 29),
                                        ("v1beta1", 20, 26)), namespaced=False),
    "CertificateSigningRequest": _v1("certificates.k8s.io", "certificatesigningrequests", since=19, namespaced=False),
    # dynamic resource allocation
    "ResourceClaim": Kind("resource.k8s.io", "resourceclaims", (("v1", 34, None), ("v1beta2", 33, None),
                                                                ("v1beta1", 32, None))),
    "ResourceClaimTemplate": Kind("resource.k8s.io", "resourceclaimtemplates",
                                  (("v1", 34, None), ("v1beta2", 33, None), ("v1beta1", 32, None))),
    "PodSchedulingContext": Kind("resource.k8s.io", "podschedulingcontexts", (("v1alpha3", 31, None),)),
    # widely installed CRDs
    "ClusterIssuer": _v1("cert-manager.io", "clusterissuers", namespaced=False),
    "VolumeSnapshotClass": _v1("snapshot.storage.k8s.io", "volumesnapshotclasses", namespaced=False),
}

#: Kinds outside namespaces (a live object with no ``metadata.namespace`` tells the same for any other kind).
CLUSTER_SCOPED = frozenset(k for k, info in KINDS.items() if not info.namespaced)
#: The namespaced ones; with the cluster-scoped, what a ``track:`` kind is checked against for its
#: spelling when no API server is at hand (``Configmap`` -> ``ConfigMap``).
NAMESPACED_BUILTIN = frozenset(k for k, info in KINDS.items() if info.namespaced)
BUILTIN_KINDS = frozenset(KINDS)


def api_versions(kind: str) -> tuple[str, ...]:
    """The apiVersions ``kind`` has been served in, newest first (() for a kind not in ``KINDS``):
    what a kind git declares no object of is listed in, the first the server serves."""
    info = KINDS.get(kind)
    return info.api_versions if info is not None else ()


#: kind -> top-level keys that hold data (a key of them present only live is drift).
DATA_MAPS: dict[str, frozenset[str]] = {
    "ConfigMap": frozenset({"data", "binaryData"}),
    "Secret": frozenset({"data", "stringData"}),
    "Endpoints": frozenset({"subsets"}),
    "EndpointSlice": frozenset({"endpoints"}),
}

#: (classified against candidate lists by ``syncer.detect.endpoints``)
ENDPOINTS_FAMILY = frozenset({"Endpoints", "EndpointSlice"})

#: kind -> (a field that hands another field to a controller, that field): while an object sets
#: the first, the control plane owns the second, which is never compared. An aggregated ClusterRole's
#: ``rules`` are the union the clusterrole-aggregation-controller computes from the roles its
#: ``aggregationRule`` selects (git says ``rules: []``, "the control plane fills in the rules").
CONTROLLER_FILLED: dict[str, tuple[str, str]] = {"ClusterRole": ("aggregationRule", "rules")}
#: (apiVersion, kind) -> versions of the same kind that an API server may serve instead (oldest
#: last), for the kinds read in an older version (``Kind.read_older``): Kubernetes 1.19/1.20 serve
#: EndpointSlices only as v1beta1; the objects differ only in ``topology``.
ALTERNATE_VERSIONS: dict[tuple[str, str], tuple[str, ...]] = {
    (info.api_versions[0], kind): info.api_versions[1:] for kind, info in KINDS.items() if info.read_older
}
#: A write-only field the API server folds into another when it stores an object, base64-encoding
#: its strings: kind -> (the field, the one it goes into). A Secret's ``stringData``.
FOLDED: dict[str, tuple[str, str]] = {"Secret": ("stringData", "data")}

#: Maps in every object whose live-only keys are drift (people add labels and annotations live;
#: the ones the server or kubectl write are dropped by ``normalize`` first).
METADATA_MAPS: frozenset[tuple[str, str]] = frozenset({("metadata", "labels"), ("metadata", "annotations")})


def list_items(doc: object) -> list[object] | None:
    """The items of a ``kind: *List`` document (``List``, ``ConfigMapList``, what ``kubectl get -o
    yaml`` writes for several objects); None for any other document, and for a List whose
    ``items`` is not a list (that document is then read as one object)."""
    if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List"):
        items = doc.get("items")
        if isinstance(items, list):
            return items
    return None
