"""Text for new YAML values, used by :mod:`syncer.yamledit` when it splices values.

Scalars, flow collections and block-style collections (:class:`Layout`), plus the strict
equality and plain-data copy the editor verifies with; pure string and data work.

A plain scalar is only emitted when its text reads back as the same string under both
YAML 1.2 (ruamel's default) and YAML 1.1 (what much Kubernetes tooling uses), so ``yes``,
``on``, ``y``, ``0777``, ``1:20``, ``1e3`` and friends get quoted -- and so does what Go's
decoder (kubectl) reads as a number although both YAML versions read a string: ``+.5e3``,
``08`` (:mod:`syncer.goyaml`).  Strings are never folded: a one-line value stays on one line,
however long.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

from syncer import goyaml

_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVERS = (VersionedResolver(version=(1, 2)), VersionedResolver(version=(1, 1)))
#: Plain words YAML 1.1 parsers such as go-yaml read as booleans but ruamel does not.
_YAML11_EXTRA = frozenset({"y", "Y", "n", "N"})
_FLOW_CHARS = frozenset(",[]{}")
_NAMED_ESCAPES = {
    "\\": "\\\\", '"': '\\"', "\0": "\\0", "\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n",
    "\v": "\\v", "\f": "\\f", "\r": "\\r", "\x1b": "\\e", "\x85": "\\N", "\u2028": "\\L",
    "\u2029": "\\P", "\ufeff": "\\uFEFF",
}


def _printable(ch: str) -> bool:
    """YAML c-printable, without the line breaks, tab and the BOM."""
    o = ord(ch)
    return (
        0x20 <= o <= 0x7E
        or 0xA0 <= o <= 0xD7FF and o not in (0x2028, 0x2029)
        or 0xE000 <= o <= 0xFFFD and o != 0xFEFF
        or o >= 0x10000
    )


def _resolves_to_str(text: str) -> bool:
    if text in _YAML11_EXTRA or goyaml.number(text) is not None:  # Go reads 0o17, +.5e3, 08 as numbers
        return False
    return all(
        str(r.resolve(ScalarNode, text, (True, False))) == _STR_TAG for r in _RESOLVERS
    )


def plain_ok(text: str, flow: bool = False) -> bool:
    """True when *text* may be written as a plain scalar and reads back as this string."""
    if text == "" or text != text.strip(" ") or not all(_printable(c) for c in text):
        return False
    first = text[0]
    if first in "[]{},#&*!|>'\"%@`":
        return False
    if first in "-?:" and (len(text) == 1 or text[1] == " "):
        return False
    if ": " in text or " #" in text or text.endswith(":"):
        return False
    if flow and (":" in text or any(c in _FLOW_CHARS for c in text)):
        return False
    if text.startswith(("---", "...")):
        return False
    return _resolves_to_str(text)


def double_quoted(text: str) -> str:
    """``"..."`` with escapes, always on one line."""
    out = []
    for ch in text:
        esc = _NAMED_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif _printable(ch):
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02X}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(f"\\U{ord(ch):08X}")
    return '"' + "".join(out) + '"'


def single_quoted(text: str) -> str | None:
    """``'...'``, or None when single quotes cannot hold *text* on one line."""
    if not all(_printable(c) for c in text):
        return None
    return "'" + text.replace("'", "''") + "'"


def _float_text(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "." not in text and "e" in text:  # 1e+20 -> 1.0e+20, which every resolver reads as float
        mantissa, _, exponent = text.partition("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def non_string(value: Any) -> str:
    """YAML plain text for None, bool, int and float."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    raise TypeError(f"not a YAML scalar: {type(value).__name__}")


def string_text(text: str, style: str | None, flow: bool) -> str:
    """One-line text for a string, in *style* (None/'' plain, "'" or '"') when it fits."""
    if style in (None, "") and plain_ok(text, flow):
        return text
    if style == "'":
        quoted = single_quoted(text)
        if quoted is not None:
            return quoted
    return double_quoted(text)


