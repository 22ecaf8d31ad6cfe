"""The commands behind ``syncer diff|sync|run|init`` (``syncer.cli`` parses the flags and picks
one): ``oneshot`` (diff, sync), ``run`` (the sidecar), ``init`` (the config), ``watching`` (``--watch``).

Each command is ``cmd_<name>(args, now, stdout) -> exit code``; clients come from
``syncer.clients``. Exit codes: ``diff`` 0 in sync, 1 drift, 2 error; ``sync``/``run`` 0 done,
2 error.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TextIO

from syncer.gitrepo import repo_root

EXIT_OK, EXIT_DRIFT, EXIT_ERROR = 0, 1, 2

#: A command: the parsed flags, the time it runs at, where its output goes -> its exit code.
Command = Callable[[argparse.Namespace, datetime, TextIO], int]


def checkout(args: argparse.Namespace) -> Path:
    """The git repository holding hosts/: ``--repo``, else the one containing the current directory."""
    return Path(args.repo).resolve() if args.repo else repo_root(Path.cwd())


def reproduce(args: argparse.Namespace, installation: str) -> str:
    """The ``syncer diff`` command line that shows the same drift (quoted in PRs and logs)."""
    parts = ["syncer", "diff", installation]
    for f in args.live_file:
        parts += ["--live-file", f]
    if args.context:
        parts += ["--context", args.context]
    if getattr(args, "namespace", None):
        parts += ["-n", args.namespace]
    return shlex.join(parts)
