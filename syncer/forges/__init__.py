"""Forges: where syncer opens its one rolling pull request per installation.

``make_forge`` turns the command-line settings (``--forge``, ``--forge-url``,
``--forge-repo``, the token) into a ``Forge``. The URL may be given with or without the
API suffix: ``https://git.example`` and ``https://git.example/api/v1`` mean the same
Gitea; GitHub Enterprise Server lives under ``/api/v3``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from syncer.errors import ConfigError
from syncer.forges.base import Forge, PullRequest, same_labels
from syncer.secrets.redact import redact_url

if TYPE_CHECKING:
    import httpx

    from syncer.forges._http import TokenSource

__all__ = ["Forge", "PullRequest", "api_url", "make_forge", "same_labels", "KINDS", "FORGES", "ForgeSpec"]


@dataclass(frozen=True)
class ForgeSpec:
    """Everything syncer knows about one kind of forge. Adding a forge is one entry here, its
    module and its line in ``_client_class``: the CLI's ``--forge`` choices and every lookup
    derive from this."""

    api_suffix: str  # appended to a user-given base URL that lacks it
    default_url: str = ""  # the public instance, when there is one
    nested_repo: bool = False  # GROUP/SUBGROUP/PROJECT (and numeric ids) allowed


FORGES: dict[str, ForgeSpec] = {
    "github": ForgeSpec("/api/v3", default_url="https://api.github.com"),
    "gitea": ForgeSpec("/api/v1"),
    "gitlab": ForgeSpec("/api/v4", default_url="https://gitlab.com", nested_repo=True),
}
KINDS = tuple(FORGES)


def api_url(kind: str, base_url: str) -> str:
    """The API root for ``kind`` from a user-given forge URL (or the public default)."""
    given = (base_url or FORGES[kind].default_url).strip()
    if not given:
        raise ConfigError(f"--forge-url is required for --forge {kind}")
    parts = urlsplit(given)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--forge-url {redact_url(given)!r} is not an http(s) URL")
    netloc = parts.netloc.rpartition("@")[2]  # credentials come from the token, never the URL
    host = parts.hostname.lower()
    path = parts.path.rstrip("/")
    if kind == "github" and host in ("github.com", "www.github.com"):
        return "https://api.github.com"
    # api.github.com and GHE.com data-residency hosts (api.NAME.ghe.com) have no suffix.
    if not (kind == "github" and host.startswith("api.")) and not path.endswith(FORGES[kind].api_suffix):
        path += FORGES[kind].api_suffix
    return urlunsplit((parts.scheme, netloc, path, "", ""))


def _check_repo(kind: str, repo: str) -> str:
    repo = repo.strip().strip("/").removesuffix(".git")
    segments = repo.split("/")
    nested = FORGES[kind].nested_repo
    ok = all(segments) and (len(segments) == 2 or (nested and len(segments) >= 2))
    if not ok and not (nested and repo.isdigit()):
        shape = "GROUP/PROJECT" if nested else "OWNER/NAME"
        raise ConfigError(f"--forge-repo {repo!r} is not {shape}")
    return repo


def make_forge(
    kind: str,
    base_url: str,
    repo: str,
    token: str | TokenSource,
    client: httpx.Client | None = None,
    timeout: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    *,
    budget: float = 60.0,
    account: str = "",
) -> Forge:
    """A ``Forge`` for ``kind`` (github|gitea|gitlab) and ``repo`` on ``base_url``.

    ``timeout`` bounds each HTTP attempt, ``budget`` all retries of one call. Pass the
    ``client`` (the CLI builds it); one is created when omitted. ``account`` is the token's
    own user when known (a GitHub App's ``<slug>[bot]``, which ``GET /user`` cannot tell);
    otherwise it is looked up on first use. Only PRs opened by it are syncer's.
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown --forge {kind!r}: expected one of {', '.join(KINDS)}")
    if isinstance(token, str):
        if not token.strip():
            raise ConfigError(f"no token for --forge {kind}: set --token-file or SYNCER_FORGE_TOKEN")
        token = token.strip()
    url = api_url(kind, base_url)
    repo = _check_repo(kind, repo)
    if client is None:
        import httpx

        client = httpx.Client(timeout=timeout)
    # Each forge's module is imported on first use: they import httpx, about a sixth of
    # ``import syncer.cli`` (README, "Dependencies"), which ``syncer diff`` never needs.
    options = {"timeout": timeout, "budget": budget, "sleep": sleep, "clock": clock, "account": account}
    if kind == "github":
        from syncer.forges.github import GitHubForge

        return GitHubForge(client, url, repo, token, **options)
    if not isinstance(token, str):  # a token source is a GitHub App's
        raise ConfigError(f"--forge {kind} takes a token (--token-file), not a GitHub App")
    if kind == "gitea":
        from syncer.forges.gitea import GiteaForge

        return GiteaForge(client, url, repo, token, **options)
    from syncer.forges.gitlab import GitLabForge

    return GitLabForge(client, url, repo, token, **options)
