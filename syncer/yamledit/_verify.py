"""Verification of a planned edit: the new text must read back as exactly the intended data.

An edit arrives as :class:`Splice` s (text replacements in one document) and the
:class:`Op` they are meant to perform.  When the document has no anchors, aliases, tags
or directives, only the lines of the block-collection entries holding every splice (plus
the blank and comment lines after them, which a ``|`` block could claim) are parsed
again: at the same columns they parse alone exactly as they do in place, and the tree and
data are then updated in place.  Otherwise, or when that check does not apply, the whole
document is parsed again and compared with the expected data.  An edit that fails is
:class:`EditRefused` and nothing changes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, NamedTuple

from ruamel.yaml.error import YAMLError

from syncer.model import Path
from syncer.yamledit import _text as tx
from syncer.yamledit._scalar import same
from syncer.yamledit._node import Node
from syncer.yamledit._tree import Doc, Step, load, mapping_key, shift, value_at


class Splice(NamedTuple):
    """Replace the text from *start* to *end* of one document by *text*."""

    start: int
    end: int
    text: str


class Op(NamedTuple):
    """What an edit does to the data at its path: the new text must read back so."""

    kind: str  # "set" | "add" | "add_many" | "append" | "delete"
    key: Any  # add, delete: the key; otherwise None
    value: Any  # set, add, append: the new value; add_many: a dict of the new keys; delete: None


class EditRefused(Exception):
    """The edit would not read back as intended (the message says how)."""


def verified(d: Doc, path: Path, steps: list[Step], splices: list[Splice], op: Op, followed: bool) -> Doc:
    """The document *d* after *splices*, once it reads back as *d*'s data changed by *op*.

    *steps* lead to the node *op* applies to (set: the value; add/delete: the mapping);
    *followed*: another document follows this one.  The result is *d* itself, updated in
    place, when a local check sufficed, otherwise the document parsed again.
    """
    new_t = d.text
    for start, end, text in sorted(splices, reverse=True):
        new_t = new_t[:start] + text + new_t[end:]
    if not d.refs and _verify_near(d, path, steps, splices, new_t, op):
        return d
    try:
        fresh = load(new_t)
    except YAMLError as exc:
        raise EditRefused(f"edit would produce invalid YAML ({str(exc).splitlines()[0]})") from None
    if len(fresh) != 1 or (followed and not new_t.endswith("\n")):
        raise EditRefused("edit would split or merge documents")
    if not same(fresh[0].data, expected(copy.deepcopy(d.data), path, op)):
        raise EditRefused("edit would not read back as the intended value")
    return fresh[0]


def expected(data: Any, rel: Path, op: Op) -> Any:
    """*data* (a private copy) after applying *op* at *rel*."""
    kind, key, value = op
    if kind == "set":
        if not rel:
            return copy.deepcopy(value)
        value_at(data, rel[:-1])[rel[-1]] = copy.deepcopy(value)
    elif kind == "add":
        value_at(data, rel)[key] = copy.deepcopy(value)
    elif kind == "append":
        value_at(data, rel).append(copy.deepcopy(value))
    elif kind == "add_many":  # value: the new keys and their values, in order
        value_at(data, rel).update(copy.deepcopy(value))
    else:
        del value_at(data, rel)[key]
    return data


def piece(text: str, column: int, kind: str, want: Any) -> Node | None:
    """Parse a few block entries alone; their root if they sit at *column* and read as *want*."""
    try:
        fresh = load(text)
    except YAMLError:
        return None
    if len(fresh) != 1 or fresh[0].refs or not same(fresh[0].data, want):
        return None
    root = fresh[0].root
    return root if root.kind == kind and not root.flow and root.start == column else None


@dataclass(frozen=True)
class _Window:
    """Entries (or items) ``first`` up to ``stop`` of a block collection, and their lines."""

    depth: int  # the collection's place on the path: steps[depth], path[:depth]
    box: Node  # the collection
    first: int  # slot of the first entry
    stop: int  # slot after the last entry
    pad: int  # column of the first entry's key or ``-``
    start: int  # start of the first entry's line
    end: int  # end of the last entry's lines and the blank or comment lines after them (before the edit)


def _verify_near(d: Doc, path: Path, steps: list[Step], splices: list[Splice], new_t: str, op: Op) -> bool:
    """True when parsing only the lines around the splices proved the edit (and *d* is updated)."""
    t, box = d.text, steps[-1].node
    if op.kind == "append":
        return False  # verified by parsing the whole document
    if op.kind in ("add", "add_many") and box.kind == "map" and not box.flow:
        return _local_insert(d, path, box, splices[0], new_t, op)
    lo, hi = min(s.start for s in splices), max(s.end for s in splices)
    spans: list[tuple[int, int, int]] = []  # (depth of the collection, first slot, end slot)
    if op.kind == "delete":
        slot = next(j for j, (k, _) in enumerate(box.items) if same(mapping_key(k), op.key))
        if slot > 0 and not box.flow:
            return _local_delete(d, path, box, slot, splices[0], new_t)
        spans.append((len(steps) - 1, 0, 2))
    spans += [(depth, steps[depth + 1].slot, steps[depth + 1].slot + 1) for depth in range(len(steps) - 2, -1, -1)]
    for depth, a, b in spans:
        box = steps[depth].node
        if box.flow:
            continue
        try:
            first = box.items[a][0].start if box.kind == "map" else tx.after_dash(t, box.items[a]) - 1
        except ValueError:
            return False
        last = box.items[b - 1][1] if box.kind == "map" else box.items[b - 1]
        s0, e0 = tx.line_start(t, first), tx.next_line(t, tx.content_end(t, last))
        if s0 <= lo and hi <= e0 and not t[s0:first].strip(" -"):
            window = _Window(depth, box, a, b, first - s0, s0, tx.past_comment_lines(t, e0))
            return _local(d, path, window, new_t, op)
    return False


def _local(d: Doc, path: Path, w: _Window, new_t: str, op: Op) -> bool:
    """Verify by parsing only the entries of window *w* (their lines after the edit)."""
    delta, live = len(new_t) - len(d.text), value_at(d.data, path[:w.depth])
    sub = new_t[w.start:w.end + delta]
    own = w.depth == len(path)  # delete on this very mapping
    if isinstance(live, dict):
        want = {k: copy.deepcopy(live[k]) for k in list(live)[w.first:w.stop] if not (own and k == op.key)}
    else:
        want = copy.deepcopy(live[w.first:w.stop])
    if not own:
        sub_key = path[w.depth] if isinstance(live, dict) else int(path[w.depth]) - w.first
        want[sub_key] = expected(want[sub_key], path[w.depth + 1:], op)
    pad = w.pad
    root = piece(" " * pad + sub[pad:], pad, w.box.kind, want) if sub[:pad] == d.text[w.start:w.start + pad] else None
    if root is None:
        return False
    shift(d.root, w.end, delta)
    shift(root, 0, w.start)
    w.box.items[w.first:w.stop] = root.items
    expected(live, path[w.depth:], op)  # the same change, in place (rel path is never empty here)
    d.text = new_t
    return True


def _local_delete(d: Doc, path: Path, box: Node, slot: int, splice: Splice, new_t: str) -> bool:
    """Verify removed entry lines by parsing the innermost entry now running into what follows.

    Whole lines of entry *slot* (> 0) went away; what follows starts at the mapping's
    column or further left, so it closes everything the previous entry opened.  Only
    that entry's innermost last part can claim the blank and comment lines now after
    it (a block scalar), so that part plus those lines is parsed again.
    """
    t, (at, stop, _) = d.text, splice
    holder, hslot, node, data = box, slot - 1, box.items[slot - 1][1], value_at(d.data, path)
    keys: list[Any] = [list(data)[slot - 1]]
    while node.kind in ("map", "seq") and not node.flow:
        data = data[keys[-1]]
        holder, hslot = node, len(node.items) - 1
        node = node.items[-1][1] if node.kind == "map" else node.items[-1]
        keys.append(list(data)[-1] if isinstance(data, dict) else hslot)
    try:
        first = holder.items[hslot][0].start if holder.kind == "map" else tx.after_dash(t, node) - 1
    except ValueError:
        return False
    s0, end = tx.line_start(t, first), tx.next_line(t, tx.content_end(t, node))
    want = {keys[-1]: data[keys[-1]]} if holder.kind == "map" else [data[keys[-1]]]
    if at < end or t[s0:first].strip(" -"):
        return False
    root = piece(" " * (first - s0) + new_t[first:tx.past_comment_lines(new_t, end)], first - s0, holder.kind, want)
    if root is None:
        return False
    del box.items[slot]
    shift(d.root, stop, at - stop)
    shift(root, 0, s0)
    holder.items[hslot] = root.items[0]
    del value_at(d.data, path)[list(value_at(d.data, path))[slot]]
    d.text = new_t
    return True


def _local_insert(d: Doc, path: Path, box: Node, splice: Splice, new_t: str, op: Op) -> bool:
    """Verify an appended ``key: value`` by parsing only the inserted lines."""
    at, _, text = splice
    lead = len(text) - len(text.lstrip("\r\n"))
    if tx.line_start(new_t, at + lead) != at + lead:
        return False
    lines = new_t[at + lead:tx.past_comment_lines(new_t, at + len(text))]
    added = op.value if op.kind == "add_many" else {op.key: op.value}
    root = piece(lines, tx.column(d.text, box.items[0][0].start), "map", added)
    if root is None:
        return False
    shift(d.root, at, len(text))
    shift(root, 0, at + lead)
    box.items += root.items
    value_at(d.data, path).update(copy.deepcopy(added))
    d.text = new_t
    return True
