"""Understand ConfigMap values: address lists and ``KEY=value`` lines.

``describe_change(old, new)`` says what changed in words an operator reads at a glance:
``+192.168.68.75 -192.168.68.58`` rather than "string changed".
"""

from __future__ import annotations

import ipaddress
import json
import re

from syncer.cache import Caches
from syncer.secrets import lookalike

#: A DNS name of two labels or more; a fully qualified one may end in its root dot
#: (``host.example.``), which comparisons drop (``endpoints.canonical``).
_HOST = re.compile(r"^(?=.{1,253}\.?$)[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))+\.?$")
_KV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=(.*)$")


def _is_address(token: str) -> bool:
    host = token
    if token.startswith("[") and "]" in token:  # [v6]:port
        host = token[1 : token.index("]")]
    elif token.count(":") == 1:
        host, port = token.split(":")
        if not port.isdigit():
            return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOST.match(host))


def address_list(value: str) -> list[str] | None:
    """Tokens of a whitespace/comma separated list of addresses, or None if it is not one."""
    tokens = [t for t in re.split(r"[\s,]+", value.strip()) if t]
    if tokens and all(_is_address(t) for t in tokens):
        return tokens
    return None


def kv_lines(value: str) -> dict[str, str] | None:
    """``KEY=value`` lines (blank lines and ``#`` comments allowed), or None."""
    out: dict[str, str] = {}
    lines = [ln for ln in value.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return None
    for line in lines:
        m = _KV_LINE.match(line)
        if not m:
            return None
        out[m.group(1)] = m.group(2).strip()
    return out


def _short(value: str, limit: int = 60) -> str:
    flat = value.replace("\n", "⏎")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _plain(value: object) -> str:
    """A value as its manifest would spell it: ``true``, ``{"a": 1}``, not Python's ``True``."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def describe_change(old: object, new: object, caches: Caches | None = None) -> str:
    """A one-line account of how ``old`` became ``new``; a change people cannot see (an
    invisible or look-alike character, a word mixing scripts) starts by saying so (that note
    remembered in ``caches`` when given)."""
    note = lookalike.change_note(old, new, caches)
    told = _describe(old, new)
    return f"{note}: {told}" if note else told


def _describe(old: object, new: object) -> str:
    if old is None:
        return f"added: {_short(_plain(new))}"
    if new is None:
        return f"removed (was {_short(_plain(old))})"
    if isinstance(old, str) and isinstance(new, str):
        a, b = address_list(old), address_list(new)
        if a is not None and b is not None:
            plus = [t for t in b if t not in a]
            minus = [t for t in a if t not in b]
            parts = [f"+{t}" for t in plus] + [f"-{t}" for t in minus]
            if not parts:
                return f"reordered: {' '.join(a)} → {' '.join(b)}"
            return " ".join(parts)
        ka, kb = kv_lines(old), kv_lines(new)
        if ka is not None and kb is not None:
            parts = [f"+{k}={kb[k]}" for k in kb if k not in ka]
            parts += [f"-{k}" for k in ka if k not in kb]
            parts += [f"{k}: {ka[k]} → {kb[k]}" for k in ka if k in kb and ka[k] != kb[k]]
            return ", ".join(parts) if parts else "reordered lines"
    return f"{_short(_plain(old))} → {_short(_plain(new))}"


#: Changed lines shown for one multi-line value (commit message, PR row); the rest are counted.
MAX_LINES_SHOWN = 20


def is_multiline(value: object) -> bool:
    return isinstance(value, str) and "\n" in value.rstrip("\n")


def changed_lines(old: str, new: str) -> list[tuple[str | None, str | None]]:
    """The lines that differ between two multi-line values, paired: (old line, new line); a
    line only on one side has None on the other. Unchanged lines are left out."""
    import difflib

    a, b = old.splitlines(), new.splitlines()
    pairs: list[tuple[str | None, str | None]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        olds, news = a[i1:i2], b[j1:j2]
        for k in range(max(len(olds), len(news))):
            pairs.append((olds[k] if k < len(olds) else None, news[k] if k < len(news) else None))
    return pairs


def describe_line(old: str | None, new: str | None) -> str:
    """One changed line as the log says it: ``KEY: a → b`` for a ``KEY=value`` line, else ``- a`` / ``+ b``."""
    ko = _KV_LINE.match(old) if old is not None else None
    kn = _KV_LINE.match(new) if new is not None else None
    if ko and kn and ko.group(1) == kn.group(1):
        return f"{ko.group(1)}: {ko.group(2).strip()} → {kn.group(2).strip()}"
    if old is not None and new is not None:
        return f"{old.strip()} → {new.strip()}"
    return f"+ {str(new).strip()}" if old is None else f"- {old.strip()}"
