"""Command line: ``syncer diff``, ``syncer sync``, ``syncer run``. The only place that builds
real clients (Kubernetes, git, forge, HTTP); everything else receives them.

Every flag has an environment twin ``SYNCER_<FLAG>`` (``--forge-url`` -> ``SYNCER_FORGE_URL``);
repeatable flags take a comma-separated list there. Exit codes: ``diff`` 0 in sync, 1 drift,
2 error; ``sync``/``run`` 0 done, 2 error.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from syncer import __version__, logs
from syncer.cache import Caches
from syncer.clihelp import DESCRIPTIONS, Help
from syncer.config import parse_duration
from syncer.errors import ConfigError, SyncerError
from syncer.forges import KINDS as FORGE_KINDS
from syncer.grants import installation_values
from syncer.gitrepo import Identity, Workspace, origin_url, remote_default_branch, repo_root
from syncer.kube import kube_client
from syncer.live import KubeSource, LiveSource, SnapshotSource, kube_api_client, snapshot_note
from syncer.manifests import default_installation
from syncer.redact import redact_text
from syncer.report import render_json, render_text
from syncer.sync import DEFAULT_MODE, Mode, Outcome, dry_run, write_back

EXIT_OK, EXIT_DRIFT, EXIT_ERROR = 0, 1, 2


class _EnvDefaults(argparse.ArgumentParser):
    """An ArgumentParser whose options default to their ``SYNCER_*`` environment twin."""

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        action = super().add_argument(*args, **kwargs)
        longs = [a for a in args if a.startswith("--") and a not in ("--help", "--version")]
        if not longs:
            return action
        # Every long alias has a twin (--resync and --resync-interval); the first one set wins.
        twins = ["SYNCER_" + long[2:].upper().replace("-", "_") for long in longs]
        env = next((e for e in twins if e in os.environ), twins[0])
        if env in os.environ and env != "SYNCER_FORGE_TOKEN":
            raw = os.environ[env]
            if kwargs.get("action") == "append":
                action.default = [v for v in raw.split(",") if v]
            elif kwargs.get("action") == "store_true":
                action.default = raw.lower() in ("1", "true", "yes", "on")
            else:
                action.default = raw
        action.help = (action.help or "") + f" [env {env}]"
        return action


def _installation_flags(p: argparse.ArgumentParser) -> None:
    """Which installation, in which repository, against which cluster (or snapshot)."""
    p.add_argument("installation", nargs="?", default=os.environ.get("SYNCER_INSTALLATION"),
                   help="directory under hosts/ (default: the only one) [env SYNCER_INSTALLATION]")
    p.add_argument("--repo", help="git repository holding hosts/ (default: the one containing the current directory)")
    p.add_argument("--live-file", action="append", default=[], metavar="FILE",
                   help="read live objects from a snapshot (kubectl get -o yaml) instead of the API; repeatable")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--kustomize", metavar="BIN",
                   help="renders a kustomize installation: kubectl (kubectl kustomize, the default) or kustomize "
                        "(kustomize build), a name on PATH or a path")


def _source_flags(p: argparse.ArgumentParser) -> None:
    _installation_flags(p)
    p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="output format")


def _sync_flags(p: argparse.ArgumentParser) -> None:
    _source_flags(p)
    p.add_argument("--mode", choices=[m.value for m in Mode], default=DEFAULT_MODE.value, help="how to write back")
    p.add_argument("--forge", choices=[*FORGE_KINDS, "none"], default="none",
                   help="forge API for pull requests (none: push the branch and print the PR text)")
    p.add_argument("--forge-url", help="forge base URL (GitHub Enterprise: https://HOST/api/v3)")
    p.add_argument("--forge-repo", metavar="OWNER/NAME", help="repository on the forge")
    p.add_argument("--token-file", help="file holding the forge token (or env SYNCER_FORGE_TOKEN)")
    p.add_argument("--remote", help="git URL to clone from and push to (default: the repo's origin)")
    p.add_argument("--base-branch", help="branch that holds the manifests (default: the remote's default branch, "
                                          "the one its HEAD names)")
    p.add_argument("--clone-dir", help="where syncer keeps its own clone (default: a temporary directory)")
    p.add_argument("--notify-url", action="append", default=[], metavar="URL",
                   help="webhook for PR and outage events (generic JSON; Slack URLs get Slack text); repeatable")
    p.add_argument("--git-token-file", help="file holding an HTTPS token for git clone/fetch/push")
    p.add_argument("--git-username", default=Identity.token_user,
                   help="user name sent with the git token (GitLab: oauth2)")
    p.add_argument("--author-name", default=Identity.name, help="commit author name")
    p.add_argument("--author-email", default=Identity.email,
                   help="commit author email; commits by anyone else on syncer's branch mark it as taken over")
    _github_app_flags(p)


def _github_app_flags(p: argparse.ArgumentParser) -> None:
    """GitHub App credentials, instead of a personal token (with --forge github)."""
    p.add_argument("--github-app-id", metavar="ID",
                   help="authenticate as this GitHub App's installation instead of --token-file; its installation "
                        "token is also git's HTTPS credential unless --git-token-file is given")
    p.add_argument("--github-app-key-file", metavar="FILE", help="the GitHub App's private key (PEM)")
    p.add_argument("--github-app-installation-id", metavar="ID",
                   help="the app's installation (default: the one installed on --forge-repo)")


def build_parser(prog: str = "syncer") -> argparse.ArgumentParser:
    parser = _EnvDefaults(prog=prog, description="Copy live Kubernetes values back into git.")
    parser.add_argument("--version", action="version", version=f"syncer {__version__}",
                        help="print 'syncer <version>' and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_EnvDefaults)
    diff = sub.add_parser("diff", help="show what differs between git and the cluster", formatter_class=Help,
                          description=DESCRIPTIONS["diff"])
    _source_flags(diff)
    sync = sub.add_parser("sync", help="copy live values back: commit, pull request, or dry run", formatter_class=Help,
                          description=DESCRIPTIONS["sync"])
    _sync_flags(sync)
    for p in (diff, sync):
        p.add_argument("--watch", action="store_true",
                       help="run again whenever a file under hosts/<installation>/ changes (Ctrl-C to stop)")
        if p is sync:
            p.add_argument("--exit-code", action="store_true",
                           help="exit 1 when drift was found (errors still 2), as kubectl diff does: "
                                "`sync --mode dry-run --exit-code` gates CI on drift")
        p.add_argument("-n", "--namespace",
                       help="default namespace for manifests that name none (as kubectl's -n); "
                            "overrides the config's namespace")
    _run_flags(sub.add_parser("run", help="the sidecar: watch the cluster, sync on change, serve health and metrics",
                              formatter_class=Help, description=DESCRIPTIONS["run"]))
    init = sub.add_parser("init", help="write hosts/<installation>/syncer.conf from what the manifests and the cluster show",
                          formatter_class=Help, description=DESCRIPTIONS["init"])
    _installation_flags(init)
    init.add_argument("-n", "--namespace", help="the installation's namespace (default: kubectl's, the kubeconfig "
                                                  "context's namespace, or default)")
    init.add_argument("--git-only", action="store_true", help="infer from the manifests alone; do not read the cluster")
    init.add_argument("--force", action="store_true", help="replace an existing config")
    init.add_argument("--chart-values", action="store_true",
                      help="only print the Helm chart's `tracked:` values granting exactly what the existing "
                           "config reads (YAML on stdout: > tracked-values.yaml; helm install -f it)")
    return parser


def _run_flags(p: argparse.ArgumentParser) -> None:
    _sync_flags(p)
    # Unset here, these default to the sidecar settings' own values (_sidecar_defaults): importing
    # the settings classes would load the sidecar (and prometheus_client) on every command.
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="where /healthz, /readyz and /metrics are served")
    p.add_argument("--resync", "--resync-interval", dest="resync", metavar="DURATION",
                   help="full pass (git fetch + compare) even without events, e.g. 10m")
    p.add_argument("--debounce", metavar="DURATION",
                   help="wait until the watched objects were quiet this long before a pass")
    p.add_argument("--leader-elect", action="store_true",
                   help="take part in leader election (Lease); only the leader writes")
    p.add_argument("--lease-name", help="name of the Lease (default: syncer-<installation>)")
    p.add_argument("--lease-duration", metavar="DURATION",
                   help="how long the Lease holds without renewal (renewed every third of it)")
    p.add_argument("--state-configmap", metavar="NAME",
                   help="ConfigMap (installation's namespace) holding the last agreed state; empty: none")
    p.add_argument("--config", metavar="FILE",
                   help="syncer.yaml to use instead of the repository's (e.g. a mounted ConfigMap); reloaded on change")
    p.add_argument("--log-format", choices=list(logs.FORMATS), default=logs.FORMATS[0], help="log line format")
    p.add_argument("--shutdown-grace", metavar="DURATION",
                   help="on SIGTERM, how long a running pass may still finish before it is abandoned")


def _sidecar_defaults(args: argparse.Namespace) -> None:
    """Give the ``run`` flags left unset (on the command line and in the environment) the
    defaults of the settings they feed, spelled as flags: one source of truth."""
    from syncer.sidecar.app import SidecarSettings
    from syncer.sidecar.loop import LoopSettings

    seconds = {"debounce": LoopSettings.debounce, "resync": LoopSettings.resync,
               "lease_duration": SidecarSettings.lease_duration, "shutdown_grace": SidecarSettings.grace}
    for dest, value in seconds.items():
        if getattr(args, dest) is None:
            setattr(args, dest, f"{value:g}")
    if args.listen is None and SidecarSettings.listen is not None:
        args.listen = "{}:{}".format(*SidecarSettings.listen)
    if args.state_configmap is None:
        args.state_configmap = SidecarSettings.state_configmap or ""


def _live_source(args: argparse.Namespace, namespace: str) -> LiveSource:
    if args.live_file:
        return SnapshotSource([Path(f) for f in args.live_file], namespace)
    return KubeSource(kube_api_client(args.kubeconfig, args.context))


def _reproduce(args: argparse.Namespace, installation: str) -> str:
    parts = ["syncer", "diff", installation]
    for f in args.live_file:
        parts += ["--live-file", f]
    if args.context:
        parts += ["--context", args.context]
    if getattr(args, "namespace", None):
        parts += ["-n", args.namespace]
    return shlex.join(parts)


def _read_secret(path: str | None, flag: str) -> str:
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: {exc.strerror}") from exc


def _token(args: argparse.Namespace) -> str:
    if args.token_file:
        token = _read_secret(args.token_file, "--token-file")
    else:
        token = os.environ.get("SYNCER_FORGE_TOKEN", "").strip()
    if not token:
        raise ConfigError("a forge token is needed: --token-file FILE or env SYNCER_FORGE_TOKEN")
    return token


def _github_app(args: argparse.Namespace) -> Any:
    """The GitHub App's installation token source (``--github-app-id``), or None; one per command."""
    app_id = (getattr(args, "github_app_id", None) or "").strip()
    if not app_id:
        if getattr(args, "github_app_key_file", None) or getattr(args, "github_app_installation_id", None):
            raise ConfigError("--github-app-key-file/--github-app-installation-id need --github-app-id")
        return None
    if getattr(args, "_github_app", None) is not None:
        return args._github_app
    if args.forge != "github":
        raise ConfigError(f"--github-app-id is for --forge github, not --forge {args.forge}")
    if args.token_file:
        raise ConfigError("give --token-file or --github-app-id, not both")
    if not args.github_app_key_file:
        raise ConfigError("--github-app-id needs --github-app-key-file (the app's private key, PEM)")
    installation = (args.github_app_installation_id or "").strip()
    if installation and not installation.isdigit():
        raise ConfigError(f"--github-app-installation-id {installation!r} is not a number")
    import httpx

    from syncer.forges import api_url
    from syncer.forges.githubapp import InstallationToken, load_private_key

    key = load_private_key(args.github_app_key_file)
    args._github_app = InstallationToken(httpx.Client(), api_url("github", args.forge_url or ""), app_id, key,
                                         repo=(args.forge_repo or "").strip().strip("/").removesuffix(".git"),
                                         installation_id=int(installation) if installation else None)
    return args._github_app


