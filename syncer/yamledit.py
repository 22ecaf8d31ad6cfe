"""Byte-surgical edits of YAML manifests: change values, keep everything else.

ruamel.yaml's parser gives every node its character offsets; an edit renders only the new
value's text (see :mod:`syncer.yamlscalar`) and splices it into the original string, so
comments, quoting, indentation, flow style, anchors, ``---`` separators, CRLF line ends
(detected per file and used for new lines) and a missing final newline all survive.

Each document owns the text from its ``---`` to the next one and is parsed on its own,
so an edit can never touch another document's bytes.  Every edit is verified by parsing
again before it is kept, and must read back as exactly the intended data, or it is
refused with :class:`YamlEditError` and nothing changes.  When the document has no
anchors, aliases, tags or directives only the lines around the edit are parsed again:
the block-mapping entries or sequence items that hold it, plus the blank and comment
lines after them (a ``|`` block could claim those), which at their own columns parse
alone exactly as they do in place.  Otherwise the whole document is parsed again.  An
edit on a 200 KB file takes a few milliseconds.

Style rules: plain scalars stay plain unless the new text would read back differently
under YAML 1.2 or 1.1 (``true``, ``yes``, ``y``, ``1.0``, ``""``, ``a: b``, ``*x``, ``#x``...),
then they become double-quoted; quoted scalars keep their quote character (``'`` turns
into ``"`` only when single quotes cannot hold the text); block scalars keep ``|``/``>``,
their header, comment and indentation, and only their body lines change (the chomping
indicator follows the new value's trailing newlines).  A multi-line string written over a
*plain* scalar in block context becomes a ``|`` block scalar (a trailing comment moves to
its header line); in flow context, over a quoted scalar, or where a block scalar cannot
hold it, it becomes a one-line double-quoted string with ``\n`` escapes.  Scalars are
never folded, however long.  Mappings and lists are rendered in block style with the
document's indentation step and the sequence style used nearby (``- `` at the key's
column or indented), or in flow style inside flow collections; empty ones as ``{}``/``[]``.

Refused: paths through an alias or a ``<<`` merge, and edits that would change what an
alias shows (an aliased anchor on the value, around it, or inside a replaced value).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import ComposerError
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent, DocumentStartEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
    SequenceEndEvent,
)
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from syncer import yamlscalar as ys
from syncer.errors import ConfigError
from syncer.model import Path, format_path

__all__ = ["YamlEditError", "YamlFile"]

_KEYS = YAML(typ="safe", pure=True)
Splice = tuple[int, int, str]


class YamlEditError(ConfigError):
    """Malformed YAML, a missing path, or an edit that cannot be made surgically."""


class _Node:
    """A node with offsets into its document's text (aliases get their own node)."""

    __slots__ = ("kind", "start", "end", "style", "flow", "anchor", "tagged", "empty", "items", "rnode")

    def __init__(self, kind: str, start: int, end: int, rnode: Any) -> None:
        self.kind = kind  # "scalar" | "map" | "seq" | "alias"
        self.start, self.end, self.rnode = start, end, rnode
        self.style: str | None = None
        self.flow = self.tagged = self.empty = False
        self.anchor: str | None = None
        self.items: list[Any] = []  # map: [(key, value)], seq: [item]

    def walk(self) -> Iterator[_Node]:
        yield self
        for item in self.items:
            for part in item if self.kind == "map" else (item,):
                yield from part.walk()


@dataclass
class _Doc:
    text: str
    root: _Node
    data: Any
    refs: bool = False  # anchors, aliases, tags or directives: always re-check the whole document
    aliased: set[str] = field(default_factory=set)


