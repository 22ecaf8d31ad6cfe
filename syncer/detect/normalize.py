"""Strip what the server owns, so only what people declare is compared.

Pure functions over plain JSON data. The live side keeps only fields a manifest could
declare; fields that exist live only because the server defaulted them are never compared
at all, because comparison is driven by what git declares (see ``diff``).
"""

from __future__ import annotations

import base64
import functools
from typing import Any

from syncer.bounds import load_json
from syncer.kinds import CONTROLLER_FILLED, FOLDED
from syncer.model import JSON, Path

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: metadata fields the API server writes; never part of a manifest's intent.
SERVER_METADATA = frozenset(
    {
        "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink",
        "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers",
    }
)
#: annotations written by the server or by kubectl, not by people.
SERVER_ANNOTATIONS = frozenset(
    {
        LAST_APPLIED,
        "deployment.kubernetes.io/revision",
        "kubectl.kubernetes.io/restartedAt",
        "endpoints.kubernetes.io/last-change-trigger-time",
        "control-plane.alpha.kubernetes.io/leader",
        "deprecated.daemonset.template.generation",
        "meta.helm.sh/release-name",
        "meta.helm.sh/release-namespace",
        "argocd.argoproj.io/tracking-id",
        # written by built-in controllers (PV binder, HPA status in v1, token and deployment controllers)
        "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
        "volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
        "volume.kubernetes.io/selected-node", "autoscaling.alpha.kubernetes.io/conditions",
        "autoscaling.alpha.kubernetes.io/current-metrics", "kubernetes.io/service-account.uid",
        "deployment.kubernetes.io/desired-replicas", "deployment.kubernetes.io/max-replicas",
    }
)
#: labels the API server or a built-in controller adds to objects; never a person's intent.
SERVER_LABELS = frozenset(
    {
        "kubernetes.io/metadata.name", "pod-template-hash", "controller-revision-hash",
        "statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "controller-uid", "job-name",
        "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name",
        # stamped by the GitOps controller that applied the object (Flux's origin labels, Argo CD's
        # label tracking): what the cluster shows of who reconciles it (syncer.detect.gitops)
        "kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace",
        "helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace", "argocd.argoproj.io/instance",
    }
)


def normalize(obj: JSON) -> JSON:
    """``obj`` without status, server-owned metadata and server annotations.

    Only the maps it changes are copied (the top level, ``metadata``, ``annotations``); every
    other subtree is shared with ``obj``, so treat the result as read-only: deep-copying
    whole live objects (managedFields, last-applied JSON, status) would cost more than the
    rest of detection.
    """
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
        ann = meta.get("annotations")
        if isinstance(ann, dict):
            ann = {k: v for k, v in ann.items() if k not in SERVER_ANNOTATIONS}
            if ann:
                meta["annotations"] = ann
            else:
                del meta["annotations"]
        labels = meta.get("labels")
        if isinstance(labels, dict) and not SERVER_LABELS.isdisjoint(labels):
            meta["labels"] = {k: v for k, v in labels.items() if k not in SERVER_LABELS}
        out["metadata"] = meta
    folded = FOLDED.get(str(out.get("kind")))
    if folded is not None and isinstance(out.get(folded[0]), dict):
        out = _folded(out, *folded)
    for key in ("data", "binaryData") if out.get("kind") in ("Secret", "ConfigMap") else ():
        if key != "data" or out.get("kind") == "Secret":
            _bytes_as_stored(out, key)
    filled = CONTROLLER_FILLED.get(str(out.get("kind")))
    if filled is not None and out.get(filled[0]) is not None:
        out.pop(filled[1], None)  # the control plane's (an aggregated ClusterRole's rules)
    pod = POD_SPECS.get(str(out.get("kind")))
    return _one_service_account(out, pod) if pod is not None else out


#: Where a kind holds its pod spec. The API server keeps a PodSpec's deprecated
#: ``serviceAccount`` equal to ``serviceAccountName`` (either one set fills the other), so a live
#: ``kubectl patch`` of the name shows both moved while a manifest declares one: they are one field.
POD_SPECS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",), "PodTemplate": ("template", "spec"), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    **{k: ("spec", "template", "spec")
       for k in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController")},
}


def _one_service_account(obj: JSON, path: tuple[str, ...]) -> JSON:
    """``obj`` with the pod spec at ``path`` naming its account once, as ``serviceAccountName``
    (the two kept as they are when both are set and differ). Copies only the maps on the way."""
    chain = [obj]
    for key in path:
        node = chain[-1].get(key)
        if not isinstance(node, dict):
            return obj
        chain.append(node)
    spec = chain[-1]
    alias, name = spec.get("serviceAccount"), spec.get("serviceAccountName")
    if alias is None or (name is not None and name != alias):
        return obj
    new: JSON = {k: v for k, v in spec.items() if k != "serviceAccount"}
    new["serviceAccountName"] = alias if name is None else name
    for parent, key in zip(reversed(chain[:-1]), reversed(path)):
        new = {**parent, key: new}
    return new


