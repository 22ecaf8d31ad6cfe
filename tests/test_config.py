"""syncer.conf is parsed strictly: every mistake is one line naming file and field."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from syncer.config import parse_config, parse_duration
from syncer.errors import ConfigError
from syncer.model import Track

SRC = "hosts/asgard/syncer.conf"


def _err(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, SRC, "asgard")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(SRC)
    return msg


def test_full_config() -> None:
    cfg = parse_config(
        "installation: asgard\nnamespace: ai\ntrack: {ConfigMap: writeback, Secret: writeback}\nstableFor: 1h30m\n"
        "candidates:\n- {endpoints: e, configMap: c, key: K}\nignore:\n- {kind: Deployment, pointers: [/spec/replicas]}\n",
        SRC, "asgard")
    assert cfg.stable_for == 5400
    assert cfg.track_for("ConfigMap") is Track.WRITEBACK
    assert cfg.track_for("Secret") is Track.REPORT  # never written, whatever the config says
    assert cfg.track_for("Service") is Track.REPORT  # kinds not listed are report
    assert cfg.candidates_for("ai", "e") is not None
    assert cfg.ignored_pointers("Deployment", "ai", "x") == ("/spec/replicas",)


def test_unknown_top_level_key() -> None:
    assert "unknown key 'stablefor'" in _err("installation: asgard\nstablefor: 10m\n")


def test_unknown_candidate_key() -> None:
    assert "candidates[0]: unknown key 'configmap'" in _err(
        "candidates:\n- {endpoints: e, configmap: c, key: K}\n")


def test_bad_track_mode() -> None:
    assert "track.ConfigMap: unknown mode 'write'" in _err("track: {ConfigMap: write}\n")


def test_bad_duration() -> None:
    assert "stableFor: bad duration '10 minutes'" in _err("stableFor: 10 minutes\n")
    assert parse_duration("45s", "x") == 45 and parse_duration("0", "x") == 0


def test_wrong_type() -> None:
    assert "track: expected a mapping" in _err("track: [ConfigMap]\n")


def test_installation_must_match_directory() -> None:
    assert "does not match its directory" in _err("installation: midgard\n")


def test_malformed_yaml_names_line() -> None:
    assert _err("track:\n  ConfigMap: [\n").startswith(SRC + ":")


def test_bad_pointer() -> None:
    assert "is not a JSON pointer" in _err("ignore:\n- {kind: Deployment, pointers: [spec.replicas]}\n")


# -- secretKeys: users' regular expressions run on RE2 (issue 21) -------------------------


@pytest.mark.parametrize("pattern, why", [
    ("([", "missing ]"),  # invalid: was accepted, then a traceback and exit 1 from detection
    (r"(pass)\1", "invalid escape sequence"),  # a backreference: needs backtracking
    ("(?=token)", "invalid perl operator"),  # lookaround
    ("(?<!x)key", "invalid perl operator"),
])
def test_a_secret_keys_pattern_re2_cannot_run_is_refused_at_load(pattern: str, why: str) -> None:
    msg = _err(f"secretKeys: ['stripe_.*', {pattern!r}]\n".replace("\\\\", "\\"))
    assert msg.startswith(f"{SRC}: secretKeys[1]: ") and why in msg and "RE2" in msg


def test_a_secret_keys_entry_must_be_a_string() -> None:
    assert "secretKeys[0]: expected a regular expression" in _err("secretKeys: [[a]]\n")


def test_a_backtracking_bomb_in_secret_keys_is_matched_by_re2(monkeypatch: pytest.MonkeyPatch) -> None:
    """``(.+)+!`` against a 60-letter key: about 2**60 steps for Python's backtracking ``re``
    (the diff never ended); RE2 answers at once. Python's ``re`` never sees the pattern."""
    import re

    from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS, is_secret_key

    cfg = parse_config("secretKeys: ['(.+)+!']\n", SRC, "asgard")
    real = re.compile

    def no_user_patterns(pattern: Any, *args: Any, **kw: Any) -> Any:
        assert pattern not in cfg.secret_keys, "a user's pattern reached Python's re"
        return real(pattern, *args, **kw)

    monkeypatch.setattr(re, "compile", no_user_patterns)
    monkeypatch.setattr(re, "fullmatch", lambda *a, **k: pytest.fail("re.fullmatch on a user pattern"))
    key = "A" * 60 + "_BOMB"
    assert not is_secret_key(key, (*DEFAULT_SECRET_PATTERNS, *cfg.secret_keys))
    assert is_secret_key("a" * 60 + "!", (*DEFAULT_SECRET_PATTERNS, *cfg.secret_keys))
    import re2

    from syncer.secrets import userpattern

    assert isinstance(userpattern._compiled("(.+)+!"), re2._Regexp)


