"""Decide, for each difference, who moved, who did it, and what syncer may do. Pure.

* direction   against one snapshot base (a state where git and the cluster agreed): the
              side that still equals it did not move. ``syncer.detect.bases`` combines every base.
* provenance  from ``metadata.managedFields``: the manager owning the field, and when.
* Endpoints   and EndpointSlices bound to a candidate list: see ``syncer.detect.endpoints``.
* action      from the kind's track mode, the class and the direction.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from syncer.detect import ownership
from syncer.config import NEVER_WRITTEN
from syncer.model import JSON, Action, Direction, DriftClass, Path, Track
from syncer.detect.normalize import MISSING, get_path


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


def direction(path: Path, git: Any, live: Any, base: JSON | None) -> Direction:
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


def combine(directions: list[Direction]) -> Direction:
    """One direction for several fields of one drift."""
    kinds = set(directions)
    if len(kinds) == 1:
        return directions[0]
    if Direction.UNKNOWN in kinds and kinds <= {Direction.UNKNOWN, Direction.CLUSTER}:
        return Direction.UNKNOWN
    return Direction.CONFLICT


def provenance(live: JSON, path: Path) -> tuple[str | None, str | None]:
    """(manager, time) of the newest managedFields entry that owns ``path``."""
    who = ownership.owner(live, path)
    if who is None:
        return None, None
    return who.manager, who.time


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