def _app_git_token(args: argparse.Namespace) -> Callable[[], str] | None:
    """git's HTTPS token from the GitHub App, unless --git-token-file names another one."""
    app = _github_app(args)
    return app.token if app is not None and not args.git_token_file else None


def _forge(args: argparse.Namespace) -> Any:
    app = _github_app(args)
    if args.forge == "none" or args.mode != Mode.PR.value:
        return None
    if not args.forge_repo:
        raise ConfigError(f"--forge {args.forge} needs --forge-repo OWNER/NAME")
    from syncer.forges import make_forge

    if app is not None:  # only PRs opened by the app's bot are syncer's
        return make_forge(args.forge, args.forge_url or "", args.forge_repo, app, account=app.account())
    return make_forge(args.forge, args.forge_url or "", args.forge_repo, _token(args))


def _print_outcome(out: Outcome, args: argparse.Namespace, stdout: Any) -> None:
    diffs = "".join(c.unified_diff() for c in out.changes)
    if args.output == "json":
        doc = render_json(out.result)
        stdout.write(doc)
        return
    stdout.write(render_text(out.result, diffs, color=stdout.isatty()))
    if out.title and (args.mode == Mode.DRY_RUN.value or (args.mode == Mode.PR.value and args.forge == "none")):
        stdout.write(f"\n--- pull request ---\ntitle: {out.title}\nlabels: {', '.join(out.labels)}\n\n{out.body}")
    for msg in out.messages:
        stdout.write(f"syncer: {msg}\n")
    if out.pr is not None:
        stdout.write(f"syncer: pull request {out.pr.outcome.value}: {out.pr.message}\n")


