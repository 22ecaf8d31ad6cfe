"""The kustomization files of an installation, as a tree of layers (overlay -> bases).

Read with syncer's own YAML reading (never executed): which resource files and bases each
layer lists, its patches, ``images:``, ``replicas:`` and generators. Used to find the layer
and the file that set a rendered field; kustomize itself does the rendering.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.kustomize.render import is_remote
from syncer.sources.manifests import MAX_FILE_BYTES
from syncer.yamlread import parse_documents
from syncer.repofile import read_inside

#: Bases nested deeper than this are refused (a cycle kustomize would refuse too).
MAX_DEPTH = 32
#: The names kustomize looks for in a directory, in its order.
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization file of ``directory``, or None (then it is not a kustomization)."""
    for name in KUSTOMIZATION_NAMES:
        path = directory / name
        if path.is_file():
            return path
    return None


def holds_kustomization(host: Path) -> bool:
    """Does ``host`` hold a kustomization file, or does one of its directories (an overlay over a
    base: plain reading would take them for manifests without a kind)?"""
    if kustomization_file(host) is not None:
        return True
    names = set(KUSTOMIZATION_NAMES)  # os.walk: no stat per file (the sidecar asks every pass)
    return any(not names.isdisjoint(files) for _, _, files in os.walk(host))


@dataclass
class Layer:
    """One kustomization: its directory and file, parsed, and the layers it includes."""

    dir: Path  # absolute
    file: Path  # absolute
    data: dict[str, Any]
    children: list[Layer] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # resource files listed here (absolute)
    remote: list[str] = field(default_factory=list)  # remote resources/components


def read_text(path: Path, repo: Path) -> str:
    path, repo = path.resolve(), repo.resolve()
    return read_inside(path, path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path), repo,
                       MAX_FILE_BYTES)


def read_yaml(path: Path, repo: Path) -> list[Any]:
    path, repo = path.resolve(), repo.resolve()
    shown = path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)
    return parse_documents(read_text(path, repo), shown)


def read_tree(directory: Path, repo: Path, depth: int = 0, seen: frozenset[Path] = frozenset()) -> Layer:
    """The layer of ``directory`` and (recursively) the bases and components it includes
    (paths resolved)."""
    directory, repo = directory.resolve(), repo.resolve()
    file = kustomization_file(directory)
    if file is None:
        raise ConfigError(f"{directory}: no kustomization file")
    if depth > MAX_DEPTH or directory.resolve() in seen:
        raise ConfigError(f"{file}: kustomization bases nested too deeply (or in a cycle)")
    docs = read_yaml(file, repo)
    data = docs[0] if docs and isinstance(docs[0], dict) else {}
    layer = Layer(directory, file, data)
    for key in ("resources", "components", "bases"):
        entries = data.get(key)
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, str):
                continue
            if is_remote(entry):
                layer.remote.append(entry)
                continue
            target = (directory / entry).resolve()
            if target.is_dir() and kustomization_file(target) is not None:
                layer.children.append(read_tree(target, repo, depth + 1, seen | {directory.resolve()}))
            elif target.is_file():
                layer.files.append(target)
    return layer


def walk(layer: Layer) -> list[Layer]:
    """Every layer of the tree, ``layer`` first."""
    out, stack = [], [layer]
    while stack:
        here = stack.pop()
        out.append(here)
        stack.extend(reversed(here.children))
    return out


def chain(root: Layer, owner: Any) -> list[Layer] | None:
    """The layers from ``root`` down to the one ``owner`` accepts (a predicate on a layer),
    nearest (``root``) first; None when no layer does."""
    if owner(root):
        return [root]
    for child in root.children:
        below = chain(child, owner)
        if below is not None:
            return [root, *below]
    return None


def entries(layer: Layer, key: str) -> list[tuple[int, dict[str, Any]]]:
    """The mapping items of list ``key`` in the layer's kustomization, with their index."""
    items = layer.data.get(key)
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)] if isinstance(items, list) else []


def find_root(host: Path, repo: Path) -> Path:
    """The kustomization ``hosts/<installation>/`` renders: its own, else the one kustomization
    under it that no other includes (an overlay over its bases). Several: ConfigError."""
    host = host.resolve()
    if kustomization_file(host) is not None:
        return host
    found = sorted({f.parent for f in host.rglob("*") if f.name in KUSTOMIZATION_NAMES and f.is_file()})
    included: set[Path] = set()
    for directory in found:
        docs = read_yaml(kustomization_file(directory) or directory, repo)
        data = docs[0] if docs and isinstance(docs[0], dict) else {}
        for key in ("resources", "components", "bases"):
            listed = data.get(key)
            for entry in listed if isinstance(listed, list) else []:
                if isinstance(entry, str) and not is_remote(entry):
                    included.add((directory / entry).resolve())
    tops = [d for d in found if d not in included]
    if len(tops) == 1:
        return tops[0]
    shown = [d.relative_to(repo.resolve()).as_posix() for d in tops or found]
    raise ConfigError(f"{host.relative_to(repo.resolve()).as_posix()}: {len(tops)} kustomizations that no other "
                      f"includes ({', '.join(shown)}): add a kustomization.yaml here listing the one(s) to apply")
