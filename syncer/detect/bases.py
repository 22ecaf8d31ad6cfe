"""Who moved, from every base syncer has, combined into one answer that names its base. Pure.

The bases, from direct to circumstantial:

``proposal``      git holds exactly a value syncer proposed at that path, i.e. one it copied
                  from the cluster: git took the cluster's value, so the cluster moved since.
``record``        syncer's record of the last state where git and the cluster agreed, and
``last-applied``  the annotation (only while an applier owns it): snapshots of an agreement.
                  The side still equal to the snapshot did not move. A snapshot that makes
                  both sides look moved may be stale; a definite answer of another snapshot
                  wins, contradicting definite answers are a conflict.
``ownership``     managedFields: an applier owns the field (git moved) or another manager
                  does (the cluster moved). Says nothing about whether git moved as well.
``git-history``   the value's own history in git: changed after the last apply while another
                  manager owns the field, or while only a last-applied annotation says git did
                  not move (both moved), or last written by syncer's own copy (git did not move).

A definite snapshot answer stands (an equal value is direct evidence). Otherwise the
circumstantial bases decide, and any sign that *both* sides moved makes a conflict: a
cluster move is never written over a git change that is not applied yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncer.detect import classify
from syncer.model import JSON, Direction, GitSays, Path
from syncer.detect.ownership import Owner

PROPOSAL = "proposal"
RECORD = "record"
LAST_APPLIED = "last-applied"
#: what the tool that renders the object last applied (a Helm release's deployed manifest)
RELEASED = "helm-release"
OWNERSHIP = "ownership"
GIT_HISTORY = "git-history"
NONE = "none"


@dataclass(frozen=True)
class Verdict:
    direction: Direction
    base: str  # the base that decided; "a vs b" when two bases contradict each other
    why: str = ""  # one human line: what that base showed


@dataclass(frozen=True)
class Evidence:
    """What is known about one object, beyond its git and live values."""

    snapshots: Sequence[tuple[str, JSON]] = ()  # (RECORD | LAST_APPLIED, base object)
    proposed: Mapping[Path, Sequence[Any]] = field(default_factory=dict)
    owner: Callable[[Path], tuple[Direction, Owner] | None] = lambda _path: None  # by path in the live object
    history: Callable[[Path], tuple[GitSays, str] | None] = lambda _path: None  # by path in git's object


def _snapshot(path: Path, git: Any, live: Any, snapshots: Sequence[tuple[str, JSON]]) -> Verdict | None:
    if not snapshots:
        return None
    definite: dict[Direction, str] = {}
    for name, base in snapshots:
        found = classify.direction(path, git, live, base)
        if found in (Direction.CLUSTER, Direction.GIT):
            definite.setdefault(found, name)
    if len(definite) == 1:
        (dirn, name), = definite.items()
        side = "git" if dirn is Direction.CLUSTER else "the cluster"
        return Verdict(dirn, name, f"{side} still holds the {name} value")
    if len(definite) > 1:
        return Verdict(Direction.CONFLICT, f"{definite[Direction.CLUSTER]} vs {definite[Direction.GIT]}",
                       f"{definite[Direction.CLUSTER]} says the cluster moved, {definite[Direction.GIT]} says git did")
    names = "+".join(dict.fromkeys(name for name, _ in snapshots))
    return Verdict(Direction.CONFLICT, names, f"git and the cluster both differ from the {names} value")


def _who(owner: Owner, applier: bool) -> str:
    at = f" at {owner.time}" if owner.time else ""
    role = "an applier" if applier else "not an applier"
    return f"the field is owned by {owner.manager} ({owner.operation or '?'}{at}), {role}"


def decide(path: Path, git: Any, live: Any, evidence: Evidence, live_path: Path | None = None) -> Verdict:
    """Who moved at ``path`` (in git's object; ``live_path`` where the value sits live, when a
    list is ordered differently), and which base says so."""
    if git is not None and any(v == git and type(v) is type(git) for v in evidence.proposed.get(path, ())):
        return Verdict(Direction.CLUSTER, PROPOSAL, "git holds a value syncer copied from the cluster")
    snap = _snapshot(path, git, live, evidence.snapshots)
    if snap is not None and snap.direction is Direction.CLUSTER and not any(
            name == RECORD and classify.direction(path, git, live, base) is Direction.CLUSTER
            for name, base in evidence.snapshots):
        # Only the annotation says git did not move, and it goes stale (syncer's own commits
        # are not applied): git may equal it again after moving away and back (a value syncer
        # copied, then removed by a person). A change of git's value after that apply is a git
        # move the annotation cannot show. (syncer's record, taken when git and the cluster
        # last agreed, is newer than any such change: it stands.)
        hist = evidence.history(path)
        if hist is not None and hist[0] is GitSays.MOVED:
            return Verdict(Direction.CONFLICT, f"{LAST_APPLIED} vs {GIT_HISTORY}", f"{snap.why}; {hist[1]}")
        if hist is not None and hist[0] is GitSays.UNREADABLE:  # never write on a history not read
            return Verdict(Direction.UNKNOWN, f"{LAST_APPLIED} vs {GIT_HISTORY}", f"{snap.why}; {hist[1]}")
    if snap is not None and snap.direction is not Direction.CONFLICT:
        return snap
    owned = evidence.owner(path if live_path is None else live_path)
    hist = evidence.history(path) if owned is None or owned[0] is Direction.CLUSTER else None
    says, hist_why = hist if hist is not None else (None, "")
    if owned is not None:
        dirn, who = owned
        why = _who(who, dirn is Direction.GIT)
        if dirn is Direction.GIT:
            return Verdict(Direction.GIT, OWNERSHIP, why)
        if says is GitSays.MOVED:
            return Verdict(Direction.CONFLICT, f"{OWNERSHIP} vs {GIT_HISTORY}", f"{why}; {hist_why}")
        if says is GitSays.UNREADABLE:  # the cluster moved; whether git did too is unknown: never committed
            return Verdict(Direction.UNKNOWN, f"{OWNERSHIP} vs {GIT_HISTORY}", f"{why}; {hist_why}")
        if says is GitSays.COPIED:
            return Verdict(Direction.CLUSTER, GIT_HISTORY, f"{hist_why}; {why}")
        if snap is not None:
            return Verdict(Direction.CONFLICT, snap.base, f"{snap.why}; {why}")
        return Verdict(Direction.CLUSTER, OWNERSHIP, why)
    if says is GitSays.COPIED:
        return Verdict(Direction.CLUSTER, GIT_HISTORY, hist_why)
    if snap is not None:
        return snap
    # Lines changed after the last apply, but no owner of the field: nothing says when (or
    # whether) the cluster moved, so git's history alone decides nothing.
    return Verdict(Direction.UNKNOWN, NONE, "no base: no last-applied, no record, no field owner")


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """One verdict for several fields of one drift (an Endpoints' subsets)."""
    dirn = classify.combine([v.direction for v in verdicts])
    same = [v for v in verdicts if v.direction is dirn]
    if same:
        return same[0]
    return Verdict(dirn, " vs ".join(dict.fromkeys(v.base for v in verdicts)),
                   "; ".join(dict.fromkeys(v.why for v in verdicts if v.why)))
