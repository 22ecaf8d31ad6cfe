"""The compact form of a live object: what the watch cache keeps of each object it tracks.

A sidecar holds every tracked object for as long as it runs; decoded JSON costs several times
its text (a dict per map, a string per key and per value), and at tens of thousands of objects
that is most of the process. The compact form keeps what detection reads, in fewer bytes:

* **dropped**: ``status`` and the metadata no reader of the cache uses (``creationTimestamp``,
  ``selfLink``). Normalization drops them before any comparison (``detect.normalize``), the
  watch reads resourceVersion from the event itself, and untracked objects are listed from the
  API server, never read from here. Change detection is not affected: the cache hashes the
  object as it arrived, before compacting (``livecache._digest``).
* **shared**: every map key and every short string value is one interned string for the whole
  process (``ConfigMap``, ``v1``, ``LOG_LEVEL``, a namespace, a manager's name, a time many
  objects were written at); equal managedFields ``fieldsV1`` trees are one tree, equal entries
  one entry, and equal lists of entries one list. Objects written by the same tools carry the
  same trees, which are the largest part of an object as the API server sends it.
* **git's own**: a top-level field (``data``, ``spec``, ``subsets``, ...) or the labels that
  are the same value live as in git (an object in sync) are held as git's parsed subtree, which
  the sidecar holds anyway.
* **packed**: the last-applied configuration annotation (a copy of the whole manifest, the
  longest string of most objects, read only for an object with differences: a base for
  direction, ``detect.bases``) is held compressed against the first one of its kind
  (``recordtext.Texts``; some 450 bytes -> 60), ``normalize.PackedText`` reads it back.
* **kept as they are**: every other field, the other annotations (``detect.gitops`` reads the
  GitOps tracking ones),
  every managedFields entry (manager, operation, time: provenance and ownership),
  resourceVersion, uid, generation.

Nothing is dropped for not being declared in git: git may start declaring a field at any pull,
and an object compacted down to git's old fields would then read as lacking it until re-listed.
Sharing git's subtrees loses nothing: they are shared only where equal.

The compact object is read-only: its strings and subtrees are shared with other objects
(``LiveCache.immutable``). ``Shared`` holds the tables; one per cache, guarded by its lock.
"""

from __future__ import annotations

import sys
from typing import Any

from syncer.detect.normalize import LAST_APPLIED, PackedText
from syncer.sidecar.recordtext import Texts

__all__ = ["DROPPED", "DROPPED_METADATA", "SHORT", "Shared", "compact", "same", "words"]

#: Top-level fields no reader of the watch cache uses.
DROPPED = frozenset({"status"})
#: Metadata fields no reader of the watch cache uses (normalization drops them too).
DROPPED_METADATA = frozenset({"creationTimestamp", "selfLink"})
#: String values up to this many characters are interned: names, versions, small settings and
#: times repeat across objects; longer values (addresses lists, embedded files) rarely do.
SHORT = 40
#: Metadata values that are one object's own (never the same in two objects): kept as decoded,
#: not interned (the interpreter's table of interned strings would hold one more entry per
#: object for nothing).
OWN_METADATA = frozenset({"uid", "resourceVersion"})
#: Distinct managedFields trees, entries and entry lists kept for sharing (a table that fills
#: is emptied: the objects keep what they share, later ones share anew).
MAX_SHARED = 4096
#: A last-applied configuration longer than this is held packed (a shorter one costs less as it is).
PACK_OVER = 128


class Shared:
    """The tables of one cache's shared managedFields parts, by content."""

    def __init__(self, limit: int = MAX_SHARED) -> None:
        self.limit = limit
        self.trees: dict[Any, Any] = {}
        self.entries: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.lists: dict[tuple[int, ...], list[Any]] = {}
        self.texts = Texts()  # last-applied configurations, packed against the first of their kind

    def held(self, table: dict[Any, Any], key: Any, value: Any) -> Any:
        found = table.get(key)
        if found is None:
            if len(table) >= self.limit:
                table.clear()
            table[key] = found = value
        return found


