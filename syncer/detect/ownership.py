"""Who owns a field, from ``metadata.managedFields``: the ownership base, and whether the
last-applied annotation can be trusted. Pure.

The API server records, for every field, the manager whose write last changed it. An
*applier* (a manager named in the ``appliers`` list: ``kubectl apply``, client-side and
server-side, Helm, Argo CD, Flux, ...) writes what git declares, so a field it owns holds what
was last applied: a difference there is git's pending change. Any other manager
(``kubectl-edit``, ``kubectl-patch``, a reconciler, a server-side apply under another field
manager such as ``--field-manager=hotfix-team``) moved the cluster.

The same rule decides whether the ``last-applied-configuration`` annotation is a base at
all: anybody who can edit an object can edit that annotation (``kubectl edit`` rewrites it
on every save), so it only counts while an applier owns it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from syncer.model import JSON, Direction, DriftClass, ObjectRef, Path, format_path
from syncer.detect.normalize import LAST_APPLIED, MISSING, get_path, last_applied

if TYPE_CHECKING:
    from syncer.detect.diff import FieldDiff

#: Field managers that write what git declares. ``kubectl-client-side-apply`` is plain
#: ``kubectl apply``; ``kubectl`` is ``kubectl apply --server-side`` (and every verb of
#: kubectl < 1.19, which named no verb); the rest are Helm 3, Argo CD and Flux.
DEFAULT_APPLIERS: tuple[str, ...] = (
    "kubectl-client-side-apply",
    "kubectl",
    "helm",
    "argocd-controller",
    "argocd-application-controller",
    "argocd",  # Argo CD 2.x's client-side apply (seen in argo-cd's controller test data)
    "kustomize-controller",
    "helm-controller",
)

ANNOTATION_PATH: Path = ("metadata", "annotations", LAST_APPLIED)


@dataclass(frozen=True)
class Owner:
    """The managedFields entry that owns a field."""

    manager: str
    operation: str  # "Update" | "Apply"
    time: str | None  # RFC 3339, seconds

    def is_applier(self, appliers: Collection[str]) -> bool:
        """Only the managers named in ``appliers`` apply git; the operation does not say who
        sent the manifest (``kubectl apply --server-side --field-manager=hotfix-team`` is a live
        edit with operation ``Apply``)."""
        return self.manager in appliers


def _entries(live: JSON) -> list[JSON]:
    managed = (live.get("metadata") or {}).get("managedFields")
    return [e for e in managed if isinstance(e, dict)] if isinstance(managed, list) else []


def owns(node: Any, live: Any, path: Path, whole: bool = True) -> bool:
    """Does a fieldsV1 ``node`` (rooted where ``live`` is) cover ``path``? With ``whole`` false,
    only when it names ``path`` itself, not when it owns an atomic value around it."""
    for part in path:
        if not isinstance(node, dict):
            return False
        if not [k for k in node if k != "."]:
            # A leaf of the field set. Under it lies an atomic value (a list without keys, like
            # Endpoints' subsets): owned whole. A map is never atomic here; the server leaves
            # ``f:data: {}`` behind when other managers took every key: that owns no key.
            return whole and not isinstance(live, dict)
        if isinstance(part, str):
            node = node.get(f"f:{part}")
            live = live.get(part) if isinstance(live, dict) else None
            continue
        item = live[part] if isinstance(live, list) and part < len(live) else None
        found = None
        for key, child in node.items():
            if key.startswith("k:") and isinstance(item, dict):
                try:
                    keys = json.loads(key[2:])
                except ValueError:
                    continue
                if isinstance(keys, dict) and all(item.get(k) == v for k, v in keys.items()):
                    found = child
            elif key.startswith("v:"):
                try:
                    if json.loads(key[2:]) == item:
                        found = child
                except ValueError:
                    continue
            elif key == f"i:{part}":
                found = child
        node, live = found, item
    return node is not None


def owner(live: JSON, path: Path, appliers: Collection[str] = (), whole: bool = True) -> Owner | None:
    """The newest managedFields entry owning ``path`` (None: no entry does, or none at all).

    Two entries can own the same field: managers that applied the same value, and (seen on
    kube-apiserver v1.20) an applier that regains the last-applied annotation next to the
    ``kubectl-edit`` that rewrote it when a third manager updates the object. The newest
    wins; at the same second, a manager that is not an applier does. ``whole``: as in ``owns``.
    """
    best: Owner | None = None
    best_key: tuple[str, bool] = ("", False)
    for entry in _entries(live):
        if entry.get("subresource") == "status" or not owns(entry.get("fieldsV1") or {}, live, path, whole):
            continue
        who = Owner(str(entry.get("manager") or "?"), str(entry.get("operation") or ""),
                    str(entry.get("time") or "") or None)
        key = (who.time or "", not who.is_applier(appliers))
        if best is None or key >= best_key:
            best, best_key = who, key
    return best


def last_apply_time(live: JSON, appliers: Collection[str]) -> str | None:
    """When an applier last changed the object (the newest applier entry), if any did. A
    controller's server-side apply of the status subresource is no apply of the manifest."""
    times = [str(e.get("time")) for e in _entries(live)
             if e.get("time") and not e.get("subresource")
             and e.get("manager") in appliers]
    return max(times) if times else None


