"""No kustomization may name anything kustomize would fetch: checked before every render.

kustomize's loader takes an http(s) URL (or a git repository) in any field that names a file:
``patches[].path``, generator ``files:``/``envs:``, ``helmCharts[].repo``/``valuesFile``,
``openapi.path``, ``configurations``, ``crds``, transformer configs... and Go sends requests to
127.0.0.1/localhost past any proxy. So every string of every kustomization file of the
installation's directory (the render's copy holds nothing else), and of the generator,
transformer and validator configs they list, is refused when it is a remote reference: one
ConfigError naming the file and the field. Only fields that are data kustomize never loads
are skipped (labels, annotations, ``literals``, inline ``patch`` text, ``valuesInline``);
a multi-line string is inline content, not a reference (a URL has no line break), except as
a generator/transformer/validator entry, where it is an inline config and is read as one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.kustomize.aliases import refuse_aliases
from syncer.sources.kustomize.layers import KUSTOMIZATION_NAMES, kustomization_file, read_text
from syncer.yamlread import parse_documents

#: Keys whose values are data kustomize puts into objects, never a place it loads from.
DATA_KEYS = frozenset({"literals", "commonAnnotations", "commonLabels", "labels", "annotations", "pairs", "patch",
                       "valuesInline"})
#: Keys whose entries are configs (files, directories or inline YAML) with fields of their own.
CONFIG_KEYS = ("generators", "transformers", "validators")
#: How deep configs may include configs (directories of configs listing directories...).
MAX_DEPTH = 32
_REMOTE = re.compile(r"://|^(?:[^=\s]*=)?(?:git@|git::|gh:|ssh:|https?:|github\.com/|gitlab\.com/|bitbucket\.org/)"
                     r"|\?ref=")


def is_reference(value: str) -> bool:
    """Is this string a URL or a remote (git) reference kustomize would fetch? A generator's
    ``key=source`` form counts by its source."""
    return "\n" not in value.strip() and bool(_REMOTE.search(value.strip()))


def _find(node: Any, where: str, configs: list[tuple[str, Any]]) -> str | None:
    """The field (``patches[0].path``) of the first remote reference under ``node``, or None;
    inline configs met on the way are added to ``configs``."""
    stack: list[tuple[str, Any, bool]] = [(where, node, False)]
    while stack:
        at, here, config = stack.pop()
        if isinstance(here, dict):
            for key, value in reversed(list(here.items())):
                if str(key) not in DATA_KEYS:
                    stack.append((f"{at}.{key}" if at else str(key), value, str(key) in CONFIG_KEYS))
        elif isinstance(here, list):
            stack.extend((f"{at}[{i}]", v, config) for i, v in reversed(list(enumerate(here))))
        elif isinstance(here, str):
            if is_reference(here):
                return f"{at}: {here.strip()!r}"
            if config and "\n" in here.strip():
                configs.append((at, here))
    return None


def _check(data: Any, shown: str, extra: str = "") -> list[tuple[str, Any]]:
    """ConfigError when ``data`` holds a remote reference; the inline configs it holds."""
    configs: list[tuple[str, Any]] = []
    found = _find(data, extra, configs)
    if found is not None:
        raise ConfigError(f"{shown}: {found} is a remote reference: syncer renders offline and never lets kustomize "
                          "fetch (put the file or chart into the repository and name it by a relative path)")
    return configs


def refuse_remote(host: Path, repo: Path) -> None:
    """ConfigError naming the file and the field of the first remote reference of the
    kustomizations under ``host`` and of the configs they list."""
    host, repo = host.resolve(), repo.resolve()

    def shown(path: Path) -> str:
        return path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)

    def read(path: Path) -> list[Any]:  # aliases refused, never expanded (the walk below would follow each)
        text = read_text(path, repo)
        refuse_aliases(text, shown(path))
        return parse_documents(text, shown(path))

    files = sorted(f for f in host.rglob("*") if f.name in KUSTOMIZATION_NAMES and f.is_file() and not f.is_symlink())
    todo: list[tuple[Path, int]] = []
    for file in files:
        docs = read(file)
        data = docs[0] if docs else None
        for at, text in _check(data, shown(file)):
            for doc in parse_documents(text, f"{shown(file)}: {at}"):
                _check(doc, shown(file), at)
        for key in CONFIG_KEYS:
            todo.extend((file.parent / e, 0) for e in _strings(data, key))
    seen: set[Path] = set()
    while todo:
        path, depth = todo.pop()
        path = path.resolve()
        if path in seen or not path.is_relative_to(host) or depth > MAX_DEPTH:
            continue  # outside the directory: not in the render's copy
        seen.add(path)
        if path.is_file():
            for doc in read(path):
                _check(doc, shown(path))
        elif path.is_dir() and (inner := kustomization_file(path)) is not None:
            # a directory of configs: its resources are configs too (its kustomization is checked above)
            docs = read(inner)
            todo.extend((path / e, depth + 1) for e in _strings(docs[0] if docs else None, "resources"))


def _strings(data: Any, key: str) -> list[str]:
    """The single-line string entries of list ``key`` of a kustomization (paths)."""
    listed = data.get(key) if isinstance(data, dict) else None
    return [e for e in listed if isinstance(e, str) and "\n" not in e] if isinstance(listed, list) else []
