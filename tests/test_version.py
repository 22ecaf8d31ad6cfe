"""``syncer --version``: one line, ``syncer <version>``, the version pyproject.toml declares."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from syncer import __version__
from syncer.cli import kubectl_main

ROOT = Path(__file__).resolve().parent.parent


def test_version_is_the_packaged_one() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert __version__ == declared


def test_syncer_version_prints_one_line_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-m", "syncer.cli", "--version"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"syncer {__version__}\n", "")


def test_the_kubectl_plugin_says_syncer_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        kubectl_main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"syncer {__version__}\n"


def test_help_names_the_flag_without_an_env_twin() -> None:
    done = subprocess.run([sys.executable, "-m", "syncer.cli", "--help"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert "--version" in done.stdout and "SYNCER_VERSION" not in done.stdout
