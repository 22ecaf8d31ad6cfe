"""The secret policy of detection: which differences look like a secret (never copied into git,
never shown), and the mask of a Secret's own values. Pure; the key-name rules are ``redact``'s,
the value judgements ``secrets.values``'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from syncer.cache import Caches
from syncer.secrets import values
from syncer.detect.diff import FieldDiff, compare
from syncer.model import JSON, DriftClass, Path, format_path
from syncer.detect.normalize import normalize
from syncer.secrets.redact import CONFIGMAP_KEYED, NAMED_MAPS, is_secret_key, keyed_map


def secret_mask(value: Any) -> Any:
    """A Secret's value as shown: a short digest, never the value."""
    if value is None:
        return None
    digest = hashlib.sha256(repr(value).encode()).hexdigest()[:8]
    return f"‹secret sha256:{digest}›"


def _at(doc: Any, path: Path) -> Any:
    """The node at ``path`` in ``doc``, or None."""
    for part in path:
        if isinstance(part, int) and isinstance(doc, list) and 0 <= part < len(doc):
            doc = doc[part]
        elif isinstance(part, str) and isinstance(doc, dict):
            doc = doc.get(part)
        else:
            return None
    return doc


def _secret_item(item: Any, patterns: Sequence[str]) -> str | None:
    """A ``{name, value}`` list item (an env var, a parameter) whose name looks secret."""
    if isinstance(item, dict) and isinstance(item.get("name"), str) and item.get("value") not in (None, ""):
        if is_secret_key(item["name"], patterns):
            return f"item named {item['name']!r}"
    return None


def _secret_inside(value: Any, patterns: Sequence[str]) -> str | None:
    """Why a whole value (an item, a container, a list, a template) added, removed or
    changed holds a secret at any depth: a ``{name, value}`` item with a secret-looking name
    (an env var ``DB_PASSWORD`` of a second container), a secret-looking key of a nested
    ``annotations``/``labels`` map, or of the ``data``/``binaryData`` of a nested
    ConfigMap. Walked without recursion; the live object was bounded (``bounds.check_nodes``)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        if why := _secret_item(node, patterns):
            return why
        maps = [node.get(k) for k in NAMED_MAPS]
        if node.get("kind") == "ConfigMap":
            maps += [node.get(k[0]) for k in CONFIGMAP_KEYED]
        for keyed in maps:
            if isinstance(keyed, dict):
                for key in keyed:
                    if is_secret_key(str(key), patterns):
                        return f"key name {key!r}"
        stack.extend(node.values())
    return None


def _named_item(fd: FieldDiff, git_doc: Any, live_doc: Any, patterns: Sequence[str]) -> str | None:
    """Why a difference inside a named list item is secret: the ``value`` of an env var
    called ``DB_PASSWORD`` is one whatever the kind (``valueFrom`` references are not),
    also deep inside a whole item or list added, removed or changed."""
    for value in (fd.live, fd.git):
        if why := _secret_inside(value, patterns):
            return why
    if len(fd.path) >= 2 and fd.path[-1] == "value" and isinstance(fd.path[-2], int):
        item = _at(git_doc, fd.path[:-1]) if fd.git is not None else None
        if not isinstance(item, dict) and fd.live is not None:
            item = _at(live_doc, fd.where_live[:-1])
        if isinstance(item, dict) and isinstance(item.get("name"), str) and is_secret_key(item["name"], patterns):
            return f"item named {item['name']!r}"
    for doc, where, value in ((live_doc, fd.where_live, fd.live), (git_doc, fd.path, fd.git)):  # ``--db-password``, then it
        index = where[-1] if value is not None and where else None
        items = _at(doc, where[:-1]) if isinstance(index, int) else None
        if isinstance(items, list) and isinstance(index, int) and (why := values.option_value(items, index, patterns)):
            return why
    return None


def looks_secret(kind: str, fd: FieldDiff, patterns: Sequence[str], git_doc: Any = None,
                  live_doc: Any = None, *, caches: Caches | None = None) -> str | None:
    """Why the difference ``fd`` looks like a secret (never copied, never shown), else None:
    a secret-looking key of a ConfigMap's data or of annotations/labels, the value of a list
    item with a secret-looking name, or a secret inside the value (``values.judge``)."""
    path = fd.path
    if path and keyed_map(kind, path[:-1]) and is_secret_key(str(path[-1]), patterns):
        return f"key name {path[-1]!r}"
    if why := _named_item(fd, git_doc, live_doc, patterns):
        return why
    # inside the value: a credential's shape, a file's secret key, binaryData decoded (``secrets``)
    binary = kind == "ConfigMap" and path[:1] == ("binaryData",)
    why = (values.judge(fd.live, patterns, binary=binary, caches=caches)
           or values.judge(fd.git, patterns, binary=binary, caches=caches))
    # a config file whose only secret-looking lines are the same on both sides: its other lines go
    if why and not binary and isinstance(fd.git, str) and isinstance(fd.live, str) \
            and values.only_unchanged_secret_lines(fd.git, fd.live, patterns):
        return None
    return why


def judge_secrets(kind: str, fds: list[FieldDiff], patterns: Sequence[str], git_doc: Any = None,
                   live_doc: Any = None, *, caches: Caches | None = None) -> list[tuple[FieldDiff, str | None]]:
    """Each difference with why it looks secret; a whole map added live (ConfigMap data,
    annotations, labels) is judged key by key: its secret keys become differences of their
    own, the rest stays one. ``caches``: where the judgements of texts are remembered (None:
    nowhere)."""
    out: list[tuple[FieldDiff, str | None]] = []
    for fd in fds:
        if keyed_map(kind, fd.path) and isinstance(fd.live, dict) and not isinstance(fd.git, dict):
            keyed = {k: replace(fd, path=fd.path + (k,), git=None, live=v, cls=DriftClass.ADDED,
                                live_path=fd.where_live + (k,)) for k, v in fd.live.items()}
            why = {k: looks_secret(kind, one, patterns, caches=caches) for k, one in keyed.items()}
            if any(why.values()):
                rest = {k: v for k, v in fd.live.items() if not why[k]}
                if rest:
                    out.append((replace(fd, live=rest), None))
                out += [(keyed[k], w) for k, w in why.items() if w]
                continue
        out.append((fd, looks_secret(kind, fd, patterns, git_doc, live_doc, caches=caches)))
    return out


def secret_fields(kind: str, obj: JSON, patterns: Sequence[str],
                  caches: Caches | None = None) -> list[tuple[str, str]]:
    """(field, why) of each part of a whole object that looks secret, judged as detection judges a
    difference: as if git declared only the object's identity and a person had added the rest
    live (an untracked object proposed as a new file: ``syncer.writeback.untracked``)."""
    live = normalize(obj)
    found_meta = live.get("metadata")
    meta: JSON = found_meta if isinstance(found_meta, dict) else {}
    git: JSON = {k: live[k] for k in ("apiVersion", "kind") if k in live}
    git["metadata"] = {**{k: v for k, v in meta.items() if k in ("name", "namespace")}, "labels": {}, "annotations": {}}
    found = compare(kind, git, live, moved_by=lambda _path: True)
    return [(format_path(fd.path), why) for fd, why in judge_secrets(kind, found, patterns, git, live, caches=caches)
            if why]
