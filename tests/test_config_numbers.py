"""Numbers and durations in ``syncer.conf``, flags and environment twins are bounded (issue #33).

Was: ``stableFor:`` with 5,000 digits hit Python's integer-size limit (traceback, exit 1, which
CI reads as "drift found"); so did any 5,000-digit integer in the config, a manifest or a
snapshot; ``--debounce nan`` or ``inf`` was accepted. Now: one line naming the file or flag,
exit 2 -- or, for a manifest, the number Go's YAML reader makes of it (a string).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_LIVE
from tests.helpers import run

from syncer.durations import FLAGS, STABLE_FOR, count, parse_duration, seconds, shown
from syncer.errors import ConfigError
from syncer.goyaml import number

DIGITS = "9" * 5000
CONF = "installation: asgard\nnamespace: ai\ntrack:\n  ConfigMap: writeback\n"


def _diff_with(repo: Path, extra: str) -> tuple[int, str, str]:
    (repo / "hosts" / "asgard" / "syncer.conf").write_text(CONF + extra)
    return run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))


@pytest.mark.parametrize("value,said", [
    (DIGITS, "a number too long to read"),
    (DIGITS + "m", "a duration of 5001 characters"),
    ("9" * 400 + "h", "a duration of 401 characters"),
    ("100000000h", "is outside 0 .. 720h"),
    ("721h", "is outside 0 .. 720h"),
    ("1e400", "expected a duration"),
    ("1.5e3", "expected a duration"),
    ("600", "has no unit"),
    ("true", "expected a duration"),
    ("[10m]", "expected a duration"),
    ("10 m", "bad duration"),
    ("-5m", "bad duration"),
    ("9999999999h", "bad duration"),
])
def test_stable_for_out_of_bounds_is_one_line_exit_2(asgard_repo: Path, value: str, said: str) -> None:
    code, out, err = _diff_with(asgard_repo, f"stableFor: {value}\n")
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and said in err and "syncer.conf" in err, err
    assert len(err) < 300 and "Traceback" not in err


@pytest.mark.parametrize("extra", [f"appliers: [{DIGITS}]\n", f"namespace: {DIGITS}\n",
                                   f"ignore:\n  - kind: ConfigMap\n    name: {DIGITS}\n"])
def test_a_number_too_long_anywhere_in_the_config_names_its_line(asgard_repo: Path, extra: str) -> None:
    code, _, err = _diff_with(asgard_repo, extra)
    assert code == 2 and err.count("\n") == 1, err
    assert "hosts/asgard/syncer.conf:" in err and "a number too long to read" in err


def test_the_longest_and_shortest_durations_allowed_still_load(asgard_repo: Path) -> None:
    for value in ("720h", "0", "0s", "1s", "1h30m", "10m"):
        code, out, err = _diff_with(asgard_repo, f"stableFor: {value}\n")
        assert code in (0, 1) and err == "", (value, err)


def test_a_5000_digit_number_in_a_manifest_and_a_snapshot_is_a_string_as_go_reads_it(tmp_path: Path,
                                                                                   asgard_repo: Path) -> None:
    """Go's strconv refuses the number (out of range) and go-yaml keeps the text: a string."""
    assert number(DIGITS) is None and number("0" * 5000 + "7") == 7 and number("1" + "0" * 19) == 10 ** 19
    assert number("0x" + "f" * 17) is None and number("0b" + "1" * 64) == 2 ** 64 - 1
    manifest = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: long-number\n  namespace: ai\n"
                f"data:\n  N: {DIGITS}\n")
    (asgard_repo / "hosts" / "asgard" / "long.yaml").write_text(manifest)
    live = tmp_path / "live.yaml"
    live.write_text(EXAMPLE_LIVE.read_text() + "\n---\n" + manifest)
    code, out, err = run("diff", "asgard", "--repo", str(asgard_repo), "--live-file", str(live), "-o", "json")
    assert code == 1 and err == "", err  # asgard's own drift; the long number is read, and equal
    assert "long-number" not in out


