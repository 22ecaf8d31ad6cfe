"""The one place that builds real clients from the command line's settings: the Kubernetes
API client and live source, the forge (token or GitHub App), the git identity and workspace, and
the HTTP clients of webhooks. Everything else receives what these functions build.

Each builder reads the parsed ``argparse.Namespace`` of ``syncer diff|sync|run|init``; an unusable
setting is a ``ConfigError`` naming its flag.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from syncer.errors import ConfigError
from syncer.gitrepo import Identity, Workspace, remote_default_branch
from syncer.kube import KubeClient, kube_client
from syncer.sources.manifests import parse_documents
from syncer.gather.live import KubeSource, LiveSource, SnapshotSource, kube_api_client
from syncer.writeback.deliver import Mode

if TYPE_CHECKING:
    import httpx

    from syncer.forges import Forge
    from syncer.forges.githubapp import InstallationToken
    from syncer.writeback.notify import Notifier


def live_source(args: argparse.Namespace, namespace: str) -> LiveSource:
    """The snapshots of ``--live-file``, else the API server of ``--kubeconfig``/``--context``."""
    if args.live_file:
        return SnapshotSource([Path(f) for f in args.live_file], namespace)
    return KubeSource(kube_api_client(args.kubeconfig, args.context))


def sidecar_kube(args: argparse.Namespace) -> KubeClient:
    """The sidecar's API client: a larger pool, since each watch holds one connection open."""
    return kube_client(args.kubeconfig, args.context, read_yaml=parse_documents, pool_size=64)


def read_secret(path: str | None, flag: str) -> str:
    """The token in file ``path`` (given by ``flag``), stripped; "" when no file is given."""
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: {exc.strerror}") from exc


def _forge_token(args: argparse.Namespace) -> str:
    if args.token_file:
        token = read_secret(args.token_file, "--token-file")
    else:
        token = os.environ.get("SYNCER_FORGE_TOKEN", "").strip()
    if not token:
        raise ConfigError("a forge token is needed: --token-file FILE or env SYNCER_FORGE_TOKEN")
    return token


def http_client() -> httpx.Client:
    """A new HTTP client (httpx is imported on first use: ~0.1 s at start-up)."""
    import httpx

    return httpx.Client()


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
    if args.forge != "github":
        raise ConfigError(f"--github-app-id is for --forge github, not --forge {args.forge}")
    if args.token_file:
        raise ConfigError("give --token-file or --github-app-id, not both")
    if not args.github_app_key_file:
        raise ConfigError("--github-app-id needs --github-app-key-file (the app's private key, PEM)")
    installation = (args.github_app_installation_id or "").strip()
    if installation and not installation.isdigit():
        raise ConfigError(f"--github-app-installation-id {installation!r} is not a number")
    from syncer.forges import api_url
    from syncer.forges.githubapp import InstallationToken, load_private_key

    key = load_private_key(args.github_app_key_file)
    built = InstallationToken(http_client(), api_url("github", args.forge_url or ""), app_id, key,
                              repo=(args.forge_repo or "").strip().strip("/").removesuffix(".git"),
                              installation_id=int(installation) if installation else None)
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
