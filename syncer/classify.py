"""Decide, for each difference, who moved, who did it, and what syncer may do. Pure.

* direction   from a base (last-applied annotation, else syncer's record of the last
              agreed state): the side that still equals the base did not move.
* provenance  from ``metadata.managedFields``: the manager owning the field, and when.
* Endpoints   and EndpointSlices bound to a candidate list: see ``syncer.endpoints``.
* action      from the kind's track mode, the class and the direction.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from syncer.config import NEVER_WRITTEN
from syncer.model import Action, Direction, DriftClass, Path, Track
from syncer.normalize import MISSING, get_path


def _same(declared: Any, actual: Any) -> bool:
    """``actual`` holds everything ``declared`` says (extra live-only fields are defaults)."""
    if declared is MISSING or declared is None:
        return actual is MISSING or actual is None or actual == {} or actual == []
    if isinstance(declared, dict):
        return isinstance(actual, dict) and all(_same(v, actual.get(k, MISSING)) for k, v in declared.items())
    if isinstance(declared, list):
        return isinstance(actual, list) and len(actual) == len(declared) and all(map(_same, declared, actual))
    return bool(declared == actual and type(declared) is type(actual)) or (
        isinstance(declared, (int, float)) and isinstance(actual, (int, float)) and not isinstance(actual, bool)
        and declared == actual
    )


def direction(path: Path, git: Any, live: Any, base: dict[str, Any] | None) -> Direction:
    """Who moved at ``path``, given the last agreed ``base`` object (None: unknown)."""
    if base is None:
        return Direction.UNKNOWN
    b = get_path(base, path)
    g = MISSING if git is None else git
    l = MISSING if live is None else live
    git_kept = _same(b, g) and _same(g, b)
    live_kept = _same(b, l)
    if git_kept and not live_kept:
        return Direction.CLUSTER
    if live_kept and not git_kept:
        return Direction.GIT
    return Direction.CONFLICT


def direction_from(path: Path, git: Any, live: Any, bases: list[dict[str, Any]]) -> Direction:
    """Direction against several candidate bases (last-applied, syncer's record).

    A stale base shows up as "both moved": when one base gives a definite answer and the
    other says conflict, the definite answer wins; contradicting answers are a conflict.
    """
    if not bases:
        return Direction.UNKNOWN
    found = {direction(path, git, live, b) for b in bases}
    definite = found - {Direction.CONFLICT, Direction.UNKNOWN}
    if len(definite) == 1:
        return definite.pop()
    return Direction.CONFLICT


def combine(directions: list[Direction]) -> Direction:
    """One direction for several fields of one drift."""
    kinds = set(directions)
    if len(kinds) == 1:
        return directions[0]
    if Direction.UNKNOWN in kinds and kinds <= {Direction.UNKNOWN, Direction.CLUSTER}:
        return Direction.UNKNOWN
    return Direction.CONFLICT


def _owns(node: Any, live: Any, path: Path) -> bool:
    """Does a fieldsV1 ``node`` (rooted where ``live`` is) cover ``path``?"""
    for part in path:
        if not isinstance(node, dict):
            return False
        if not [k for k in node if k != "."]:
            return True  # owns this whole (atomic) value
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
                if all(item.get(k) == v for k, v in keys.items()):
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


def provenance(live: dict[str, Any], path: Path) -> tuple[str | None, str | None]:
    """(manager, time) of the newest managedFields entry that owns ``path``."""
    best: tuple[str, str] | None = None
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(entry, dict) or not _owns(entry.get("fieldsV1") or {}, live, path):
            continue
        when = str(entry.get("time") or "")
        if best is None or when >= best[1]:
            best = (str(entry.get("manager") or "?"), when)
    if best is None:
        return None, None
    return best[0], best[1] or None


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


def _fmt_age(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 86400:
        return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def decide(
    kind: str,
    cls: DriftClass,
    dirn: Direction,
    track: Track,
    changed_at: datetime | None,
    now: datetime,
    stable_for: float,
) -> tuple[Action, str]:
    """(action, reason) for one drift."""
    if kind in NEVER_WRITTEN:
        return Action.REPORT, f"{kind}s are never written back"
    if cls is DriftClass.CLEARED:
        return Action.REPORT, "no ready address: backend absent right now (never written)"
    if cls is DriftClass.UNDECLARED:
        return Action.REPORT, "live address is in no candidate list: hand-patched, or the list drifted"
    if cls is DriftClass.REMOVED:
        return Action.REPORT, "absent live; syncer never deletes from git"
    if dirn is Direction.GIT:
        return Action.REPORT, "git changed and the cluster has not caught up: pending apply"
    if dirn is Direction.CONFLICT:
        return Action.REPORT, "both git and the cluster changed since they last agreed: resolve by hand"
    if track is Track.REPORT:
        return Action.REPORT, f"{kind} is tracked as report"
    if track is Track.STABLE or cls is DriftClass.PICK:
        if changed_at is None:
            return Action.WAIT, "change time unknown: waiting until it is seen stable"
        held = (now - changed_at).total_seconds()
        if held < stable_for:
            return Action.WAIT, f"held {_fmt_age(held)} of {_fmt_age(stable_for)}"
        suffix = f"stable for {_fmt_age(held)}"
    else:
        suffix = ""
    if dirn is Direction.UNKNOWN:
        return Action.WRITE, "no agreed base known: proposed for review, never committed directly" + (
            f"; {suffix}" if suffix else ""
        )
    return Action.WRITE, suffix or "changed in the cluster"
