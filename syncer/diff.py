"""Compare one object as declared in git with the same object live. Pure.

Comparison is driven by git: every field git declares is compared; a field that exists only
live is a server default and does not count -- except inside the maps that hold data
(ConfigMap ``data``/``binaryData``, Secret ``data``/``stringData``, Endpoints ``subsets``),
where a key added live is exactly the drift we must not miss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from syncer.errors import ConfigError
from syncer.model import DriftClass, Path
from syncer.normalize import MISSING, is_ignored

#: (kind, path of a mapping) whose live-only keys count as drift.
_DATA_MAPS: dict[str, tuple[Path, ...]] = {
    "ConfigMap": ((), ("data",), ("binaryData",)),
    "Secret": ((), ("data",), ("stringData",)),
    "Endpoints": ((),),
}
_DATA_KEYS: dict[str, frozenset[str]] = {
    "ConfigMap": frozenset({"data", "binaryData"}),
    "Secret": frozenset({"data", "stringData"}),
    "Endpoints": frozenset({"subsets"}),
}
#: Upper bound on nodes visited in one object: stops alias bombs from eating CPU.
MAX_NODES = 200_000


@dataclass(frozen=True)
class FieldDiff:
    path: Path
    git: Any  # None when absent in git
    live: Any  # None when absent live
    cls: DriftClass


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value is MISSING


def _restrict(live: Any, git: Any) -> Any:
    """``live`` reduced to the shape git declares (drops server-defaulted keys)."""
    if isinstance(live, dict) and isinstance(git, dict):
        return {k: _restrict(v, git[k]) for k, v in live.items() if k in git}
    if isinstance(live, list) and isinstance(git, list):
        return [_restrict(v, git[i]) if i < len(git) else v for i, v in enumerate(live)]
    return live


def _scalar_equal(a: Any, b: Any) -> bool:
    if a == b and type(a) is type(b):
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return False


class _Walker:
    def __init__(self, kind: str, ignore: tuple[str, ...]) -> None:
        self.kind = kind
        self.ignore = ignore
        self.out: list[FieldDiff] = []
        self.nodes = 0

    def walk(self, git: Any, live: Any, path: Path) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ConfigError(f"{self.kind}: more than {MAX_NODES} nodes to compare (alias bomb?)")
        if self.ignore and is_ignored(path, self.ignore):
            return
        if live is MISSING:
            if not _empty(git):
                self.out.append(FieldDiff(path, git, None, DriftClass.REMOVED))
            return
        if isinstance(git, dict):
            if not isinstance(live, dict):
                self.out.append(FieldDiff(path, git, live, DriftClass.VALUE))
                return
            for key, value in git.items():
                self.walk(value, live.get(key, MISSING), path + (key,))
            if path in _DATA_MAPS.get(self.kind, ()):
                allowed = _DATA_KEYS[self.kind] if path == () else None
                for key, value in live.items():
                    if key in git or (allowed is not None and key not in allowed):
                        continue
                    if self.ignore and is_ignored(path + (key,), self.ignore):
                        continue
                    if not _empty(value):
                        self.out.append(FieldDiff(path + (key,), None, value, DriftClass.ADDED))
        elif isinstance(git, list):
            if not isinstance(live, list):
                self.out.append(FieldDiff(path, git, live, DriftClass.VALUE))
            elif len(git) != len(live):
                self.out.append(FieldDiff(path, git, _restrict(live, git), DriftClass.VALUE))
            else:
                for i, (g, l) in enumerate(zip(git, live)):
                    self.walk(g, l, path + (i,))
        elif git is None:
            return  # `key:` with no value declares nothing
        elif not _scalar_equal(git, live):
            self.out.append(FieldDiff(path, git, live, DriftClass.VALUE))


def compare(kind: str, git: dict[str, Any], live: dict[str, Any], ignore: tuple[str, ...] = ()) -> list[FieldDiff]:
    """Field-level differences between normalized ``git`` and ``live`` objects."""
    walker = _Walker(kind, ignore)
    for key, value in git.items():
        if key in ("apiVersion", "kind", "status"):
            continue
        walker.walk(value, live.get(key, MISSING), (key,))
    if kind in _DATA_KEYS:
        for key in _DATA_KEYS[kind]:
            if key not in git and not _empty(live.get(key, MISSING)) and not is_ignored((key,), ignore):
                walker.out.append(FieldDiff((key,), None, live[key], DriftClass.ADDED))
    return walker.out