class _Builder:
    """Composes documents from ruamel's parser events, keeping offsets and aliases."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.yaml = YAML(typ="safe", pure=True)
        self.events: Iterator[Any] = iter(self.yaml.parse(text))
        self.base = 0
        self.anchors: dict[str, _Node] = {}
        self.doc = _Doc("", _Node("scalar", 0, 0, None), None)

    def documents(self) -> list[_Doc]:
        docs: list[_Doc] = []
        bases: list[int] = []
        prev_end: int | None = None
        for ev in self.events:
            if not isinstance(ev, DocumentStartEvent):
                continue
            base = 0 if not docs else prev_end if prev_end is not None else ev.start_mark.index
            self.base, self.anchors = base, {}
            self.doc = _Doc("", _Node("scalar", 0, 0, None), None, bool(ev.version or ev.tags))
            self.doc.root = self.node(next(self.events))
            end = next(self.events)
            prev_end = _nextline(self.text, end.end_mark.index) if end.explicit else None
            self.doc.data = self.yaml.constructor.construct_document(self.doc.root.rnode)
            docs.append(self.doc)
            bases.append(base)
        for i, doc in enumerate(docs):
            doc.text = self.text[bases[i]:bases[i + 1] if i + 1 < len(docs) else len(self.text)]
        return docs

    def node(self, ev: Any) -> _Node:
        b, resolver = self.base, self.yaml.resolver
        if isinstance(ev, AliasEvent):
            target = self.anchors.get(ev.anchor)
            if target is None:
                raise ComposerError(None, None, f"found undefined alias {ev.anchor!r}", ev.start_mark)
            n = _Node("alias", ev.start_mark.index - b, ev.end_mark.index - b, target.rnode)
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
            n = _Node("scalar", start, end, ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=ev.style))
            n.style, n.empty = ev.style, ev.style is None and ev.value == ""
        else:
            is_map = isinstance(ev, MappingStartEvent)
            cls = MappingNode if is_map else SequenceNode
            if not explicit or str(tag) == "!":
                tag = resolver.resolve(cls, None, ev.implicit)
            n = _Node("map" if is_map else "seq", start, end, cls(tag, [], ev.start_mark, None, flow_style=ev.flow_style))
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

    def children(self, n: _Node) -> None:
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


def _load(text: str) -> list[_Doc]:
    return _Builder(text).documents()


# -- positions in a document's text ------------------------------------------------------

def _ls(t: str, i: int) -> int:
    return t.rfind("\n", 0, i) + 1


def _nextline(t: str, i: int) -> int:
    j = t.find("\n", i)
    return len(t) if j < 0 else j + 1


def _eol(t: str, i: int) -> int:
    j = t.find("\n", i)
    j = len(t) if j < 0 else j
    return j - 1 if j > i and t[j - 1] == "\r" else j


def _col(t: str, i: int) -> int:
    return i - _ls(t, i)


def _cstart(t: str, n: _Node) -> int:
    """Start of the node's content, after any anchor and tag (empty nodes: end of those)."""
    i = after = n.start
    if n.kind == "alias" or (n.anchor is None and not n.tagged):
        return i
    while t[i:i + 1] in ("&", "!"):
        while i < len(t) and t[i] not in " \t\r\n":
            i += 1
        after = i
        while i < len(t) and t[i] in (" \t" if n.empty else " \t\r\n#"):
            i = _nextline(t, i) if t[i] == "#" else i + 1
    return after if n.empty else i


def _block(t: str, n: _Node) -> tuple[int, int, int, str, int]:
    """Block scalar parts: header position, body start, body end, chomping, indent indicator."""
    h = _cstart(t, n)
    j, chomp, ind = h + 1, "", 0
    while j < len(t) and t[j] in "+-0123456789":
        chomp, ind = (t[j], ind) if t[j] in "+-" else (chomp, int(t[j]))
        j += 1
    body = _nextline(t, h)
    if chomp == "+":
        return h, body, max(n.end, body), chomp, ind
    end = i = body
    while i < n.end:
        nxt = _nextline(t, i)
        if t[i:nxt].strip():
            end = nxt
        i = nxt
    return h, body, end, chomp, ind


def _cend(t: str, n: _Node) -> int:
    """End of the node's own text (no trailing comment; block scalars: last body line)."""
    if n.empty:
        return _cstart(t, n)
    if n.kind in ("map", "seq") and not n.flow:
        return _cend(t, n.items[-1][1] if n.kind == "map" else n.items[-1])
    if n.kind == "scalar" and n.style in ("|", ">"):
        h, body, end, _, _ = _block(t, n)
        if end == body:
            return _eol(t, h)
        end -= t[end - 1] == "\n"
        return end - (t[end - 1: end] == "\r" and end > body)
    return n.end