def _namespace(repo: Path, installation: str, override: str | None = None) -> str:
    """The installation's default namespace (from its config alone: manifests are parsed later)."""
    from syncer.config import load_config
    from syncer.manifests import host_dir

    return load_config(host_dir(repo, installation), installation, namespace=override).namespace


def _config(args: argparse.Namespace, repo: Path, installation: str) -> Any:
    """The installation's config with ``-n`` applied; None (load it as usual) without ``-n``."""
    if not getattr(args, "namespace", None):
        return None
    from syncer.config import load_config
    from syncer.manifests import host_dir

    return load_config(host_dir(repo, installation), installation, namespace=args.namespace)


def cmd_diff(args: argparse.Namespace, now: datetime, stdout: Any) -> int:
    repo = Path(args.repo).resolve() if args.repo else repo_root(Path.cwd())
    installation = args.installation or default_installation(repo)
    ns = getattr(args, "namespace", None)
    source = _live_source(args, _namespace(repo, installation, ns))
    out = dry_run(repo, installation, source, now, _reproduce(args, installation), config=_config(args, repo, installation),
                  caches=Caches())
    out.result = snapshot_note(source, out.result)
    if args.output == "json":
        stdout.write(render_json(out.result))
    else:
        diffs = "".join(c.unified_diff() for c in out.changes)
        stdout.write(render_text(out.result, diffs, color=stdout.isatty()))
    if out.result.errors:
        return EXIT_ERROR
    return EXIT_OK if out.result.in_sync else EXIT_DRIFT