def _bytes_as_stored(obj: JSON, key: str) -> None:
    """base64 values (a Secret's ``data``, a ConfigMap's ``binaryData``) compared as the bytes
    they encode: kustomize wraps a long one over several lines, the server stores it on one."""
    values = obj.get(key)
    if not isinstance(values, dict) or not any(isinstance(v, str) and any(c in v for c in " \n\r\t")
                                               for v in values.values()):
        return
    out = dict(values)
    for name, value in values.items():
        if isinstance(value, str) and any(c in value for c in " \n\r\t"):
            try:
                out[name] = base64.b64encode(base64.b64decode("".join(value.split()), validate=True)).decode("ascii")
            except ValueError:
                pass  # not base64: compared as it is (and the server would refuse it)
    obj[key] = out


def _folded(obj: JSON, write_only: str, into: str) -> JSON:
    """An object as the API server stores it (``kinds.FOLDED``; a Secret's ``stringData`` into
    ``data``): ``write_only`` merged into ``into``, base64-encoded (``write_only`` wins on a shared
    key). Non-string values stay in ``write_only``: the server would reject them, and the
    comparison shows them."""
    data = dict(obj[into]) if isinstance(obj.get(into), dict) else {}
    left = {}
    for key, value in obj[write_only].items():
        if isinstance(value, str):
            data[key] = base64.b64encode(value.encode("utf-8")).decode("ascii")
        else:
            left[key] = value
    out = {k: v for k, v in obj.items() if k != write_only}
    out[into] = data
    if left:
        out[write_only] = left
    return out


class PackedText:
    """A long annotation value held compressed by the one who holds the object (the sidecar's
    watch cache keeps each object's last-applied configuration so: ``sidecar.compact``), read
    back by ``text()``. Equal when the packed bytes are, from the same holder: the same text
    packs to the same bytes."""

    __slots__ = ("_holder", "_kind", "_packed")

    def __init__(self, holder: Any, kind: str, packed: bytes) -> None:
        self._holder, self._kind, self._packed = holder, kind, packed

    def text(self) -> str:
        return str(self._holder.unpack(self._kind, self._packed))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PackedText) and other._holder is self._holder and other._kind == self._kind
                and other._packed == self._packed)

    def __hash__(self) -> int:
        return hash(self._packed)

    def __repr__(self) -> str:
        return f"PackedText({len(self._packed)} bytes)"


def last_applied(live: JSON) -> JSON | None:
    """The object as last ``kubectl apply``-ed, from its annotation; None when absent/broken.

    An annotation over the size or nesting limits raises ``bounds.InputRejected``: an error
    for this object, never a crash of the pass.
    """
    meta = live.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(LAST_APPLIED)
    if isinstance(raw, PackedText):
        raw = raw.text()
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        data = load_json(raw, f"annotation {LAST_APPLIED}")
    except ValueError:
        return None
    return normalize(data) if isinstance(data, dict) else None


def pointer_to_path(pointer: str) -> Path:
    """JSON pointer ``/spec/replicas`` -> ``("spec", "replicas")``; digits become indexes.
    Remembered for a short pointer (the config's ignore rules are asked for every difference):
    a pure function of a short string, at most 4,096 entries of ``_SHORT_POINTER`` characters."""
    return _pointer_to_path(pointer) if len(pointer) <= _SHORT_POINTER else _pointer_to_path.__wrapped__(pointer)


#: The longest JSON pointer remembered (a field path of an API object is far shorter).
_SHORT_POINTER = 512


@functools.lru_cache(maxsize=4096)
def _pointer_to_path(pointer: str) -> Path:
    parts: list[str | int] = []
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        parts.append(int(part) if part.isdigit() else part)
    return tuple(parts)


def is_ignored(path: Path, pointers: tuple[str, ...]) -> bool:
    """True when ``path`` is at or below one of the JSON ``pointers``."""
    for pointer in pointers:
        prefix = pointer_to_path(pointer)
        if path[: len(prefix)] == prefix:
            return True
    return False


MISSING: Any = object()


def get_path(data: Any, path: Path) -> Any:
    """The value at ``path`` or ``MISSING``."""
    cur = data
    for part in path:
        if isinstance(part, int):
            if not isinstance(cur, list) or part >= len(cur):
                return MISSING
        elif not isinstance(cur, dict) or part not in cur:
            return MISSING
        cur = cur[part]
    return cur
