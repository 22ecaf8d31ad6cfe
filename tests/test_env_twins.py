"""Every flag's environment twin is parsed and checked exactly as the flag is: the same choices,
the same types, one line naming the variable, exit 2 -- and no bad value anywhere on the command
line ends in a traceback (whose exit 1 a CI job would read as "drift found").

The flags are found in the parser itself, so a flag added later is covered without a change
here: a flag with choices, a yes/no flag and every checked type get a bad value each."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import ROOT

from syncer.cli import build_parser, main

LIVE = str(ROOT / "examples" / "asgard-live.yaml")
#: A value each checked type refuses (by the name of its check in syncer.cli).
BAD_BY_TYPE = {"_duration": "ten minutes", "_count": "0", "_listen": "no-port", "_number": "12a", "_namespace": "Bad_Namespace"}


def _flags() -> list[tuple[str, argparse.Action]]:
    """(subcommand, action) for every option of every subcommand that can be given a bad value."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for command, p in sub.choices.items():
        for action in p._actions:
            if not action.option_strings or action.dest in ("help",):
                continue
            if action.choices or isinstance(action, argparse._StoreTrueAction) or action.type is not None:
                found.append((command, action))
    return found


def _bad(action: argparse.Action) -> str:
    if isinstance(action, argparse._StoreTrueAction):
        return "maybe"
    if action.choices:
        return "not-a-choice"
    name = getattr(action.type, "__name__", "")
    assert name in BAD_BY_TYPE, f"{action.option_strings}: a checked type without a bad value in BAD_BY_TYPE"
    return BAD_BY_TYPE[name]


def _twin(action: argparse.Action) -> str:
    long = next(o for o in action.option_strings if o.startswith("--"))
    return "SYNCER_" + long[2:].upper().replace("-", "_")


def _base(command: str) -> list[str]:
    """The command around the bad value (it is refused while parsing: nothing else runs)."""
    if command in ("diff", "init", "sync"):
        return [command, "asgard", "--repo", str(ROOT), "--live-file", LIVE]
    return [command, "asgard", "--repo", str(ROOT)]


FLAGS = _flags()


def test_the_flags_found_include_the_ones_the_issue_named() -> None:
    names = {(c, a.dest) for c, a in FLAGS}
    assert {("sync", "mode"), ("run", "log_format"), ("diff", "output"), ("sync", "forge"), ("run", "resync"),
            ("run", "leader_elect"), ("run", "listen")} <= names


@pytest.mark.parametrize("command,action", FLAGS, ids=[f"{c}-{a.dest}" for c, a in FLAGS])
def test_a_bad_twin_is_refused_like_its_flag(command: str, action: argparse.Action,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    bad, env = _bad(action), _twin(action)
    for name in list(os.environ):
        if name.startswith("SYNCER_"):
            monkeypatch.delenv(name)
    out, err = io.StringIO(), io.StringIO()
    if not isinstance(action, argparse._StoreTrueAction):  # a yes/no flag takes no value on the command line
        code = main([*_base(command), action.option_strings[-1], bad], stdout=out, stderr=err)
        assert code == 2 and err.getvalue().count("\n") == 1, err.getvalue()
        assert action.option_strings[-1] in err.getvalue() and "usage:" not in err.getvalue()
    monkeypatch.setenv(env, bad)
    out, err = io.StringIO(), io.StringIO()
    code = main(_base(command), stdout=out, stderr=err)
    assert (code, out.getvalue()) == (2, "")
    assert err.getvalue().count("\n") == 1 and err.getvalue().startswith(f"syncer: error: {env}={bad!r}: "), \
        err.getvalue()


def test_a_good_twin_is_taken_as_the_flag_would_be(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNCER_OUTPUT", "json")
    monkeypatch.setenv("SYNCER_LEADER_ELECT", "ON")
    monkeypatch.setenv("SYNCER_NOTIFY_URL", "http://127.0.0.1:1/a,http://127.0.0.1:1/b")
    args = build_parser().parse_args(["run", "asgard"])
    assert (args.output, args.leader_elect, args.notify_url) == (
        "json", True, ["http://127.0.0.1:1/a", "http://127.0.0.1:1/b"])
    monkeypatch.setenv("SYNCER_LEADER_ELECT", "0")
    assert build_parser().parse_args(["run", "asgard"]).leader_elect is False
    monkeypatch.setenv("SYNCER_MODE", "comit")  # the flag given wins over its twin, as always
    assert build_parser().parse_args(["sync", "--mode", "commit"]).mode == "commit"


@pytest.mark.parametrize("env,value,command", [
    ("SYNCER_MODE", "comit", "sync"), ("SYNCER_LOG_FORMAT", "xml", "run"), ("SYNCER_OUTPUT", "yaml", "diff"),
    ("SYNCER_FORGE", "gihub", "sync"),
])
def test_the_issues_twins_in_a_real_process(env: str, value: str, command: str, tmp_path: Path) -> None:
    """The variables the issue found: a traceback (exit 1), or silently ignored (a dry run, exit 0)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SYNCER_")}
    done = subprocess.run([sys.executable, "-m", "syncer.cli", *_base(command)], capture_output=True, text=True,
                          timeout=60, check=False, env={**clean, env: value}, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"syncer: error: {env}={value!r}: invalid choice")
    assert "Traceback" not in done.stderr


def test_a_bug_is_one_line_and_exit_2_in_a_real_process(tmp_path: Path) -> None:
    """Whatever breaks inside (a bug planted here) is one line and exit 2, never exit 1."""
    script = ("import sys\n"
              "def boom(*a, **k): raise ValueError('a bug')\n"
              "import syncer.cli as c\nc.COMMANDS['diff'] = boom\n"
              "sys.argv = ['syncer', 'diff']\nraise SystemExit(c.main())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False,
                          cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("syncer: error: internal error, a bug in syncer (ValueError: a bug)")
