"""Landing one commit on a base branch that other pushes keep moving (``--mode commit``).

A fleet of installations shares one repository: when they all sync at once (a fleet-wide edit,
every sidecar restarting after an upgrade), all but one push loses the race. What a loser does:

1. wait a jittered, capped, exponentially growing time (``syncer.backoff``), so the losers of
   one race do not meet again in the next;
2. fetch the base branch and ask git which files the new commits changed (``git diff`` of the
   old base against the new one);
3. when none of them is under ``hosts/<installation>/``, none is a file the commit edits and none
   is a file detection read outside the installation (a chart a HelmRelease names), the
   detection still holds word for word: the **same file edits** are made again on the new base
   (``replay``: a tree merge and a commit object, the clone's files untouched) and pushed,
   without detecting again (no API read, no re-render, no re-plan);
4. otherwise someone changed the installation itself -- perhaps a person fixing the very value
   syncer wants to copy back -- so detection runs again on the new base, whose direction rules
   keep that person's change (never reverted, never force-pushed).

Both bounds of the budget (``PushBudget``: pushes, seconds) end it with ``KeptMoving``: nothing
was pushed, nothing lost; a one-shot ``sync`` says so and exits 2, the sidecar retries the
installation later (a distinct outcome, not an error: syncer/sidecar/passes.py).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from syncer.backoff import full_jitter
from syncer.errors import GitError
from syncer.gitrepo import Workspace
from syncer.writeback.plan import FileChange, write_changes

__all__ = ["MAX_SIDECAR_PUSH_BUDGET", "Edits", "KeptMoving", "Landed", "PushBudget", "land", "race_backoff", "replay", "touched"]

#: The pause before the next push after losing a race: full jitter over FIRST * 2**n, capped.
#: FIRST is about one fetch-commit-push on loopback; CAP is reached after 7 losses in a row and
#: spreads a burst of ~50 contenders (each needing ~0.3 s of the branch) thinly enough that most
#: attempts win, while a lone loser retries within a fraction of a second.
RACE_BACKOFF_FIRST, RACE_BACKOFF_CAP = 0.2, 10.0
#: A push or fetch whose connection dropped (a remote overloaded by a fleet's connections resets
#: some: "Connection reset by peer", "the remote end hung up") counts as a lost race, up to this
#: many in a row; the next one is raised as it is: a remote that keeps dropping is down, not busy.
MAX_DROPPED_IN_A_ROW = 5


def race_backoff(attempt: int, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before push number ``attempt + 1`` after ``attempt`` lost races in a row."""
    return full_jitter(attempt, RACE_BACKOFF_FIRST, RACE_BACKOFF_CAP, rand)


@dataclass(frozen=True)
class PushBudget:
    """How long commit mode keeps retrying pushes that lost the race (``--push-attempts``,
    ``--push-budget``): whichever runs out first ends it."""

    #: Pushes in all, the first one included.
    attempts: int = 60
    #: Seconds from the first push. Under the sidecar's liveness limit for one pass (300 s,
    #: syncer/sidecar/server.py) with room for the detection and the last push themselves.
    seconds: float = 120.0


#: The longest ``PushBudget.seconds`` the sidecar takes: its liveness allows one pass 300 s
#: (syncer/sidecar/server.py), which must also hold the detection and the last push.
MAX_SIDECAR_PUSH_BUDGET = 240.0


class KeptMoving(GitError):
    """The budget ran out: every push lost the race to another push. Nothing was pushed (and
    nothing lost); ``pushes`` tries in ``seconds``."""

    def __init__(self, base: str, pushes: int, seconds: float) -> None:
        super().__init__(f"{base} kept moving: {pushes} pushes lost the race to other pushes in {seconds:.0f} s; "
                         "nothing was lost, run again", transient=True)
        self.base, self.pushes, self.seconds = base, pushes, seconds


@dataclass(frozen=True)
class Edits:
    """One commit's worth of detection: the files' new texts, the commit message, and the paths
    outside ``hosts/<installation>/`` detection read (their change makes it stale too)."""

    changes: Sequence[FileChange]
    message: str
    reads: Sequence[str] = ()


@dataclass(frozen=True)
class Landed:
    commit: str
    pushes: int
    seconds: float
    reapplied: int  # same edits, new base, no detection
    redetected: int  # the installation moved: detection ran again

    def summary(self, base: str) -> str:
        """One line for the outcome: how the commit got there (nothing when the first push did)."""
        if self.pushes == 1:
            return ""
        return (f"{base} moved while committing: landed after {self.pushes} push attempts in {self.seconds:.1f} s "
                f"({self.pushes - 1} lost the race; the same edits re-applied on the new {base} {self.reapplied} "
                f"time(s), detection redone {self.redetected} time(s))")