def scalar_text(value: Any, style: str | None = None, flow: bool = False) -> str:
    """One-line text for any scalar value."""
    if isinstance(value, str):
        return string_text(value, style, flow)
    return non_string(value)


def key_text(key: Any, flow: bool = False) -> str:
    """Text for a mapping key: plain when safe, otherwise double-quoted; ints stay ints."""
    if isinstance(key, str):
        if plain_ok(key, flow) and not key.startswith(("?", "-", ":")) and len(key) < 1000:
            return key
        return double_quoted(key)
    return non_string(key)


def flow_text(value: Any) -> str:
    """Flow-style text for a whole value: ``{a: 1, b: [x, y]}``."""
    if isinstance(value, dict):
        inner = ", ".join(f"{key_text(k, True)}: {flow_text(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow_text(v) for v in value) + "]"
    return scalar_text(value, None, True)


def block_body(text: str, folded: bool = False) -> tuple[str, list[str], bool] | None:
    """Body of a ``|``/``>`` block scalar holding *text*, without indentation.

    Returns ``(chomping indicator, lines, needs an indentation indicator)`` or None when
    a block scalar cannot hold *text* faithfully (control characters, CR, lines made of
    blanks only, or nothing but line breaks; for ``>`` also lines starting with blanks).
    """
    if text.strip() == "" or any(not _printable(c) and c not in "\n\t" for c in text):
        return None
    stripped = text.rstrip("\n")
    trailing = len(text) - len(stripped)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    lines = stripped.split("\n")
    if any(line.strip(" \t") == "" and line != "" for line in lines):
        return None
    if folded:
        if lines[0] == "" or any(line[:1] in (" ", "\t") for line in lines):
            return None
        body = [lines[0]]
        for line in lines[1:]:
            body.append("")
            if line:
                body.append(line)
    else:
        body = list(lines)
    body.extend([""] * max(trailing - 1, 0))
    first = next(line for line in lines if line)
    return chomp, body, first.startswith(" ")


@dataclass
class Layout:
    """How new block-style collections are laid out (lines come without line ends)."""

    step: int = 2  # indentation of a nested mapping
    seq: int = 0  # column of "- " relative to the key that holds the sequence
    blocks: bool = True  # multi-line strings may become `|` blocks (False: double-quoted)
    keep: bool = True  # ... even ones ending in several newlines (`|+`, which claims blank lines after it)

    def attach(self, head: str, value: Any, indent: int, item: bool = False) -> list[str]:
        """Lines for ``head`` (``key:`` or ``-`` at *indent*) followed by *value*."""
        inner = indent + 2 if item else indent + self.step
        if isinstance(value, (dict, list)) and value:
            if item:
                lines = self.lines(value, inner)
                return [head + " " + lines[0][inner:]] + lines[1:]
            return [head] + self.lines(value, inner if isinstance(value, dict) else indent + self.seq)
        body = block_body(value) if self.blocks and isinstance(value, str) and "\n" in value else None
        if body is not None and (self.keep or body[0] != "+"):
            chomp, lines, need = body
            header = "|" + (str(inner - indent) if need else "") + chomp
            return [f"{head} {header}"] + [" " * inner + line if line else "" for line in lines]
        return [f"{head} {flow_text(value)}"]

    def lines(self, value: Any, indent: int) -> list[str]:
        """Block-style lines (no line ends) for a non-empty dict or list at *indent*."""
        pad, out = " " * indent, []
        if isinstance(value, dict):
            for k, v in value.items():
                out += self.attach(f"{pad}{key_text(k)}:", v, indent)
        else:
            for v in value:
                out += self.attach(pad + "-", v, indent, item=True)
        return out


def same(a: Any, b: Any) -> bool:
    """Equality that tells 1, 1.0 and True apart and treats NaN as equal to itself."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def plain(value: Any) -> Any:
    """Copy *value* as plain dict/list/str/int/float/bool/None data, or raise TypeError."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    raise TypeError(f"cannot write a {type(value).__name__} to YAML")