def _dash(t: str, n: _Node) -> int:
    """Offset just after the ``-`` that introduces sequence item *n* (maybe lines above it)."""
    end = n.start
    while end > 0:
        start = _ls(t, end)
        seg = t[start:end]
        if end != n.start:  # a whole earlier line: drop its comment
            cut = next((i for i, c in enumerate(seg) if c == "#" and (i == 0 or seg[i - 1] in " \t")), len(seg))
            seg = seg[:cut]
        seg = seg.rstrip(" \t\r\n")
        if seg.endswith("-"):
            return start + len(seg)
        if seg.strip():
            break
        end = start - 1
    raise ValueError("cannot find the '-' of this sequence item")


def _colon(t: str, key: _Node) -> int:
    i = key.end
    while i < len(t) and t[i] in " \t":
        i += 1
    if t[i:i + 1] != ":":
        raise ValueError("cannot find the ':' after this key")
    return i + 1


def _key(k: _Node) -> Any:
    """The value of a scalar (or aliased scalar) mapping key; None for anything else."""
    if not isinstance(k.rnode, ScalarNode) or str(k.rnode.tag) == "tag:yaml.org,2002:merge":
        return None
    if str(k.rnode.tag) == "tag:yaml.org,2002:str":
        return k.rnode.value
    try:
        return _KEYS.constructor.construct_document(k.rnode)
    except YAMLError:
        return None


def _tail(t: str, i: int) -> int:
    """*i* moved past any blank and comment-only lines (a block scalar may claim them)."""
    while i < len(t):
        j = _nextline(t, i)
        line = t[i:j].strip()
        if line and not line.startswith("#"):
            break
        i = j
    return i


def _comments_under(t: str, i: int, indent: int) -> int:
    """*i* moved past comment lines indented deeper than *indent* (and blank lines among them)."""
    end = i
    while i < len(t):
        line = t[i:_nextline(t, i)]
        if line.strip() and not (line.lstrip().startswith("#") and line[:indent + 1].isspace()):
            break
        i = _nextline(t, i)
        end = i if line.strip() else end
    return end


def _room(t: str, at: int, indent: int) -> tuple[bool, bool]:
    """Can a new block scalar end just before line *at* (any chomping, and ``|+``)?

    Not before a comment indented deeper than *indent* (it would become content), nor at
    the end of a file without final newline; ``|+`` not before blank lines either.
    """
    i = at
    while i < len(t) and not t[i:_nextline(t, i)].strip():
        i = _nextline(t, i)
    if i >= len(t):
        return t.endswith("\n"), t.endswith("\n") and i == at
    line = t[i:_nextline(t, i)]
    deep = line.lstrip().startswith("#") and line[:indent + 1].isspace()
    return not deep, not deep and i == at


def _piece(text: str, column: int, kind: str, want: Any) -> _Node | None:
    """Parse a few block entries alone; their root if they sit at *column* and read as *want*."""
    try:
        fresh = _load(text)
    except YAMLError:
        return None
    if len(fresh) != 1 or fresh[0].refs or not ys.same(fresh[0].data, want):
        return None
    root = fresh[0].root
    return root if root.kind == kind and not root.flow and root.start == column else None


def _shift(root: _Node, at: int, delta: int) -> None:
    """Move offsets at or after *at* by *delta* (text was inserted or removed there)."""
    for n in root.walk():
        if n.start >= at:
            n.start, n.end = n.start + delta, n.end + delta
        elif n.kind in ("map", "seq") and not n.flow:
            n.end += delta if n.end >= at else 0
        elif n.end > at:  # a block scalar's trailing blank lines: they now follow the insertion
            n.end = at


