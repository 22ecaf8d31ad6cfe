"""The one place that builds real clients from the command line's settings: the Kubernetes
API client and live source, the forge (token or GitHub App), the git identity and workspace, and
the HTTP clients of webhooks. Everything else receives what these functions build.

Each builder reads the parsed ``argparse.Namespace`` of ``syncer diff|sync|run|init``; an unusable
setting is a ``ConfigError`` naming its flag.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from syncer import durations
from syncer.errors import ConfigError
from syncer.gitrepo import Identity, Workspace, remote_default_branch
from syncer.kube import KubeClient, kube_client
from syncer.sources.manifests import parse_documents
from syncer.sources.source import DEFAULT_TOOLS, Tools
from syncer.gather.live import KubeSource, LiveSource, SnapshotSource, kube_api_client
from syncer.repofile import excerpt
from syncer.writeback.deliver import Mode
from syncer.writeback.landing import PushBudget

if TYPE_CHECKING:
    import httpx

    from syncer.forges import Forge
    from syncer.forges.tokens import TokenSource
    from syncer.forges.githubapp import InstallationToken
    from syncer.writeback.notify import Notifier


def impersonation(args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """kubectl's ``--as`` and ``--as-group`` (user, groups) of the parsed flags."""
    return getattr(args, "as_user", None), list(getattr(args, "as_group", None) or [])


def api_client(args: argparse.Namespace) -> KubeClient:
    """The one-shot commands' API client: ``--kubeconfig``/``--context``, as ``--as``."""
    user, groups = impersonation(args)
    return kube_api_client(args.kubeconfig, args.context, user, groups)


def live_source(args: argparse.Namespace, namespace: str) -> LiveSource:
    """The snapshots of ``--live-file``, else the API server of ``--kubeconfig``/``--context``."""
    if args.live_file:
        if impersonation(args)[0] or impersonation(args)[1]:
            raise ConfigError("--as/--as-group impersonate a user of the API server; --live-file reads a snapshot")
        return SnapshotSource([Path(f) for f in args.live_file], namespace)
    return KubeSource(api_client(args))


def tools(args: argparse.Namespace) -> Tools:
    """The programs sources run, from ``--kustomize`` and ``--helm`` (env twins ``SYNCER_KUSTOMIZE``,
    ``SYNCER_HELM``)."""
    return Tools(kustomize=getattr(args, "kustomize", None) or DEFAULT_TOOLS.kustomize,
                 helm=getattr(args, "helm", None) or DEFAULT_TOOLS.helm)


def push_budget(args: argparse.Namespace) -> PushBudget:
    """Commit mode's budget for pushes that lost the race, from ``--push-attempts`` and
    ``--push-budget`` (env twins ``SYNCER_PUSH_ATTEMPTS``, ``SYNCER_PUSH_BUDGET``)."""
    attempts, budget = getattr(args, "push_attempts", None), getattr(args, "push_budget", None)
    return PushBudget(attempts=int(attempts) if attempts else PushBudget.attempts,
                      seconds=durations.seconds(budget, "--push-budget", "SYNCER_PUSH_BUDGET") if budget else PushBudget.seconds)


def sidecar_kube(args: argparse.Namespace) -> KubeClient:
    """The sidecar's API client: a larger pool, since each watch holds one connection open."""
    from syncer.kube.budget import BUDGET

    user, groups = impersonation(args)
    client = kube_client(args.kubeconfig, args.context, read_yaml=parse_documents, pool_size=64, impersonate=user,
                         impersonate_groups=groups)
    client.budget = BUDGET  # its answers and its watch streams: one memory budget
    return client


def read_secret(path: str | None, flag: str) -> str:
    """The token in file ``path`` (given by ``flag``), stripped; "" when no file is given."""
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: {exc.strerror}") from exc


def _forge_token(args: argparse.Namespace) -> str | TokenSource:
    """The forge credential: the token file (read again when the forge rejects it), else the
    environment's token."""
    if args.token_file:
        if not read_secret(args.token_file, "--token-file"):  # unreadable or empty: one error now
            raise ConfigError(f"--token-file {args.token_file} is empty")
        from syncer.forges.tokens import FileToken

        return FileToken(args.token_file)
    else:
        token = os.environ.get("SYNCER_FORGE_TOKEN", "").strip()
    if not token:
        raise ConfigError("a forge token is needed: --token-file FILE or env SYNCER_FORGE_TOKEN")
    return token


