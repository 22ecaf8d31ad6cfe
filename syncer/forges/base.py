"""What syncer needs from a forge: find, open, update, comment on and close one PR.

One small interface (``Forge``), one module per forge (``github``, ``gitea``, ``gitlab``),
all speaking HTTP through the one helper in ``_http``. The lifecycle that decides *which*
of these calls to make lives in ``syncer.writeback.pullrequest`` and talks only to this interface.

Every method raises ``syncer.errors.ForgeError`` on failure: ``transient=True`` when the
same call may succeed later (timeouts, 5xx, rate limits), ``False`` when a human has to
fix something first (token, permissions, repository name).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

PrState = Literal["open", "closed", "merged"]


@dataclass(frozen=True)
class PullRequest:
    """A pull request (GitHub, Gitea) or merge request (GitLab), as syncer sees it."""

    number: int  # GitHub/Gitea number, GitLab iid: what the web UI shows after # or !
    url: str  # the page a human opens
    state: PrState  # "merged" wins over "closed"
    title: str
    body: str
    labels: tuple[str, ...]
    head: str  # source branch, without any owner prefix
    base: str  # target branch
    #: The commit the head points at, as the forge reports it.
    head_sha: str = ""
    #: Who opened it (login / username).
    author: str = ""
    #: The head branch lives in the base repository itself (not in a fork). Only such a PR
    #: can be syncer's: a fork's branch may carry syncer's name and anyone's commits.
    same_repo: bool = False


class Forge(Protocol):
    """One repository on one forge, reached with one token."""

    #: "github", "gitea" or "gitlab": used in messages.
    kind: str
    #: Longest body the forge accepts, in characters.
    max_body: int

    def find_open(self, head: str, base: str) -> PullRequest | None:
        """syncer's own open PR from ``head`` into ``base``, if any (see ``is_own``: a PR
        from a fork, or opened by someone else, with the same branch name is skipped)."""
        ...

    def find_latest_closed(self, head: str, base: str) -> PullRequest | None:
        """syncer's own most recently updated closed or merged PR from ``head`` into ``base``."""
        ...

    def create(
        self, head: str, base: str, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        """Open a PR. Raises ``PullRequestExists`` when the forge answers that one from
        ``head`` into ``base`` is already open (the lifecycle adopts it)."""
        ...

    def update(
        self,
        pr: PullRequest,
        *,
        title: str | None = None,
        body: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> PullRequest:
        """Change only the fields given (``labels`` replaces the whole set)."""
        ...

    def comment(self, pr: PullRequest, text: str) -> None:
        """Add a comment (GitLab: a note) to the PR."""
        ...

    def list_comments(self, pr: PullRequest) -> list[str]:
        """Bodies of the PR's human-visible comments, oldest first."""
        ...

    def close(self, pr: PullRequest) -> PullRequest:
        """Close the PR without merging it."""
        ...


def is_own(pr: PullRequest, head: str, base: str, account: str) -> str:
    """Why ``pr`` is not syncer's own PR from ``head`` into ``base`` ("" when it is).

    Syncer's own: the head branch is ``head`` in the base repository itself (never a fork,
    whatever its branch is called), the target is ``base``, and it was opened by ``account``,
    the token's own user. The same rule for every forge."""
    if pr.head != head or pr.base != base:
        return f"it is from {pr.head!r} into {pr.base!r}"
    if not pr.same_repo:
        return "its head branch is in another repository (a fork), not in this one"
    if pr.author.casefold() != account.casefold():
        return f"it was opened by {pr.author!r}, not by syncer's account {account!r}"
    return ""


def same_labels(a: Sequence[str], b: Sequence[str]) -> bool:
    """Label sets are compared without order or duplicates."""
    return sorted(set(a)) == sorted(set(b))
