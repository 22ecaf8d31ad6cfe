"""Round-trip edits on every manifest of the real-world corpus (tests/data/corpus).

One test per file (so a failure names it), two edits on the same ``YamlFile``:

* ``set_value`` on one scalar leaf (str/int/bool, never a key, never reached through or
  used by an alias, never inside a ``<<`` merge), picked with a fixed seed; in a third
  of the files that have ``|``/``>`` block scalars the leaf is a block scalar.  The new
  value has the old one's type and shape (strings: every letter/digit replaced by
  another of its class, blanks and line breaks kept).  Checks: only the leaf's own
  line(s) differ (single-line scalar: exactly that line; block scalar: only body lines,
  header and line count unchanged; a plain/quoted scalar folded over several source
  lines: only those lines), every other byte is identical, CRLF and the final newline
  (or its absence) are kept.
* ``add_key`` on one random block mapping: the diff is one insertion of lines at the
  mapping's indentation.  (4 files are JSON-style with no block mapping at all; there
  the key goes into a flow mapping and exactly one line changes.)
* ruamel's safe loader reads the result as the original data with exactly those two
  changes, and so does the editor itself.

The leaves and mappings are found with ruamel's own composer, independently of the
editor.  The rule "pick a different leaf if one is unrepresentable" was never needed:
every scalar leaf of the corpus qualifies (0 substituted).  To keep the run short each
file is read in pieces cut before its ``---`` lines (documents parse independently);
after the edits only the pieces that changed are parsed again, the rest are compared
byte for byte.
"""

from __future__ import annotations

import copy
import difflib
import random
import re
import string
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from tests.conftest import DATA

from syncer.yamledit import YamlFile

CORPUS = DATA / "corpus"
FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml"))
MERGE = "tag:yaml.org,2002:merge"
#: per file: (lines touched by set_value, was the leaf a block scalar, add_key went inline in a flow
#: mapping); filled by the per-file tests, completed by test_corpus_summary for any file this process
#: did not run (another xdist worker, or a -k selection), so the summary never depends on test order.
STATS: dict[Path, tuple[int, bool, bool]] = {}
pytestmark = pytest.mark.xdist_group("yamledit_corpus")


_SET: list[tuple[int, bool]] = []  # what check_set_leaf found, taken by test_corpus_file
_FLOW: list[bool] = []  # what check_add_key found, likewise


DOC_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.M)


def chunks(text: str) -> list[str]:
    """The text cut before every ``---`` line: each piece parses on its own."""
    starts = [0] + [m.start() for m in DOC_START.finditer(text) if m.start() > 0]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


class Leaf:
    def __init__(self, doc: int, path: tuple[Any, ...], node: Any, value: Any, line0: int) -> None:
        self.doc, self.path, self.node, self.value = doc, path, node, value
        self.block = node.style in ("|", ">") if isinstance(node, ScalarNode) else False
        end = node.end_mark
        self.first = node.start_mark.line + line0
        self.last = (end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line) + line0
        self.column = node.value[0][0].start_mark.column if isinstance(node, MappingNode) else 0