def cmd_sync(args: argparse.Namespace, now: datetime, stdout: Any) -> int:
    mode = Mode(args.mode)
    try:
        repo: Path | None = Path(args.repo).resolve() if args.repo else repo_root(Path.cwd())
    except SyncerError:
        if mode is Mode.DRY_RUN or not args.remote:
            raise
        # No checkout here, only --remote (a CronJob pod): installation and config come from
        # syncer's own clone, which sync works in anyway.
        repo = None
    if repo is not None:
        installation = args.installation or default_installation(repo)
        source = _live_source(args, _namespace(repo, installation, args.namespace))
    if mode is Mode.DRY_RUN:  # in the checkout as it is: no clone
        assert repo is not None
        out = write_back(mode, repo, installation, source, now, _reproduce(args, installation),
                         config=_config(args, repo, installation), caches=Caches())
        out.result = snapshot_note(source, out.result)
        _print_outcome(out, args, stdout)
        return _sync_exit(out, args)
    forge = _forge(args)
    remote = args.remote or (origin_url(repo) if repo is not None else None) or str(repo)
    identity = Identity(args.author_name, args.author_email, _read_secret(args.git_token_file, "--git-token-file"),
                        args.git_username, token_source=_app_git_token(args))
    with tempfile.TemporaryDirectory(prefix="syncer-") as tmp:
        dest = Path(args.clone_dir) if args.clone_dir else Path(tmp) / "clone"
        known = installation if repo is not None else args.installation  # a new clone is sparse: only its hosts/
        base = args.base_branch or remote_default_branch(remote, identity)
        ws = Workspace.open_or_clone(remote, base, dest, identity, installation=known)
        if repo is None:
            installation = args.installation or default_installation(ws.path)
            source = _live_source(args, _namespace(ws.path, installation, args.namespace))
        reproduce = _reproduce(args, installation)
        config = _config(args, ws.path, installation)
        out = write_back(mode, ws, installation, source, now, reproduce, forge, config=config, caches=Caches())
    _print_outcome(out, args, stdout)
    if args.notify_url:
        for failure in _notify_outcome(args, installation, out):
            stdout.write(f"syncer: notification failed: {failure}\n")
    return _sync_exit(out, args)


