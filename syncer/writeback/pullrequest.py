"""The life of syncer's one rolling pull request per installation.

``reconcile_pull_request`` is pure decision logic over a ``Forge``: given what the PR
should say now (a ``Proposal``, or ``None`` when there is no drift left), it opens,
updates, leaves alone, or closes the PR, making write calls only when something differs.

Each body syncer writes ends with a marker::

    <!-- syncer:drift-hash=DRIFT body-hash=BODY -->

``DRIFT`` identifies the drift content (given by the caller) and ``BODY`` is the first 16
hex digits of the SHA-256 of the proposal body. Later runs compare these hashes, not the
text, so a forge that rewrites whitespace or a body cut to fit the forge's limit does not
cause endless updates; and a PR a human closed unmerged is not reopened for the very same
drift (``SUPPRESSED``).
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Collection
from dataclasses import dataclass

from syncer.errors import ForgeError, PullRequestExists
from syncer.forges.base import Forge, PullRequest, same_labels
from syncer.model import JSON

MARKER_RE = re.compile(
    r"<!-- syncer:drift-hash=(?P<drift>[A-Za-z0-9._:-]+) body-hash=(?P<body>[0-9a-f]+) -->"
)
#: Marks syncer's own "a human pushed here" comment, so it is left only once.
HUMAN_PUSHED_MARKER = "<!-- syncer:human-pushed -->"

_SAFE_DRIFT = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_TABLE_RULE = re.compile(r"^\|[\s:|-]*\|?\s*$")


@dataclass(frozen=True)
class Proposal:
    """What the PR should say now."""

    title: str
    body: str  # markdown, without the marker
    labels: tuple[str, ...]
    drift_hash: str  # identifies the drift content (same drift => same hash)
    #: What the body says in substance; when set, the body is rewritten only when this
    #: changes, so volatile details (a pick's re-made time after a flap) cause no update.
    fingerprint: str = ""

    @property
    def body_key(self) -> str:
        return self.fingerprint or self.body


class PrOutcome(str, enum.Enum):
    OPENED = "opened"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    CLOSED = "closed"
    NOTHING = "nothing"  # no drift and no open PR
    SUPPRESSED = "suppressed"  # a PR for this same drift was closed unmerged: stay quiet
    HUMAN_PUSHED = "human-pushed"  # someone else pushed to the branch: hands off


@dataclass(frozen=True)
class PrResult:
    outcome: PrOutcome
    pr: PullRequest | None
    message: str


# -- the marker ------------------------------------------------------------------------


def body_hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def marker_drift(drift_hash: str) -> str:
    """The drift hash as written in the marker (hashed again if it is not marker-safe)."""
    if _SAFE_DRIFT.match(drift_hash):
        return drift_hash
    return hashlib.sha256(drift_hash.encode("utf-8")).hexdigest()[:32]


def render_marker(proposal: Proposal) -> str:
    return (
        f"<!-- syncer:drift-hash={marker_drift(proposal.drift_hash)} "
        f"body-hash={body_hash(proposal.body_key)} -->"
    )


def parse_marker(body: str) -> tuple[str, str] | None:
    """``(drift_hash, body_hash)`` from the last marker in ``body``, if any."""
    found = list(MARKER_RE.finditer(body))
    if not found:
        return None
    return found[-1].group("drift"), found[-1].group("body")


def compose_body(proposal: Proposal, limit: int) -> str:
    """The body to send: the proposal, its marker, cut to ``limit`` characters."""
    return render_body_limit(f"{proposal.body.rstrip()}\n\n{render_marker(proposal)}\n", limit)


def render_body_limit(body: str, limit: int) -> str:
    """``body`` if it fits in ``limit`` characters, else cut at a line with a note.

    Whole lines are dropped from the end; the note says how many table rows (lines
    starting with ``|``; other lines when no row was dropped) are missing, and the
    syncer marker is kept at the very end.
    """
    if len(body) <= limit:
        return body
    found = list(MARKER_RE.finditer(body))
    marker = found[-1].group(0) if found else ""
    text = body
    if found:
        text = body[: found[-1].start()] + body[found[-1].end() :]
    lines = text.rstrip().split("\n")
    tail = f"\n\n{marker}\n" if marker else "\n"
    rows = 0  # dropped table rows
    other = 0  # dropped non-blank lines
    kept = sum(len(line) + 1 for line in lines)  # length of the kept lines joined, plus one
    note = ""
    for cut in range(len(lines) - 1, -1, -1):
        line = lines[cut]
        kept -= len(line) + 1
        if line.startswith("|") and not _TABLE_RULE.match(line):
            rows += 1
        if line.strip():
            other += 1
        note = f"… truncated: {rows or other} more rows; run `syncer diff` to see all"
        if max(kept - 1, 0) + 2 + len(note) + len(tail) <= limit:
            head = "\n".join(lines[:cut]).rstrip()
            return f"{head}\n\n{note}{tail}" if head else f"{note}{tail}"
    return f"{note}{tail}"[:limit]  # not even the note fits: the limit is absurd


# -- the lifecycle ---------------------------------------------------------------------


def reconcile_pull_request(
    forge: Forge,
    head: str,
    base: str,
    proposal: Proposal | None,
    *,
    human_pushed: bool = False,
    pushed: Collection[str] | None = None,
    reason_closed: str = "the drift is gone: git and the cluster agree again",
) -> PrResult:
    """Bring the one PR from ``head`` into ``base`` in line with ``proposal``.

    - open PR and ``human_pushed``: one comment saying syncer stopped rewriting the
      branch (only the first time), nothing else -> ``HUMAN_PUSHED``;
    - no proposal: comment ``reason_closed`` and close the open PR -> ``CLOSED``, or
      ``NOTHING`` when none is open;
    - open PR: update only the fields whose title / body hash / label set differ ->
      ``UPDATED``, or no write call at all -> ``UNCHANGED``;
    - no open PR: ``SUPPRESSED`` when the latest closed PR for ``head`` was closed
      unmerged with the same drift hash, else open one -> ``OPENED``.

    ``human_pushed`` only matters while a PR is open; the caller decides (from the
    branch's commit authors) whether to push at all.

    The forge finds only syncer's own PRs (in the base repository, opened by syncer's
    account: see ``forges.base.is_own``). ``pushed``, when given, lists the commits syncer
    pushed to ``head`` or found there and checked (its own): a PR whose head is none of them
    is left alone, without a write (``HUMAN_PUSHED``), whatever it says.
    """
    current = forge.find_open(head, base)
    if current is not None and human_pushed:
        return _hands_off(forge, current, head)
    if current is not None and not _pushed_by_syncer(current, pushed):
        return _not_pushed(current, head)
    if proposal is None:
        if current is None:
            return PrResult(PrOutcome.NOTHING, None, "no drift and no open pull request")
        forge.comment(current, f"syncer is closing this pull request: {reason_closed}.")
        closed = forge.close(current)
        return PrResult(
            PrOutcome.CLOSED, closed, f"closed pull request #{closed.number} ({closed.url}): {reason_closed}"
        )
    body = compose_body(proposal, forge.max_body)
    if current is not None:
        changes = _changes(current, proposal, body)
        if not changes:
            return PrResult(
                PrOutcome.UNCHANGED, current, f"pull request #{current.number} is up to date ({current.url})"
            )
        updated = forge.update(current, **changes)
        return PrResult(
            PrOutcome.UPDATED,
            updated,
            f"updated {', '.join(changes)} of pull request #{updated.number} ({updated.url})",
        )
    last = forge.find_latest_closed(head, base)
    if last is not None and last.state == "closed" and _drift_of(last) == marker_drift(proposal.drift_hash):
        return PrResult(
            PrOutcome.SUPPRESSED,
            last,
            f"pull request #{last.number} ({last.url}) for this same drift was closed without "
            "merging: not opening another until the drift changes",
        )
    created, adopted = _create_or_adopt(forge, head, base, proposal, body)
    if adopted and not _pushed_by_syncer(created, pushed):  # one syncer just opened is its own
        return _not_pushed(created, head)
    changes = _changes(created, proposal, body)  # an adopted PR may say something older
    if changes:
        updated = forge.update(created, **changes)
        return PrResult(
            PrOutcome.UPDATED,
            updated,
            f"pull request #{updated.number} already existed; updated {', '.join(changes)} ({updated.url})",
        )
    return PrResult(PrOutcome.OPENED, created, f"opened pull request #{created.number} ({created.url})")


def _create_or_adopt(forge: Forge, head: str, base: str, proposal: Proposal,
                     body: str) -> tuple[PullRequest, bool]:
    """Open the PR -> (it, False); when the forge says one is already open (another replica,
    or a run that died between its create and its answer), syncer's own open one is adopted
    -> (it, True): a duplicate-PR answer is success, never a second PR."""
    try:
        return forge.create(head, base, proposal.title, body, proposal.labels), False
    except PullRequestExists as exc:
        existing = forge.find_open(head, base)
        if existing is None:  # a replica's not listed yet, or one syncer did not open (left alone)
            raise ForgeError(f"{exc.message}, but syncer has no open one of its own there (one opened "
                             "by another account is never taken over)", transient=True) from exc
        return existing, True


def _changes(pr: PullRequest, proposal: Proposal, body: str) -> JSON:
    """The ``update`` arguments that would bring ``pr`` in line with ``proposal``."""
    changes: JSON = {}
    if pr.title != proposal.title:
        changes["title"] = proposal.title
    if parse_marker(pr.body) != (marker_drift(proposal.drift_hash), body_hash(proposal.body_key)):
        changes["body"] = body
    if not same_labels(pr.labels, proposal.labels):
        changes["labels"] = proposal.labels
    return changes


def _drift_of(pr: PullRequest) -> str | None:
    found = parse_marker(pr.body)
    return found[0] if found else None


def _pushed_by_syncer(pr: PullRequest, pushed: Collection[str] | None) -> bool:
    return pushed is None or pr.head_sha in pushed


def _not_pushed(pr: PullRequest, head: str) -> PrResult:
    return PrResult(
        PrOutcome.HUMAN_PUSHED,
        pr,
        f"pull request #{pr.number}: its head {pr.head_sha[:12] or '(none)'} is not a commit syncer pushed "
        f"to {head}; left alone ({pr.url})",
    )


def _hands_off(forge: Forge, pr: PullRequest, head: str) -> PrResult:
    if any(HUMAN_PUSHED_MARKER in text for text in forge.list_comments(pr)):
        return PrResult(
            PrOutcome.HUMAN_PUSHED, pr, f"pull request #{pr.number}: someone else pushed to {head}; left alone"
        )
    forge.comment(
        pr,
        f"Someone other than syncer pushed to `{head}`, so syncer has stopped rewriting this "
        "branch and will no longer update this pull request's title, body or labels. "
        f"Merge or close it by hand; once it is closed and `{head}` is deleted, syncer "
        f"starts over with a fresh branch.\n\n{HUMAN_PUSHED_MARKER}",
    )
    return PrResult(
        PrOutcome.HUMAN_PUSHED,
        pr,
        f"pull request #{pr.number}: someone else pushed to {head}; stopped rewriting it and said so ({pr.url})",
    )