class Survey:
    """ruamel's own view of one file, read piece by piece (see :func:`chunks`)."""

    def __init__(self, path: Path) -> None:
        self.text = path.read_bytes().decode("utf-8")
        self.pieces = chunks(self.text)
        self.datas: list[Any] = []
        self.doc_ranges: list[range] = []  # document indexes held by each piece
        self.leaves: list[Leaf] = []
        self.maps: list[Leaf] = []
        line0 = 0
        for piece in self.pieces:
            yaml = YAML(typ="safe", pure=True)
            roots = list(yaml.compose_all(piece))
            self.seen: dict[int, int] = {}
            for root in roots:
                self.count(root)
            first = len(self.datas)
            for root in roots:
                data = yaml.constructor.construct_document(root)
                self.walk(len(self.datas), (), root, data, line0)
                self.datas.append(data)
            self.doc_ranges.append(range(first, len(self.datas)))
            line0 += piece.count("\n")

    def count(self, node: Any) -> None:
        self.seen[id(node)] = self.seen.get(id(node), 0) + 1
        if self.seen[id(node)] > 1:
            return
        for item in node.value if not isinstance(node, ScalarNode) else []:
            for part in item if isinstance(node, MappingNode) else (item,):
                self.count(part)

    def walk(self, doc: int, path: tuple[Any, ...], node: Any, data: Any, line0: int) -> None:
        if self.seen[id(node)] > 1:  # reached through an alias, or anchored and aliased
            return
        if isinstance(node, MappingNode):
            if any(str(k.tag) == MERGE for k, _ in node.value):
                return
            if node.value:
                self.maps.append(Leaf(doc, path, node, data, line0))
            for (_, v), (key, value) in zip(node.value, data.items()):
                self.walk(doc, path + (key,), v, value, line0)
        elif isinstance(node, SequenceNode):
            for i, (v, value) in enumerate(zip(node.value, data)):
                self.walk(doc, path + (i,), v, value, line0)
        elif type(data) in (str, int, bool):
            self.leaves.append(Leaf(doc, path, node, data, line0))

    def check_reads_back(self, out: str, expected: list[Any]) -> None:
        """ruamel reads *out* as *expected*; unchanged pieces are byte-identical, so only
        the changed ones are parsed again."""
        pieces = chunks(out)
        assert len(pieces) == len(self.pieces)
        for old, new, docs in zip(self.pieces, pieces, self.doc_ranges):
            if old != new:
                assert strict_equal(safe_load_all(new), [expected[i] for i in docs])
            else:
                assert all(strict_equal(self.datas[i], expected[i]) for i in docs)


@lru_cache(maxsize=None)
def survey(path: Path) -> Survey:
    return Survey(path)


def reshape(value: Any, rng: random.Random) -> Any:
    """A different value of the same type; strings keep their shape."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.randint(1, 999)
    pools = (string.ascii_lowercase, string.ascii_uppercase, string.digits)
    out = "".join(
        next((rng.choice(p) for p in pools if c in p), c) for c in value
    )
    return out if out != value else out + "x"


def rng_for(path: Path, salt: str) -> random.Random:
    return random.Random(zlib.crc32(f"{salt}:{path.relative_to(CORPUS)}".encode()))


def changed_lines(old: str, new: str) -> tuple[list[tuple[int, int]], list[str], list[str]]:
    """Old-line ranges that differ: line by line when the count is equal, else by difflib."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if len(a) == len(b):
        return [(i, i + 1) for i, (x, y) in enumerate(zip(a, b)) if x != y], a, b
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return [(i1, i2) for tag, i1, i2, _, _ in ops if tag != "equal"], a, b


def assert_crlf_kept(old: str, new: str) -> None:
    if "\r\n" in old:
        assert new.count("\n") == new.count("\r\n")


