"""The number a plain YAML scalar is to Go's decoder (go-yaml v2 inside ``sigs.k8s.io/yaml``:
kubectl, helm, Argo CD), where that differs from YAML 1.1. Pure.

Go resolves a plain scalar that starts with a digit, a sign or a dot with ``strconv``, not with
the YAML 1.1 patterns: after dropping every ``_``, ``ParseInt(s, 0, 64)`` (so ``0o644`` and
``0O644`` are octal, ``0x1F`` hex, ``0b101`` binary, ``0755`` octal), then ``ParseUint``, then
``ParseFloat`` for text shaped ``[-+]?(\\.d+|d+(\\.d*)?)([eE][-+]?d+)?`` (so ``1e3``, ``+.5e3``,
``1.0e3`` and ``08`` are numbers, which YAML 1.1 reads as strings). A scalar starting with a dot
goes to ``ParseFloat`` as it is. ``.inf``/``.nan``, booleans, nulls and timestamps are looked up
first, as YAML 1.1 does; ``1:20`` stays a string.

Checked against kubectl v1.32.3 (``kubectl label --local -o json``): ``0o17`` 15, ``+0o17`` 15,
``-0o17`` -15, ``0o1_7`` 15, ``0o8`` and ``0o`` strings, ``+.5e3`` 500, ``.5e3`` 500, ``1E3``
1000, ``1.0e3`` 1000, ``-.5`` -0.5, ``1__0`` 10, ``0x_1F`` 31, ``._5`` a string.
"""

from __future__ import annotations

import math
import re

_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_BASES = {"x": 16, "o": 8, "b": 2}
_DIGITS = {2: frozenset("01"), 8: frozenset("01234567"), 10: frozenset("0123456789"),
           16: frozenset("0123456789abcdefABCDEF")}
#: Digits of the largest 64-bit number in each base (2 ** 64 - 1).
_MAX_DIGITS = {2: 64, 8: 22, 10: 20, 16: 16}
#: Looked up before any number rule, by YAML 1.1 and Go alike.
SPECIAL_FLOATS = frozenset({".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
                            ".nan", ".NaN", ".NAN"})


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``, else ``ParseUint(text, 0, 64)``."""
    sign, digits = 1, text
    if digits[:1] in ("+", "-"):
        sign, digits = (-1 if digits[0] == "-" else 1), digits[1:]
    base = 10
    if len(digits) > 2 and digits[0] == "0" and digits[1].lower() in _BASES:
        base, digits = _BASES[digits[1].lower()], digits[2:]
    elif len(digits) > 1 and digits[0] == "0":
        base, digits = 8, digits[1:]
    if not digits or not set(digits) <= _DIGITS[base]:
        return None
    if len(digits.lstrip("0")) > _MAX_DIGITS[base]:  # over 64 bits whatever it says: never int() a long text
        return None
    value = sign * int(digits, base)
    if -(2 ** 63) <= value < 2 ** 63 or (not text.startswith(("+", "-")) and value < 2 ** 64):
        return value
    return None


def number(text: str) -> int | float | None:
    """What Go's YAML decoder makes of the plain scalar ``text`` when it is a number; None when it
    is not one (a string, or a boolean/null/timestamp, which YAML 1.1 resolves the same way)."""
    if not text or text[0] not in "0123456789+-." or text in SPECIAL_FLOATS:
        return None
    if text[0] == ".":
        value = float(text) if _DOT_FLOAT.fullmatch(text) else None
    else:
        plain = text.replace("_", "")
        whole = _go_int(plain)
        if whole is not None:
            return whole
        value = float(plain) if _FLOAT.fullmatch(plain) else None
    if value is None or math.isinf(value):  # ParseFloat refuses what overflows
        return None
    return value
