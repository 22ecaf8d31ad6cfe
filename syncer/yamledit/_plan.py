"""The splices that replace one value, keeping the text around it: in place when the new value
stays inline, a ``|``/``>`` scalar's body alone when it stays a block, else everything from the
``:``/``-`` to the end of the old value, laid out as the document lays out its others (``style``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from syncer.yamledit import _scalar as ys
from syncer.yamledit import _text as tx
from syncer.yamledit import _tree as yn
from syncer.yamledit._node import Node
from syncer.yamledit._tree import Step
from syncer.yamledit._verify import Splice

__all__ = ["replacing", "style"]


@dataclass
class _Where:
    """Where a node sits: after a block ``key:``, a block ``-``, in a flow collection, or root."""

    kind: str  # "map" | "seq" | "flow" | "root"
    ip: int  # just after the ':' / '-' (root, flow: the content start)
    indent: int  # column of the key or dash; -1 at the root


def style(d: yn.Doc, near: Node | None) -> ys.Layout:
    """Indentation step and sequence style used in the document (nearest first)."""
    t, steps, seqs, local = d.text, Counter[int](), Counter[int](), None
    for m in d.root.walk():
        if m.kind != "map" or m.flow:
            continue
        for k, v in m.items:
            if v.kind in ("map", "seq") and not v.flow and v.items:
                try:
                    first = tx.after_dash(t, v.items[0]) - 1 if v.kind == "seq" else v.items[0][0].start
                except ValueError:
                    continue
                off = tx.column(t, first) - tx.column(t, k.start)
                (seqs if v.kind == "seq" else steps)[off] += 1
                local = off if v.kind == "seq" and m is near and local is None else local
    step = next((s for s, _ in steps.most_common() if s > 0), 2)
    seq = local if local is not None else next((s for s, _ in seqs.most_common() if s >= 0), 0)
    return ys.Layout(step, seq)

def _where(t: str, steps: list[Step]) -> _Where:
    node, parent, slot = steps[-1]
    if parent is None:
        return _Where("root", tx.content_start(t, node), -1)
    if parent.flow:
        return _Where("flow", tx.content_start(t, node), -1)
    if parent.kind == "map":
        key = parent.items[slot][0]
        return _Where("map", tx.after_colon(t, key), tx.column(t, key.start))
    ip = tx.after_dash(t, node)
    return _Where("seq", ip, tx.column(t, ip - 1))

def replacing(d: yn.Doc, steps: list[Step], value: Any, nl: str) -> list[Splice]:
    """The splices that replace the value at the end of ``steps`` by ``value`` (``nl``: the
    file's line ending): in place when it stays inline, else from its ``:``/``-`` on."""
    t, node = d.text, steps[-1].node
    if node.kind == "alias":
        raise ValueError(f"is an alias (*{node.anchor}); edit the anchored value instead")
    w = _where(t, steps)
    block_scalar = node.kind == "scalar" and node.style in ("|", ">")
    multiline = isinstance(value, str) and "\n" in value
    if block_scalar and isinstance(value, str) and w.kind != "flow":
        splices = _block(t, node, value, w, nl)
        if splices is not None:
            return splices
    inline_old = not block_scalar and (node.kind in ("scalar", "alias") or node.flow)
    if node.kind == "scalar" and inline_old and not isinstance(value, (dict, list)):
        if not (multiline and node.style is None and w.kind in ("map", "seq")):
            text = ys.scalar_text(value, node.style, w.kind == "flow")
            start, end = tx.content_start(t, node), tx.content_end(t, node)
            return [Splice(start, end, (" " + text) if node.empty and start == end and t[start - 1] != " " else text)]
    # general case: everything from the ':' / '-' to the end of the old value is replaced
    layout = style(d, steps[-2].node if len(steps) > 1 else None)
    cstart, cend = tx.content_start(t, node), tx.content_end(t, node)
    layout.blocks, layout.keep = tx.block_scalar_room(t, tx.next_line(t, cend), w.indent)
    if w.kind == "root":
        new = layout.lines(value, 0) if isinstance(value, (dict, list)) and value else [ys.flow_text(value)]
        text = nl.join(new)
        if node.empty:  # a document with no content (maybe comments): give the value its own lines
            text = text + nl if cstart == tx.line_start(t, cstart) else nl + text
        return [Splice(cstart, cend, text)]
    elif w.kind == "flow" or (isinstance(value, (dict, list)) and not value):
        new = [ys.flow_text(value)]
    else:
        new = layout.attach("", value, w.indent, item=w.kind == "seq")
        new[0] = new[0].strip()
    if w.kind == "flow" or (inline_old and len(new) == 1):
        return [Splice(cstart, cend, new[0])]
    same_line = tx.line_start(t, cstart) == tx.line_start(t, w.ip)
    first = t[w.ip:cstart] if same_line else t[w.ip:tx.line_end(t, w.ip)]
    if block_scalar:
        first += t[cstart:tx.line_end(t, cstart)]
    props = " ".join(p for p in first.split("#")[0].split() if p[0] in "&!")
    comment = first[first.index("#"):].strip() if "#" in first else ""
    tail = t[cend:tx.line_end(t, cend)]
    if not inline_old:  # a comment after the old block's last line went with that line
        cend = tx.line_end(t, cend)
    elif tail.strip() and len(new) > 1:  # `key: value  # note` -> `key: |  # note`
        comment, cend = comment or tail.strip(), tx.line_end(t, cend)
    text = (" " + props if props else "") + (" " + new[0] if new[0] else "")
    text += (f"  {comment}" if comment else "") + "".join(nl + line for line in new[1:])
    return [Splice(w.ip, cend, text)]

def _block(t: str, node: Node, value: str, w: _Where, nl: str) -> list[Splice] | None:
    """Rewrite only the body (and if needed the indicators) of a ``|``/``>`` scalar."""
    h, body, end, chomp, ind = tx.block_scalar(t, node)
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
        splices.append(Splice(h, j, char + digits + new_chomp))
    if new_chomp == "+":
        end = max(end, node.end)
    text = "".join((" " * indent + ln if ln else "") + nl for ln in lines)
    if end == len(t) and not t.endswith("\n"):
        text = text[: -len(nl)]
    if body == len(t) and not t.endswith("\n"):
        text = nl + text
    splices.append(Splice(body, end, text))
    return splices