def strict_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def put(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


def safe_load_all(text: str) -> list[Any]:
    return list(YAML(typ="safe", pure=True).load_all(text))


def ids(p: Path) -> str:
    return str(p.relative_to(CORPUS))


@pytest.mark.parametrize("path", FILES, ids=ids)
def test_corpus_file(path: Path) -> None:
    """set_value on a random leaf, then add_key on a random mapping, on one YamlFile."""
    view = survey(path)
    text = view.text
    f = YamlFile.parse(text, str(path))
    assert strict_equal(f.documents, view.datas)  # also proves the piecewise reading right
    expected = copy.deepcopy(view.datas)
    after_set = check_set_leaf(path, f, text, view.leaves, expected)
    out = check_add_key(path, f, after_set, view.maps, expected)
    # (b) ruamel's safe loader reads the original data with exactly those two changes
    view.check_reads_back(out, expected)
    assert strict_equal(f.documents, expected)
    STATS[path] = (*_SET.pop(), _FLOW.pop())


def check_set_leaf(path: Path, f: YamlFile, text: str, leaves: list[Leaf], expected: list[Any]) -> str:
    assert leaves, "every corpus manifest has at least one scalar leaf"
    rng = rng_for(path, "set")
    blocks = [leaf for leaf in leaves if leaf.block]
    pool = blocks if blocks and rng.random() < 1 / 3 else leaves
    leaf = rng.choice(pool)
    new_value = reshape(leaf.value, rng)
    f.set_value(leaf.doc, leaf.path, new_value)
    put(expected[leaf.doc], leaf.path, new_value)
    out = f.render()
    assert f.changed and out != text
    assert f.get(leaf.doc, leaf.path) == new_value

    # (a) only the leaf's own lines changed
    spans, a, b = changed_lines(text, out)
    touched = sorted({i for i1, i2 in spans for i in range(i1, i2)})
    if leaf.block:
        assert len(a) == len(b), "a same-shaped block value keeps the line count"
        assert touched and leaf.first < touched[0] and touched[-1] <= leaf.last, (touched, leaf.first, leaf.last)
    elif leaf.first == leaf.last:
        assert touched == [leaf.first] and len(a) == len(b), (touched, leaf.first)
    else:  # a plain/quoted scalar folded over several lines in the source
        assert touched and leaf.first <= touched[0] and touched[-1] <= leaf.last
    _SET.append((len(touched), leaf.block))

    # (c) every byte outside those lines is identical; CRLF and the final newline kept
    head = sum(len(line) for line in a[: touched[0]])
    tail = sum(len(line) for line in a[touched[-1] + 1:])
    assert out[:head] == text[:head] and out[len(out) - tail:] == text[len(text) - tail:]
    assert_crlf_kept(text, out)
    assert out.endswith("\n") == text.endswith("\n")
    return out


def check_add_key(path: Path, f: YamlFile, text: str, maps: list[Leaf], expected: list[Any]) -> str:
    """Block mappings get new lines inserted; files without any (JSON-style) get ``, k: v``."""
    rng = rng_for(path, "add")
    block = [m for m in maps if not m.node.flow_style]
    target = rng.choice(block or maps)
    key = f"syncer-added-{rng.randint(0, 999)}"
    value: Any = rng.choice(["plain value", 42, True, {"nested": "x", "list": [1, "two"]}, ["a", {"b": 1}]])
    f.add_key(target.doc, target.path, key, value)
    holder = expected[target.doc]
    for part in target.path:
        holder = holder[part]
    holder[key] = value
    out = f.render()
    assert_crlf_kept(text, out)
    assert out.endswith("\n") == text.endswith("\n")
    _FLOW.append(not block)
    if not block:
        spans, a, b = changed_lines(text, out)
        assert len(spans) == 1 and len(a) == len(b) and f", {key}: " in out
        return out

    eol = "\r\n" if "\r\n" in text else "\n"
    old, new = text, out
    if not text.endswith("\n"):  # the old last line gains a line end: compare as if it had one
        old, new = text + eol, out + eol
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    assert len(ops) == 1 and ops[0][0] == "insert", ops
    _, i1, _, j1, j2 = ops[0]
    indent = target.column
    assert b[j1].startswith(" " * indent + key + ":")
    assert all(line.startswith(" " * indent) or not line.strip() for line in b[j1:j2])
    return out


def test_corpus_summary() -> None:
    """Prints the figures (``-s`` shows them); every corpus file is edited exactly."""
    for path in FILES:
        if path not in STATS:
            test_corpus_file(path)
    n = len(STATS)
    lines = [x for x, _, _ in STATS.values()]
    plain = [x for x, b, _ in STATS.values() if not b]
    blocks = [x for x, b, _ in STATS.values() if b]
    print(
        f"\ncorpus: {n}/{len(FILES)} files edited exactly ({100 * n / len(FILES):.0f}%), 0 leaves substituted; "
        f"lines touched per set_value: mean {sum(lines) / n:.2f} "
        f"(single-line/flow scalars {sum(plain) / max(len(plain), 1):.2f} over {len(plain)}, "
        f"block scalars {sum(blocks) / max(len(blocks), 1):.2f} over {len(blocks)}); "
        f"add_key inline in a flow mapping (no block mapping in the file): {sum(f for _, _, f in STATS.values())}"
    )
    assert n == len(FILES) and set(STATS) == set(FILES)
