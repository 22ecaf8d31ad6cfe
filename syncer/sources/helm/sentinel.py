"""Which values key renders a field: found by rendering, never by reading templates.

For a drifted field, the candidates are the keys of the values helm computed whose value shows
in the field as git renders it (equal, or part of a string such as an image's tag), and the
empty keys beside them (an empty ``image.tag`` the template defaults to the chart's
``appVersion``). Each candidate gets a distinct sentinel of its own type; one render with all
of them shows which sentinels reach the field, and where in it: the text around a sentinel is
the template's own, so the live value minus that text is the new value of the key. A field no
sentinel reaches is a literal of a template or computed from values (``min``, ``add``, a
condition): it is reported, never written.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

from syncer.model import Path

#: Sentinel integers stay below 1e6: helm holds values as float64 and prints 1e+06 past that.
_INT_BASE = 871_000
#: The most candidates one drift contributes (a short value such as "1" can match dozens of keys).
MAX_CANDIDATES = 24


@dataclass(frozen=True)
class Candidate:
    path: Path  # in the computed values
    value: Any
    token: Any  # the sentinel set in its place


def go_text(value: Any) -> str:
    """A value as a Go template prints it (helm's values are JSON: numbers are float64)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        number = float(value)
        if number.is_integer() and abs(number) < 1e6:
            return str(int(number))
        return repr(number) if abs(number) < 1e6 else f"{number:g}"
    return str(value)


def leaves(values: Any, path: Path = (), *, copies: bool = False) -> list[tuple[Path, Any]]:
    """Every scalar of the computed values with its path; a subchart's copy of ``global`` left
    out (``copies``: kept, for a rendered object)."""
    out: list[tuple[Path, Any]] = []
    if isinstance(values, dict):
        for key, value in values.items():
            if key == "global" and path and not copies:
                continue
            out.extend(leaves(value, path + (str(key),), copies=copies))
    elif isinstance(values, list):
        for i, value in enumerate(values):
            out.extend(leaves(value, path + (i,), copies=copies))
    else:
        out.append((path, values))
    return out


def _shows(value: Any, rendered: Any) -> bool:
    """Could ``value`` (a values scalar) be what, or part of what, the template rendered?"""
    if isinstance(value, bool) or isinstance(rendered, bool) or value is None or isinstance(value, (dict, list)):
        return False
    text, field = go_text(value), go_text(rendered)
    if not text or "{{" in text:
        return False
    return text == field or (isinstance(rendered, str) and len(text) >= 2 and text in field)


def candidates(values: dict[str, Any], git: Any, start: int) -> list[Candidate]:
    """The keys that may render ``git``, each with a sentinel numbered from ``start``."""
    found: list[tuple[Path, Any]] = []
    everything = leaves(values)
    shown = [(p, v) for p, v in everything if _shows(v, git)]
    shown.sort(key=lambda pv: (go_text(pv[1]) != go_text(git), -len(go_text(pv[1]))))
    found.extend(shown[:MAX_CANDIDATES])
    # not beside keys at the top of a chart (the root, or a subchart's section: it holds a copy
    # of ``global``): an empty name override there renames every object
    parents = {p[:-1] for p, _ in found if len(p) > 1 and not _chart_root(values, p[:-1])}
    for p, v in everything:
        if p[:-1] in parents and (v is None or v == "") and (p, v) not in found and isinstance(p[-1], str):
            found.append((p, v))  # an empty key beside one that shows: the template may default it
    out = []
    for i, (path, value) in enumerate(found):
        n = start + i
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            token: Any = _INT_BASE + n if isinstance(value, int) or float(value).is_integer() else _INT_BASE + n + 0.5
        else:
            token = f"zsyncer{n}q"
        out.append(Candidate(path, value, token))
    return out


def _chart_root(values: dict[str, Any], path: Path) -> bool:
    node: Any = values
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict) and "global" in node


def override(values: dict[str, Any], assigned: dict[Path, Any]) -> str:
    """A values document (JSON) that sets each path of ``assigned`` and nothing else: a list on
    a path is given whole (helm replaces lists), copied from ``values`` with the change in it."""
    out: dict[str, Any] = {}
    for path, token in assigned.items():
        cursor: Any = out
        source: Any = values
        for depth, part in enumerate(path):
            last = depth == len(path) - 1
            if isinstance(cursor, list):
                at = int(part)
                if last:
                    cursor[at] = token
                else:
                    cursor = cursor[at]
                    source = source[at] if isinstance(source, list) else None
                continue
            nxt = source.get(part) if isinstance(source, dict) else None
            if last:
                cursor[part] = token
            elif isinstance(nxt, list):
                if part not in cursor:
                    cursor[part] = copy.deepcopy(nxt)
                cursor, source = cursor[part], nxt
            else:
                cursor = cursor.setdefault(part, {})
                source = nxt
    return json.dumps(out)


def token_text(token: Any) -> str:
    return go_text(token)


def found_in(token: Any, field: Any) -> list[int]:
    """Where the sentinel shows in the rendered field (character offsets; [0] for the whole field)."""
    text = token_text(token)
    if isinstance(field, bool) or field is None:
        return []
    if not isinstance(field, str):
        return [0] if go_text(field) == text else []
    if isinstance(token, str):
        return [m.start() for m in re.finditer(re.escape(text), field)]
    return [m.start() for m in re.finditer(rf"(?<![\d.]){re.escape(text)}(?![\d.])", field)]


def solve(field: str, shown: list[tuple[int, Candidate]], live: str) -> dict[Path, str] | None:
    """The value of each candidate that makes the template's text around the sentinels read
    ``live``: None when the live value does not keep that text, or the split is ambiguous."""
    shown = sorted(shown, key=lambda sc: sc[0])
    literal: list[str] = []
    at = 0
    for offset, cand in shown:
        literal.append(field[at:offset])
        at = offset + len(token_text(cand.token))
    literal.append(field[at:])
    lazy = re.fullmatch("(.*?)".join(re.escape(p) for p in literal), live, re.S)
    greedy = re.fullmatch("(.*)".join(re.escape(p) for p in literal), live, re.S)
    if lazy is None or greedy is None or lazy.groups() != greedy.groups():
        return None
    return {cand.path: lazy.group(i + 1) for i, (_, cand) in enumerate(shown)}


def typed(text: str, old: Any) -> Any:
    """``text`` as a value of the old value's type when it reads back the same (``3`` stays an
    integer, ``1.28`` a number); else the text."""
    if isinstance(old, bool):
        return {"true": True, "false": False}.get(text, text)
    if isinstance(old, int) and re.fullmatch(r"-?\d+", text):
        return int(text)
    if isinstance(old, float):
        try:
            number = float(text)
        except ValueError:
            return text
        return number if go_text(number) == text else text
    return text
