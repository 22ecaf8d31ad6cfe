"""The YAML node tree syncer's editor works on, with each node's character offsets.

ruamel's composer drops the positions of aliased nodes, so this module builds its own tree
from the parser's events (``load``); :mod:`._text` finds where a value, a key's colon, a
``-`` or a block scalar's body starts and ends in it.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ruamel.yaml import YAML
from ruamel.yaml.composer import ComposerError
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent, DocumentStartEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
    SequenceEndEvent, StreamEndEvent,
)
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from syncer.model import Path
from syncer.yamledit._node import Node
from syncer.yamledit._text import next_line

KEYS = YAML(typ="safe", pure=True)


class Step(NamedTuple):
    """One node on the way from a document's root to an edited path."""

    node: Node
    parent: Node | None  # None at the root
    slot: int  # the node's index in its parent's items; -1 at the root


@dataclass
class Doc:
    text: str
    root: Node
    data: Any
    refs: bool = False  # anchors, aliases, tags or directives: always re-check the whole document
    aliased: set[str] = field(default_factory=set)


#: At most this many tabs between tokens are read past (each costs one more parse of the text).
MAX_TAB_RETRIES = 256


def _events(yaml: YAML, text: str) -> Iterator[Any]:
    """The parser's events of ``text``. ruamel's pure-Python scanner refuses a tab where YAML
    (and libyaml, and kubectl's Go reader) take it as separation whitespace -- after a value,
    before a comment, after ``-`` or ``:``. Such a tab lies between tokens, so it is read as a
    space: same offsets, same values; the text the editor splices into keeps its tab."""
    from ruamel.yaml.scanner import ScannerError

    seen = text
    for _ in range(MAX_TAB_RETRIES):
        try:
            return iter(list(yaml.parse(seen)))
        except ScannerError as exc:
            mark = exc.problem_mark
            at = mark.index if mark is not None else -1
            if "cannot start any token" not in str(exc.problem) or not 0 <= at < len(seen) or seen[at] != "\t":
                raise
            seen = seen[:at] + " " + seen[at + 1:]
    return iter(yaml.parse(seen))


