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
import re
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TextIO

from syncer import __version__, logs
from syncer.clihelp import DESCRIPTIONS, EXAMPLES, Help
from syncer.clitwins import EnvDefaults, UsageError
from syncer.commands import EXIT_DRIFT, EXIT_ERROR, EXIT_OK, Command
from syncer.commands.init import cmd_init
from syncer.commands.oneshot import cmd_diff, cmd_sync
from syncer.commands.run import cmd_run
from syncer.commands.version import cmd_version
from syncer.errors import ConfigError, SyncerError
from syncer.forges import KINDS as FORGE_KINDS
from syncer.gitrepo import Identity
from syncer.secrets.redact import redact_text
from syncer.writeback.deliver import Mode
from syncer.writeback.landing import PushBudget

__all__ = ["COMMANDS", "EXIT_DRIFT", "EXIT_ERROR", "EXIT_OK", "build_parser", "kubectl_complete", "kubectl_main",
           "main"]


def _duration(text: str) -> str:
    """A duration flag's text (``30s``, ``10m``, ``1h30m``, plain seconds), checked; kept as text."""
    from syncer.durations import seconds

    try:
        seconds(text, "duration")
    except SyncerError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("duration: ")) from None
    return text


def _listen(text: str) -> str:
    """``HOST:PORT``, checked; kept as text."""
    from syncer.sidecar.server import parse_listen

    try:
        parse_listen(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (e.g. 0.0.0.0:8080)") from None
    return text


def _number(text: str) -> str:
    """A numeric id (a GitHub App's, its installation's), checked; kept as text."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    return text.strip()


def _count(text: str) -> str:
    """A count of at least 1 (``--push-attempts``), checked; kept as text."""
    if not text.strip().isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to 1000")
    return text.strip()


_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _namespace(text: str) -> str:
    """A namespace name (an RFC 1123 label, as the API server demands): a typo would read every
    object as absent instead of failing."""
    if not _NAMESPACE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a namespace name (lower-case letters, digits and '-', "
                                         "at most 63)")
    return text


def _installation_flags(p: argparse.ArgumentParser) -> None:
    """Which installation, in which repository, against which cluster (or snapshot)."""
    p.add_argument("installation", nargs="?", default=os.environ.get("SYNCER_INSTALLATION"),
                   help="directory under hosts/ (default: the only one) [env SYNCER_INSTALLATION]")
    p.add_argument("--repo", help="git repository holding hosts/ (default: the one containing the current directory)")
    p.add_argument("--live-file", action="append", default=[], metavar="FILE",
                   help="read live objects from a snapshot (kubectl get -o yaml) instead of the API; repeatable")
    _cluster_flags(p)
    p.add_argument("--kustomize", metavar="BIN",
                   help="renders a kustomize installation: kubectl (kubectl kustomize, the default) or kustomize "
                        "(kustomize build), a name on PATH or a path")
    p.add_argument("--helm", metavar="BIN",
                   help="renders a Helm installation (helm template): a name on PATH or a path (default: helm)")


def _cluster_flags(p: argparse.ArgumentParser) -> None:
    """Which API server, and as whom (kubectl's flags of the same names)."""
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--as", dest="as_user", metavar="USER",
                   help="impersonate this user for every request, as kubectl's --as "
                        "(e.g. system:serviceaccount:ai:syncer: check the chart's Role before installing)")
    p.add_argument("--as-group", action="append", default=[], metavar="GROUP",
                   help="impersonate this group too (with --as); repeatable")


def _source_flags(p: argparse.ArgumentParser) -> None:
    _installation_flags(p)
    p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="output format")


def _view_flags(p: argparse.ArgumentParser) -> None:
    """What ``diff`` and ``sync`` look at and how they show it."""
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="colour the text output; auto: when stdout is a terminal and NO_COLOR is not set")
    p.add_argument("-l", "--selector", metavar="SELECTOR",
                   help="only the objects whose labels in git match, in kubectl's syntax: "
                        "'app=web,tier!=db', 'env in (prod,staging)', '!canary', 'release'")
    p.add_argument("--object", action="append", default=[], metavar="KIND/NAME",
                   help="only this object (ConfigMap/ollama-endpoint-manager, cm/NAME or KIND/NAMESPACE/NAME); "
                        "repeatable")


