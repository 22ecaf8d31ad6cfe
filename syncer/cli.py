"""Command line: ``syncer diff``, ``syncer sync``, ``syncer run``, ``syncer init`` (and the kubectl
plugin ``kubectl-syncer``): the parser and ``main``. The commands live in ``syncer.commands``, the
clients they use are built in ``syncer.clients``.

Every flag has an environment twin ``SYNCER_<FLAG>`` (``--forge-url`` -> ``SYNCER_FORGE_URL``);
repeatable flags take a comma-separated list there. Exit codes: ``diff`` 0 in sync, 1 drift,
2 error; ``sync``/``run`` 0 done, 2 error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from syncer import __version__, logs
from syncer.clihelp import DESCRIPTIONS, Help
from syncer.commands import EXIT_DRIFT, EXIT_ERROR, EXIT_OK, Command
from syncer.commands.init import cmd_init
from syncer.commands.oneshot import cmd_diff, cmd_sync
from syncer.commands.run import cmd_run
from syncer.errors import SyncerError
from syncer.forges import KINDS as FORGE_KINDS
from syncer.gitrepo import Identity
from syncer.secrets.redact import redact_text
from syncer.writeback.deliver import DEFAULT_MODE, Mode

__all__ = ["COMMANDS", "EXIT_DRIFT", "EXIT_ERROR", "EXIT_OK", "build_parser", "kubectl_main", "main"]


class _EnvDefaults(argparse.ArgumentParser):
    """An ArgumentParser whose options default to their ``SYNCER_*`` environment twin."""

    def add_argument(self, *args: str, **kwargs: Any) -> argparse.Action:
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
    # Unset here, these default to the sidecar settings' own values (commands.run.sidecar_defaults): importing
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
                   help="syncer.conf to use instead of the repository's (e.g. a mounted ConfigMap); reloaded on change")
    p.add_argument("--log-format", choices=list(logs.FORMATS), default=logs.FORMATS[0], help="log line format")
    p.add_argument("--shutdown-grace", metavar="DURATION",
                   help="on SIGTERM, how long a running pass may still finish before it is abandoned")


COMMANDS: dict[str, Command] = {
    "diff": cmd_diff, "sync": cmd_sync, "run": cmd_run, "init": cmd_init}


def main(argv: Sequence[str] | None = None, *, now: datetime | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, prog: str = "syncer") -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args = build_parser(prog).parse_args(argv)
    secrets = [os.environ.get("SYNCER_FORGE_TOKEN", "")]
    kustomize = os.environ.get("SYNCER_KUSTOMIZE")
    if getattr(args, "kustomize", None):
        os.environ["SYNCER_KUSTOMIZE"] = args.kustomize  # what syncer.sources.kustomize.render reads, here and in the sidecar
    try:
        if getattr(args, "watch", False):
            from syncer.commands.watching import watching

            return watching(COMMANDS[args.command], args, now, stdout, stderr, secrets)
        code = COMMANDS[args.command](args, now or datetime.now(timezone.utc), stdout)
        if argv is None:  # the process's own command line: it ends next (syncer.gather.oneshot)
            from syncer.gather.oneshot import before_exit

            before_exit()
        return code
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
