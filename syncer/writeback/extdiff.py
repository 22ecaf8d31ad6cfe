"""An external diff program (``SYNCER_EXTERNAL_DIFF``, else ``KUBECTL_EXTERNAL_DIFF``) instead of
syncer's own unified diff, run as ``kubectl diff`` runs it.

kubectl splits the variable at spaces: the first word is the program, the others its own
arguments, kept only when made of letters, digits, ``-`` and ``=`` (``diff -u -N``,
``colordiff -N -u``, ``dyff between --omit-header``: anything else is dropped, and here said
so), and runs ``PROGRAM FROM_DIR TO_DIR ARGS...``. syncer's two directories are git's files and
the files as syncer would write them, under their repository paths
(``.../git/hosts/asgard/x.yaml`` and ``.../synced/hosts/asgard/x.yaml``); only changed files are
in them, a new file only in the second. The program's output is the diff shown.

Its exit status follows diff's convention (0 no difference, 1 differences, more: trouble): 0 and
1 leave syncer's exit code as it is (drift found or not is syncer's to say), anything else, or a
program that cannot be started, is an error naming the variable.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from syncer.errors import ConfigError
from syncer.writeback.plan import FileChange

VARIABLES = ("SYNCER_EXTERNAL_DIFF", "KUBECTL_EXTERNAL_DIFF")

#: kubectl's rule for the program's own arguments.
_ARG = re.compile(r"^[a-zA-Z0-9=-]+$")


def program(env: Mapping[str, str] | None = None) -> tuple[str, list[str], list[str], str] | None:
    """(program, its arguments, the arguments dropped, the variable) of the first variable set, or None."""
    env = os.environ if env is None else env
    for name in VARIABLES:
        value = env.get(name, "").strip()
        if value:
            words = [w for w in value.split(" ") if w]
            kept = [w for w in words[1:] if _ARG.match(w)]
            dropped = [w for w in words[1:] if not _ARG.match(w)]
            return words[0], kept, dropped, name
    return None


def _lay_out(root: Path, changes: Sequence[FileChange], new: bool) -> None:
    for change in changes:
        text = change.new if new else change.old
        if not new and not change.old:
            continue  # a new file: only on the written side, as diff -N expects
        target = root / change.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="")


def run(changes: Sequence[FileChange], stdout: TextIO, env: Mapping[str, str] | None = None,
        notes: list[str] | None = None) -> None:
    """Show ``changes`` with the external program; its output goes to ``stdout`` (the terminal
    itself when ``stdout`` is the process's own, so a pager or a colour program sees a tty)."""
    found = program(env)
    if found is None or not changes:
        return
    prog, args, dropped, variable = found
    if dropped and notes is not None:
        notes.append(f"{variable}: argument(s) {' '.join(dropped)} ignored (as kubectl ignores them: only "
                     "letters, digits, '-' and '=' are passed on)")
    with tempfile.TemporaryDirectory(prefix="syncer-diff-") as tmp:
        git_dir, synced_dir = Path(tmp) / "git", Path(tmp) / "synced"
        git_dir.mkdir()
        synced_dir.mkdir()
        _lay_out(git_dir, changes, new=False)
        _lay_out(synced_dir, changes, new=True)
        command = [prog, str(git_dir), str(synced_dir), *args]
        direct = stdout is sys.stdout and _has_fd(stdout)
        stdout.flush()
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, check=False,
                                  stdout=None if direct else subprocess.PIPE, text=not direct)
        except OSError as exc:
            raise ConfigError(f"{variable}={prog!r}: cannot run it: {exc.strerror or exc}") from None
        if not direct and done.stdout:
            stdout.write(done.stdout if done.stdout.endswith("\n") else done.stdout + "\n")
    if done.returncode not in (0, 1):
        how = f"was killed by signal {-done.returncode}" if done.returncode < 0 else f"exited {done.returncode}"
        raise ConfigError(f"{variable}={prog!r} {how} (a diff program exits 0 or 1)")


def _has_fd(stream: TextIO) -> bool:
    try:
        stream.fileno()
    except (OSError, ValueError, AttributeError):
        return False
    return True
