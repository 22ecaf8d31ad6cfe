"""``diff --watch`` / ``sync --watch``: run the command, then again after each change of the files."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TextIO

from syncer.commands import EXIT_ERROR, Command, checkout
from syncer.errors import SyncerError
from syncer.filewatch import rerun_on_change
from syncer.sources.manifests import default_installation, host_dir
from syncer.secrets.redact import redact_text


def watching(command: Command, args: argparse.Namespace, now: datetime | None, stdout: TextIO, stderr: TextIO,
             secrets: Sequence[str]) -> int:
    """Run ``command`` once, then again whenever a file under hosts/<installation>/ changes
    (an error is one line and the watch goes on); returns when the watch ends."""
    repo = checkout(args)
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
