"""Manifests and snapshots are read with the C parser (ruamel.yaml.clib) when it is installed:
the same data as the pure parser on every corpus file, fidelity pair and example, and the
pure parser's wording for malformed YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from syncer import manifests
from syncer.errors import ConfigError

SHARED = ROOT.parent / "shared" if (ROOT.parent / "shared").is_dir() else Path("/work/shared")
FILES = sorted(p for base in (SHARED / "corpus", SHARED / "fidelity", ROOT / "examples", ROOT / "hosts")
               if base.is_dir() for p in base.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))

pytestmark = pytest.mark.skipif(not manifests.C_PARSER, reason="ruamel.yaml.clib is not installed")


def test_c_parser_reads_the_same_data_as_the_pure_one() -> None:
    assert len(FILES) > 20
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        try:
            pure = list(manifests.yaml_loader(pure=True).load_all(text))  # YAML 1.1, as kubectl reads
        except Exception:  # noqa: BLE001 - a file the pure parser refuses: ours must refuse it too
            with pytest.raises(ConfigError):
                manifests.parse_documents(text, str(path))
            continue
        got = manifests.parse_documents(text, str(path))
        assert repr(got) == repr(pure), path


def test_malformed_yaml_is_worded_as_the_pure_parser_words_it(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: [1, 2\n  b: 3\n"
    with pytest.raises(ConfigError) as with_c:
        manifests.parse_documents(text, "hosts/x/cm.yaml")
    monkeypatch.setattr(manifests, "C_PARSER", False)
    with pytest.raises(ConfigError) as pure:
        manifests.parse_documents(text, "hosts/x/cm.yaml")
    assert with_c.value.message == pure.value.message
    assert with_c.value.message.startswith("hosts/x/cm.yaml:")