def _sync_exit(out: Outcome, args: argparse.Namespace) -> int:
    """2 on an error (an unreadable written-back object is one; an unreadable reported one is a
    warning), else 0; with ``--exit-code`` 1 when drift was found, as ``diff`` and kubectl diff."""
    if out.result.errors:
        return EXIT_ERROR
    return EXIT_DRIFT if getattr(args, "exit_code", False) and not out.result.in_sync else EXIT_OK


def _notify_outcome(args: argparse.Namespace, installation: str, out: Outcome) -> list[str]:
    """One-shot notifications (``alerts.one_shot``): the PR event, and every undeclared or
    cleared Endpoints seen now; the sidecar builds its events with the same functions."""
    import httpx

    from syncer.alerts import one_shot, send
    from syncer.notify import Notifier

    secrets = [os.environ.get("SYNCER_FORGE_TOKEN", "")]
    with httpx.Client() as client:
        return send(Notifier(args.notify_url, client, secrets=secrets), installation, one_shot(out))


def _seconds(text: str, flag: str) -> float:
    """``5s``, ``10m``, ``1h30m``, or plain (fractional) seconds such as ``0.5``."""
    try:
        value = float(text)
    except ValueError:
        value = parse_duration(text, flag)
    if value < 0:
        raise ConfigError(f"{flag}: {text!r} is negative")
    return value