def touched(paths: Sequence[str], installation: str, edits: Edits) -> list[str]:
    """The changed ``paths`` that make ``edits`` stale: under the installation, edited, or read."""
    mine = f"hosts/{installation}/"
    edited = {c.file for c in edits.changes}
    reads = [r.rstrip("/") for r in edits.reads]
    return [p for p in paths if p.startswith(mine) or p in edited
            or any(p == r or p.startswith(r + "/") for r in reads)]


def replay(ws: Workspace, commit: str, onto: str, message: str) -> str:
    """``commit``'s edits made again as one new commit on ``onto``, which changed none of its files:
    a tree merge (``git merge-tree``) and a commit object, in two git commands that leave the
    clone's files alone -- the time between the fetch and the push is the window another push
    can win in, and this keeps it short. A merge git cannot make cleanly raises ``GitError``."""
    tree = ws.git("merge-tree", "--write-tree", "--no-messages", onto, commit).splitlines()[0]
    msg = ws.path / ".git" / "SYNCER_COMMIT_MSG"
    msg.write_text(message, encoding="utf-8")
    return ws.git("commit-tree", tree, "-p", onto, "-F", str(msg))


def _contains(ws: Workspace, ref: str, commit: str) -> bool:
    """Whether ``commit`` is in ``ref``'s history (a push whose answer was lost had landed)."""
    try:
        ws.git("merge-base", "--is-ancestor", commit, ref)
    except GitError:
        return False
    return True


def land(ws: Workspace, installation: str, edits: Edits, detect: Callable[[], Edits | None], budget: PushBudget, *,
         notes: list[str], sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
         rand: Callable[[], float] = random.random) -> Landed | None:
    """Commit ``edits`` on the clone's base (as ``detect`` left it) and push until it lands or
    ``budget`` runs out (``KeptMoving``). ``detect`` resets the clone to the remote base and
    detects anew, giving the new edits (None: nothing to commit any more, say a person copied the
    value back themselves: then this returns None). A refused push is raised as it is; a push or
    fetch whose connection dropped is one more lost race (``MAX_DROPPED_IN_A_ROW``). Once
    landed, the clone holds the landed commit."""
    started = clock()
    base = ws.head()  # what ``edits`` were computed against
    write_changes(ws.path, edits.changes)
    commit = ws.commit([c.file for c in edits.changes], edits.message)
    pushes = reapplied = redetected = dropped = 0
    while True:
        pushes += 1
        try:
            landed = ws.push_base(commit)
            dropped = 0  # the server answered: landed, or a race lost
        except GitError as exc:
            if not exc.transient or dropped >= MAX_DROPPED_IN_A_ROW:
                raise
            dropped += 1  # the push may or may not have landed: the fetch below tells
            landed = False
        if landed:
            if reapplied:  # the clone's files and branch as the landed commit has them
                ws.reset_to(commit)
            return Landed(commit, pushes, clock() - started, reapplied, redetected)
        elapsed = clock() - started
        if pushes >= budget.attempts or elapsed >= budget.seconds:
            raise KeptMoving(ws.base, pushes, elapsed)
        sleep(min(race_backoff(pushes, rand), max(0.0, budget.seconds - elapsed)))
        try:
            new = ws.fetch_base(racing=True)
        except GitError as exc:
            if not exc.transient or dropped >= MAX_DROPPED_IN_A_ROW:
                raise
            dropped += 1
            continue  # push again: a lost race is told by the push itself
        if dropped and _contains(ws, new, commit):  # a dropped connection after the push was taken
            ws.reset_to(commit)
            return Landed(commit, pushes, clock() - started, reapplied, redetected)
        stale = touched(ws.changed_paths(base, new), installation, edits)
        if not stale:
            try:
                commit = replay(ws, commit, new, edits.message)
                reapplied += 1
                continue
            except GitError:  # not a clean merge after all (a base branch rewritten?): detect again
                stale = [f"{ws.base} (rewritten: the new {ws.base} does not merge cleanly)"]
        redetected += 1
        shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
        notes.append(f"{ws.base} moved in {shown}: detecting again on the new {ws.base}")
        again = detect()
        if again is None:
            return None
        edits, base = again, ws.head()
        write_changes(ws.path, edits.changes)
        commit = ws.commit([c.file for c in edits.changes], edits.message)
