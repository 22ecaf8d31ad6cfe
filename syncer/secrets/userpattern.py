"""Regular expressions users write (``secretKeys`` in syncer.conf), run on RE2.

Python's ``re`` backtracks: ``(.+)+!`` against a long key name runs for minutes, and such a
pattern merged into syncer.conf would hang ``syncer diff`` and every sidecar pass. RE2
(``google-re2``) matches in time linear in the text, and refuses what only backtracking can
do (backreferences, lookaround). Such a pattern, or an invalid one (``"(["``), is refused when
the config is loaded (``check``): one line naming the file and the key, exit 2.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from syncer.errors import ConfigError

#: What RE2 may use compiling one pattern: enough for any key-name pattern; a pattern that
#: needs more (``(a{1000}){1000}``) is refused, not built.
MAX_MEMORY = 8 << 20


def _options() -> Any:
    options = re2.Options()
    options.case_sensitive = False  # key names are matched case-insensitively
    options.log_errors = False  # RE2 would print each refusal to stderr; the error says it once
    options.max_mem = MAX_MEMORY
    return options


_OPTIONS = _options()
#: ``secretKeys`` of one config, at most: patterns, and characters in all. Every key is matched
#: against every pattern, and hundreds of patterns would thrash RE2's compile cache: a hostile
#: config could make each pass take seconds.
MAX_PATTERNS = 64
MAX_CHARS = 8192
#: What RE2 may use for all of one config's patterns compiled as one alternation.
MAX_MEMORY_ALL = 64 << 20


def _options_all() -> Any:
    options = _options()
    options.max_mem = MAX_MEMORY_ALL
    return options


_OPTIONS_ALL = _options_all()


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    """The RE2 program for ``pattern``; raises ``ValueError`` saying why it cannot be one."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(str(reason)) from None


@functools.lru_cache(maxsize=8)
def _combined(patterns: tuple[str, ...]) -> Any:
    """One RE2 program for all of ``patterns`` (one config's): compiled once per config."""
    try:
        return re2.compile("|".join(f"(?:{p})" for p in patterns), _OPTIONS_ALL)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        raise ValueError(reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)) from None


def _shown(text: object, limit: int = 80) -> str:
    """``repr(text)``, one line, cut to ``limit`` characters: an error line stays short."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def check(pattern: object, where: str) -> str:
    """``pattern`` if RE2 can run it, else a ``ConfigError`` naming ``where`` (file: key)."""
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{where}: expected a regular expression (a non-empty string), got {_shown(pattern)}")
    try:
        _compiled(pattern)
    except ValueError as exc:
        raise ConfigError(
            f"{where}: {_shown(pattern)} is not a pattern syncer can run: {_shown(str(exc))} "
            "(patterns run on RE2: no backreferences or lookaround)"
        ) from None
    return pattern


def check_all(patterns: list[Any], where: str) -> tuple[str, ...]:
    """Every pattern ``check``-ed, their count and size bounded, and all of them compiled as one
    program; else a ``ConfigError`` naming ``where`` (``file: secretKeys``)."""
    if len(patterns) > MAX_PATTERNS:
        raise ConfigError(f"{where}: {len(patterns)} patterns; at most {MAX_PATTERNS} (join names into one pattern)")
    checked = tuple(check(p, f"{where}[{i}]") for i, p in enumerate(patterns))
    if sum(map(len, checked)) > MAX_CHARS:
        raise ConfigError(f"{where}: {sum(map(len, checked))} characters of patterns; at most {MAX_CHARS}")
    try:
        _combined(checked)
    except ValueError as exc:
        raise ConfigError(f"{where}: the patterns together are more than syncer can run: {_shown(str(exc))}") from None
    return checked


def any_fullmatch(patterns: tuple[str, ...], text: str) -> bool:
    """Does one of ``patterns`` match all of ``text``, case-insensitively (one RE2 program for all)?"""
    if not patterns:
        return False
    try:
        program = _combined(patterns)
    except ValueError as exc:  # only patterns that never went through ``check_all``
        raise ConfigError(f"secretKeys: {_shown(patterns)} are not patterns syncer can run: {_shown(str(exc))}") from None
    return program.fullmatch(text) is not None


def fullmatch(pattern: str, text: str) -> bool:
    """Does ``pattern`` match all of ``text``, case-insensitively (in time linear in ``text``)?"""
    try:
        program = _compiled(pattern)
    except ValueError as exc:  # only a pattern that never went through ``check``
        raise ConfigError(f"secretKeys: {_shown(pattern)} is not a pattern syncer can run: {_shown(str(exc))}") from None
    return program.fullmatch(text) is not None