@pytest.mark.parametrize("flag,value,said", [
    ("--debounce", "nan", "bad duration"), ("--debounce", "inf", "bad duration"),
    ("--debounce", "1e400", "bad duration"), ("--debounce", DIGITS, "a duration of 5000 characters"),
    ("--debounce", "-1", "bad duration"), ("--debounce", "2h", "is outside 0 .. 1h"),
    ("--resync", "0", "is outside 1s .. 168h"), ("--resync", "0.5", "is outside 1s .. 168h"),
    ("--resync", "169h", "is outside 1s .. 168h"), ("--lease-duration", "1s", "is outside 3s .. 1h"),
    ("--shutdown-grace", "1_0", "bad duration"), ("--shutdown-grace", "9" * 40 + "s", "a duration of 41"),
])
def test_duration_flags_out_of_bounds_exit_2_before_anything_starts(tmp_path: Path, flag: str, value: str,
                                                                     said: str) -> None:
    # --remote points nowhere: the flag is refused first, before any clone is tried
    code, out, err = run("run", "--remote", str(tmp_path / "nowhere.git"), "--listen", "127.0.0.1:0",
                         "--mode", "commit", f"{flag}={value}")
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and flag in err and said in err, err
    assert "nowhere" not in err


def test_an_environment_twin_out_of_bounds_is_refused_like_its_flag(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for value, said in (("nan", "SYNCER_DEBOUNCE='nan': bad duration"), ("2h", "--debounce (or SYNCER_DEBOUNCE)")):
        monkeypatch.setenv("SYNCER_DEBOUNCE", value)
        code, _, err = run("run", "--remote", str(tmp_path / "nowhere.git"), "--listen", "127.0.0.1:0",
                           "--mode", "commit")
        assert code == 2 and err.count("\n") == 1 and said in err, err


@pytest.mark.parametrize("args,said", [
    (["--listen", "127.0.0.1:" + DIGITS], "HOST:PORT"),
    (["--listen", "127.0.0.1:\u0663\u0663"], "HOST:PORT"),
])
def test_listen_ports_are_bounded(tmp_path: Path, args: list[str], said: str) -> None:
    code, _, err = run("run", "--remote", str(tmp_path / "nowhere.git"), *args)
    assert code == 2 and err.count("\n") == 1 and said in err, err


@pytest.mark.parametrize("args,said", [
    (["--github-app-installation-id", DIGITS], "is not a number from 1 to"),
    (["--github-app-installation-id", "\u0663"], "is not a number from 1 to"),
    (["--github-app-installation-id", str(2 ** 63)], "is not a number from 1 to"),
    (["--github-app-installation-id", "0"], "is not a number from 1 to"),
    (["--github-app-id", "12 34"], "is not a number"),
    (["--github-app-id", "x" * 65], "is not a number"),
])
def test_github_app_numbers_are_bounded(asgard_repo: Path, tmp_path: Path, args: list[str], said: str) -> None:
    key = tmp_path / "key.pem"
    key.write_text("not read before the numbers are checked\n")
    base = ["--github-app-id", "123456"] if args[0] != "--github-app-id" else []
    code, _, err = run("sync", "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE), "--forge",
                       "github", "--forge-repo", "o/r", "--github-app-key-file", str(key), *base, *args)
    assert code == 2 and err.count("\n") == 1 and said in err and len(err) < 300 + len(args[1]), err


def test_the_installed_command_exits_2_not_1(asgard_repo: Path) -> None:
    """The console script, not only ``main``: exit 1 is what CI reads as "drift found"."""
    (asgard_repo / "hosts" / "asgard" / "syncer.conf").write_text(CONF + f"stableFor: {DIGITS}\n")
    done = subprocess.run([sys.executable, "-c", "import sys; from syncer.cli import main; sys.exit(main())", "diff",
                           "asgard", "--repo", str(asgard_repo), "--live-file", str(EXAMPLE_LIVE)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr


def test_bounds_as_functions() -> None:
    assert parse_duration("720h", "x", STABLE_FOR) == 720 * 3600
    assert seconds("0.5", "--debounce") == 0.5 and seconds("1h", "--lease-duration") == 3600
    assert FLAGS["--resync"] == (1.0, 7 * 86400.0)
    assert shown(90061) == "25h1m1s" and shown(0.5) == "0.5s" and shown(0) == "0"
    assert count("42", "--n", 1, 100) == 42
    for bad in ("", "1" * 4, "-1", "1.0", "\u0661"):
        with pytest.raises(ConfigError):
            count(bad, "--n", 1, 100)
