"""Positions in a document's text: lines, a node's content, a key's ``:``, an item's ``-``.

Offsets are character indexes into one document's text (see :class:`~._tree.Doc`; nodes: :class:`~._node.Node`).  Line
ends may be ``\\n`` or ``\\r\\n``; a position "at a line end" is before the ``\\r``.
"""

from __future__ import annotations

from typing import NamedTuple

from syncer.yamledit._node import Node


def line_start(t: str, i: int) -> int:
    """Offset of the first character of the line holding *i*."""
    return t.rfind("\n", 0, i) + 1


def next_line(t: str, i: int) -> int:
    """Offset of the line after the one holding *i* (the text's end on its last line)."""
    j = t.find("\n", i)
    return len(t) if j < 0 else j + 1


def line_end(t: str, i: int) -> int:
    """Offset of the line end (before ``\\r\\n`` or ``\\n``) of the line holding *i*."""
    j = t.find("\n", i)
    j = len(t) if j < 0 else j
    return j - 1 if j > i and t[j - 1] == "\r" else j


def column(t: str, i: int) -> int:
    return i - line_start(t, i)


def content_start(t: str, n: Node) -> int:
    """Start of the node's content, after any anchor and tag (empty nodes: end of those)."""
    i = after = n.start
    if n.kind == "alias" or (n.anchor is None and not n.tagged):
        return i
    while t[i:i + 1] in ("&", "!"):
        while i < len(t) and t[i] not in " \t\r\n":
            i += 1
        after = i
        while i < len(t) and t[i] in (" \t" if n.empty else " \t\r\n#"):
            i = next_line(t, i) if t[i] == "#" else i + 1
    return after if n.empty else i


class BlockScalar(NamedTuple):
    """Where the parts of a ``|``/``>`` scalar sit, and its header's indicators."""

    header: int  # the ``|`` or ``>``
    body: int  # first body line
    end: int  # after the last non-blank body line (``|+``: after the trailing blank lines)
    chomp: str  # "", "-" or "+"
    indent: int  # the indentation indicator, 0 when there is none


def block_scalar(t: str, n: Node) -> BlockScalar:
    h = content_start(t, n)
    j, chomp, ind = h + 1, "", 0
    while j < len(t) and t[j] in "+-0123456789":
        chomp, ind = (t[j], ind) if t[j] in "+-" else (chomp, int(t[j]))
        j += 1
    body = next_line(t, h)
    if chomp == "+":
        return BlockScalar(h, body, max(n.end, body), chomp, ind)
    end = i = body
    while i < n.end:
        nxt = next_line(t, i)
        if t[i:nxt].strip():
            end = nxt
        i = nxt
    return BlockScalar(h, body, end, chomp, ind)


def content_end(t: str, n: Node) -> int:
    """End of the node's own text (no trailing comment; block scalars: last body line)."""
    if n.empty:
        return content_start(t, n)
    if n.kind in ("map", "seq") and not n.flow:
        return content_end(t, n.items[-1][1] if n.kind == "map" else n.items[-1])
    if n.kind == "scalar" and n.style in ("|", ">"):
        h, body, end, _, _ = block_scalar(t, n)
        if end == body:
            return line_end(t, h)
        end -= t[end - 1] == "\n"
        return end - (t[end - 1: end] == "\r" and end > body)
    return n.end


def after_dash(t: str, n: Node) -> int:
    """Offset just after the ``-`` that introduces sequence item *n* (maybe lines above it)."""
    end = n.start
    while end > 0:
        start = line_start(t, end)
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


def after_colon(t: str, key: Node) -> int:
    """Offset just after the ``:`` that follows mapping key *key*."""
    i = key.end
    while i < len(t) and t[i] in " \t":
        i += 1
    if t[i:i + 1] != ":":
        raise ValueError("cannot find the ':' after this key")
    return i + 1


def past_comment_lines(t: str, i: int) -> int:
    """*i* moved past any blank and comment-only lines (a block scalar may claim them)."""
    while i < len(t):
        j = next_line(t, i)
        line = t[i:j].strip()
        if line and not line.startswith("#"):
            break
        i = j
    return i


def past_deeper_comments(t: str, i: int, indent: int) -> int:
    """*i* moved past comment lines indented deeper than *indent* (and blank lines among them)."""
    end = i
    while i < len(t):
        line = t[i:next_line(t, i)]
        if line.strip() and not (line.lstrip().startswith("#") and line[:indent + 1].isspace()):
            break
        i = next_line(t, i)
        end = i if line.strip() else end
    return end


def block_scalar_room(t: str, at: int, indent: int) -> tuple[bool, bool]:
    """Can a new block scalar end just before line *at* (any chomping, and ``|+``)?

    Not before a comment indented deeper than *indent* (it would become content), nor at
    the end of a file without final newline; ``|+`` not before blank lines either.
    """
    i = at
    while i < len(t) and not t[i:next_line(t, i)].strip():
        i = next_line(t, i)
    if i >= len(t):
        return t.endswith("\n"), t.endswith("\n") and i == at
    line = t[i:next_line(t, i)]
    deep = line.lstrip().startswith("#") and line[:indent + 1].isspace()
    return not deep, not deep and i == at
