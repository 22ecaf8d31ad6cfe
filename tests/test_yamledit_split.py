"""The editor parses only the documents an edit touches: the others are cut out by their
``---`` / ``...`` markers (``_tree.split``), and must be cut exactly where parsing the whole
file cuts them, on every corpus file, fidelity pair and example and on the marker corner cases."""

from __future__ import annotations

import pytest
from ruamel.yaml.error import YAMLError
from tests.conftest import DATA, ROOT

from syncer.yamledit import YamlEditError, YamlFile
from syncer.yamledit import _tree as yn

FILES = sorted(p for base in (DATA / "corpus", DATA / "fidelity", ROOT / "examples", ROOT / "hosts")
               for p in base.rglob("*") if p.suffix in (".yaml", ".yml"))

CORNERS = [
    "", "# only a comment\n", "---\n", "---\n---\n", "a: 1\n---\n", "# c\n---\na: 1\n---\nb: 2\n",
    "a: 1\n...\n", "a: 1\n...\n# after the end\n", "a: 1\n...\n---\nb: 2\n", "a: 1\n...\n...\n",
    "--- a\n--- b\n", "a: |\n  x\n---\nb: 1\n", "a: 1\r\n---\r\nb: 2\r\n", "a: 1\n---\t\nb: 2\n",
    "a: ---x\n---\nb: '--- not a marker'\n", "a: 1\n--- # comment\nb: 2\n", "a:\n- 1\n---\n- 2\n",
]


@pytest.mark.skipif(not yn.C_EVENTS, reason="ruamel.yaml.clib is not installed")
def test_documents_are_cut_where_the_parser_cuts_them() -> None:
    assert len(FILES) > 300
    cut = 0
    for name, text in [(str(p), p.read_text(encoding="utf-8")) for p in FILES] + [("corner", c) for c in CORNERS]:
        try:
            docs = yn.load(text)
        except YAMLError:
            continue  # malformed (``...`` twice): the whole text is parsed, and refused
        whole = [d.text for d in docs]
        count = yn.count_documents(text)
        pieces = yn.split(text, count) if count is not None else None
        if pieces is not None:
            cut += 1
            assert pieces == whole, (name, text[:200])
            assert [yn.load_one(p).data for p in pieces] == [d.data for d in docs], name
    assert cut > 300


def test_directives_and_a_wrong_count_parse_the_whole_text() -> None:
    assert yn.split("%YAML 1.1\n---\na: 1\n", 1) is None
    assert yn.split("a: 1\n...\n%YAML 1.1\n---\nb: 2\n", 2) is None
    assert yn.split("a: 1\n---\nb: 2\n", 3) is None
    assert yn.split("a: 1\n---\nb: 2\n", 2) == ["a: 1\n", "---\nb: 2\n"]


def test_only_the_edited_document_is_parsed() -> None:
    text = "a: 1\n---\nb: 2  # two\n---\nc: [3\n"  # the last document is malformed
    f = YamlFile(text, "f.yaml", ["a: 1\n", "---\nb: 2  # two\n", "---\nc: [3\n"])
    f.set_value(1, ("b",), 5)
    assert f.render() == "a: 1\n---\nb: 5  # two\n---\nc: [3\n"
    assert f.pieces()[0] == "a: 1\n" and f.pieces()[2] == "---\nc: [3\n"  # never parsed
    with pytest.raises(YamlEditError, match=r"^f\.yaml:\d+:\d+: "):
        f.set_value(2, ("c",), [4])  # its parse fails alone, then whole: worded as parse() words it


def test_a_piece_that_is_not_one_document_falls_back_to_the_whole_parse() -> None:
    text = "a: 1\n---\nb: 2\n"
    f = YamlFile(text, "f.yaml", ["a: 1\n---\n", "b: 2\n"])  # a wrong cut: the first piece holds two documents
    f.set_value(1, ("b",), 3)  # parses alone
    with pytest.raises(YamlEditError, match="cannot tell its documents apart"):
        f.set_value(0, ("a",), 3)  # two documents in its piece; the whole parse cuts elsewhere
    good = YamlFile(text, "f.yaml", ["a: 1\n", "---\nb: 2\n"])
    good.set_value(1, ("b",), 3)
    assert good.render() == "a: 1\n---\nb: 3\n"
    lazy = YamlFile.parse(text, "f.yaml")
    assert all(isinstance(p, str) for p in lazy.pieces())
    assert lazy.documents == [{"a": 1}, {"b": 2}] == YamlFile.parse(text, lazy=False).documents