def _sync_flags(p: argparse.ArgumentParser) -> None:
    _source_flags(p)
    p.add_argument("--mode", choices=[m.value for m in Mode],
                   help="how to write back; required unless --forge is given (then pr): a bare `sync` writes nothing")
    p.add_argument("--forge", choices=[*FORGE_KINDS, "none"],
                   help="forge API for pull requests (none: push the branch and print the PR text; the default)")
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
    p.add_argument("--push-attempts", metavar="N", type=_count,
                   help="commit mode: pushes to try when other pushes keep winning the race to the base branch "
                        f"(default {PushBudget.attempts})")
    p.add_argument("--push-budget", metavar="DURATION", type=_duration,
                   help="commit mode: how long to keep retrying those pushes, from the first one "
                        f"(default {PushBudget.seconds:g}s; the sidecar allows at most 4m)")
    _github_app_flags(p)


def _github_app_flags(p: argparse.ArgumentParser) -> None:
    """GitHub App credentials, instead of a personal token (with --forge github)."""
    p.add_argument("--github-app-id", metavar="ID", type=_number,
                   help="authenticate as this GitHub App's installation instead of --token-file; its installation "
                        "token is also git's HTTPS credential unless --git-token-file is given")
    p.add_argument("--github-app-key-file", metavar="FILE", help="the GitHub App's private key (PEM)")
    p.add_argument("--github-app-installation-id", metavar="ID", type=_number,
                   help="the app's installation (default: the one installed on --forge-repo)")