def direction_by_owner(live: JSON, path: Path, appliers: Collection[str]) -> tuple[Direction, Owner] | None:
    """GIT when an applier owns ``path`` (live is what was applied), CLUSTER when anything else
    does; None when managedFields say nothing about it."""
    who = owner(live, path, appliers)
    if who is None:
        return None
    return (Direction.GIT if who.is_applier(appliers) else Direction.CLUSTER), who


def trusted_last_applied(live: JSON, appliers: Collection[str]) -> tuple[JSON | None, str]:
    """The last-applied annotation as a base, or (None, why it is not one).

    Without managedFields (an old snapshot, a stripped export) nothing says who wrote it,
    and it is trusted: kubectl apply is its only writer there; with them, it counts only while
    an applier owns it.
    """
    base = last_applied(live)
    if base is None:
        return None, ""
    if not _entries(live):
        return base, ""
    who = owner(live, ANNOTATION_PATH, appliers)
    if who is None or who.is_applier(appliers):
        return base, ""
    when = f" at {who.time}" if who.time else ""
    return None, f"last-applied ignored: its annotation was last written by {who.manager}{when}, not by an applier"




def moved_by(live: JSON, appliers: Collection[str],
             person: Callable[[Owner], bool]) -> Callable[[Path], bool] | None:
    """For ``diff.compare``: was the live field at a path last written by a ``person`` (the
    engine's rule: an Update by an interactive editing tool, ``kubectl edit``/``patch``/``set``,
    a console)?

    Those writers own exactly what they changed. Any other writer may have created the object
    or sent it whole (a controller or operator, ``kubectl create``/``replace``, an applier) and
    then owns every default the server or admission filled in as well (seen on kube-apiserver
    v1.20: ``kubectl create`` owns ``dnsPolicy``, ``restartPolicy``, ...; Argo CD 2.x's
    Update-mode ``argocd`` in the shared pair acd-deployment owns ``terminationMessagePath``),
    so what it owns tells no default from a change: a key only live that such a manager owns
    stays unreported, as a default.  None when no entry is a person's (most objects): nothing to look up.
    """
    if not any(person(Owner(str(e.get("manager") or "?"), str(e.get("operation") or ""), None))
               for e in _entries(live) if e.get("subresource") != "status"):
        return None

    def moved(path: Path) -> bool:
        # Named itself: the writer of an atomic list (LimitRange ``limits``) owns it whole,
        # with every default the server filled in inside it (seen on kube-apiserver v1.20).
        who = owner(live, path, appliers, whole=False)
        return who is not None and person(who)

    return moved


def not_stored(ref: ObjectRef, live: JSON, diffs: list[FieldDiff]) -> tuple[list[FieldDiff], list[str]]:
    """``diffs`` without the fields git declares that the server did not store, and one note each.

    A field the live object lacks although a managedFields entry still names it was sent and
    dropped by the server: a field it does not know, or one of a feature turned off (Job
    ``ttlSecondsAfterFinished``, Service ``ipFamilies``/``ipFamilyPolicy`` on Kubernetes 1.20).
    The server records a write's fields before its strategy drops the disabled ones (seen on
    kube-apiserver v1.20 for ``kubectl apply``, ``--server-side`` and Helm), while a field
    removed live (``kubectl edit``/``patch``, a server-side apply that omits it) leaves every
    entry, the applier's too: that stays a ``removed`` difference. ``kubectl diff`` shows
    neither of the dropped ones (the dry run drops them too).
    """
    if not _entries(live):
        return diffs, []
    kept: list[FieldDiff] = []
    notes: list[str] = []
    for fd in diffs:
        where = fd.where_live
        who = (owner(live, where, whole=False) if fd.cls is DriftClass.REMOVED and not fd.is_item and where
               and get_path(live, where) is MISSING else None)
        if who is None:
            kept.append(fd)
            continue
        notes.append(f"{ref}: the server did not store {format_path(fd.path)} (a field it does not know, or of a "
                     f"feature turned off): {who.manager} sent it, the live object lacks it; not a difference")
    return kept, notes


#: Interactive tools a person edits a live object with (managedFields manager names). kubectl
#: names its manager after the verb (``kubectl-edit``); k9s and Lens are the common consoles (Lens
#: and other browser tools show up under their user agent, ``Mozilla``).
_KUBECTL_EDITS = frozenset(f"kubectl-{verb}" for verb in ("edit", "patch", "set", "label", "annotate", "scale",
                                                          "taint", "rollout"))
_CONSOLES = ("k9s", "Mozilla", "lens")


def added_by_person(who: Owner | None, appliers: Collection[str]) -> bool:
    """Was a live-only list item (or label) added by a person, not by admission, a controller or the server?

    Only an interactive editing tool's ``Update`` counts. Appliers and creators never do
    (``kubectl-client-side-apply``, ``kubectl`` (server-side apply, and every verb of kubectl
    < 1.19), ``kubectl-create``, ``kubectl-replace``, Helm, the configured ``appliers``, any
    ``Apply`` operation): they send a whole object, and the server records everything mutating
    admission added to it (default tolerations, injected sidecars and volumes) under that
    request's manager -- on create, and on every update that admission mutates. An edit tool's
    update is a person changing a field or two of an existing object, which admission rarely
    touches.
    """
    if who is None or who.operation != "Update" or who.manager in appliers:
        return False
    return who.manager in _KUBECTL_EDITS or who.manager.startswith(_CONSOLES)