def cmd_run(args: argparse.Namespace, now: datetime, stdout: Any) -> int:
    """The sidecar: runs until SIGTERM/SIGINT; 0 after a clean shutdown, 2 when it cannot start."""
    import signal
    import threading

    import httpx

    from syncer.sidecar.loop import LoopSettings
    from syncer.notify import Notifier
    from syncer.sidecar.server import parse_listen
    from syncer.sidecar.app import Sidecar, SidecarSettings

    if args.live_file:
        raise ConfigError("run watches the API server; --live-file is for diff and sync")
    _sidecar_defaults(args)
    git_token = _read_secret(args.git_token_file, "--git-token-file")
    forge = _forge(args)
    secrets = [os.environ.get("SYNCER_FORGE_TOKEN", ""), git_token,
               _read_secret(args.token_file, "--token-file") if forge is not None else ""]
    try:
        listen = parse_listen(args.listen)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    remote = args.remote
    if not remote:
        try:
            remote = origin_url(Path(args.repo).resolve() if args.repo else repo_root(Path.cwd()))
        except SyncerError:
            remote = None
    if not remote:
        raise ConfigError("--remote URL is required: the git repository syncer clones from and pushes to")
    identity = Identity(args.author_name, args.author_email, git_token, args.git_username,
                        token_source=_app_git_token(args))
    if _github_app(args) is not None:  # each new installation token joins what the log masks
        _github_app(args).on_token = secrets.append
    from syncer.sidecar.metrics import Metrics
    from syncer.sidecar.server import StatusServer
    from syncer.sidecar.starting import StartingHealth, until_up

    logs.setup(args.log_format, installation=args.installation or "", secrets=secrets)
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():  # SIGTERM during start: stop right after
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    starting = StartingHealth()
    early: StatusServer | None = None  # probes answered from the first second: 503 while starting
    try:
        if listen is not None:
            try:
                early = StatusServer(listen[0], listen[1], starting, Metrics(args.installation or "")).start()
            except OSError as exc:  # e.g. the --listen port is taken
                raise ConfigError(f"--listen {args.listen}: {exc.strerror or exc}") from None
        with tempfile.TemporaryDirectory(prefix="syncer-") as tmp:
            dest = Path(args.clone_dir) if args.clone_dir else Path(tmp) / "clone"

            def clone() -> Workspace:
                base = args.base_branch or remote_default_branch(remote, identity)
                return Workspace.open_or_clone(remote, base, dest, identity, installation=args.installation)

            ws = until_up("cloning the git remote", clone, starting, stop)
            if ws is None:  # SIGTERM while the remote was still unreachable
                return EXIT_OK
            installation = args.installation or default_installation(ws.path)
            logs.setup(args.log_format, installation=installation, secrets=secrets)
            notifier = Notifier(args.notify_url, httpx.Client(), secrets=secrets) if args.notify_url else None
            lease_duration = _seconds(args.lease_duration, "--lease-duration")
            settings = SidecarSettings(
                loop=LoopSettings(installation, Mode(args.mode), _reproduce(args, installation),
                                  debounce=_seconds(args.debounce, "--debounce"),
                                  resync=_seconds(args.resync, "--resync")),
                listen=listen, state_configmap=args.state_configmap or None, leader_elect=args.leader_elect,
                lease_name=args.lease_name or "", lease_duration=lease_duration, lease_renew=lease_duration / 3,
                config_file=Path(args.config).absolute() if args.config else None,  # not resolve(): ..data swaps
                grace=_seconds(args.shutdown_grace, "--shutdown-grace"))
            api = kube_client(args.kubeconfig, args.context, pool_size=64)  # each watch holds one connection open
            sidecar = Sidecar(api, ws, settings, forge=forge, notifier=notifier)
            sidecar.server, early = early, None  # the sidecar answers the probes from now on
            try:
                try:
                    sidecar.start()
                except OSError as exc:
                    sidecar.stop()
                    raise ConfigError(f"--listen {args.listen}: {exc.strerror or exc}") from None
                while not stop.wait(0.5):
                    pass
            finally:
                sidecar.stop()
    finally:
        if early is not None:
            early.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK


def _watching(command: Callable[[argparse.Namespace, datetime, Any], int], args: argparse.Namespace,
              now: datetime | None, stdout: Any, stderr: Any, secrets: list[str]) -> int:
    """``diff --watch`` / ``sync --watch``: run, then run again after each change of the files."""
    import threading

    from syncer.filewatch import rerun_on_change
    from syncer.manifests import host_dir

    repo = Path(args.repo).resolve() if args.repo else repo_root(Path.cwd())
    directory = host_dir(repo, args.installation or default_installation(repo))

    def once() -> int:
        try:
            code = command(args, now or datetime.now(timezone.utc), stdout)
        except SyncerError as exc:
            stderr.write(f"syncer: error: {redact_text(exc.message, secrets)}\n")
            code = EXIT_ERROR
        stdout.write(f"syncer: watching {directory} for changes (Ctrl-C to stop)\n")
        stdout.flush()
        return code

    return rerun_on_change(directory, once, threading.Event())


