"""Who changed a field live, and when: managedFields, corrected by what the watch saw. Pure.

What the API server records (kube-apiserver v1.20, ``tests/realapi/test_realapi_provenance.py``):
each ``managedFields`` entry is one manager and operation, with one ``time`` that moves only when
that manager's set of fields changes. So

* a second ``kubectl edit`` of the same field by the same manager keeps the first edit's time,
  and an edit of another field moves the time of every field the manager owns;
* the ``scale`` subresource on v1.20 records no manager of its own: ``kubectl scale`` leaves
  ``spec.replicas`` owned by ``kubectl-client-side-apply``, at the time of the apply.

The sidecar's watch sees each change as it happens: ``changed_paths`` of two successive versions
of an object, kept per field by the live cache (``model.Observed``). A field's time is then the
later of its manager's entry and the moment the watch saw that very field change. A field owned by
an applier whose value is not what that applier last applied (the trusted last-applied annotation)
was not written by it: the attribution is uncertain, and no manager is named.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from syncer.detect import ownership
from syncer.detect.normalize import MISSING, get_path
from syncer.model import JSON, Path

#: Paths remembered per object change: an object rewritten whole (a Deployment's template) is one
#: path per changed leaf, bounded so that a huge rewrite costs no more than this.
MAX_PATHS = 64


def changed_paths(old: Any, new: Any, at: Path = (), out: list[Path] | None = None) -> list[Path]:
    """The paths where ``new`` differs from ``old``: leaves of maps; a list that differs is one
    path (lists are compared whole). At most ``MAX_PATHS``, then their common parent."""
    out = [] if out is None else out
    if len(out) >= MAX_PATHS:
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            a, b = old.get(key, MISSING), new.get(key, MISSING)
            if a is MISSING or b is MISSING or a != b:
                changed_paths(a, b, (*at, key), out)
    elif old != new:
        out.append(at)
    return out


def seen_at(fields: Mapping[Path, datetime] | None, path: Path) -> datetime | None:
    """When the watch last saw ``path`` change: the path itself, a path inside it (a key of a map
    the drift is about), or a list around it (changed whole)."""
    if not fields:
        return None
    times = [t for p, t in fields.items() if p[:len(path)] == path or path[:len(p)] == p]
    return max(times, default=None)


@dataclass(frozen=True)
class Provenance:
    manager: str | None
    changed_at: str | None  # RFC 3339, seconds
    #: The server's record credits a manager that cannot have written this value (it applied another).
    uncertain: bool = False


def _rfc3339(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def of_field(live: JSON, path: Path, appliers: Collection[str] = (),
             applied: JSON | None = None, seen: datetime | None = None) -> Provenance:
    """Who last changed ``path`` of ``live`` and when. ``applied``: the trusted last-applied
    configuration (None: none); ``seen``: when the watch saw this field change (None: unknown)."""
    who = ownership.owner(live, path)
    manager = who.manager if who is not None else None
    recorded = _parse(who.time if who is not None else None)
    uncertain = False
    if who is not None and who.is_applier(appliers) and applied is not None:
        was = get_path(applied, path)
        if was is not MISSING and was != get_path(live, path):
            uncertain, manager, recorded = True, None, None  # its time is the apply's, not the change's
    when = seen if seen is not None and (recorded is None or seen > recorded) else recorded
    if when is None:
        return Provenance(manager, None, uncertain)
    if when is recorded and who is not None and who.time:
        return Provenance(manager, who.time, uncertain)
    return Provenance(manager, _rfc3339(when), uncertain)


def changed_by(old: JSON | None, new: JSON) -> list[str]:
    """The managers owning the fields that changed from ``old`` to ``new`` (the watch's event
    line: who made this change), in path order, each once; empty when nothing says."""
    from syncer.detect.normalize import normalize

    if old is None:
        return []
    managers: list[str] = []
    for path in changed_paths(normalize(old), normalize(new)):
        who = ownership.owner(new, path)
        if who is not None and who.manager not in managers:
            managers.append(who.manager)
    return managers
