"""Objects a forward GitOps controller reconciles (Argo CD, Flux), told from the live object. Pure.

Such a controller puts the object back as its own git declares it: on its next reconcile
(Flux: every ``spec.interval`` of the Kustomization or HelmRelease), or within seconds (an
Argo CD application with automated self-heal). A live value syncer copies into git survives
only if syncer's change reaches that git first, so every drift of such an object says so,
with the interval when the controller's object could be read (``with_interval``), else
"periodically". What the cluster shows decides: the labels and annotations the controllers
stamp, else their field managers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from syncer.errors import SyncerError
from syncer.model import ObjectRef, Reconciler

FLUX_KUSTOMIZATION = "Flux Kustomization"
FLUX_HELMRELEASE = "Flux HelmRelease"
ARGO_APPLICATION = "Argo CD Application"
#: Argo CD's own namespace, where its Applications live unless "apps in any namespace" names one.
ARGO_NAMESPACE = "argocd"
_MANAGERS = {"kustomize-controller": "Flux's kustomize-controller", "helm-controller": "Flux's helm-controller",
             "argocd-controller": "Argo CD", "argocd-application-controller": "Argo CD"}


def reconciler(live: dict[str, Any]) -> Reconciler | None:
    """Who reconciles this live object, if a GitOps controller does."""
    meta = live.get("metadata") if isinstance(live.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    notes = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    assert isinstance(labels, dict) and isinstance(notes, dict)
    for group, tool in (("helm.toolkit.fluxcd.io", FLUX_HELMRELEASE), ("kustomize.toolkit.fluxcd.io", FLUX_KUSTOMIZATION)):
        name = labels.get(f"{group}/name")
        if isinstance(name, str) and name:
            return Reconciler(tool, name, str(labels.get(f"{group}/namespace") or ""))
    tracking = notes.get("argocd.argoproj.io/tracking-id")
    app = tracking.split(":", 1)[0] if isinstance(tracking, str) and ":" in tracking else labels.get(
        "argocd.argoproj.io/instance")
    if isinstance(app, str) and app:
        namespace, _, name = app.rpartition("_")  # apps in any namespace: "<namespace>_<name>"
        return Reconciler(ARGO_APPLICATION, name, namespace or ARGO_NAMESPACE)
    for entry in live.get("metadata", {}).get("managedFields") or []:
        manager = entry.get("manager") if isinstance(entry, dict) else None
        if manager in _MANAGERS:
            return Reconciler(_MANAGERS[manager])
    return None


def owner_refs(r: Reconciler) -> list[ObjectRef]:
    """The objects that say how the controller reconciles (its interval, self-heal), newest API first."""
    if not r.name:
        return []
    if r.tool == FLUX_KUSTOMIZATION:
        return [ObjectRef(f"kustomize.toolkit.fluxcd.io/{v}", "Kustomization", r.namespace, r.name)
                for v in ("v1", "v1beta2")]
    if r.tool == FLUX_HELMRELEASE:
        return [ObjectRef(f"helm.toolkit.fluxcd.io/{v}", "HelmRelease", r.namespace, r.name)
                for v in ("v2", "v2beta2", "v2beta1")]
    if r.tool == ARGO_APPLICATION:
        return [ObjectRef("argoproj.io/v1alpha1", "Application", r.namespace, r.name)]
    return []


def with_interval(r: Reconciler, read: Callable[[ObjectRef], dict[str, Any] | None]) -> Reconciler:
    """``r`` with what its controller's object says (interval, suspended, self-heal); as it was
    when that object cannot be read (``read`` raises or answers None)."""
    for ref in owner_refs(r):
        try:
            obj = read(ref)
        except SyncerError:  # not served, not granted, not reachable: the note says "periodically"
            continue
        spec = obj.get("spec") if isinstance(obj, dict) else None
        if not isinstance(spec, dict):
            continue
        if r.tool == ARGO_APPLICATION:
            policy = spec.get("syncPolicy") if isinstance(spec.get("syncPolicy"), dict) else {}
            auto = policy.get("automated") if isinstance(policy, dict) else None
            return replace(r, self_heal=bool(isinstance(auto, dict) and auto.get("selfHeal")),
                           every="" if isinstance(auto, dict) else "never")
        return replace(r, every=str(spec.get("interval") or ""), suspended=spec.get("suspend") is True)
    return r


def note(r: Reconciler) -> str:
    """The consequence, in one line, for the diff and the pull request."""
    named = f"{r.tool} `{r.name}`" if r.name else r.tool
    if r.suspended:
        return f"{named} is suspended: the live value stays until it resumes, then is reverted unless this PR merges first"
    if r.tool == ARGO_APPLICATION:
        if r.self_heal:
            return f"{named} self-heals this object: the live value will be reverted within seconds unless this PR merges first"
        if r.every == "never":
            return f"{named} shows this object OutOfSync: its next sync reverts the live value unless this PR merges first"
        return f"{named} syncs this object: a sync or self-heal reverts the live value unless this PR merges first"
    when = f"every {r.every}" if r.every and r.every != "never" else "periodically"
    return f"{named} reconciles this object {when}: the live value will be reverted unless this PR merges first"