def _live_slices(source: LiveSource, namespace: str, service: str) -> tuple[list[dict[str, Any]], str]:
    """The live EndpointSlices of Service ``service`` (label ``kubernetes.io/service-name``), and
    why none could be read ("" when the read worked)."""
    from syncer.errors import ClusterError
    from syncer.onboard import SERVICE_NAME_LABEL

    if isinstance(source, SnapshotSource):
        return [o for r, o in source.objects.items() if r.kind == "EndpointSlice" and r.namespace == namespace
                and ((o.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL) == service], ""
    if not isinstance(source, KubeSource):
        return [], ""
    for version in ("v1", "v1beta1"):  # v1 from Kubernetes 1.21; older servers serve only v1beta1
        try:
            found = source.kube.call("GET", f"/apis/discovery.k8s.io/{version}/namespaces/{namespace}/endpointslices",
                                     query=[("labelSelector", f"{SERVICE_NAME_LABEL}={service}")],
                                     what=f"list EndpointSlices of {namespace}/{service}")
        except ClusterError as exc:
            return [], str(exc)
        if found is not None:
            return [dict(o, kind="EndpointSlice", apiVersion=f"discovery.k8s.io/{version}")
                    for o in found.get("items") or [] if isinstance(o, dict)], ""
    return [], "the API server serves no discovery.k8s.io EndpointSlices"


def cmd_init(args: argparse.Namespace, now: datetime, stdout: Any) -> int:
    """``syncer init``: infer the config, say why, write it (never over an existing one without --force)."""
    from syncer.config import CONFIG_NAME, LEGACY_CONFIG_NAME, parse_config
    from syncer.gitsource import is_rendered, load_source
    from syncer.manifests import host_dir
    from syncer.model import ObjectRef
    from syncer.kube import context_namespace
    from syncer.onboard import infer, infer_namespace, render

    repo = Path(args.repo).resolve() if args.repo else repo_root(Path.cwd())
    installation = args.installation or default_installation(repo)
    if args.chart_values:
        stdout.write(installation_values(repo, installation, args.namespace))
        return EXIT_OK
    host = host_dir(repo, installation)
    target, legacy = host / CONFIG_NAME, host / LEGACY_CONFIG_NAME
    for existing in (target, legacy):
        if existing.exists() and not args.force:
            raise ConfigError(f"hosts/{installation}/{existing.name} exists; not overwritten (--force replaces it)")

    # Namespaces first (manifests without one count for none), then the objects in that namespace.
    # A kustomization: what kustomize renders (namespaces, kinds), not its files.
    ns_answer = infer_namespace(load_source(repo, installation, "").objects, args.namespace,
                                SnapshotSource([Path(f) for f in args.live_file], "").objects if args.live_file else (),
                                None if args.namespace else context_namespace(args.kubeconfig, args.context))
    if is_rendered(repo, installation) and not args.namespace:
        ns_answer = (ns_answer[0], ns_answer[1].replace(" manifests", " objects kustomize renders"))
    namespace = ns_answer[0]
    manifests = load_source(repo, installation, namespace)
    git = {ref: obj.data for ref, obj in manifests.objects.items()}
    for err in manifests.errors:
        stdout.write(f"syncer init: skipped {err.file}: {err.message}\n")

    live: dict[ObjectRef, dict[str, Any]] = {}
    if not args.git_only:
        try:
            source = _live_source(args, namespace)
        except ConfigError as exc:
            raise ConfigError(f"{exc.message} (no cluster at hand? --live-file FILE or --git-only)") from exc
        for ref in git:
            obj = source.get(ref)
            if obj is not None:
                live[ref] = obj
        for ref in [r for r in git if r.kind in ("Endpoints", "Service")]:
            slices, why = _live_slices(source, ref.namespace, ref.name)
            if why:
                stdout.write(f"syncer init: EndpointSlices of {ref.namespace}/{ref.name} not read: {why}\n")
            for obj in slices:
                meta = obj.get("metadata") or {}
                live[ObjectRef(str(obj.get("apiVersion")), "EndpointSlice", ref.namespace, str(meta.get("name")))] = obj

    inference = infer(installation, git, live, ns_answer)
    command = shlex.join(["syncer", "init", installation] + (["--git-only"] if args.git_only else []))
    text = render(inference, command)
    parse_config(text, f"hosts/{installation}/{CONFIG_NAME}", installation)  # what we write must load
    seen = f"{len(git)} manifests" + ("" if args.git_only else f", {len(live)} live objects ({source.describe()})")
    stdout.write(f"syncer init {installation}: from {seen}\n")
    for reason in inference.reasons:
        stdout.write(f"  {reason}\n")
    target.write_text(text, encoding="utf-8")
    stdout.write(f"wrote hosts/{installation}/{CONFIG_NAME}\n")
    if legacy.exists():  # only with --force: the new file replaces the deprecated one
        legacy.unlink()
        stdout.write(f"removed hosts/{installation}/{LEGACY_CONFIG_NAME} (replaced by {CONFIG_NAME})\n")
    stdout.write(f"next: syncer diff {installation}  (then commit hosts/{installation}/{CONFIG_NAME})\n")
    stdout.write(f"chart values granting exactly what this config reads (syncer init {installation} "
                 "--chart-values prints them again):\n")
    stdout.write("".join(f"  {line}\n" for line in installation_values(repo, installation, args.namespace).splitlines()))
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace, datetime, Any], int]] = {
    "diff": cmd_diff, "sync": cmd_sync, "run": cmd_run, "init": cmd_init}


