"""What a pass decided for the objects whose watch events it handled, one log line each.

An operator watching ``kubectl logs`` sees a change arrive (the watcher's ``event`` line) and,
after the pass, what became of it: ``written``/``proposed``, ``held until T`` (a value that must
hold for ``stableFor`` first), ``conflict``, ``secret`` (never copied), ``reported`` (a kind or a
class that is only shown), ``pending apply`` (git moved), ``cannot compare``, or ``nothing to
do``. Only for the objects that changed since the previous pass, and at most ``MAX_LINES`` of
them (the rest summed up in one line): a resync over 5,000 objects logs nothing per object.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from syncer.detect.classify import parse_time
from syncer.logs import event
from syncer.model import Action, Direction, Drift, ObjectRef, Result
from syncer.secrets.redact import REDACTED
from syncer.writeback.report import shown

log = logging.getLogger("syncer.loop")

#: Objects named per pass; more are counted in one line.
MAX_LINES = 10


def decision(ref: ObjectRef, drifts: list[Drift], written: set[ObjectRef], errors: Iterable[str],
             committing: bool, stable_for: float, since: datetime | None) -> str:
    """One phrase for what the pass did with ``ref``."""
    failed = next((m for m in errors if m.startswith(f"{ref}:") or m.startswith(f"{ref} ")), None)
    if failed is not None:
        return f"cannot compare: {failed[len(str(ref)) + 1:].strip()}"
    if not drifts:
        return "nothing to do: in sync with git"
    if ref in written:
        return "written to git" if committing else "proposed in the pull request"
    if any(d.direction is Direction.CONFLICT for d in drifts):
        return "conflict: git and the cluster both moved; reported, not written"
    if any(shown(d, d.live) == REDACTED for d in drifts):
        return "secret: looks like a secret, never copied into git"
    waiting = [d for d in drifts if d.action is Action.WAIT]
    if waiting:
        changed = [t for d in waiting if (t := parse_time(d.changed_at) or since) is not None]
        if changed:
            until = max(changed) + timedelta(seconds=stable_for)
            return f"held until {until.strftime('%Y-%m-%dT%H:%M:%SZ')}: must stay {stable_for:g}s before it is written"
        return "held: waiting until it is seen stable"
    if all(d.direction is Direction.GIT for d in drifts):
        return "pending apply: git moved; never reverted"
    if any(d.action is Action.WRITE for d in drifts):
        return "not written: " + next(d.reason for d in drifts if d.action is Action.WRITE)
    return "reported: " + drifts[0].reason


def log_decisions(changed: Iterable[ObjectRef], result: Result, written: Iterable[Drift], *, committing: bool,
                  stable_for: float, since: Mapping[ObjectRef, datetime]) -> None:
    """One line per changed object (at most ``MAX_LINES``): what this pass decided for it."""
    refs = sorted(set(changed))
    if not refs:
        return
    by_ref: dict[ObjectRef, list[Drift]] = {}
    for d in result.drifts:
        by_ref.setdefault(d.ref, []).append(d)
    done = {d.ref for d in written}
    errors = [e.message for e in (*result.errors, *result.warnings)]
    for ref in refs[:MAX_LINES]:
        event(log, logging.INFO, "decided", ref=ref,
              decision=decision(ref, by_ref.get(ref, []), done, errors, committing, stable_for, since.get(ref)))
    if len(refs) > MAX_LINES:
        event(log, logging.INFO, f"decided for {len(refs) - MAX_LINES} more changed object(s)",
              written=len(done & set(refs[MAX_LINES:])))
