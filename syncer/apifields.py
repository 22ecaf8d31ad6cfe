"""What the Kubernetes API types say about fields, as the comparison needs it. Pure data and lookups.

* ``list_rule``          how a list compares: by merge key (strategic-merge ``patchMergeKey`` /
                         ``x-kubernetes-list-map-keys`` of the built-in API types), as a set,
                         or whole (atomic, the default for every list the table does not name).
* ``QUANTITIES`` /      fields whose values are ``resource.Quantity`` or ``IntOrString``:
  ``INT_OR_STRING``      compared by value, not by spelling.
* ``keeps_zero``         pointer fields whose zero value the server keeps (not equal to absence).
* ``union_members``      unions (a volume's source): one member swapped for another is one change.

What syncer knows of kinds themselves (their API groups, versions, scope, data maps) is ``kinds``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from syncer.model import Path


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
