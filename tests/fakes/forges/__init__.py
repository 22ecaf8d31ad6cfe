"""Fake GitHub, Gitea and GitLab API servers for tests, speaking their real wire formats.

Each fake is a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` (random port) in a thread,
keeping state: pull/merge requests (number, state, title, body, labels, head, base,
merged), comments/notes, repository labels. Branch existence is checked in a real bare
git repository (``git_dir``) when a PR is opened, and the answers use the real status
codes and error bodies: GitHub 422 "Validation Failed" / "A pull request already
exists", Gitea 409 / 404, GitLab 409 / 400; 401 per forge; pagination by ``Link``,
``page``/``limit`` and ``x-next-page`` with a small ``page_size`` to force several pages;
rate-limit headers.

Tests steer them with ``fail_next(status, count, retry_after=, ratelimit_reset=)`` and
``hang_next(seconds, count)``, and inspect ``requests`` / ``writes`` (the request log).

``FakeTime`` gives a consistent injected clock/sleep pair (sleeping advances the clock
without waiting), and ``init_bare_repo`` makes the bare repository.
"""

from __future__ import annotations

from .base import EPOCH, FakeForgeServer, FakePR, FakeTime, LoggedRequest, init_bare_repo, iso
from .gitea import FakeGitea
from .github import FakeGitHub
from .gitlab import FakeGitLab

__all__ = ["EPOCH", "FAKES", "FakeForgeServer", "FakeGitHub", "FakeGitLab", "FakeGitea", "FakePR", "FakeTime",
           "LoggedRequest", "init_bare_repo", "iso"]

FAKES: dict[str, type[FakeForgeServer]] = {"github": FakeGitHub, "gitea": FakeGitea, "gitlab": FakeGitLab}
