"""``syncer diff`` and ``syncer sync``: one comparison (and write-back), printed, then exit."""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TextIO

from syncer import clients, logs
from syncer.cache import Caches
from syncer.commands import EXIT_DRIFT, EXIT_ERROR, EXIT_OK, checkout, reproduce
from syncer.config import Config, load_config
from syncer.errors import ConfigError, SyncerError
from syncer.gitrepo import origin_url
from syncer.gather.live import snapshot_note
from syncer.gather.oneshot import collection_paused, list_early
from syncer.model import FileError, Result
from syncer.sources.manifests import default_installation, host_dir
from syncer.parsestore import cache_dir, store_for
from syncer.gather.selection import selection
from syncer.writeback import extdiff
from syncer.writeback.deliver import Mode, Outcome, deliver, dry_run
from syncer.writeback.jsondoc import sync_outcome
from syncer.writeback.report import render_json, render_text
from syncer.writeback.terminal import use_color


def _with_said(result: Result) -> Result:
    """``result`` with the warnings said while it was made (``logs.take_warnings``: TLS
    verification off, a forge's retries, ...), each once, after the result's own."""
    said = [FileError("", m) for m in logs.take_warnings()]
    return replace(result, warnings=result.warnings + tuple(w for w in said if w not in result.warnings))


def _show(out: Outcome, args: argparse.Namespace, stdout: TextIO) -> None:
    """The text output of ``diff`` and ``sync``: the summary, then the file diffs, syncer's own
    (coloured when ``--color`` says so) or the external program's (``extdiff``)."""
    color = use_color(args.color, stdout)
    external = extdiff.program() is not None
    diffs = "" if external else "".join(c.unified_diff() for c in out.changes)
    notes: list[str] = []
    stdout.write(render_text(out.result, diffs, color=color))
    if external and out.changes:
        stdout.write("\n")
        extdiff.run(out.changes, stdout, notes=notes)
    for note in notes:
        stdout.write(f"note: {note}\n")


def _print_report(out: Outcome, args: argparse.Namespace, stdout: TextIO) -> None:
    """What was detected (text output): the summary, the file diffs, the PR text."""
    _show(out, args, stdout)
    if out.title and (args.mode == Mode.DRY_RUN.value or (args.mode == Mode.PR.value and args.forge == "none")):
        stdout.write(f"\n--- pull request ---\ntitle: {out.title}\nlabels: {', '.join(out.labels)}\n\n{out.body}")
    stdout.flush()


def _print_outcome(out: Outcome, args: argparse.Namespace, stdout: TextIO, reported: bool = False) -> None:
    """The whole outcome; ``reported``: the drift report went out already (before the write)."""
    if args.output == "json":
        stdout.write(render_json(out.result, "sync", {"outcome": sync_outcome(out, args.mode, args.forge)}))
        return
    if not reported:
        _print_report(out, args, stdout)
    for msg in out.messages:
        stdout.write(f"syncer: {msg}\n")
    if out.pr is not None:
        stdout.write(f"syncer: pull request {out.pr.outcome.value}: {out.pr.message}\n")


def _config(args: argparse.Namespace, repo: Path, installation: str) -> Config:
    """The installation's config in ``repo`` with ``-n`` applied: read once per command and tree,
    and handed to everything that needs it (the live source's namespace, the early LISTs,
    detection)."""
    return load_config(host_dir(repo, installation), installation, namespace=getattr(args, "namespace", None))


def _caches(args: argparse.Namespace, repository: str, installation: str) -> Caches:
    """What this command remembers: nothing yet, but the parses the last command kept in
    ``--cache-dir`` for ``repository`` (a checkout's path, or the remote a clone is made from)."""
    return Caches(stored=store_for(cache_dir(getattr(args, "cache_dir", None)), repository, installation))


def cmd_diff(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    repo = checkout(args)
    installation = args.installation or default_installation(repo)
    config, tools = _config(args, repo, installation), clients.tools(args)
    source = clients.live_source(args, config.namespace)
    only = selection(args.selector, args.object)
    list_early(source, repo, installation, config, tools)  # syncer.gather.oneshot
    with collection_paused():
        out = dry_run(repo, installation, source, now, reproduce(args, installation), config=config,
                      caches=_caches(args, str(repo.absolute()), installation), only=only, tools=tools)
    out.result = _with_said(snapshot_note(source, out.result))
    if args.output == "json":
        stdout.write(render_json(out.result))
    else:
        _show(out, args, stdout)
    if out.result.errors:
        return EXIT_ERROR
    return EXIT_OK if out.result.in_sync else EXIT_DRIFT


def cmd_sync(args: argparse.Namespace, now: datetime, stdout: TextIO) -> int:
    mode = Mode(args.mode)
    only = selection(args.selector, args.object)
    if only is not None and mode is Mode.PR:
        raise ConfigError(f"{only.describe()}: --mode pr keeps one pull request for the whole installation, which a "
                          "selection would shrink or close; use --mode commit or --mode dry-run")
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
        config = _config(args, repo, installation)
        source = clients.live_source(args, config.namespace)
    if mode is Mode.DRY_RUN:  # in the checkout as it is: no clone
        assert repo is not None
        out = deliver(mode, repo, installation, source, now, reproduce(args, installation), config=config,
                      caches=_caches(args, str(repo.absolute()), installation), only=only, tools=clients.tools(args))
        out.result = _with_said(snapshot_note(source, out.result))
        _print_outcome(out, args, stdout)
        return _sync_exit(out, args)
    forge = clients.forge(args)
    remote = args.remote or (origin_url(repo) if repo is not None else None)
    if not remote:
        raise ConfigError(f"--mode {mode.value} pushes, and there is no git remote to push to: the repository at "
                          f"{repo} has no remote 'origin' and no --remote was given (pass --remote URL, or "
                          f"git -C {repo} remote add origin URL)")
    identity = clients.git_identity(args, clients.read_secret(args.git_token_file, "--git-token-file"))
    with tempfile.TemporaryDirectory(prefix="syncer-") as tmp:
        dest = Path(args.clone_dir) if args.clone_dir else Path(tmp) / "clone"
        known = installation if repo is not None else args.installation  # a new clone is sparse: only its hosts/
        ws = clients.workspace(args, remote, dest, identity, known)
        if repo is None:
            installation = args.installation or default_installation(ws.path)
        config = _config(args, ws.path, installation)  # detection reads the clone's (the checkout's named the namespace)
        if repo is None:
            source = clients.live_source(args, config.namespace)
        detected: list[Outcome] = []

        def report(found: Outcome) -> None:  # before the first write: printed whatever the push does
            detected.append(found)
            if args.output != "json":
                found.result = _with_said(found.result)
                _print_report(found, args, stdout)
        try:
            out = deliver(mode, ws, installation, source, now, reproduce(args, installation), forge, config=config,
                          caches=_caches(args, remote, installation), on_detected=report, only=only, tools=clients.tools(args),
                          budget=clients.push_budget(args))
        except SyncerError as exc:
            if detected and args.output == "json":  # the drifts found, with why nothing was written
                failed = replace(_with_said(detected[0].result),
                                 errors=detected[0].result.errors + (FileError("", exc.message),))
                stdout.write(render_json(failed, "sync", {"outcome": None}))
                args.json_written = True
            raise
    out.result = _with_said(out.result)
    _print_outcome(out, args, stdout, reported=bool(detected))
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