def test_a_reloaded_config_with_a_bad_pattern_keeps_the_old_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The sidecar's ``--config`` reload: a bad pattern is reported, and the last good config stays."""
    from syncer.sidecar.app import ConfigOverride

    path = tmp_path / "syncer.conf"
    path.write_text("secretKeys: ['stripe_.*']\n")
    override = ConfigOverride(path, "asgard")
    path.write_text("secretKeys: ['(.+)+!', '([']\n")
    with caplog.at_level(logging.ERROR):
        assert override.reload() is False
    assert override.current.secret_keys == ("stripe_.*",) and override.generation == 0
    [record] = [r for r in caplog.records if "config reload failed" in r.getMessage()]
    assert "secretKeys[1]" in record.syncer_fields["error"]


def test_diff_with_a_bad_pattern_exits_2_with_one_line(tmp_path: Path) -> None:
    from tests.conftest import EXAMPLE_LIVE
    from tests.helpers import make_repo, run

    repo = make_repo(tmp_path)
    conf = repo / "hosts" / "asgard" / "syncer.conf"
    conf.write_text(conf.read_text() + "secretKeys: ['([']\n")
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert (code, out) == (2, "") and err.count("\n") == 1 and "Traceback" not in err
    assert "hosts/asgard/syncer.conf: secretKeys[0]: '([' is not a pattern syncer can run" in err
    conf.write_text(conf.read_text().replace("'(['", "'(.+)+!'"))  # the bomb: the diff ends
    code, out, err = run("diff", "asgard", "--repo", str(repo), "--live-file", str(EXAMPLE_LIVE))
    assert code == 1 and err == "" and "difference(s)" in out


def test_many_secret_keys_patterns_are_refused_and_the_rest_compile_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was (issue 21, third round, F10): 400 accepted ``[\\w\\W]{0,1000}N`` patterns thrashed the
    RE2 compile cache (256 programs): 26 s for 20 keys. Now at most 64 patterns (and 8,192
    characters) load, and one config's patterns run as one program, compiled once."""
    from syncer.secrets import userpattern
    from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS, is_secret_key

    many = "".join(f"  - '[\\w\\W]{{0,1000}}{i}'\n" for i in range(400))
    msg = _err(f"secretKeys:\n{many}")
    assert msg.startswith(f"{SRC}: secretKeys: 400 patterns; at most 64")
    long = "".join(f"  - '{'x' * 200}{i}'\n" for i in range(60))
    assert "characters of patterns; at most 8192" in _err(f"secretKeys:\n{long}")

    compiled: list[str] = []
    real = userpattern.re2.compile
    monkeypatch.setattr(userpattern.re2, "compile", lambda p, *a: compiled.append(p) or real(p, *a))
    # Patterns no other test uses: no program for them is compiled yet (no cache to clear).
    cfg = parse_config("secretKeys:\n" + "".join(f"  - 'stripe_{i}(?:_compiled_once)?.*'\n" for i in range(64)),
                       SRC, "asgard")
    combined = [p for p in compiled if "|" in p and "_compiled_once" in p]
    before = len(compiled)
    patterns = (*DEFAULT_SECRET_PATTERNS, *cfg.secret_keys)
    for k in range(50):
        assert is_secret_key(f"stripe_{k % 64}_{k}x", patterns)
        assert not is_secret_key(f"plain_{k}", patterns)
    now = [p for p in compiled if "|" in p and "_compiled_once" in p]
    assert len(now) == 1 and len(compiled) - before == 1 - len(combined), compiled[before:]  # one program, once
