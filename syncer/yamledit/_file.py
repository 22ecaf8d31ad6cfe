"""Planning edits: :class:`YamlFile` finds the nodes an edit touches and the text to splice.

Each public edit locates its path in the node tree (:mod:`._tree`), refuses what cannot
be done surgically (paths through an alias or a ``<<`` merge, aliased anchors that would
change), works out the splices (:mod:`._plan` for a value replaced) with the text positions of
:mod:`._text` and the rendering of :mod:`._scalar`, and hands them with the intended :class:`~._verify.Op` to
:mod:`._verify`, which keeps the edit only when it reads back as intended.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from ruamel.yaml.error import YAMLError

from syncer.errors import ConfigError
from syncer.model import Path, format_path
from syncer.yamledit import _plan
from syncer.yamledit import _scalar as ys
from syncer.yamledit import _text as tx
from syncer.yamledit import _tree as yn
from syncer.yamledit._plan import replacing
from syncer.yamledit._tree import Step
from syncer.yamledit._verify import EditRefused, Op, Splice, verified
from syncer.yamlread import yaml_problem

__all__ = ["YamlEditError", "YamlFile"]

_TRAILING_COMMENT = re.compile(r"^[ \t]+(#.*)$")
_HEADER_COMMENT = re.compile(r"^[|>][-+0-9]*[ \t]+(#.*)$")


class YamlEditError(ConfigError):
    """Malformed YAML, a missing path, or an edit that cannot be made surgically."""


def _load(text: str, name: str) -> list[yn.Doc]:
    try:
        return yn.load(text)
    except YAMLError as exc:
        at, problem = yaml_problem(exc)  # where and what, as a manifest's error says them
        raise YamlEditError(f"{name}{at or ':1:1'}: {problem}") from exc


class YamlFile:
    """A YAML file (one or more documents) that can be edited without reformatting it."""

    def __init__(self, text: str, name: str, docs: list[yn.Doc] | list[yn.Doc | str]) -> None:
        """*docs*: the documents of *text* in order; a ``str`` stands for one not parsed yet,
        its text as :func:`~._tree.split` cut it, parsed when an edit or a read first needs it."""
        self.name = name
        self._original = text
        self._docs: list[yn.Doc | str] = list(docs)
        first = text.find("\n")
        self._nl = "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"

    @classmethod
    def parse(cls, text: str, name: str = "<string>", count: int | None = None, lazy: bool = True) -> YamlFile:
        """Parse *text*; malformed YAML raises ``YamlEditError("name:line:col: problem")``.

        Only the documents an edit touches are parsed by the (pure-Python) position-keeping
        parser: the others are cut out by their ``---`` markers, checked against the number of
        documents the C parser reads (*count*, when the caller has it; else read here), and
        kept as text. Without the C parser, when the cut is not sure, or not *lazy*, all are
        parsed."""
        if not lazy:
            return cls(text, name, _load(text, name))
        if count is None:
            count = yn.count_documents(text)
        pieces = yn.split(text, count) if count is not None else None
        if pieces is not None:
            return cls(text, name, list[yn.Doc | str](pieces))
        return cls(text, name, _load(text, name))

    @property
    def documents(self) -> list[Any]:
        """Plain data of every document (copies), as ruamel's safe loader gives it."""
        return [copy.deepcopy(self._parsed(i).data) for i in range(len(self._docs))]

    @property
    def changed(self) -> bool:
        return self.render() != self._original

    def render(self) -> str:
        """The text with every edit applied; the original object when nothing changed."""
        text = "".join(d if isinstance(d, str) else d.text for d in self._docs) if self._docs else self._original
        return self._original if text == self._original else text

    def pieces(self, parse: Iterable[int] = ()) -> list[yn.Doc | str]:
        """The documents as held now (parsed or as text, edited ones as edited), after
        parsing those numbered in *parse*: what a new :class:`YamlFile` of the same text
        can start from."""
        for i in parse:
            if 0 <= i < len(self._docs):
                self._parsed(i)
        return list(self._docs)

    def get(self, doc: int, path: Path) -> Any:
        try:
            return copy.deepcopy(yn.value_at(self._doc(doc, path).data, path))
        except KeyError:
            raise self._error(doc, path, "no such path") from None

    def trailing_comment(self, doc: int, path: Path) -> str | None:
        """The comment ending the line that holds the scalar at *path* (``ip: 10.0.0.1  # lab``
        -> ``# lab``; for a block scalar, the comment on its ``|``/``>`` header line), or None.
        An edit keeps it, so after a change it may describe the old value."""
        try:
            d, steps = self._locate(doc, path, replaced=False)
        except YamlEditError:
            return None
        node = steps[-1].node
        if node.kind != "scalar":
            return None
        text = d.text
        if node.style in ("|", ">"):
            eol = text.find("\n", node.start)
            header = text[node.start : eol if eol >= 0 else len(text)]
            m = _HEADER_COMMENT.match(header)
        else:
            eol = text.find("\n", node.end)
            m = _TRAILING_COMMENT.match(text[node.end : eol if eol >= 0 else len(text)])
        return m.group(1).rstrip("\r").rstrip() if m else None

    # -- edits ------------------------------------------------------------------------------

    def set_value(self, doc: int, path: Path, value: Any) -> None:
        """Replace the existing value at *path*, keeping its style where possible."""
        value = self._value(doc, path, value)
        d, steps = self._locate(doc, path)
        if ys.same(yn.value_at(d.data, path), value):
            return
        try:
            splices = replacing(d, steps, value, self._nl)
        except ValueError as exc:
            raise self._error(doc, path, str(exc)) from None
        self._commit(doc, path, steps, splices, Op("set", None, value))

    def add_key(self, doc: int, map_path: Path, key: str, value: Any) -> None:
        """Append ``key: value`` at the end of the mapping at *map_path*."""
        self.add_keys(doc, map_path, [(key, value)])

    def add_keys(self, doc: int, map_path: Path, items: list[tuple[str, Any]]) -> None:
        """Append every ``key: value`` of *items*, in order, at the end of the mapping at
        *map_path*, as one edit: one splice, one verification, so adding 10,000 keys costs
        about what adding one does (one ``add_key`` per key re-walked the document each time)."""
        if not items:
            return
        items = [(key, self._value(doc, map_path + (key,), value)) for key, value in items]
        keys = [key for key, _ in items]
        if len(set(keys)) != len(keys):
            raise self._error(doc, map_path, "the same key added twice")
        d, steps = self._locate(doc, map_path, replaced=False)
        node, t = steps[-1].node, d.text
        if node.kind == "alias":
            raise self._error(doc, map_path, f"is an alias (*{node.anchor}); edit the anchored value instead")
        current = yn.value_at(d.data, map_path)
        if current is None or current == {} and node.kind == "map":
            return self.set_value(doc, map_path, dict(items))
        if not isinstance(current, dict) or node.kind != "map":
            raise self._error(doc, map_path, "is not a mapping")
        for key in keys:
            if key in current:
                raise self._error(doc, map_path + (key,), "already exists")
        last = node.items[-1][1]
        if node.flow:
            pos = tx.content_end(t, last)
            splice = Splice(pos, pos, "".join(f", {ys.key_text(k, True)}: {ys.flow_text(v)}" for k, v in items))
        else:
            indent = tx.column(t, node.items[0][0].start)
            pos = tx.past_deeper_comments(t, tx.next_line(t, tx.content_end(t, last)), indent)
            style = _plan.style(d, node)
            lines: list[str] = []
            for i, (key, value) in enumerate(items):
                # what follows a new entry: the next new entry, or what followed the mapping
                style.blocks, style.keep = tx.block_scalar_room(t, pos, indent) if i == len(items) - 1 else (True, True)
                lines += style.attach(" " * indent + ys.key_text(key) + ":", value, indent)
            text = self._nl.join(lines) + self._nl
            if pos == len(t) and not t.endswith("\n"):
                text = self._nl + text[: -len(self._nl)]
            splice = Splice(pos, pos, text)
        op = Op("add", keys[0], items[0][1]) if len(items) == 1 else Op("add_many", None, dict(items))
        self._commit(doc, map_path, steps, [splice], op)

    def append_item(self, doc: int, seq_path: Path, value: Any) -> None:
        """Append *value* as a new last item of the sequence at *seq_path* (written whole)."""
        value = self._value(doc, seq_path, value)
        d, steps = self._locate(doc, seq_path, replaced=False)
        node, t = steps[-1].node, d.text
        if node.kind == "alias":
            raise self._error(doc, seq_path, f"is an alias (*{node.anchor}); edit the anchored value instead")
        current = yn.value_at(d.data, seq_path)
        if current is None or current == [] and node.kind == "seq":
            return self.set_value(doc, seq_path, [value])
        if not isinstance(current, list) or node.kind != "seq":
            raise self._error(doc, seq_path, "is not a sequence")
        last = node.items[-1]
        if node.flow:
            pos = tx.content_end(t, last)
            splice = Splice(pos, pos, f", {ys.flow_text(value)}")
        else:
            try:
                indent = tx.column(t, tx.after_dash(t, node.items[0]) - 1)
            except ValueError:
                raise self._error(doc, seq_path, "cannot find where its items start") from None
            pos = tx.past_deeper_comments(t, tx.next_line(t, tx.content_end(t, last)), indent)
            style = _plan.style(d, node)
            style.blocks, style.keep = tx.block_scalar_room(t, pos, indent)
            lines = style.attach(" " * indent + "-", value, indent, item=True)
            text = self._nl.join(lines) + self._nl
            if pos == len(t) and not t.endswith("\n"):
                text = self._nl + text[: -len(self._nl)]
            splice = Splice(pos, pos, text)
        self._commit(doc, seq_path, steps, [splice], Op("append", None, value))

    def delete_key(self, doc: int, map_path: Path, key: str) -> None:
        """Remove *key* (its lines in a block mapping, its entry in a flow mapping)."""
        d, steps = self._locate(doc, map_path + (key,))
        node, slot, t = steps[-2].node, steps[-1].slot, d.text
        if node.kind != "map":
            raise self._error(doc, map_path + (key,), "not a mapping key: only keys of a mapping can be deleted")
        if len(node.items) == 1:
            self.set_value(doc, map_path, {})
            return
        k, v = node.items[slot]
        following = node.items[slot + 1][0].start if slot + 1 < len(node.items) else None
        if node.flow:
            start = following if following is not None else tx.content_end(t, node.items[slot - 1][1])
            splice = Splice(k.start, start, "") if following is not None else Splice(start, tx.content_end(t, v), "")
        elif t[tx.line_start(t, k.start):k.start].strip() == "":
            splice = Splice(tx.line_start(t, k.start), tx.past_deeper_comments(t, tx.next_line(t, tx.content_end(t, v)), tx.column(t, k.start)), "")
        elif following is not None:  # first key of a compact "- key: value" item
            splice = Splice(k.start, following, "")
        else:
            raise self._error(doc, map_path + (key,), "cannot delete this key surgically")
        self._commit(doc, map_path, steps[:-1], [splice], Op("delete", key, None))

    # -- internals --------------------------------------------------------------------------

    def _error(self, doc: int, path: Path, message: str) -> YamlEditError:
        return YamlEditError(f"{self.name}: document {doc}: {format_path(path) or '<root>'}: {message}")

    def _doc(self, doc: int, path: Path) -> yn.Doc:
        if not 0 <= doc < len(self._docs):
            raise self._error(doc, path, f"no such document (file has {len(self._docs)})")
        return self._parsed(doc)

    def _parsed(self, doc: int) -> yn.Doc:
        """Document *doc*, parsed now if it was not yet.  A piece that does not parse alone
        as one document (the C parser and this one disagree) falls back to parsing the whole
        text, as :meth:`parse` does without the C parser."""
        d = self._docs[doc]
        if not isinstance(d, str):
            return d
        try:
            self._docs[doc] = parsed = yn.load_one(d)
            return parsed
        except (YAMLError, ValueError):
            pass
        docs = _load(self._original, self.name)  # raises as parse() would for malformed YAML
        if len(docs) != len(self._docs) or any(not isinstance(p, str) and p.text != q.text
                                                for p, q in zip(self._docs, docs)):
            raise YamlEditError(f"{self.name}: cannot tell its documents apart")
        self._docs = [q if isinstance(p, str) else p for p, q in zip(self._docs, docs)]
        return self._parsed(doc)

    def _value(self, doc: int, path: Path, value: Any) -> Any:
        try:
            return ys.plain(value)
        except TypeError as exc:
            raise self._error(doc, path, str(exc)) from None

    def _locate(self, doc: int, path: Path, replaced: bool = True) -> tuple[yn.Doc, list[Step]]:
        """The nodes from the root to *path*, each with its parent and slot in the parent.

        Refuses paths through aliases, and edits that would change what an alias shows:
        an aliased anchor on the way, or (when the node is *replaced*) inside the node.
        """
        d = self._doc(doc, path)
        node = d.root
        steps = [Step(node, None, -1)]
        for i, part in enumerate(path):
            if node.kind == "alias":
                raise self._error(doc, path[:i], f"goes through alias *{node.anchor}; edit the anchored value")
            slot = -1
            if node.kind == "map":
                for j, (k, _) in enumerate(node.items):
                    if ys.same(yn.mapping_key(k), part):
                        slot = j
            elif node.kind == "seq" and type(part) is int and 0 <= part < len(node.items):
                slot = part
            if slot < 0:
                raise self._error(doc, path[: i + 1], "no such path (or it comes from a << merge)")
            node = node.items[slot][1] if node.kind == "map" else node.items[slot]
            steps.append(Step(node, steps[-1].node, slot))
        for i, (node, _, _) in enumerate(steps):
            inner = node.walk() if replaced and i == len(steps) - 1 else iter((node,))
            bad = next((n.anchor for n in inner if n.kind != "alias" and n.anchor in d.aliased), None)
            if bad is not None:
                raise self._error(doc, path[:i], f"holds the anchor &{bad}, and aliases elsewhere would change too")
        return d, steps

    def _commit(self, doc: int, path: Path, steps: list[Step], splices: list[Splice], op: Op) -> None:
        """Keep the edit once it is verified (see :mod:`._verify`), or refuse it."""
        try:
            self._docs[doc] = verified(self._parsed(doc), path, steps, splices, op, doc + 1 < len(self._docs))
        except EditRefused as exc:
            raise self._error(doc, path, str(exc)) from None