def build_parser(prog: str = "syncer") -> argparse.ArgumentParser:
    parser = EnvDefaults(prog=prog, description="Copy live Kubernetes values back into git.")
    parser.add_argument("--version", action="version", version=f"syncer {__version__}",
                        help="print 'syncer <version>' and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=EnvDefaults)
    diff = sub.add_parser("diff", help="show what differs between git and the cluster", formatter_class=Help,
                          description=DESCRIPTIONS["diff"], epilog=EXAMPLES["diff"])
    _source_flags(diff)
    sync = sub.add_parser("sync", help="copy live values back: commit, pull request, or dry run", formatter_class=Help,
                          description=DESCRIPTIONS["sync"], epilog=EXAMPLES["sync"])
    _sync_flags(sync)
    for p in (diff, sync):
        _view_flags(p)
        p.add_argument("--watch", action="store_true",
                       help="run again whenever a file under hosts/<installation>/ changes (Ctrl-C to stop)")
        if p is sync:
            p.add_argument("--exit-code", action="store_true",
                           help="exit 1 when drift was found (errors still 2), as kubectl diff does: "
                                "`sync --mode dry-run --exit-code` gates CI on drift")
        p.add_argument("-n", "--namespace", type=_namespace,
                       help="default namespace for manifests that name none (as kubectl's -n); "
                            "overrides the config's namespace")
        p.add_argument("--cache-dir", metavar="DIR",
                       help="where the parses of the manifests are kept for the next command, by a digest of each "
                            "file's text (default: $XDG_CACHE_HOME/syncer, else ~/.cache/syncer; 'none': keep nothing)")
    _run_flags(sub.add_parser("run", help="the sidecar: watch the cluster, sync on change, serve health and metrics",
                              formatter_class=Help, description=DESCRIPTIONS["run"], epilog=EXAMPLES["run"]))
    init = sub.add_parser("init", help="write hosts/<installation>/syncer.conf from what the manifests and the cluster show",
                          formatter_class=Help, description=DESCRIPTIONS["init"], epilog=EXAMPLES["init"])
    _installation_flags(init)
    init.add_argument("-n", "--namespace", type=_namespace, help="the installation's namespace (default: kubectl's, the kubeconfig "
                                                  "context's namespace, or default)")
    init.add_argument("--git-only", action="store_true", help="infer from the manifests alone; do not read the cluster")
    init.add_argument("--force", action="store_true", help="replace an existing config")
    init.add_argument("--chart-values", action="store_true",
                      help="only print the Helm chart's `tracked:` values granting exactly what the existing "
                           "config reads (YAML on stdout: > tracked-values.yaml; helm install -f it)")
    version = sub.add_parser("version", help="print syncer's version and the API server's",
                             formatter_class=Help, description=DESCRIPTIONS["version"], epilog=EXAMPLES["version"])
    version.add_argument("-o", "--output", choices=["json", "yaml"], help="output format (default: text)")
    version.add_argument("--client", action="store_true", help="only syncer's own version: do not ask the API server")
    _cluster_flags(version)
    completion = sub.add_parser("completion", help="print the shell completion script (bash, zsh or fish)",
                                formatter_class=Help, description=DESCRIPTIONS["completion"],
                                epilog=EXAMPLES["completion"])
    completion.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")
    return parser


def _run_flags(p: argparse.ArgumentParser) -> None:
    _sync_flags(p)
    # Unset here, these default to the sidecar settings' own values (commands.run.sidecar_defaults): importing
    # the settings classes would load the sidecar (and prometheus_client) on every command.
    p.add_argument("--listen", metavar="HOST:PORT", type=_listen,
                   help="where /healthz, /readyz and /metrics are served")
    p.add_argument("--resync", "--resync-interval", dest="resync", metavar="DURATION", type=_duration,
                   help="full pass (git fetch + compare) even without events, e.g. 10m")
    p.add_argument("--debounce", metavar="DURATION", type=_duration,
                   help="wait until the watched objects were quiet this long before a pass")
    p.add_argument("--leader-elect", action="store_true",
                   help="take part in leader election (Lease); only the leader writes")
    p.add_argument("--lease-name", help="name of the Lease (default: syncer-<installation>)")
    p.add_argument("--lease-duration", metavar="DURATION", type=_duration,
                   help="how long the Lease holds without renewal (renewed every third of it)")
    p.add_argument("--state-configmap", metavar="NAME",
                   help="ConfigMap (installation's namespace) holding the last agreed state; empty: none")
    p.add_argument("--config", metavar="FILE",
                   help="syncer.conf to use instead of the repository's (e.g. a mounted ConfigMap); reloaded on change")
    p.add_argument("--log-format", choices=list(logs.FORMATS), default=logs.FORMATS[0], help="log line format")
    p.add_argument("--shutdown-grace", metavar="DURATION", type=_duration,
                   help="on SIGTERM, how long a running pass may still finish before it is abandoned")


def cmd_completion(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    """``syncer completion SHELL``: the script, generated from this very parser."""
    from syncer.commands.completion import script

    stdout.write(script(args.shell, build_parser()))
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "diff": cmd_diff, "sync": cmd_sync, "run": cmd_run, "init": cmd_init, "version": cmd_version,
    "completion": cmd_completion}


def main(argv: Sequence[str] | None = None, *, now: datetime | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, prog: str = "syncer") -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:  # a bad flag or environment value: one line, exit 2, no usage block
        stderr.write(f"{exc}\n")
        return EXIT_ERROR
    secrets = [os.environ.get("SYNCER_FORGE_TOKEN", "")]
    if args.command != "run":  # the sidecar logs its warnings as they come (logs.setup)
        logs.collect(secrets)
    try:
        if args.command in ("sync", "run"):
            _write_mode(args)
        if getattr(args, "watch", False):
            from syncer.commands.watching import watching

            return watching(COMMANDS[args.command], args, now, stdout, stderr, secrets)
        code = COMMANDS[args.command](args, now or datetime.now(timezone.utc), stdout)
        _left_warnings(stderr)
        if argv is None:  # the process's own command line: it ends next (syncer.gather.oneshot)
            from syncer.gather.oneshot import before_exit

            before_exit()
        return code
    except SyncerError as exc:
        message = redact_text(exc.message, secrets)
        said = logs.take_warnings()
        for warning in said:
            stderr.write(f"syncer: warning: {warning}\n")
        stderr.write(f"syncer: error: {message}\n")
        if (getattr(args, "output", None) == "json" and args.command in ("diff", "sync")
                and not getattr(args, "json_written", False)):
            stdout.write(_fatal_json(args, message, said))  # a script reading stdout learns it too, as JSON
        return EXIT_ERROR
    except (MemoryError, RecursionError) as exc:  # a hostile input past every limit: still exit 2, one line
        stderr.write(f"syncer: error: input too large or too deeply nested to process ({type(exc).__name__})\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        stderr.write("syncer: interrupted\n")
        return EXIT_ERROR
    except Exception as exc:  # a bug: still one line and exit 2 (a traceback's exit 1 would read as "drift found")
        if argv is not None or sys.flags.dev_mode:  # called in-process (tests), or python -X dev: the traceback
            raise
        what = redact_text(" ".join(str(exc).split())[:200], secrets)
        stderr.write(f"syncer: error: internal error, a bug in syncer ({type(exc).__name__}: {what}); "
                     "run it as `python -X dev -m syncer.cli ...` for the traceback and report it\n")
        return EXIT_ERROR
    finally:
        logs.uncollect()


def _write_mode(args: argparse.Namespace) -> None:
    """``--mode`` from ``--mode`` and ``--forge``: a forge asks for pull requests (``pr``); with
    neither, ``sync`` and ``run`` refuse to guess. A bare ``sync`` once meant ``pr`` with no forge,
    which pushed a branch ``syncer/<installation>`` nobody asked for; a dry run by default would
    exit 0 having written nothing, a success a script relying on the old default never earned."""
    if args.mode is None:
        if args.forge is None:
            raise ConfigError(f"{args.command}: say how to write back: --mode dry-run (show what would change), "
                              "--mode commit (to the base branch) or --mode pr --forge github|gitea|gitlab|none "
                              "(env SYNCER_MODE, SYNCER_FORGE)")
        args.mode = Mode.PR.value
    if args.forge is None:
        args.forge = "none"


def _left_warnings(stderr: TextIO) -> None:
    """Warnings no document took (``init``, ``version``): one ``warning:`` line each, once."""
    for warning in logs.take_warnings():
        stderr.write(f"syncer: warning: {warning}\n")


def _fatal_json(args: argparse.Namespace, message: str, warnings: Sequence[str]) -> str:
    """``-o json`` when nothing could be compared: the command's document, with the error in it."""
    from syncer.writeback.jsondoc import fatal

    return fatal(args.command, getattr(args, "installation", None), message, tuple(warnings))


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """The kubectl plugin ``kubectl-syncer``: kubectl finds it on PATH and runs it with the words
    after ``kubectl syncer``, so ``kubectl syncer diff -n ai --context prod`` is ``syncer diff
    -n ai --context prod``. kubectl hands its own flags over only when they follow the plugin
    name; ``--kubeconfig``, ``--context`` and ``-n`` mean what they mean to kubectl, and
    ``$KUBECONFIG`` is honoured as kubectl honours it."""
    return main(argv, prog="kubectl syncer")


def kubectl_complete(argv: Sequence[str] | None = None) -> int:
    """``kubectl_complete-syncer``: kubectl (1.26 on) runs it for ``kubectl syncer <TAB>`` with the
    words after ``syncer``, and reads cobra's answer: one candidate a line, then ``:<directive>``."""
    from syncer.commands.completion import complete

    words = list(sys.argv[1:] if argv is None else argv)
    found, directive = complete(words, build_parser("kubectl syncer"))
    sys.stdout.write("".join(f"{w}\n" for w in found) + f":{directive}\n")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
