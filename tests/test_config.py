"""syncer.yaml is parsed strictly: every mistake is one line naming file and field."""

from __future__ import annotations

import pytest

from syncer.config import parse_config, parse_duration
from syncer.errors import ConfigError
from syncer.model import Track

SRC = "hosts/asgard/syncer.yaml"


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
