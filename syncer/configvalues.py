"""The checks of syncer.conf's values, each failure one ConfigError naming the key: types and
unknown keys, Helm release names, label selectors, ``optional:`` kinds (durations and numbers:
``durations``). ``config.parse_config`` reads the file with them.
"""

from __future__ import annotations

import re
from typing import Any

from syncer.errors import ConfigError
from syncer.model import Track
from syncer.repofile import excerpt

__all__ = ["Selector", "expect", "optional_kinds", "release_name", "selector", "unknown"]

#: A selector of an ignore rule: label (or annotation) key -> the value it must have, or None
#: for "present with any value".
Selector = tuple[tuple[str, str | None], ...]



def expect(value: Any, typ: type | tuple[type, ...], where: str, what: str) -> Any:
    if not isinstance(value, typ) or isinstance(value, bool) and typ is not bool:
        raise ConfigError(f"{where}: expected {what}, got {type(value).__name__} {excerpt(value)}")
    return value


def unknown(keys: Any, allowed: set[str], where: str) -> None:
    extra = sorted(str(k) for k in keys if k not in allowed)
    if extra:
        raise ConfigError(f"{where}: unknown key {extra[0]!r} (allowed: {', '.join(sorted(allowed))})")


def optional_kinds(raw: Any, track: dict[str, Track], where: str) -> frozenset[str]:
    """``optional: [ServiceAccount, Role]``: reported kinds whose 403 is only a warning. A kind
    written back cannot be optional: what syncer cannot read, it cannot keep in sync."""
    kinds = expect(raw if raw is not None else [], list, where, "a list of kinds")
    for i, kind in enumerate(kinds):
        if not isinstance(kind, str) or not kind.strip():
            raise ConfigError(f"{where}[{i}]: expected a kind such as ServiceAccount, got {excerpt(kind)}")
        if track.get(kind) in (Track.WRITEBACK, Track.STABLE):
            raise ConfigError(f"{where}[{i}]: {kind} is tracked {track[kind].value}: a kind syncer writes back "
                              "cannot be optional (it must be readable to be kept in sync)")
    return frozenset(kinds)

_RELEASE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def release_name(raw: Any, where: str) -> str | None:
    """A Helm release name as helm accepts it (lower-case DNS name, at most 53 characters)."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw or len(raw) > 53 or not _RELEASE.match(raw):
        raise ConfigError(f"{where}: expected a Helm release name (lower-case letters, digits, '-' and '.', "
                          f"at most 53 characters), got {excerpt(raw)}")
    return raw


def selector(raw: Any, where: str) -> Selector:
    """``{app: web, team: null}`` -> the pairs an ignore rule's labels/annotations must hold."""
    if raw is None:
        return ()
    expect(raw, dict, where, "a mapping of key to value (null: any value)")
    out: list[tuple[str, str | None]] = []
    for key, value in raw.items():
        if value is not None and not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{where}.{key}: expected a string (or null for any value), got {excerpt(value)}")
        out.append((str(key), None if value is None else str(value)))
    return tuple(out)
