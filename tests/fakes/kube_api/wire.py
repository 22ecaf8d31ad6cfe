"""Small wire-format helpers: RFC 3339 times, Go's JSON encoding, the apiserver's key order."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any


def _rfc3339(when: _dt.datetime | str | None = None) -> str:
    if isinstance(when, str):
        return when
    if when is None:
        when = _dt.datetime.now(_dt.timezone.utc)
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(ts: str | None) -> float:
    if not ts:
        return 0.0
    try:
        return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _go_json(value: Any) -> str:
    """Compact JSON with sorted keys and Go's HTML escaping (``encoding/json``)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


_MD_ORDER = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
             "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
             "annotations", "ownerReferences", "finalizers", "managedFields")


def _ordered(obj: dict[str, Any]) -> dict[str, Any]:
    """Key order of the real server: kind, apiVersion, metadata, the rest."""
    md = obj.get("metadata") or {}
    new_md = {k: md[k] for k in _MD_ORDER if k in md}
    new_md.update({k: v for k, v in md.items() if k not in new_md})
    out: dict[str, Any] = {}
    for k in ("kind", "apiVersion"):
        if k in obj:
            out[k] = obj[k]
    out["metadata"] = new_md
    out.update({k: v for k, v in obj.items() if k not in out})
    return out
