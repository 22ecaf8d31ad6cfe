"""What a git command that talked to a remote says happened, told as git told it.

``push_outcome`` classifies one ``git push --porcelain``: pushed; a **race** (someone pushed
first: ``[rejected] (non-fast-forward)``, ``(fetch first)``, a lease's ``(stale info)``, a server
that could not lock the ref it is moving): fetch and redo; or **refused** (a hook or the server
said no: ``[remote rejected] (pre-receive hook declined)``, a protected branch): an error that
quotes the server's ``remote:`` lines, never retried as a race. ``remote_failure`` tells why a
remote could not be used at all: its credentials rejected (HTTP 401, ``Authentication failed``,
``Permission denied (publickey)``), known but not allowed (HTTP 403), or no repository there
(HTTP 404, not a git repository). Every other code path asks these two functions, so the
words and the retry rule cannot differ between the one-shot ``sync`` and the sidecar.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from syncer.errors import GitError

#: ``remote:`` lines quoted in a refusal, at most, each cut to this many characters.
MAX_REMOTE_LINES, MAX_LINE = 6, 200


class GitAuthFailed(GitError):
    """The remote rejected syncer's credentials (HTTP 401, ``Authentication failed``, an SSH key
    it does not take)."""


class GitAccessDenied(GitError):
    """The remote knows the credentials, which may not do this (HTTP 403)."""


class GitRemoteNotFound(GitError):
    """No repository at that address (HTTP 404, not a git repository)."""


class PushRefused(GitError):
    """A hook or the server refused the push. ``remote_lines``: what the server said."""

    def __init__(self, message: str, remote_lines: tuple[str, ...] = ()) -> None:
        super().__init__(message, transient=False)
        self.remote_lines = remote_lines


class Pushed(str, enum.Enum):
    """How one push ended."""

    DONE = "pushed"
    RACE = "race"  # the ref moved (someone pushed first, a stale lease): fetch and redo
    REFUSED = "refused"  # a hook or the server said no: an error, never a race
    FAILED = "failed"  # the remote could not be used at all (``error`` says why)


@dataclass(frozen=True)
class PushOutcome:
    """One push as git told it: ``how``, the porcelain reason (``non-fast-forward``,
    ``pre-receive hook declined``), the server's ``remote:`` lines, and for an outcome that is
    not a success or a race, the error to raise."""

    how: Pushed
    reason: str = ""
    remote_lines: tuple[str, ...] = ()
    error: GitError | None = None


#: A porcelain status line of a ref that was not pushed: ``!<TAB>src:dst<TAB>[rejected] (why)``.
_REF_STATUS = re.compile(r"^!\t(?P<refs>[^\t]*)\t\[(?P<what>rejected|remote rejected|remote failure)\]"
                         r"(?: \((?P<why>[^)]*)\))?")
#: Reasons of a ``[rejected]``/``[remote rejected]`` that mean the ref moved meanwhile.
_RACE_REASONS = ("non-fast-forward", "fetch first", "stale info", "cannot lock ref", "incorrect old value",
                 "failed to update ref", "failed to lock")


def remote_lines(text: str) -> tuple[str, ...]:
    """The lines the server sent (``remote: ...``), without git's padding, at most a few."""
    said = [" ".join(line.split()) for line in text.splitlines() if line.startswith("remote:")]
    said = [line for line in said if line != "remote:"]
    return tuple(line[:MAX_LINE] for line in said[:MAX_REMOTE_LINES])


def push_outcome(returncode: int, stdout: str, stderr: str, remote: str, target: str) -> PushOutcome:
    """The outcome of ``git push --porcelain`` (exit code and both streams, URLs already
    stripped of credentials) to ``remote``, moving ``target`` (``main``, ``syncer/asgard``)."""
    if returncode == 0:
        return PushOutcome(Pushed.DONE)
    said = remote_lines(stderr + "\n" + stdout)
    for line in stdout.splitlines():
        match = _REF_STATUS.match(line)
        if match is None:
            continue
        why = match.group("why") or match.group("what")
        if any(r in why for r in _RACE_REASONS):
            return PushOutcome(Pushed.RACE, why, said)
        quoted = "; ".join(said) if said else "the server gave no reason"
        return PushOutcome(Pushed.REFUSED, why, said, PushRefused(
            f"{remote} refused the push of {target} ({why}): {quoted}; not retried (not a race: another push "
            "would be refused alike)", said))
    text = stderr + "\n" + stdout
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[0] if lines else "")
    error = remote_failure(text, remote, "push") or GitError(f"git push failed: {first or 'exit ' + str(returncode)}",
                                                              transient="permission denied" not in text.lower())
    return PushOutcome(Pushed.FAILED, error=error)


def remote_failure(text: str, remote: str, command: str) -> GitError | None:
    """Why ``git <command>`` could not use ``remote``, from what git wrote (credentials already
    stripped): rejected credentials, a denied access, no repository; None for anything else
    (the caller says git's own words)."""
    low = text.lower()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith("fatal:")), lines[0] if lines else "")
    if ("could not read username" in low or "authentication failed" in low or "returned error: 401" in low
            or "permission denied (publickey" in low or "invalid username or password" in low):
        return GitAuthFailed(f"the git remote {remote} rejected syncer's credentials (token expired or revoked?): "
                             "check --git-token-file (or the GitHub App, or the SSH key) and that it may use the "
                             f"repository; git {command}: {first}", transient=False)
    if "returned error: 403" in low:
        return GitAccessDenied(f"the git remote {remote} refused access (403): the credentials work, but may not "
                               f"{'push to' if command == 'push' else 'read'} this repository; git {command}: "
                               f"{first}", transient=False)
    if ("returned error: 404" in low or "does not appear to be a git repository" in low
            or re.search(r"repository '[^']*' (not found|does not exist)", low)):
        return GitRemoteNotFound(f"no git repository at {remote} (check --remote, or the repository's origin); "
                                 f"git {command}: {first}", transient=False)
    return None