def http_client() -> httpx.Client:
    """A new HTTP client (httpx is imported on first use: ~0.1 s at start-up)."""
    import httpx

    return httpx.Client()


#: A GitHub App's id (digits) or client id (``Iv23li...``): the JWT's ``iss``.
_APP_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def github_app(args: argparse.Namespace) -> InstallationToken | None:
    """The GitHub App's installation token source (``--github-app-id``), or None; one per command."""
    app_id = (getattr(args, "github_app_id", None) or "").strip()
    if not app_id:
        if getattr(args, "github_app_key_file", None) or getattr(args, "github_app_installation_id", None):
            raise ConfigError("--github-app-key-file/--github-app-installation-id need --github-app-id")
        return None
    built: InstallationToken | None = getattr(args, "_github_app", None)
    if built is not None:
        return built
    from syncer.forges import FORGES, api_url

    spec = FORGES.get(args.forge)
    if spec is None or not spec.app_tokens:
        raise ConfigError(f"--github-app-id is for --forge github, not --forge {args.forge}")
    if args.token_file:
        raise ConfigError("give --token-file or --github-app-id, not both")
    if not args.github_app_key_file:
        raise ConfigError("--github-app-id needs --github-app-key-file (the app's private key, PEM)")
    installation = (args.github_app_installation_id or "").strip()
    installation_id = durations.count(installation, "--github-app-installation-id", 1, 2 ** 63 - 1) if installation \
        else None
    if not _APP_ID.fullmatch(app_id):
        raise ConfigError(f"--github-app-id {excerpt(app_id)}: expected the app's id (digits) or client id "
                          "(letters, digits, '.', '_', '-'; at most 64)")
    from syncer.forges import api_url
    from syncer.forges.githubapp import InstallationToken, load_private_key

    key = load_private_key(args.github_app_key_file)
    built = InstallationToken(http_client(), api_url(args.forge, args.forge_url or ""), app_id, key,
                              repo=(args.forge_repo or "").strip().strip("/").removesuffix(".git"),
                              installation_id=installation_id)
    args._github_app = built
    return built


def _app_git_token(args: argparse.Namespace) -> Callable[[], str] | None:
    """git's HTTPS token from the GitHub App, unless --git-token-file names another one."""
    app = github_app(args)
    return app.token if app is not None and not args.git_token_file else None


def forge(args: argparse.Namespace) -> Forge | None:
    """The forge PRs are opened on; None without one (``--forge none``) or outside ``--mode pr``."""
    app = github_app(args)
    if args.forge == "none" or args.mode != Mode.PR.value:
        return None
    if not args.forge_repo:
        raise ConfigError(f"--forge {args.forge} needs --forge-repo OWNER/NAME")
    from syncer.forges import make_forge

    if app is not None:  # only PRs opened by the app's bot are syncer's
        return make_forge(args.forge, args.forge_url or "", args.forge_repo, app, account=app.account())
    return make_forge(args.forge, args.forge_url or "", args.forge_repo, _forge_token(args))


def git_identity(args: argparse.Namespace, git_token: str) -> Identity:
    """Who commits (``--author-*``) and git's HTTPS credential: ``git_token``, else the GitHub App's."""
    return Identity(args.author_name, args.author_email, git_token, args.git_username,
                    token_source=_app_git_token(args))


def workspace(args: argparse.Namespace, remote: str, dest: Path, identity: Identity,
              installation: str | None) -> Workspace:
    """syncer's own clone of ``remote`` in ``dest``, on ``--base-branch`` (default: the remote's)."""
    base = args.base_branch or remote_default_branch(remote, identity)
    return Workspace.open_or_clone(remote, base, dest, identity, installation=installation)


def notifier(urls: Sequence[str], client: httpx.Client, secrets: Sequence[str]) -> Notifier:
    """The webhooks of ``--notify-url``, posting through ``client``, masking ``secrets``."""
    from syncer.writeback.notify import Notifier

    return Notifier(urls, client, secrets=secrets)
