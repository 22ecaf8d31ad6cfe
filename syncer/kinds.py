"""What syncer knows about Kubernetes kinds and fields, in one table. Pure data and lookups.

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
* ``list_rule``          how a list compares: by merge key (strategic-merge ``patchMergeKey`` /
                         ``x-kubernetes-list-map-keys`` of the built-in API types), as a set,
                         or whole (atomic, the default for every list the table does not name).
* ``QUANTITIES`` /      fields whose values are ``resource.Quantity`` or ``IntOrString``:
  ``INT_OR_STRING``      compared by value, not by spelling.
* ``keeps_zero``         pointer fields whose zero value the server keeps (not equal to absence).
* ``union_members``      unions (a volume's source): one member swapped for another is one change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from syncer.model import Path

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


@dataclass(frozen=True)
class ListRule:
    """How the items of one list are matched between git and live: by ``keys``, the fields
    naming an item, each with the default the server fills in when the manifest omits it
    (``protocol: TCP``), never by position.  No keys (``SET``): the items form a set."""

    keys: tuple[tuple[str, Any], ...]

    def key_of(self, item: Any) -> tuple[Any, ...] | None:
        """The identity of ``item``; None when it lacks a key field without a default."""
        if not isinstance(item, dict):
            return None
        out = []
        for name, default in self.keys:
            value = item.get(name)
            if value is None:
                if default is None:
                    return None
                value = default
            out.append(str(value))
        return tuple(out)


def _keys(*names: str | tuple[str, Any]) -> ListRule:
    return ListRule(tuple((n, None) if isinstance(n, str) else n for n in names))


_CONTAINERS = ("containers", "initContainers", "ephemeralContainers")
_TCP = ("protocol", "TCP")

#: (path suffix, rule); ``*`` stands for any list index, ``**`` for "anywhere above".
#: The first suffix that matches the end of a list's path wins.
_LIST_RULES: tuple[tuple[tuple[str, ...], ListRule], ...] = (
    *(((c, "*", "ports"), _keys("containerPort", _TCP)) for c in _CONTAINERS),
    *(((c, "*", "env"), _keys("name")) for c in _CONTAINERS),
    *(((c, "*", "volumeMounts"), _keys("mountPath")) for c in _CONTAINERS),
    *(((c, "*", "volumeDevices"), _keys("devicePath")) for c in _CONTAINERS),
    *(((c, "*", "resizePolicy"), _keys("resourceName")) for c in _CONTAINERS),
    *(((c,), _keys("name")) for c in _CONTAINERS),
    (("volumes",), _keys("name")),
    (("imagePullSecrets",), _keys("name")),
    (("hostAliases",), _keys("ip")),
    (("readinessGates",), _keys("conditionType")),
    (("resourceClaims",), _keys("name")),
    (("schedulingGates",), _keys("name")),
    (("topologySpreadConstraints",), _keys("topologyKey", "whenUnsatisfiable")),
    (("tolerations",), _keys(("key", ""), ("operator", "Equal"), ("value", ""), ("effect", ""))),
    (("webhooks",), _keys("name")),
    (("secrets",), _keys("name")),  # ServiceAccount
)
#: Lists that only one kind has under this name.
_KIND_LIST_RULES: dict[str, tuple[tuple[Path, ListRule], ...]] = {
    "Service": ((("spec", "ports"), _keys("port", _TCP)),),
}
#: Lists of scalars whose order means nothing.
_SCALAR_SETS = frozenset({"finalizers"})
#: Lists of items whose order means nothing and that have no merge key: compared as sets.
_ITEM_SETS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Endpoints": (("subsets", "*", "addresses"), ("subsets", "*", "notReadyAddresses")),
    # The order of a slice's endpoints means nothing; an endpoint's addresses are fungible.
    "EndpointSlice": (("endpoints",), ("endpoints", "*", "addresses")),
}

SET = ListRule(())
#: The last key of every path a list rule names (never an index: a list in a list is atomic).
_LIST_ENDS = frozenset({*(suffix[-1] for suffix, _ in _LIST_RULES),
                        *(exact[-1] for rules in _KIND_LIST_RULES.values() for exact, _ in rules),
                        *(g[-1] for sets in _ITEM_SETS.values() for g in sets), *_SCALAR_SETS})


def _generic(path: Path) -> tuple[str, ...]:
    return tuple("*" if isinstance(p, int) else p for p in path)


def list_rule(kind: str, path: Path) -> ListRule | None:
    """How the list at ``path`` of a ``kind`` compares: keyed, a set (``SET``), or None: atomic."""
    if not path or path[-1] not in _LIST_ENDS:
        return None  # no rule ends there (most lists; asked for every list compared)
    g = _generic(path)
    for exact, rule in _KIND_LIST_RULES.get(kind, ()):
        if g == exact:
            return rule
    if g in _ITEM_SETS.get(kind, ()) or (g and g[-1] in _SCALAR_SETS):
        return SET
    for suffix, rule in _LIST_RULES:
        if g[-len(suffix):] == suffix:
            return rule
    return None


_HPA_SOURCES = ("resource", "containerResource", "object", "pods", "external")
#: Where the API types hold a ``resource.Quantity``, compared by amount (``1000m`` == ``1``,
#: ``1Gi`` == ``1024Mi``: the server stores the canonical spelling): path suffixes, ``*`` for any
#: list index, ``?`` for any key of a map of quantities (``requests: {cpu: 500m}``). By kind;
#: ``""`` holds those of every kind (pod templates sit in many kinds, custom resources embed
#: ``ResourceRequirements``). Anything else -- a ConfigMap value ``1000m`` -- compares as spelled.
QUANTITIES: dict[str, tuple[tuple[str, ...], ...]] = {
    "": (
        ("resources", "requests", "?"), ("resources", "limits", "?"),  # containers, PVCs, pod-level
        ("spec", "overhead", "?"),  # a Pod's RuntimeClass overhead
        ("emptyDir", "sizeLimit"),
        ("resourceFieldRef", "divisor"),  # downward API
    ),
    "ResourceQuota": (("spec", "hard", "?"), ("status", "hard", "?"), ("status", "used", "?")),
    "LimitRange": tuple(("spec", "limits", "*", m, "?")
                        for m in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")),
    "PersistentVolume": (("spec", "capacity", "?"),),
    "PersistentVolumeClaim": (("status", "capacity", "?"), ("status", "allocatedResources", "?")),
    "Node": (("status", "capacity", "?"), ("status", "allocatable", "?")),
    "RuntimeClass": (("overhead", "podFixed", "?"),),
    "CSIStorageCapacity": (("capacity",), ("maximumVolumeSize",)),
    "HorizontalPodAutoscaler": (
        # autoscaling/v2 and v2beta2: a MetricTarget under every metric source
        *(("metrics", "*", source, "target", v) for source in _HPA_SOURCES for v in ("value", "averageValue")),
        # autoscaling/v2beta1
        ("metrics", "*", "resource", "targetAverageValue"), ("metrics", "*", "containerResource", "targetAverageValue"),
        ("metrics", "*", "pods", "targetAverageValue"), ("metrics", "*", "object", "targetValue"),
        ("metrics", "*", "object", "averageValue"), ("metrics", "*", "external", "targetValue"),
        ("metrics", "*", "external", "targetAverageValue"),
    ),
}
#: IntOrString fields: ``80`` and ``"80"`` are the same value.
INT_OR_STRING = frozenset({"targetPort", "port", "maxSurge", "maxUnavailable", "minAvailable"})


def _ends_with(path: Path, suffix: tuple[str, ...]) -> bool:
    if len(path) < len(suffix):
        return False
    for part, want in zip(path[len(path) - len(suffix):], suffix):
        if want == "*":
            if not isinstance(part, int):
                return False
        elif want == "?":
            if not isinstance(part, str):
                return False
        elif part != want:
            return False
    return True


def is_quantity(path: Path, kind: str = "") -> bool:
    """Does the API hold a ``resource.Quantity`` at ``path`` of a ``kind``?"""
    if not path or not isinstance(path[-1], str):
        return False
    return any(_ends_with(path, suffix) for suffix in (*QUANTITIES[""], *QUANTITIES.get(kind, ())))


def is_int_or_string(path: Path) -> bool:
    return bool(path) and path[-1] in INT_OR_STRING


#: Fields the built-in API types declare as pointers (``*bool``, ``*int32``, ``*int64``, ``*string``,
#: pointer structs such as ``EmptyDirVolumeSource``): the API server keeps their zero value
#: (``false``, ``0``, ``""``, ``{}``), so a zero declared in git and absent live is a difference
#: (``runAsUser: 0`` is root; ``emptyDir: {}`` is a volume).  Every other ``omitempty`` field is
#: dropped by the server when zero, and its zero equals absence.  Derived from the Go types of
#: k8s.io/api v1.20.2 (the real-API tier's server): the JSON names that are a pointer in every
#: struct that has them (tests/test_kept_zero.py re-derives the list from the source when present).
KEPT_ZERO_FIELDS = frozenset(
    {
        "acquireTime", "activeDeadlineSeconds", "affinity", "aggregationRule", "allocateLoadBalancerNodePorts",
        "allowPrivilegeEscalation", "allowVolumeExpansion", "appProtocol", "assigned", "attachError",
        "attachRequired", "automountServiceAccountToken", "averageUtilization", "averageValue",
        "awsElasticBlockStore", "azureDisk", "azureFile", "backoffLimit", "behavior", "cachingMode", "capabilities",
        "cephfs", "cinder", "claimRef", "clientIP", "collisionCount", "completionTime", "completions", "config",
        "configMap", "configMapKeyRef", "configMapRef", "configSource", "containerResource",
        "controllerExpandSecretRef", "controllerPublishSecretRef", "csi", "currentAverageUtilization",
        "currentCPUUtilizationPercentage", "dataSource", "defaultAllowPrivilegeEscalation", "defaultBackend",
        "defaultMode", "defaultRuntimeClassName", "deleteOptions", "detachError", "distinguisherMethod",
        "dnsConfig", "downwardAPI", "emptyDir", "enableServiceLinks", "endpointsNamespace", "ephemeral", "exec",
        "expirationSeconds", "external", "failedJobsHistoryLimit", "failurePolicy", "fc", "fieldRef",
        "flexVolume", "flocker", "fsGroupChangePolicy", "fsGroupPolicy", "gcePersistentDisk", "gitRepo",
        "glusterfs", "gmsaCredentialSpec", "gmsaCredentialSpecName", "holderIdentity", "hostPath", "http",
        "httpGet", "immutable", "ingressClassName", "initiatorName", "inlineVolumeSpec", "ipBlock",
        "ipFamilyPolicy", "iscsi", "labelSelector", "lastKnownGood", "lastScaleTime", "lastScheduleTime",
        "leaseDurationSeconds", "leaseTransitions", "lifecycle", "limitBytes", "limited", "livenessProbe",
        "local", "localhostProfile", "manualSelector", "matchPolicy", "maxSurge", "maxUnavailable",
        "metricSelector", "minAvailable", "minReplicas", "mode", "mountPropagation", "namespaceSelector", "nfs",
        "nodeAffinity", "nodePublishSecretRef", "nodeStageSecretRef", "object", "objectSelector", "optional",
        "parallelism", "pathType", "persistentVolumeClaim", "persistentVolumeName", "photonPersistentDisk",
        "podAffinity", "podAntiAffinity", "podController", "podInfoOnMount", "pods", "portworxVolume",
        "postStart", "preStop", "preemptionPolicy", "priority", "procMount", "progressDeadlineSeconds",
        "projected", "queuing", "quobyte", "rbd", "readinessProbe", "reclaimPolicy", "reinvocationPolicy",
        "related", "renewTime", "required", "requiresRepublish", "resourceFieldRef", "revisionHistoryLimit",
        "rollingUpdate", "runAsGroup", "runAsNonRoot", "runAsUserName", "running", "runtimeClass",
        "runtimeClassName", "scaleDown", "scaleIO", "scaleUp", "scheduling", "scope", "scopeSelector",
        "seLinuxOptions", "seccompProfile", "secret", "secretKeyRef", "secretNamespace", "secretRef",
        "securityContext", "selectPolicy", "series", "service", "serviceAccountToken", "serving",
        "sessionAffinityConfig", "setHostnameAsFQDN", "shareProcessNamespace", "sideEffects", "sinceSeconds",
        "sinceTime", "sizeLimit", "stabilizationWindowSeconds", "startTime", "started",
        "startingDeadlineSeconds", "startupProbe", "storageCapacity", "storageos", "successfulJobsHistoryLimit",
        "suspend", "tailLines", "targetAverageUtilization", "targetCPUUtilizationPercentage", "targetRef",
        "tcpSocket", "terminated", "terminating", "terminationGracePeriodSeconds", "timeAdded",
        "tolerationSeconds", "ttlSecondsAfterFinished", "url", "valueFrom", "volumeBindingMode",
        "volumeClaimTemplate", "volumeMode", "vsphereVolume", "waiting", "windowsOptions",
    }
)
#: Names that are a pointer in some structs only: kept where the path ends as given (same
#: ``*`` convention as the list rules), dropped elsewhere (``readOnly`` of a VolumeMount is a
#: plain bool; of a ``csi`` volume a pointer).
_KEPT_ZERO_AT: tuple[tuple[str, ...], ...] = (
    ("securityContext", "runAsUser"), ("securityContext", "fsGroup"), ("securityContext", "privileged"),
    ("securityContext", "readOnlyRootFilesystem"),
    ("csi", "readOnly"), ("csi", "fsType"), ("azureDisk", "readOnly"), ("azureDisk", "fsType"), ("azureDisk", "kind"),
    ("local", "fsType"), ("fc", "lun"), ("hostPath", "type"),
    ("rollingUpdate", "partition"),
    ("volumeClaimTemplates", "*", "spec", "storageClassName"), ("volumeClaimTemplate", "spec", "storageClassName"),
    ("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
    ("sessionAffinityConfig", "clientIP", "timeoutSeconds"), ("webhooks", "*", "timeoutSeconds"),
    ("service", "port"), ("service", "path"),
    ("dnsConfig", "options", "*", "value"),
    ("from", "*", "podSelector"), ("to", "*", "podSelector"),
    ("ingress", "*", "ports", "*", "port"), ("egress", "*", "ports", "*", "port"),
    ("ingress", "*", "ports", "*", "protocol"), ("egress", "*", "ports", "*", "protocol"),
    ("endpoints", "*", "hostname"), ("endpoints", "*", "nodeName"), ("conditions", "ready"),
    ("backend", "resource"), ("defaultBackend", "resource"), ("metrics", "*", "resource"),
    ("resource", "apiGroup"), ("parameters", "apiGroup"), ("dataSource", "apiGroup"),
)
#: The same, for one kind (``spec.replicas`` of a Deployment is a pointer: ``replicas: 0`` is kept).
_KIND_KEPT_ZERO: dict[str, tuple[tuple[str, ...], ...]] = {
    **{k: (("spec", "replicas"),) for k in ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")},
    "PersistentVolumeClaim": (("spec", "storageClassName"),),
    "PodDisruptionBudget": (("spec", "selector"),),
}


def keeps_zero(kind: str, path: Path) -> bool:
    """Does the API server keep a zero value (``false``, ``0``, ``""``, ``{}``) at ``path``
    (a pointer field), so that it differs from absence?"""
    if not path or not isinstance(path[-1], str):
        return False
    if path[-1] in KEPT_ZERO_FIELDS:
        return True
    g = _generic(path)
    return any(g[-len(s):] == s for s in (*_KEPT_ZERO_AT, *_KIND_KEPT_ZERO.get(kind, ())))


#: Unions (one member set at a time): a volume's source (every key but ``name``), a probe's or
#: a lifecycle hook's handler.  One member replaced live by another is one difference of the
#: whole item, never "removed" plus "added" (git would then hold two sources).
_UNIONS: tuple[tuple[tuple[str, ...], frozenset[str] | None], ...] = (
    (("volumes", "*"), None),
    *(((probe,), frozenset({"exec", "httpGet", "tcpSocket", "grpc"}))
      for probe in ("livenessProbe", "readinessProbe", "startupProbe")),
    *((("lifecycle", hook), frozenset({"exec", "httpGet", "tcpSocket", "sleep"})) for hook in ("postStart", "preStop")),
)


def union_members(path: Path) -> frozenset[str] | None:
    """The member keys of the union the map at ``path`` is (None: it is none); every key but
    ``name`` for a volume."""
    if not path or not (isinstance(path[-1], int) or path[-1] in _UNION_ENDS):
        return None  # no union ends there (asked for every map compared)
    g = _generic(path)
    for suffix, members in _UNIONS:
        if g[-len(suffix):] == suffix:
            return members if members is not None else _ALL_BUT_NAME
    return None


_ALL_BUT_NAME = frozenset({"*"})
#: The last key of every union's path (``*``: a list index).
_UNION_ENDS = frozenset(suffix[-1] for suffix, _ in _UNIONS)


def is_union_member(members: frozenset[str], key: str) -> bool:
    return key in members or (members is _ALL_BUT_NAME and key != "name")


def list_items(doc: object) -> list[object] | None:
    """The items of a ``kind: *List`` document (``List``, ``ConfigMapList``, what ``kubectl get -o
    yaml`` writes for several objects); None for any other document, and for a List whose
    ``items`` is not a list (that document is then read as one object)."""
    if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List"):
        items = doc.get("items")
        if isinstance(items, list):
            return items
    return None
