"""``syncer diff`` and ``syncer sync``: one comparison (and write-back), printed, then exit."""

from __future__ import annotations

import argparse
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import TextIO

from syncer import clients
from syncer.cache import Caches
from syncer.commands import EXIT_DRIFT, EXIT_ERROR, EXIT_OK, checkout, reproduce
from syncer.config import Config, load_config
from syncer.errors import SyncerError
from syncer.gitrepo import origin_url
from syncer.gather.live import snapshot_note
from syncer.sources.manifests import default_installation, host_dir
from syncer.gather.oneshot import collection_paused, list_early
from syncer.writeback.report import render_json, render_text
from syncer.writeback.deliver import Mode, Outcome, deliver, dry_run


def _print_outcome(out: Outcome, args: argparse.Namespace, stdout: TextIO) -> None:
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
    return load_config(host_dir(repo, installation), installation, namespace=override).namespace


def _config(args: argparse.Namespace, repo: Path, installation: str) -> Config | None:
    """The installation's config with ``-n`` applied; None (load it as usual) without ``-n``."""
    if not getattr(args, "namespace", None):
        return None
    return load_config(host_dir(repo, installation), installation, namespace=args.namespace)


def cmd_diff(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    repo = checkout(args)
    installation = args.installation or default_installation(repo)
    ns = getattr(args, "namespace", None)
    source = clients.live_source(args, _namespace(repo, installation, ns))
    list_early(source, repo, installation, ns)  # syncer.gather.oneshot
    with collection_paused():
        out = dry_run(repo, installation, source, now, reproduce(args, installation),
                      config=_config(args, repo, installation), caches=Caches())
    out.result = snapshot_note(source, out.result)
    if args.output == "json":
        stdout.write(render_json(out.result))
    else:
        diffs = "".join(c.unified_diff() for c in out.changes)
        stdout.write(render_text(out.result, diffs, color=stdout.isatty()))
    if out.result.errors:
        return EXIT_ERROR
    return EXIT_OK if out.result.in_sync else EXIT_DRIFT


def cmd_sync(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    mode = Mode(args.mode)
    try:
        repo: Path | None = checkout(args)
    except SyncerError:
        if mode is Mode.DRY_RUN or not args.remote:
            raise
        # No checkout here, only --remote (a CronJob pod): installation and config come from
        # syncer's own clone, which sync works in anyway.
        repo = None
    if repo is not None:
        installation = args.installation or default_installation(repo)
        source = clients.live_source(args, _namespace(repo, installation, args.namespace))
    if mode is Mode.DRY_RUN:  # in the checkout as it is: no clone
        assert repo is not None
        out = deliver(mode, repo, installation, source, now, reproduce(args, installation),
                         config=_config(args, repo, installation), caches=Caches())
        out.result = snapshot_note(source, out.result)
        _print_outcome(out, args, stdout)
        return _sync_exit(out, args)
    forge = clients.forge(args)
    remote = args.remote or (origin_url(repo) if repo is not None else None) or str(repo)
    identity = clients.git_identity(args, clients.read_secret(args.git_token_file, "--git-token-file"))
    with tempfile.TemporaryDirectory(prefix="syncer-") as tmp:
        dest = Path(args.clone_dir) if args.clone_dir else Path(tmp) / "clone"
        known = installation if repo is not None else args.installation  # a new clone is sparse: only its hosts/
        ws = clients.workspace(args, remote, dest, identity, known)
        if repo is None:
            installation = args.installation or default_installation(ws.path)
            source = clients.live_source(args, _namespace(ws.path, installation, args.namespace))
        config = _config(args, ws.path, installation)
        out = deliver(mode, ws, installation, source, now, reproduce(args, installation), forge, config=config,
                      caches=Caches())
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
    from syncer.writeback.alerts import one_shot, send

    secrets = [os.environ.get("SYNCER_FORGE_TOKEN", "")]
    with clients.http_client() as client:
        return send(clients.notifier(args.notify_url, client, secrets), installation, one_shot(out))
