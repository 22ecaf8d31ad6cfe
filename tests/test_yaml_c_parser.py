"""Manifests and snapshots are read with the C parser (ruamel.yaml.clib) when it is installed,
their documents built by syncer straight from its nodes: the same data as the pure parser with
the same settings (YAML 1.1 as kubectl reads it) on every corpus file, fidelity pair and
example, and the pure parser's wording for malformed YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import DATA, ROOT

from syncer import yamlread
from syncer.errors import ConfigError

FILES = sorted(p for base in (DATA / "corpus", DATA / "fidelity", ROOT / "examples", ROOT / "hosts")
               if base.is_dir() for p in base.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))

pytestmark = pytest.mark.skipif(not yamlread.C_PARSER, reason="ruamel.yaml.clib is not installed")


def test_c_parser_reads_the_same_data_as_the_pure_one() -> None:
    assert len(FILES) > 20
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        try:
            pure = list(yamlread.yaml_loader(pure=True).load_all(text))  # YAML 1.1, as kubectl reads
        except Exception:  # noqa: BLE001 - a file the pure parser refuses: ours must refuse it too
            with pytest.raises(ConfigError):
                yamlread.parse_documents(text, str(path))
            continue
        got = yamlread.parse_documents(text, str(path))
        assert repr(got) == repr(pure), path


def test_malformed_yaml_is_worded_as_the_pure_parser_words_it(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: [1, 2\n  b: 3\n"
    with pytest.raises(ConfigError) as with_c:
        yamlread.parse_documents(text, "hosts/x/cm.yaml")
    monkeypatch.setattr(yamlread, "C_PARSER", False)
    with pytest.raises(ConfigError) as pure:
        yamlread.parse_documents(text, "hosts/x/cm.yaml")
    assert with_c.value.message == pure.value.message
    assert with_c.value.message.startswith("hosts/x/cm.yaml:")


ODD = [
    "a: &x {b: [1, 2]}\nc: *x\nd: *x\n",  # aliases share one object, as ruamel builds them
    "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",  # merge keys: ruamel's constructor
    "i: [0o17, 0x1F, 1_000, -3, +4, 0]\nf: [.inf, -.Inf, .nan, 1e3, 1.5, -0.0]\n",
    "b: [true, True, FALSE, yes, no, on, off, y, n]\nn: [~, null, Null, ]\ne:\n",
    "t: 2026-06-02T18:40:11Z\nd: 2026-06-02\ns: !!str 123\nk: !!binary aGVsbG8=\n",
    "? [a, b]\n: list key\n1: int key\nnull: null key\n3.5: float key\n",
    "set: !!set {a, b}\nomap: !!omap [{a: 1}, {b: 2}]\n",
    "--- \n...\n---\nplain\n--- [1]\n",
    "quoted: ['1', \"2\", '', \"\"]\nblock: |\n  two\n  lines\nfolded: >-\n  a\n  b\n",
]


@pytest.mark.parametrize("text", ODD)
def test_unusual_documents_read_as_the_pure_parser_reads_them(text: str) -> None:
    pure = list(yamlread.yaml_loader(pure=True).load_all(text))  # as kubectl reads
    got = yamlread.parse_documents(text, "odd.yaml")
    assert repr(got) == repr(pure)
    if text.startswith("a: &x"):
        assert got[0]["c"] is got[0]["d"]


@pytest.mark.parametrize("text", ["a: 1\na: 2\n", "x: !custom 1\n", "a: &a [*a]\n"])
def test_refusals_are_worded_as_before(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        expected: object = list(yamlread.yaml_loader(pure=True).load_all(text))
    except Exception:  # noqa: BLE001 - refused: ours refuses with the same message
        monkeypatch.setattr(yamlread, "C_PARSER", False)
        with pytest.raises(ConfigError) as pure:
            yamlread.parse_documents(text, "odd.yaml")
        monkeypatch.undo()
        with pytest.raises(ConfigError) as ours:
            yamlread.parse_documents(text, "odd.yaml")
        assert ours.value.message == pure.value.message
        return
    assert repr(yamlread.parse_documents(text, "odd.yaml")) == repr(expected)
