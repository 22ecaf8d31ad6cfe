"""Patch semantics: JSON merge patch, strategic merge patch and JSON patch."""

from __future__ import annotations

import copy
from typing import Any

from .managed_fields import _field, _list_key_fields, _SET_LISTS, Path


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


_DELETE = object()


def _strategic_merge(target: Any, patch: Any, path: Path, kind: str) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            fname = k.split("/", 1)[1]
            out[fname] = [x for x in out.get(fname) or [] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
            continue
        cp = path + ("f:" + k,)
        cur = out.get(k)
        if isinstance(v, list) and isinstance(cur, list):
            keys = _list_key_fields(cp, kind)
            if keys and all(isinstance(i, dict) for i in v + cur):
                mk = keys[0]
                merged = [copy.deepcopy(i) for i in cur]
                for item in v:
                    idx = next((n for n, m in enumerate(merged) if m.get(mk) == item.get(mk)), None)
                    if item.get("$patch") == "delete":
                        if idx is not None:
                            merged.pop(idx)
                    elif idx is None:
                        merged.append({a: b for a, b in item.items() if a != "$patch"})
                    else:
                        merged[idx] = _strategic_merge(merged[idx], item, cp, kind)
                out[k] = merged
            elif _field(cp) in _SET_LISTS:
                out[k] = cur + [x for x in v if x not in cur]
            else:
                out[k] = copy.deepcopy(v)
        else:
            result = _strategic_merge(cur if isinstance(cur, dict) else {}, v, cp, kind)
            if result is _DELETE:
                out.pop(k, None)
            else:
                out[k] = result
    return out


def _pointer(ptr: str) -> list[str]:
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise ValueError(f"invalid JSON pointer {ptr!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in ptr[1:].split("/")]


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test)."""
    doc = copy.deepcopy(doc)

    def parent(parts: list[str]) -> tuple[Any, str]:
        node = doc
        for p in parts[:-1]:
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node, parts[-1]

    def get(parts: list[str]) -> Any:
        node = doc
        for p in parts:
            node = node[int(p)] if isinstance(node, list) else node[p]
        return node

    def add(parts: list[str], value: Any) -> None:
        nonlocal doc
        if not parts:
            doc = value
            return
        node, last = parent(parts)
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), value)
        else:
            node[last] = value

    def remove(parts: list[str]) -> Any:
        node, last = parent(parts)
        return node.pop(int(last)) if isinstance(node, list) else node.pop(last)

    for op in ops:
        kind, parts = op.get("op"), _pointer(op.get("path", ""))
        if kind == "add":
            add(parts, copy.deepcopy(op["value"]))
        elif kind == "remove":
            remove(parts)
        elif kind == "replace":
            remove(parts)
            add(parts, copy.deepcopy(op["value"]))
        elif kind == "move":
            add(parts, remove(_pointer(op["from"])))
        elif kind == "copy":
            add(parts, copy.deepcopy(get(_pointer(op["from"]))))
        elif kind == "test":
            if get(parts) != op.get("value"):
                raise ValueError(f"testing value {op.get('path')} failed")
        else:
            raise ValueError(f"Unexpected kind: {kind}")
    return doc
