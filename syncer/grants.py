"""What syncer's account must be allowed to read, said in the chart's own words.

The Helm chart (``charts/syncer``) grants get/list/watch by name: ``tracked.configMaps``,
``tracked.endpoints``, ``tracked.kinds.<Kind>`` (the built-in kinds of ``CHART_KINDS``) and
``tracked.extra`` (any other group/resource). Two users of one table:

* ``syncer init`` prints the ``tracked:`` block that grants exactly what the config will read
  (``chart_values``), so the Role and the config start out agreeing;
* a 403 at run time names the values key to add (``grant_hint``), so they cannot drift apart
  silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from syncer.model import ObjectRef

#: Kinds the chart's ``tracked.kinds`` map knows: Kind -> (API group, resource). Keep in step
#: with ``syncer.trackedKinds`` in charts/syncer/templates/_helpers.tpl.
CHART_KINDS: dict[str, tuple[str, str]] = {
    "ConfigMap": ("", "configmaps"),
    "Endpoints": ("", "endpoints"),
    "Service": ("", "services"),
    "ServiceAccount": ("", "serviceaccounts"),
    "Secret": ("", "secrets"),
    "PersistentVolumeClaim": ("", "persistentvolumeclaims"),
    "Pod": ("", "pods"),
    "EndpointSlice": ("discovery.k8s.io", "endpointslices"),
    "Deployment": ("apps", "deployments"),
    "StatefulSet": ("apps", "statefulsets"),
    "DaemonSet": ("apps", "daemonsets"),
    "Job": ("batch", "jobs"),
    "CronJob": ("batch", "cronjobs"),
    "Role": ("rbac.authorization.k8s.io", "roles"),
    "RoleBinding": ("rbac.authorization.k8s.io", "rolebindings"),
    "Ingress": ("networking.k8s.io", "ingresses"),
    "NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
    "HorizontalPodAutoscaler": ("autoscaling", "horizontalpodautoscalers"),
    "PodDisruptionBudget": ("policy", "poddisruptionbudgets"),
}


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _known(ref: ObjectRef) -> bool:
    found = CHART_KINDS.get(ref.kind)
    return found is not None and found[0] == _group(ref.api_version)


def values_key(ref: ObjectRef) -> str:
    """The chart values key whose list must hold ``ref.name`` for syncer to read ``ref``."""
    if _known(ref):
        return f"tracked.kinds.{ref.kind}"
    return "tracked.extra"


def grant_hint(ref: ObjectRef) -> str:
    """What to add to the chart values so that syncer's account may read ``ref``."""
    if _known(ref):
        return f"add {ref.name} to {values_key(ref)} in the chart values (`syncer init --chart-values` prints them all)"
    return (f"add {{apiGroup: {_group(ref.api_version) or chr(34) * 2}, resource: <plural of {ref.kind}>, "
            f"names: [{ref.name}]}} to tracked.extra in the chart values")


@dataclass(frozen=True)
class ChartValues:
    """The ``tracked:`` values for a set of objects, and what the chart's Role cannot cover."""

    text: str
    #: Objects outside ``namespace`` (the chart's Role is namespaced: the release namespace only).
    elsewhere: tuple[ObjectRef, ...]


def chart_values(refs: Iterable[ObjectRef], namespace: str) -> ChartValues:
    """YAML for the chart's ``tracked:`` block granting get/list/watch on exactly ``refs``."""
    kinds: dict[str, set[str]] = {}
    extra: dict[tuple[str, str], set[str]] = {}
    elsewhere: list[ObjectRef] = []
    for ref in sorted(set(refs)):
        if ref.namespace != namespace:
            elsewhere.append(ref)
            continue
        if _known(ref):
            kinds.setdefault(ref.kind, set()).add(ref.name)
        else:
            extra.setdefault((_group(ref.api_version), ref.kind), set()).add(ref.name)
    lines = ["tracked:", "  kinds:" + ("" if kinds else " {}")]
    for kind in sorted(kinds):
        lines.append(f"    {kind}: [{', '.join(sorted(kinds[kind]))}]")
    if extra:
        lines.append("  extra:")
        for (group, kind), names in sorted(extra.items()):
            lines.append(f"    - apiGroup: {group or chr(34) * 2}")
            lines.append(f"      resource: {kind.lower()}s   # the plural of {kind}: check `kubectl api-resources`")
            lines.append(f"      names: [{', '.join(sorted(names))}]")
    return ChartValues("\n".join(lines) + "\n", tuple(elsewhere))


def unreadable_message(ref: ObjectRef, exc: Exception, written: bool) -> str:
    """One line for an object the account may not read (403): the object, the effect, the grant."""
    detail = getattr(exc, "message", str(exc))
    effect = ("its kind is written back, so it is not synced" if written
              else "its kind is only reported, so it is skipped")
    return f"{ref}: syncer's account may not read it ({detail}); {effect}; to grant it, {grant_hint(ref)}"