def main(argv: Sequence[str] | None = None, *, now: datetime | None = None, stdout: Any = None,
         stderr: Any = None, prog: str = "syncer") -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args = build_parser(prog).parse_args(argv)
    secrets = [os.environ.get("SYNCER_FORGE_TOKEN", "")]
    kustomize = os.environ.get("SYNCER_KUSTOMIZE")
    if getattr(args, "kustomize", None):
        os.environ["SYNCER_KUSTOMIZE"] = args.kustomize  # what syncer.kustomize.render reads, here and in the sidecar
    try:
        if getattr(args, "watch", False):
            return _watching(COMMANDS[args.command], args, now, stdout, stderr, secrets)
        return COMMANDS[args.command](args, now or datetime.now(timezone.utc), stdout)
    except SyncerError as exc:
        message = redact_text(exc.message, secrets)
        stderr.write(f"syncer: error: {message}\n")
        if getattr(args, "output", None) == "json":  # a script reading stdout learns it too, as JSON
            stdout.write(_fatal_json(args, message))
        return EXIT_ERROR
    except (MemoryError, RecursionError) as exc:  # a hostile input past every limit: still exit 2, one line
        stderr.write(f"syncer: error: input too large or too deeply nested to process ({type(exc).__name__})\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        stderr.write("syncer: interrupted\n")
        return EXIT_ERROR
    finally:
        if getattr(args, "kustomize", None):  # main() called in-process (tests): the flag ends with it
            if kustomize is None:
                os.environ.pop("SYNCER_KUSTOMIZE", None)
            else:
                os.environ["SYNCER_KUSTOMIZE"] = kustomize


def _fatal_json(args: argparse.Namespace, message: str) -> str:
    """``-o json`` when nothing could be compared: the document's shape, with the error in it."""
    import json

    return json.dumps({"installation": getattr(args, "installation", None), "in_sync": None, "drifts": [],
                       "errors": [{"file": "", "message": message}], "warnings": [], "fatal": True},
                      indent=2) + "\n"


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """The kubectl plugin ``kubectl-syncer``: kubectl finds it on PATH and runs it with the words
    after ``kubectl syncer``, so ``kubectl syncer diff -n ai --context prod`` is ``syncer diff
    -n ai --context prod``. kubectl hands its own flags over only when they follow the plugin
    name; ``--kubeconfig``, ``--context`` and ``-n`` mean what they mean to kubectl, and
    ``$KUBECONFIG`` is honoured as kubectl honours it."""
    return main(argv, prog="kubectl syncer")


if __name__ == "__main__":
    raise SystemExit(main())
