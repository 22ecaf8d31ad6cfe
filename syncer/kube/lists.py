"""The items of a LIST answer: one rule for every caller that pages through a collection.

An API server's LIST answer is ``{"kind": "<Kind>List", "metadata": {"resourceVersion",
"continue"}, "items": [...]}``; its items carry no ``apiVersion``/``kind`` of their own.
(A ``kind: List`` document in a file is unwrapped by ``kinds.list_items``.)
``named_items`` yields the items that are objects with a name, skipping anything else a
broken or hostile server might send (a missing or non-list ``items``, a non-object item).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from syncer.model import JSON


def named_items(answer: Mapping[str, object]) -> Iterator[tuple[str, JSON]]:
    """(name, object) for each item of a LIST answer that is an object with a string name."""
    items = answer.get("items")
    for item in items if isinstance(items, list) else ():
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if isinstance(name, str):
            yield name, item