def _walk(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            raise KeyError(part)
    return data


def _expected(data: Any, rel: Path, op: tuple[str, Any, Any]) -> Any:
    """*data* (a private copy) after applying ``(kind, key, value)`` at *rel*."""
    kind, key, value = op
    if kind == "set":
        if not rel:
            return copy.deepcopy(value)
        _walk(data, rel[:-1])[rel[-1]] = copy.deepcopy(value)
    elif kind == "add":
        _walk(data, rel)[key] = copy.deepcopy(value)
    else:
        del _walk(data, rel)[key]
    return data


@dataclass
class _Where:
    """Where a node sits: after a block ``key:``, a block ``-``, in a flow collection, or root."""

    kind: str  # "map" | "seq" | "flow" | "root"
    ip: int  # just after the ':' / '-' (root, flow: the content start)
    indent: int  # column of the key or dash; -1 at the root


class YamlFile:
    """A YAML file (one or more documents) that can be edited without reformatting it."""

    def __init__(self, text: str, name: str, docs: list[_Doc]) -> None:
        self.name = name
        self._original = text
        self._docs = docs
        first = text.find("\n")
        self._nl = "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"

    @classmethod
    def parse(cls, text: str, name: str = "<string>") -> YamlFile:
        """Parse *text*; malformed YAML raises ``YamlEditError("name:line:col: problem")``."""
        try:
            docs = _load(text)
        except YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            where = f"{mark.line + 1}:{mark.column + 1}" if mark is not None else "1:1"
            problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[-1]
            raise YamlEditError(f"{name}:{where}: {problem}") from exc
        return cls(text, name, docs)

    @property
    def documents(self) -> list[Any]:
        """Plain data of every document (copies), as ruamel's safe loader gives it."""
        return [copy.deepcopy(d.data) for d in self._docs]

    @property
    def changed(self) -> bool:
        return self.render() != self._original

    def render(self) -> str:
        """The text with every edit applied; the original object when nothing changed."""
        text = "".join(d.text for d in self._docs) if self._docs else self._original
        return self._original if text == self._original else text

    def get(self, doc: int, path: Path) -> Any:
        try:
            return copy.deepcopy(_walk(self._doc(doc, path).data, path))
        except KeyError:
            raise self._error(doc, path, "no such path") from None

    # -- edits ------------------------------------------------------------------------------

    def set_value(self, doc: int, path: Path, value: Any) -> None:
        """Replace the existing value at *path*, keeping its style where possible."""
        value = self._value(doc, path, value)
        d, steps = self._locate(doc, path)
        if ys.same(_walk(d.data, path), value):
            return
        try:
            splices = self._plan_set(d, steps, value)
        except ValueError as exc:
            raise self._error(doc, path, str(exc)) from None
        self._commit(doc, path, steps, splices, ("set", None, value))

    def add_key(self, doc: int, map_path: Path, key: str, value: Any) -> None:
        """Append ``key: value`` at the end of the mapping at *map_path*."""
        value = self._value(doc, map_path, value)
        d, steps = self._locate(doc, map_path, replaced=False)
        node, t = steps[-1][0], d.text
        if node.kind == "alias":
            raise self._error(doc, map_path, f"is an alias (*{node.anchor}); edit the anchored value instead")
        current = _walk(d.data, map_path)
        if current is None or current == {} and node.kind == "map":
            return self.set_value(doc, map_path, {key: value})
        if not isinstance(current, dict) or node.kind != "map":
            raise self._error(doc, map_path, "is not a mapping")
        if key in current:
            raise self._error(doc, map_path + (key,), "already exists")
        last = node.items[-1][1]
        if node.flow:
            pos = _cend(t, last)
            splice = (pos, pos, f", {ys.key_text(key, True)}: {ys.flow_text(value)}")
        else:
            indent = _col(t, node.items[0][0].start)
            pos = _comments_under(t, _nextline(t, _cend(t, last)), indent)
            style = self._style(d, node)
            style.blocks, style.keep = _room(t, pos, indent)
            lines = style.attach(" " * indent + ys.key_text(key) + ":", value, indent)
            text = self._nl.join(lines) + self._nl
            if pos == len(t) and not t.endswith("\n"):
                text = self._nl + text[: -len(self._nl)]
            splice = (pos, pos, text)
        self._commit(doc, map_path, steps, [splice], ("add", key, value))

    def delete_key(self, doc: int, map_path: Path, key: str) -> None:
        """Remove *key* (its lines in a block mapping, its entry in a flow mapping)."""
        d, steps = self._locate(doc, map_path + (key,))
        node, slot, t = steps[-2][0], steps[-1][2], d.text
        if len(node.items) == 1:
            self.set_value(doc, map_path, {})
            return
        k, v = node.items[slot]
        following = node.items[slot + 1][0].start if slot + 1 < len(node.items) else None
        if node.flow:
            start = following if following is not None else _cend(t, node.items[slot - 1][1])
            splice = (k.start, start, "") if following is not None else (start, _cend(t, v), "")
        elif t[_ls(t, k.start):k.start].strip() == "":
            splice = (_ls(t, k.start), _comments_under(t, _nextline(t, _cend(t, v)), _col(t, k.start)), "")
        elif following is not None:  # first key of a compact "- key: value" item
            splice = (k.start, following, "")
        else:
            raise self._error(doc, map_path + (key,), "cannot delete this key surgically")
        self._commit(doc, map_path, steps[:-1], [splice], ("delete", key, None))

    # -- internals --------------------------------------------------------------------------

    def _error(self, doc: int, path: Path, message: str) -> YamlEditError:
        return YamlEditError(f"{self.name}: document {doc}: {format_path(path) or '<root>'}: {message}")

    def _doc(self, doc: int, path: Path) -> _Doc:
        if not 0 <= doc < len(self._docs):
            raise self._error(doc, path, f"no such document (file has {len(self._docs)})")
        return self._docs[doc]

    def _value(self, doc: int, path: Path, value: Any) -> Any:
        try:
            return ys.plain(value)
        except TypeError as exc:
            raise self._error(doc, path, str(exc)) from None

    def _locate(self, doc: int, path: Path, replaced: bool = True) -> tuple[_Doc, list[tuple[_Node, _Node | None, int]]]:
        """The nodes from the root to *path*, each with its parent and slot in the parent.

        Refuses paths through aliases, and edits that would change what an alias shows:
        an aliased anchor on the way, or (when the node is *replaced*) inside the node.
        """
        d = self._doc(doc, path)
        node = d.root
        steps: list[tuple[_Node, _Node | None, int]] = [(node, None, -1)]
        for i, part in enumerate(path):
            if node.kind == "alias":
                raise self._error(doc, path[:i], f"goes through alias *{node.anchor}; edit the anchored value")
            slot = -1
            if node.kind == "map":
                for j, (k, _) in enumerate(node.items):
                    if ys.same(_key(k), part):
                        slot = j
            elif node.kind == "seq" and type(part) is int and 0 <= part < len(node.items):
                slot = part
            if slot < 0:
                raise self._error(doc, path[: i + 1], "no such path (or it comes from a << merge)")
            node = node.items[slot][1] if node.kind == "map" else node.items[slot]
            steps.append((node, steps[-1][0], slot))
        for i, (node, _, _) in enumerate(steps):
            inner = node.walk() if replaced and i == len(steps) - 1 else iter((node,))
            bad = next((n.anchor for n in inner if n.kind != "alias" and n.anchor in d.aliased), None)
            if bad is not None:
                raise self._error(doc, path[:i], f"holds the anchor &{bad}, and aliases elsewhere would change too")
        return d, steps

    def _style(self, d: _Doc, near: _Node | None) -> ys.Layout:
        """Indentation step and sequence style used in the document (nearest first)."""
        t, steps, seqs, local = d.text, Counter[int](), Counter[int](), None
        for m in d.root.walk():
            if m.kind != "map" or m.flow:
                continue
            for k, v in m.items:
                if v.kind in ("map", "seq") and not v.flow and v.items:
                    try:
                        first = _dash(t, v.items[0]) - 1 if v.kind == "seq" else v.items[0][0].start
                    except ValueError:
                        continue
                    off = _col(t, first) - _col(t, k.start)
                    (seqs if v.kind == "seq" else steps)[off] += 1
                    local = off if v.kind == "seq" and m is near and local is None else local
        step = next((s for s, _ in steps.most_common() if s > 0), 2)
        seq = local if local is not None else next((s for s, _ in seqs.most_common() if s >= 0), 0)
        return ys.Layout(step, seq)

    def _where(self, t: str, steps: list[tuple[_Node, _Node | None, int]]) -> _Where:
        node, parent, slot = steps[-1]
        if parent is None:
            return _Where("root", _cstart(t, node), -1)
        if parent.flow:
            return _Where("flow", _cstart(t, node), -1)
        if parent.kind == "map":
            key = parent.items[slot][0]
            return _Where("map", _colon(t, key), _col(t, key.start))
        ip = _dash(t, node)
        return _Where("seq", ip, _col(t, ip - 1))

    def _plan_set(self, d: _Doc, steps: list[tuple[_Node, _Node | None, int]], value: Any) -> list[Splice]:
        t, node, nl = d.text, steps[-1][0], self._nl
        if node.kind == "alias":
            raise ValueError(f"is an alias (*{node.anchor}); edit the anchored value instead")
        w = self._where(t, steps)
        block_scalar = node.kind == "scalar" and node.style in ("|", ">")
        multiline = isinstance(value, str) and "\n" in value
        if block_scalar and isinstance(value, str) and w.kind != "flow":
            splices = self._plan_block(t, node, value, w)
            if splices is not None:
                return splices
        inline_old = not block_scalar and (node.kind in ("scalar", "alias") or node.flow)
        if node.kind == "scalar" and inline_old and not isinstance(value, (dict, list)):
            if not (multiline and node.style is None and w.kind in ("map", "seq")):
                text = ys.scalar_text(value, node.style, w.kind == "flow")
                start, end = _cstart(t, node), _cend(t, node)
                return [(start, end, (" " + text) if node.empty and start == end and t[start - 1] != " " else text)]
        # general case: everything from the ':' / '-' to the end of the old value is replaced
        style = self._style(d, steps[-2][0] if len(steps) > 1 else None)
        cstart, cend = _cstart(t, node), _cend(t, node)
        style.blocks, style.keep = _room(t, _nextline(t, cend), w.indent)
        if w.kind == "root":
            new = style.lines(value, 0) if isinstance(value, (dict, list)) and value else [ys.flow_text(value)]
            text = nl.join(new)
            if node.empty:  # a document with no content (maybe comments): give the value its own lines
                text = text + nl if cstart == _ls(t, cstart) else nl + text
            return [(cstart, cend, text)]
        elif w.kind == "flow" or (isinstance(value, (dict, list)) and not value):
            new = [ys.flow_text(value)]
        else:
            new = style.attach("", value, w.indent, item=w.kind == "seq")
            new[0] = new[0].strip()
        if w.kind == "flow" or (inline_old and len(new) == 1):
            return [(cstart, cend, new[0])]
        same_line = _ls(t, cstart) == _ls(t, w.ip)
        first = t[w.ip:cstart] if same_line else t[w.ip:_eol(t, w.ip)]
        if block_scalar:
            first += t[cstart:_eol(t, cstart)]
        props = " ".join(p for p in first.split("#")[0].split() if p[0] in "&!")
        comment = first[first.index("#"):].strip() if "#" in first else ""
        tail = t[cend:_eol(t, cend)]
        if not inline_old:  # a comment after the old block's last line went with that line
            cend = _eol(t, cend)
        elif tail.strip() and len(new) > 1:  # `key: value  # note` -> `key: |  # note`
            comment, cend = comment or tail.strip(), _eol(t, cend)
        text = (" " + props if props else "") + (" " + new[0] if new[0] else "")
        text += (f"  {comment}" if comment else "") + "".join(nl + line for line in new[1:])
        return [(w.ip, cend, text)]

    def _plan_block(self, t: str, node: _Node, value: str, w: _Where) -> list[Splice] | None:
        """Rewrite only the body (and if needed the indicators) of a ``|``/``>`` scalar."""
        h, body, end, chomp, ind = _block(t, node)
        char = t[h]
        enc = ys.block_body(value, char == ">")
        if enc is None and char == ">":
            char, enc = "|", ys.block_body(value)
        if enc is None:
            return None
        new_chomp, lines, need = enc
        if end == len(t) and not t.endswith("\n") and new_chomp != "-":
            return None  # the file has no final newline, so this block could not end in one
        if ind:
            indent = w.indent + ind
        else:
            content = [ln for ln in t[body:end].split("\n") if ln.strip()]
            indent = len(content[0]) - len(content[0].lstrip(" ")) if content else w.indent + 2
        splices: list[Splice] = []
        j = h + 1
        while j < len(t) and t[j] in "+-0123456789":
            j += 1
        if char != t[h] or new_chomp != chomp or (need and not ind):
            digits = str(ind or indent - w.indent) if (ind or need) else ""
            splices.append((h, j, char + digits + new_chomp))
        if new_chomp == "+":
            end = max(end, node.end)
        text = "".join((" " * indent + ln if ln else "") + self._nl for ln in lines)
        if end == len(t) and not t.endswith("\n"):
            text = text[: -len(self._nl)]
        if body == len(t) and not t.endswith("\n"):
            text = self._nl + text
        splices.append((body, end, text))
        return splices

    def _commit(self, doc: int, path: Path, steps: list[tuple[_Node, _Node | None, int]], splices: list[Splice],
                op: tuple[str, Any, Any]) -> None:
        """Apply *splices* to one document, verify by parsing, then keep the result.

        *steps* lead to the node *op* applies to (set: the value; add/delete: the mapping).
        When the document has no anchors, aliases, tags or directives, only the lines of
        the block-collection entries holding every splice (plus the blank and comment
        lines after them) are parsed again: at the same columns they parse alone exactly
        as they do in place.  Otherwise, or when that check fails, the whole document.
        """
        d = self._docs[doc]
        new_t = d.text
        for start, end, text in sorted(splices, reverse=True):
            new_t = new_t[:start] + text + new_t[end:]
        if not d.refs and self._verify_near(d, path, steps, splices, new_t, op):
            return
        try:
            fresh = _load(new_t)
        except YAMLError as exc:
            raise self._error(doc, path, f"edit would produce invalid YAML ({str(exc).splitlines()[0]})") from None
        if len(fresh) != 1 or (doc + 1 < len(self._docs) and not new_t.endswith("\n")):
            raise self._error(doc, path, "edit would split or merge documents")
        if not ys.same(fresh[0].data, _expected(copy.deepcopy(d.data), path, op)):
            raise self._error(doc, path, "edit would not read back as the intended value")
        self._docs[doc] = fresh[0]

    def _verify_near(self, d: _Doc, path: Path, steps: list[tuple[_Node, _Node | None, int]],
                     splices: list[Splice], new_t: str, op: tuple[str, Any, Any]) -> bool:
        t, box = d.text, steps[-1][0]
        if op[0] == "add" and box.kind == "map" and not box.flow:
            return self._local_insert(d, path, box, splices[0], new_t, op)
        lo, hi = min(s[0] for s in splices), max(s[1] for s in splices)
        spans: list[tuple[int, int, int]] = []  # (depth of the collection, first slot, end slot)
        if op[0] == "delete":
            slot = next(j for j, (k, _) in enumerate(box.items) if ys.same(_key(k), op[1]))
            if slot > 0 and not box.flow:
                return self._local_delete(d, path, box, slot, splices[0], new_t)
            spans.append((len(steps) - 1, 0, 2))
        spans += [(depth, steps[depth + 1][2], steps[depth + 1][2] + 1) for depth in range(len(steps) - 2, -1, -1)]
        for depth, a, b in spans:
            box = steps[depth][0]
            if box.flow:
                continue
            try:
                first = box.items[a][0].start if box.kind == "map" else _dash(t, box.items[a]) - 1
            except ValueError:
                return False
            last = box.items[b - 1][1] if box.kind == "map" else box.items[b - 1]
            s0, e0 = _ls(t, first), _nextline(t, _cend(t, last))
            if s0 <= lo and hi <= e0 and not t[s0:first].strip(" -"):
                return self._local(d, path, depth, box, a, b, first - s0, s0, _tail(t, e0), new_t, op)
        return False

    def _local(self, d: _Doc, path: Path, depth: int, box: _Node, a: int, b: int, pad: int,
               s0: int, e0: int, new_t: str, op: tuple[str, Any, Any]) -> bool:
        """Verify by parsing only entries/items a..b of *box* (lines s0..e0, after the edit)."""
        delta, live = len(new_t) - len(d.text), _walk(d.data, path[:depth])
        sub = new_t[s0:e0 + delta]
        own = depth == len(path)  # delete on this very mapping
        if isinstance(live, dict):
            want = {k: copy.deepcopy(live[k]) for k in list(live)[a:b] if not (own and k == op[1])}
        else:
            want = copy.deepcopy(live[a:b])
        if not own:
            sub_key = path[depth] if isinstance(live, dict) else int(path[depth]) - a
            want[sub_key] = _expected(want[sub_key], path[depth + 1:], op)
        root = _piece(" " * pad + sub[pad:], pad, box.kind, want) if sub[:pad] == d.text[s0:s0 + pad] else None
        if root is None:
            return False
        _shift(d.root, e0, delta)
        _shift(root, 0, s0)
        box.items[a:b] = root.items
        _expected(live, path[depth:], op)  # the same change, in place (rel path is never empty here)
        d.text = new_t
        return True

    def _local_delete(self, d: _Doc, path: Path, box: _Node, slot: int, splice: Splice, new_t: str) -> bool:
        """Verify removed entry lines by parsing the innermost entry now running into what follows.

        Whole lines of entry *slot* (> 0) went away; what follows starts at the mapping's
        column or further left, so it closes everything the previous entry opened.  Only
        that entry's innermost last part can claim the blank and comment lines now after
        it (a block scalar), so that part plus those lines is parsed again.
        """
        t, (at, stop, _) = d.text, splice
        holder, hslot, node, data = box, slot - 1, box.items[slot - 1][1], _walk(d.data, path)
        keys: list[Any] = [list(data)[slot - 1]]
        while node.kind in ("map", "seq") and not node.flow:
            data = data[keys[-1]]
            holder, hslot = node, len(node.items) - 1
            node = node.items[-1][1] if node.kind == "map" else node.items[-1]
            keys.append(list(data)[-1] if isinstance(data, dict) else hslot)
        try:
            first = holder.items[hslot][0].start if holder.kind == "map" else _dash(t, node) - 1
        except ValueError:
            return False
        s0, end = _ls(t, first), _nextline(t, _cend(t, node))
        want = {keys[-1]: data[keys[-1]]} if holder.kind == "map" else [data[keys[-1]]]
        if at < end or t[s0:first].strip(" -"):
            return False
        root = _piece(" " * (first - s0) + new_t[first:_tail(new_t, end)], first - s0, holder.kind, want)
        if root is None:
            return False
        del box.items[slot]
        _shift(d.root, stop, at - stop)
        _shift(root, 0, s0)
        holder.items[hslot] = root.items[0]
        del _walk(d.data, path)[list(_walk(d.data, path))[slot]]
        d.text = new_t
        return True

    def _local_insert(self, d: _Doc, path: Path, box: _Node, splice: Splice, new_t: str,
                      op: tuple[str, Any, Any]) -> bool:
        """Verify an appended ``key: value`` by parsing only the inserted lines."""
        at, _, text = splice
        lead = len(text) - len(text.lstrip("\r\n"))
        if _ls(new_t, at + lead) != at + lead:
            return False
        piece = new_t[at + lead:_tail(new_t, at + len(text))]
        root = _piece(piece, _col(d.text, box.items[0][0].start), "map", {op[1]: op[2]})
        if root is None:
            return False
        _shift(d.root, at, len(text))
        _shift(root, 0, at + lead)
        box.items += root.items
        _walk(d.data, path)[op[1]] = copy.deepcopy(op[2])
        d.text = new_t
        return True
