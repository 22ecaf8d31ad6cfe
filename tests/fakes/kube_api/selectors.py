"""Label and field selectors, parsed into predicates."""

from __future__ import annotations

import re
from typing import Any, Callable

from .resources import _EXTRA_FIELD_LABELS, Resource
from .status import _bad_request


_Pred = Callable[[dict[str, Any]], bool]


def _split_outside_parens(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _labels(o: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = (o.get("metadata") or {}).get("labels") or {}
    return found


def _label_pred(key: str, op: str, values: frozenset[str] = frozenset()) -> _Pred:
    def pred(o: dict[str, Any]) -> bool:
        labels = _labels(o)
        if op == "exists":
            return key in labels
        if op == "!exists":
            return key not in labels
        if op in ("in", "="):
            return key in labels and labels[key] in values
        return labels.get(key) not in values  # "notin", "!="

    return pred


def _field_pred(field: str, op: str, value: str) -> _Pred:
    def pred(o: dict[str, Any]) -> bool:
        return (_dotted(o, field) == value) == (op != "!=")

    return pred


def parse_label_selector(text: str) -> list[_Pred]:
    preds: list[_Pred] = []

    for raw in _split_outside_parens(text or ""):
        part = raw.strip()
        if not part:
            continue
        m = re.fullmatch(r"([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)", part)
        if m:
            key, op = m.group(1), m.group(2)
            vals = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            preds.append(_label_pred(key, op, vals))
            continue
        m = re.fullmatch(r"([^\s!=(),]+)\s*(==|!=|=)\s*([^\s!=(),]*)", part)
        if m:
            key, op, val = m.groups()
            preds.append(_label_pred(key, "!=" if op == "!=" else "=", frozenset([val])))
            continue
        m = re.fullmatch(r"(!?)\s*([^\s!=(),]+)", part)
        if m:
            neg, key = m.groups()
            preds.append(_label_pred(key, "!exists" if neg else "exists"))
            continue
        raise _bad_request(f"unable to parse requirement: found '{part}', expected: '=', '!=', '==', 'in', notin'")
    return preds


def _dotted(obj: dict[str, Any], dotted: str) -> str:
    node: Any = obj
    for p in dotted.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(p)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def parse_field_selector(text: str, res: Resource) -> tuple[list[_Pred], str]:
    """Returns predicates and the name pinned by ``metadata.name=`` (for authz)."""
    preds: list[_Pred] = []
    pinned = ""
    allowed = {"metadata.name", "metadata.namespace", *_EXTRA_FIELD_LABELS.get(res.kind, ())}
    for raw in (text or "").split(","):
        part = raw.strip()
        if not part:
            continue
        m = re.fullmatch(r"([^=!]+?)\s*(==|!=|=)\s*(.*)", part)
        if not m:
            raise _bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, val = m.group(1).strip(), m.group(2), m.group(3).strip()
        if field not in allowed:
            raise _bad_request(f"field label not supported: {field}")
        preds.append(_field_pred(field, op, val))
        if op != "!=" and field == "metadata.name":
            pinned = val
    return preds, pinned
