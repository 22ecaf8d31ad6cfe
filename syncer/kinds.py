"""What syncer knows about Kubernetes kinds and fields, in one table. Pure data and lookups.

diff, engine, report, config and manifests read these rules; nothing else holds per-kind constants.

* ``NEVER_WRITTEN``      kinds whose values are never copied into git (they are reported)
                         nor shown anywhere (text, JSON, PR, logs, webhooks).
* ``CLUSTER_SCOPED``     built-in kinds that live outside namespaces (a live object with no
                         ``metadata.namespace`` tells the same for any other kind).
* ``DATA_MAPS``          top-level maps holding data: a key that exists only live is drift.
* ``ENDPOINTS_FAMILY``   kinds whose addresses a reconciler repoints.
* ``list_rule``          how a list compares: by merge key (strategic-merge ``patchMergeKey`` /
                         ``x-kubernetes-list-map-keys`` of the built-in API types), as a set,
                         or whole (atomic, the default for every list the table does not name).
* ``QUANTITIES`` /      fields whose values are ``resource.Quantity`` or ``IntOrString``:
  ``INT_OR_STRING``      compared by value, not by spelling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from syncer.model import Path

NEVER_WRITTEN = frozenset({"Secret"})

CLUSTER_SCOPED = frozenset(
    {
        "Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
        "CustomResourceDefinition", "PriorityClass", "IngressClass", "RuntimeClass", "APIService",
        "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CSIDriver", "CSINode",
        "VolumeSnapshotClass", "ClusterIssuer", "VolumeAttachment", "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding", "FlowSchema", "PriorityLevelConfiguration",
        "CertificateSigningRequest", "ComponentStatus",
    }
)

#: kind -> top-level keys that hold data (a key of them present only live is drift).
DATA_MAPS: dict[str, frozenset[str]] = {
    "ConfigMap": frozenset({"data", "binaryData"}),
    "Secret": frozenset({"data", "stringData"}),
    "Endpoints": frozenset({"subsets"}),
    "EndpointSlice": frozenset({"endpoints"}),
}

#: (classified against candidate lists by ``syncer.endpoints``)
ENDPOINTS_FAMILY = frozenset({"Endpoints", "EndpointSlice"})

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


def _generic(path: Path) -> tuple[str, ...]:
    return tuple("*" if isinstance(p, int) else p for p in path)


def list_rule(kind: str, path: Path) -> ListRule | None:
    """How the list at ``path`` of a ``kind`` compares: keyed, a set (``SET``), or None: atomic."""
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
