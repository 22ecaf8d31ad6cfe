"""The node of a parsed document: its kind, offsets into the text and children (built by
:mod:`._tree`, located in the text by :mod:`._text`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Node:
    """A node with offsets into its document's text (aliases get their own node)."""

    __slots__ = ("kind", "start", "end", "style", "flow", "anchor", "tagged", "empty", "items", "rnode")

    def __init__(self, kind: str, start: int, end: int, rnode: Any) -> None:
        self.kind = kind  # "scalar" | "map" | "seq" | "alias"
        self.start, self.end, self.rnode = start, end, rnode
        self.style: str | None = None
        self.flow = self.tagged = self.empty = False
        self.anchor: str | None = None
        self.items: list[Any] = []  # map: [(key, value)], seq: [item]

    def walk(self) -> Iterator[Node]:
        yield self
        for item in self.items:
            for part in item if self.kind == "map" else (item,):
                yield from part.walk()
