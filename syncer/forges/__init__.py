"""Forges: where syncer opens its one rolling pull request per installation.

``FORGES`` is the registry: one entry per forge (its name, the module and class that speak its
API, its URL rules, whether a GitHub App's token works there). The CLI's ``--forge`` choices,
``make_forge`` and ``clients`` read it; a new forge is its module and its entry here.

``make_forge`` turns the command-line settings (``--forge``, ``--forge-url``,
``--forge-repo``, the token) into a ``Forge``. The URL may be given with or without the
API suffix: ``https://git.example`` and ``https://git.example/api/v1`` mean the same
Gitea; GitHub Enterprise Server lives under ``/api/v3``.
"""

from __future__ import annotations

import importlib
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

    from syncer.forges.tokens import TokenSource

__all__ = ["Forge", "PullRequest", "api_url", "make_forge", "same_labels", "KINDS", "FORGES", "ForgeSpec"]


@dataclass(frozen=True)
class ForgeSpec:
    """Everything syncer knows about one kind of forge, outside its module."""

    #: ``module:Class`` of its ``Forge``; imported on first use (the modules import httpx, about a
    #: sixth of ``import syncer.cli``, which ``syncer diff`` never needs).
    client: str
    api_suffix: str  # appended to a user-given base URL that lacks it
    default_url: str = ""  # the public instance, when there is one
    nested_repo: bool = False  # GROUP/SUBGROUP/PROJECT (and numeric ids) allowed
    #: Web hosts of the public instance, whose API is ``default_url`` whatever the path given.
    public_hosts: tuple[str, ...] = ()
    #: A host named ``api.*`` serves the API at its root, without ``api_suffix``.
    api_host_root: bool = False
    #: A GitHub App's installation token (``--github-app-id``) authenticates here.
    app_tokens: bool = False


FORGES: dict[str, ForgeSpec] = {
    # api.github.com and GHE.com data-residency hosts (api.NAME.ghe.com) have no suffix.
    "github": ForgeSpec("syncer.forges.github:GitHubForge", "/api/v3", default_url="https://api.github.com",
                        public_hosts=("github.com", "www.github.com"), api_host_root=True, app_tokens=True),
    "gitea": ForgeSpec("syncer.forges.gitea:GiteaForge", "/api/v1"),
    "gitlab": ForgeSpec("syncer.forges.gitlab:GitLabForge", "/api/v4", default_url="https://gitlab.com",
                        nested_repo=True),
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
    spec = FORGES[kind]
    if host in spec.public_hosts:
        return spec.default_url
    if not (spec.api_host_root and host.startswith("api.")) and not path.endswith(spec.api_suffix):
        path += spec.api_suffix
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
    spec = FORGES[kind]
    from syncer.forges.tokens import FileToken

    if not isinstance(token, (str, FileToken)) and not spec.app_tokens:  # any other source is a GitHub App's
        raise ConfigError(f"--forge {kind} takes a token (--token-file), not a GitHub App")
    module, _, name = spec.client.partition(":")
    forge: Forge = getattr(importlib.import_module(module), name)(
        client, url, repo, token, timeout=timeout, budget=budget, sleep=sleep, clock=clock, account=account)
    return forge