class Builder:
    """Composes documents from ruamel's parser events, keeping offsets and aliases."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.yaml = YAML(typ="safe", pure=True)
        self.events: Iterator[Any] = _events(self.yaml, text)
        self.base = 0
        self.anchors: dict[str, Node] = {}
        self.doc = Doc("", Node("scalar", 0, 0, None), None)

    def documents(self) -> list[Doc]:
        docs: list[Doc] = []
        bases: list[int] = []
        prev_end: int | None = None
        for ev in self.events:
            if not isinstance(ev, DocumentStartEvent):
                continue
            base = 0 if not docs else prev_end if prev_end is not None else ev.start_mark.index
            self.base, self.anchors = base, {}
            self.doc = Doc("", Node("scalar", 0, 0, None), None, bool(ev.version or ev.tags))
            self.doc.root = self.node(next(self.events))
            end = next(self.events)
            prev_end = next_line(self.text, end.end_mark.index) if end.explicit else None
            self.doc.data = self.yaml.constructor.construct_document(self.doc.root.rnode)
            docs.append(self.doc)
            bases.append(base)
        for i, doc in enumerate(docs):
            doc.text = self.text[bases[i]:bases[i + 1] if i + 1 < len(docs) else len(self.text)]
        return docs

    def node(self, ev: Any) -> Node:
        b, resolver = self.base, self.yaml.resolver
        if isinstance(ev, AliasEvent):
            target = self.anchors.get(ev.anchor)
            if target is None:
                raise ComposerError(None, None, f"found undefined alias {ev.anchor!r}", ev.start_mark)
            n = Node("alias", ev.start_mark.index - b, ev.end_mark.index - b, target.rnode)
            n.anchor = ev.anchor
            self.doc.refs = True
            self.doc.aliased.add(ev.anchor)
            return n
        tag = ev.ctag
        explicit = tag is not None
        start, end = ev.start_mark.index - b, ev.end_mark.index - b
        if isinstance(ev, ScalarEvent):
            if not explicit or str(tag) == "!":
                tag = resolver.resolve(ScalarNode, ev.value, ev.implicit)
            n = Node("scalar", start, end, ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=ev.style))
            n.style, n.empty = ev.style, ev.style is None and ev.value == ""
        else:
            is_map = isinstance(ev, MappingStartEvent)
            cls = MappingNode if is_map else SequenceNode
            if not explicit or str(tag) == "!":
                tag = resolver.resolve(cls, None, ev.implicit)
            n = Node("map" if is_map else "seq", start, end, cls(tag, [], ev.start_mark, None, flow_style=ev.flow_style))
            n.flow = bool(ev.flow_style)
        if ev.anchor is not None:
            n.anchor = ev.anchor
            self.anchors[ev.anchor] = n
            self.doc.refs = True
        n.tagged = explicit
        self.doc.refs |= explicit
        if n.kind != "scalar":
            self.children(n)
        return n

    def children(self, n: Node) -> None:
        t, b = self.text, self.base
        stop = MappingEndEvent if n.kind == "map" else SequenceEndEvent
        while not isinstance(ev := next(self.events), stop):
            child = self.node(ev)
            if n.kind == "map":
                value = self.node(next(self.events))
                if value.empty and value.start == value.end:  # `key:` - put it right after the colon
                    i = child.end + b
                    while i < len(t) and t[i] in " \t":
                        i += 1
                    value.start = value.end = (i + 1 - b) if t[i:i + 1] == ":" else child.end
                n.items.append((child, value))
                n.rnode.value.append((child.rnode, value.rnode))
            else:
                if child.empty and child.start == child.end:  # `-` alone: right after the dash
                    i = child.start + b - 1
                    while i > 0 and t[i] in " \t\r\n":
                        i -= 1
                    if t[i] == "-":
                        child.start = child.end = i + 1 - b
                n.items.append(child)
                n.rnode.value.append(child.rnode)
        n.end = ev.end_mark.index - b
        n.rnode.end_mark = ev.end_mark


def load(text: str) -> list[Doc]:
    return Builder(text).documents()


def load_one(piece: str) -> Doc:
    """The one document *piece* holds (a text :func:`split` cut); ValueError when it holds
    another number of documents, YAMLError when it is malformed."""
    docs = load(piece)
    if len(docs) != 1:
        raise ValueError(f"{len(docs)} documents where one was cut")
    return docs[0]


#: A document marker: ``---`` or ``...`` at the start of a line, then a blank or the end.
#: YAML forbids such a line inside any content (even a block or quoted scalar), so the
#: markers alone find where :func:`load` cuts the documents.
_MARKER = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|\Z)", re.M)


def _content(span: str) -> bool:
    """Whether *span* holds more than blank, comment and directive lines."""
    return any(ln.strip() and ln.lstrip()[0] != "#" and ln[0] != "%" for ln in span.split("\n"))


def split(text: str, count: int) -> list[str] | None:
    """The texts of the *count* documents of *text* as :func:`load` cuts them (each from its
    ``---``, or from the line after the previous document's ``...``, to the next document),
    found from the markers without parsing; None when that would not be sure to cut as
    :func:`load` does (directives, a byte-order mark, or another number of documents than
    *count*, which the caller knows from a full parse by the C parser)."""
    if text.startswith(("%", "\ufeff")) or "\n%" in text:
        return None  # directives may carry over to later documents: parse the whole text
    starts = [0]
    for m in _MARKER.finditer(text):
        if m.group() == "...":
            starts.append(next_line(text, m.end()))
        elif _content(text[starts[-1]:m.start()]):
            starts.append(m.start())  # else the ``---`` of the document begun at starts[-1]
    pieces = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    while len(pieces) > 1 and not _content(pieces[-1]):  # after a final ``...``: the last document's
        tail = pieces.pop()
        pieces[-1] += tail
    if not count and pieces and not _content(pieces[0]):
        pieces = []
    return pieces if len(pieces) == count else None


C_EVENTS = importlib.util.find_spec("_ruamel_yaml") is not None


def count_documents(text: str) -> int | None:
    """How many documents the C parser (ruamel.yaml.clib) reads in *text*; None without it or
    when it refuses the text."""
    if not C_EVENTS:
        return None
    from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]  # (ruamel.yaml.clib)

    parser = CParser(text)
    n = 0
    try:
        while not isinstance(ev := parser.get_event(), StreamEndEvent):
            n += isinstance(ev, DocumentStartEvent)
    except YAMLError:
        return None
    finally:
        parser.dispose()
    return n


def mapping_key(k: Node) -> Any:
    """The value of a scalar (or aliased scalar) mapping key; None for anything else."""
    if not isinstance(k.rnode, ScalarNode) or str(k.rnode.tag) == "tag:yaml.org,2002:merge":
        return None
    if str(k.rnode.tag) == "tag:yaml.org,2002:str":
        return k.rnode.value
    try:
        return KEYS.constructor.construct_document(k.rnode)
    except YAMLError:
        return None


def shift(root: Node, at: int, delta: int) -> None:
    """Move offsets at or after *at* by *delta* (text was inserted or removed there)."""
    for n in root.walk():
        if n.start >= at:
            n.start, n.end = n.start + delta, n.end + delta
        elif n.kind in ("map", "seq") and not n.flow:
            n.end += delta if n.end >= at else 0
        elif n.end > at:  # a block scalar's trailing blank lines: they now follow the insertion
            n.end = at


def value_at(data: Any, path: Path) -> Any:
    """The part of plain *data* at *path* (KeyError when there is none)."""
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            raise KeyError(part)
    return data