def words(value: Any) -> Any:
    """``value`` with its keys and short strings interned (maps and lists rebuilt, once)."""
    if isinstance(value, dict):
        return {sys.intern(k) if type(k) is str else k: words(v) for k, v in value.items()}
    if isinstance(value, list):
        return [words(v) for v in value]
    if type(value) is str and len(value) <= SHORT:
        return sys.intern(value)
    return value


def _tree_key(tree: Any) -> Any:
    """A hashable key equal for equal fieldsV1 trees (maps of maps; leaves ``{}``)."""
    if isinstance(tree, dict):
        return tuple((k, _tree_key(v)) for k, v in tree.items())
    if isinstance(tree, list):
        return ("[]", tuple(_tree_key(v) for v in tree))
    return tree


def _entries(entries: list[Any], shared: Shared) -> list[Any]:
    out: list[Any] = []
    for entry in entries:
        if not isinstance(entry, dict):
            out.append(entry)
            continue
        entry = words(entry)
        tree = entry.get("fieldsV1")
        if isinstance(tree, dict) and tree:
            entry["fieldsV1"] = shared.held(shared.trees, _tree_key(tree), tree)
        try:
            key = tuple((k, id(v) if k == "fieldsV1" else v) for k, v in entry.items())
            hash(key)
        except TypeError:  # a value that is no scalar (a hostile server's entry): kept alone
            out.append(entry)
            continue
        out.append(shared.held(shared.entries, key, entry))
    held: list[Any] = shared.held(shared.lists, tuple(map(id, out)), out)
    return held


def same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same JSON value, types included (``1`` is not ``True`` nor ``1.0``:
    a comparison tells them apart). The order of a map's keys does not count: the API server
    writes them in an order of its own (Go's, sorted), which says nothing."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return len(a) == len(b) and all(k in b and same(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


def _part(value: Any, declared: Any) -> Any:
    """A live subtree, as git's own subtree where the two are the same value (in sync: the
    usual case), else with its words interned."""
    if declared is not None and same(value, declared):
        return declared
    return words(value)


def _annotations(notes: dict[str, Any], shared: Shared, kind: Any) -> dict[str, Any]:
    """The annotations with their words interned and a long last-applied configuration packed."""
    held: dict[str, Any] = words(notes)
    text = notes.get(LAST_APPLIED)
    if type(text) is str and len(text) > PACK_OVER:
        name = sys.intern(kind) if type(kind) is str else "?"
        held[LAST_APPLIED] = PackedText(shared.texts, name, shared.texts.pack(name, text))
    return held


def compact(obj: dict[str, Any], shared: Shared, declared: dict[str, Any] | None = None) -> dict[str, Any]:
    """The compact form of ``obj`` (a live object as decoded); ``obj`` itself is not changed.

    ``declared``: the object as git declares it, when known. A top-level field (or the labels)
    that is the same value in git is held as git's subtree itself, no copy: the content is the
    same whatever git declares later (git's parsed objects are read-only too)."""
    git: dict[str, Any] = declared if isinstance(declared, dict) else {}
    found = git.get("metadata")
    git_meta: dict[str, Any] = found if isinstance(found, dict) else {}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key in DROPPED:
            continue
        if key == "metadata" and isinstance(value, dict):
            meta: dict[str, Any] = {}
            for mkey, mvalue in value.items():
                if mkey in DROPPED_METADATA:
                    continue
                if mkey == "managedFields" and isinstance(mvalue, list):
                    meta["managedFields"] = _entries(mvalue, shared)
                elif mkey in OWN_METADATA:
                    meta[sys.intern(mkey)] = mvalue
                elif mkey == "annotations" and isinstance(mvalue, dict):
                    meta["annotations"] = _annotations(mvalue, shared, obj.get("kind"))
                else:
                    meta[sys.intern(mkey)] = _part(mvalue, git_meta.get(mkey) if mkey == "labels" else None)
            value = meta
        else:
            value = _part(value, git.get(key) if key not in ("apiVersion", "kind") else None)
        out[sys.intern(key) if type(key) is str else key] = value
    return out
