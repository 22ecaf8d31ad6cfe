"""The kustomization files of an installation, as a graph of layers (overlay -> bases, components).

Read with syncer's own YAML reading (never executed): which resource files, bases and
components each layer lists, its patches, ``images:``, ``replicas:`` and generators. Used to
find the layer and the file that set a rendered field; kustomize itself does the rendering.

The graph is read once per directory: a base that several layers include (a diamond) is one
``Layer`` they share, so a tree of 30 levels each listing the next twice costs 30 reads, not
2^30. The whole read is bounded (``MAX_LAYERS`` kustomizations, ``MAX_TREE_BYTES`` of their
text), and a kustomization file is refused when it uses YAML aliases (kustomize's own reader
bounds their expansion; syncer never expands them: an alias bomb is one line, not a hang).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.kustomize.render import is_remote
from syncer.sources.manifests import MAX_FILE_BYTES
from syncer.repofile import read_inside
from syncer.yamlread import parse_documents

#: Bases nested deeper than this are refused (a cycle kustomize would refuse too).
MAX_DEPTH = 32
#: At most this many kustomizations in one installation's graph, and this much of their text.
MAX_LAYERS = 1000
MAX_TREE_BYTES = 16 * 1024 * 1024

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


@dataclass(eq=False)
class Layer:
    """One kustomization: its directory and file, parsed, and the layers it includes."""

    dir: Path  # absolute
    file: Path  # absolute
    data: dict[str, Any]
    children: list[Layer] = field(default_factory=list)  # bases and components, in the file's order
    components: list[Layer] = field(default_factory=list)  # the ``components:`` among them, in order
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


def read_kustomization(file: Path, repo: Path, budget: list[int] | None = None) -> dict[str, Any]:
    """A kustomization file parsed without expanding aliases (refused: kustomize bounds them,
    syncer has no need of them); ``budget`` ([bytes left]) is charged with its size."""
    from syncer.sources.kustomize.aliases import refuse_aliases

    repo = repo.resolve()
    text = read_text(file, repo)
    shown = file.resolve().relative_to(repo).as_posix() if file.resolve().is_relative_to(repo) else str(file)
    if budget is not None:
        budget[0] -= len(text)
        if budget[0] < 0:
            raise ConfigError(f"{shown}: the installation's kustomizations hold more than "
                              f"{MAX_TREE_BYTES // (1024 * 1024)} MiB of text: not read")
    refuse_aliases(text, shown)
    docs = parse_documents(text, shown)
    return docs[0] if docs and isinstance(docs[0], dict) else {}


def read_tree(directory: Path, repo: Path) -> Layer:
    """The layer of ``directory`` and (recursively) the bases and components it includes
    (paths resolved); each directory is read once, however many layers include it."""
    repo = repo.resolve()
    seen: dict[Path, Layer] = {}
    budget = [MAX_TREE_BYTES]

    def read(here: Path, depth: int, stack: frozenset[Path]) -> Layer:
        file = kustomization_file(here)
        if file is None:
            raise ConfigError(f"{here}: no kustomization file")
        if depth > MAX_DEPTH or here in stack:
            raise ConfigError(f"{file}: kustomization bases nested too deeply (or in a cycle)")
        if here in seen:
            return seen[here]
        if len(seen) >= MAX_LAYERS:
            raise ConfigError(f"{file}: more than {MAX_LAYERS} kustomizations in one installation: not read")
        layer = Layer(here, file, read_kustomization(file, repo, budget))
        seen[here] = layer
        for key in ("resources", "components", "bases"):
            entries = layer.data.get(key)
            for entry in entries if isinstance(entries, list) else []:
                if not isinstance(entry, str):
                    continue
                if is_remote(entry):
                    layer.remote.append(entry)
                    continue
                target = (here / entry).resolve()
                if target.is_dir() and kustomization_file(target) is not None:
                    child = read(target, depth + 1, stack | {here})
                    layer.children.append(child)
                    if key == "components":
                        layer.components.append(child)
                elif target.is_file():
                    layer.files.append(target)
        return layer

    return read(directory.resolve(), 0, frozenset())


#: A generator's source file above this cannot be applied (a ConfigMap or Secret holds at most
#: 1 MiB): refused before kustomize reads it into its memory, and syncer the render into its own.
MAX_GENERATOR_BYTES = 1024 * 1024
#: And all the files kustomize reads together (resources, patches, generator sources): kustomize
#: holds several copies of its input while rendering, in the same pod's memory as syncer.
MAX_INPUT_BYTES = 8 * 1024 * 1024


def check_sizes(root: Layer, repo: Path) -> None:
    """ConfigError naming the first file kustomize would read that is too large to apply: a
    generator's ``files:``/``envs:`` source over ``MAX_GENERATOR_BYTES`` (a directory's files
    together), a resource or patch file over ``MAX_FILE_BYTES``, or the one that takes all of
    them together past ``MAX_INPUT_BYTES``."""
    repo = repo.resolve()
    total = [0]
    counted: set[Path] = set()

    def size(path: Path) -> int:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.iterdir() if p.is_file() and not p.is_symlink())
        return path.stat().st_size if path.is_file() else 0

    def refuse(path: Path, limit: int, what: str) -> None:
        shown = path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)
        raise ConfigError(f"{shown}: larger than {limit // (1024 * 1024)} MiB: not rendered ({what})")

    def count(path: Path, n: int) -> None:
        if path not in counted:
            counted.add(path)
            total[0] += n
        if total[0] > MAX_INPUT_BYTES:
            shown = path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)
            raise ConfigError(f"{shown}: the files kustomize would read for this installation pass "
                              f"{MAX_INPUT_BYTES // (1024 * 1024)} MiB together here: not rendered")

    for layer in walk(root):
        for key in ("configMapGenerator", "secretGenerator"):
            for _, item in entries(layer, key):
                listed = [*(item.get("files") or []), *(item.get("envs") or []), item.get("env")]
                for entry in listed:
                    if not isinstance(entry, str):
                        continue
                    source = (layer.dir / entry.partition("=")[2 if "=" in entry else 0].strip()).resolve()
                    if not source.is_relative_to(repo):
                        continue
                    n = size(source)
                    if n > MAX_GENERATOR_BYTES:
                        refuse(source, MAX_GENERATOR_BYTES, f"a {key} source; a ConfigMap or Secret holds at most 1 MiB")
                    count(source, n)
        for file in layer.files:
            n = size(file)
            if n > MAX_FILE_BYTES:
                refuse(file, MAX_FILE_BYTES, "a resource file")
            count(file, n)
        for key in ("patches", "patchesStrategicMerge", "patchesJson6902"):
            items = layer.data.get(key)
            for item in items if isinstance(items, list) else []:
                path = item.get("path") if isinstance(item, dict) else item if key == "patchesStrategicMerge" else None
                if isinstance(path, str) and "\n" not in path:
                    file = (layer.dir / path).resolve()
                    if not file.is_relative_to(repo):
                        continue
                    n = size(file)
                    if n > MAX_FILE_BYTES:
                        refuse(file, MAX_FILE_BYTES, "a patch file")
                    count(file, n)


def walk(layer: Layer) -> list[Layer]:
    """Every layer of the graph once, ``layer`` first."""
    out: list[Layer] = []
    seen: set[int] = set()
    stack = [layer]
    while stack:
        here = stack.pop()
        if id(here) in seen:
            continue
        seen.add(id(here))
        out.append(here)
        stack.extend(reversed(here.children))
    return out


def paths(root: Layer, owner: Any, limit: int = 64) -> list[list[Layer]]:
    """The chains of layers from ``root`` down to a layer ``owner`` accepts (a predicate),
    ``root`` first; at most ``limit`` of them (a diamond has many)."""
    out: list[list[Layer]] = []

    def go(here: Layer, chain: list[Layer]) -> None:
        if len(out) >= limit:
            return
        chain = [*chain, here]
        if owner(here):
            out.append(chain)
            return
        for child in here.children:
            go(child, chain)

    go(root, [])
    return out


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
    if len(found) > MAX_LAYERS:
        raise ConfigError(f"{host.relative_to(repo.resolve()).as_posix()}: more than {MAX_LAYERS} kustomizations")
    included: set[Path] = set()
    budget = [MAX_TREE_BYTES]
    for directory in found:
        data = read_kustomization(kustomization_file(directory) or directory, repo, budget)
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
