"""The kustomize source: ``hosts/<installation>/`` holding a ``kustomization.yaml`` (itself, or
an overlay in one of its directories).

The real kustomize renders it (``render``); the rendered objects are the declared objects,
compared with live as plain manifests are. Each object's origin comes from a render of a
scratch copy with ``buildMetadata: [originAnnotations, transformerAnnotations]``; which
file sets each field, and the check that an edit there renders the live value, is the
``KustomizeMap`` (``sourcemap``). A render is redone only when a file of the installation's
directory changed (size, mtime, ctime, inode), so a sidecar pass without a git change costs
no render; nor is the same edit of the same tree rendered twice (``Caches.verified``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from syncer.cache import Caches, digest
from syncer.config import Config
from syncer.errors import ConfigError
from syncer.model import Drift, ObjectRef
from syncer.sources.kustomize import render
from syncer.sources.kustomize.layers import Layer, check_sizes, find_root, holds_kustomization, read_text, read_tree, walk
from syncer.sources.kustomize.fields import HASH
from syncer.sources.kustomize.offline import refuse_remote
from syncer.sources.kustomize.sourcemap import KustomizeMap, Origin
from syncer.sources.manifests import RACY_NS, GitObject, Manifests, host_dir, object_ref
from syncer.sources.source import DEFAULT_TOOLS, Planner, Tools, Verified, proven

__all__ = ["KustomizeSource"]

#: A render as ``Caches.renders`` keeps it (by source, directory, default namespace, binary),
#: with the stamp of the tree it was made from, and where its fields come from.
Render = tuple[tuple[tuple[str, int, int, int, int], ...], Manifests, KustomizeMap]


class KustomizeSource:
    """``hosts/<installation>/`` as what kustomize renders from it."""

    name = "kustomize"
    proposes_files = False
    new_file_note = "kustomize renders only what the kustomization lists (add it there)"
    declares = "objects kustomize renders"

    def __init__(self, repo: Path, installation: str, config: Config, tools: Tools = DEFAULT_TOOLS) -> None:
        self.repo, self.installation, self.namespace = repo, installation, config.namespace
        self.tool = tools.kustomize
        self._map: KustomizeMap | None = None  # the last load's
        self._tree: bytes | None = None  # its tree's stamp, when trusted (not racy)

    @staticmethod
    def claims(host: Path) -> bool:
        return holds_kustomization(host)

    def load(self, caches: Caches) -> Manifests:
        """The objects kustomize renders, kept in ``caches`` while no file of the tree changes. A
        kustomization that cannot be rendered (offline) is one ConfigError for the installation."""
        base = host_dir(self.repo, self.installation)
        stamp, racy = _stamp(base)
        key = ("kustomize", str(base.absolute()), self.namespace, " ".join(render.binary(self.tool)))
        last: Render | None = caches.renders.get_fresh(key, lambda made: made[0] == stamp)
        if last is None:
            manifests, source_map = _load(self.repo, self.installation, base, self.namespace, self.tool)
            last = (stamp, manifests, source_map)
            if not racy:
                caches.renders.put(key, last)
        self._map, self._tree = last[2], (None if racy else digest(*key, repr(stamp)))
        return last[1]

    def checkout_paths(self, caches: Caches) -> list[str]:
        return []  # everything a kustomization uses lives under hosts/<installation>/ (else it does not build)

    def history_file(self, obj: GitObject) -> str | None:
        return None  # a field's file is the layer that sets it, not its object's origin

    def likely_lists(self, at_least: int) -> list[tuple[str, str, str]]:
        return []  # what is declared is what kustomize renders: nothing to tell from the files

    def place(self, obj: GitObject, drifts: Sequence[Drift], caches: Caches) -> list[Drift]:
        return self._loaded().place(obj, drifts)

    def verify(self, drifts: Sequence[Drift], plan: Planner, caches: Caches) -> Verified:
        return proven(drifts, plan, lambda texts, checked: self._check(texts, checked, caches))

    def _check(self, texts: Mapping[str, str], drifts: Sequence[Drift], caches: Caches) -> list[str | None]:
        # The same edits of the same tree, checked again (the sidecar plans held drifts every
        # pass): the answer is a pure function of the tree, the texts and the drifts.
        source_map = self._loaded()
        if self._tree is None:
            return source_map.check(texts, drifts)
        key = digest(self._tree.hex(), *(t for item in sorted(texts.items()) for t in item),
                     repr([(str(d.ref), d.path, d.file, repr(d.live)) for d in drifts]))
        return list(caches.verified.get_or(key, lambda: tuple(source_map.check(texts, drifts))))

    def _loaded(self) -> KustomizeMap:
        if self._map is None:
            raise RuntimeError("KustomizeSource: place or verify before load")
        return self._map


def _stamp(base: Path) -> tuple[tuple[tuple[str, int, int, int, int], ...], bool]:
    """Every file of the tree by (path, size, mtime, ctime, inode); and whether one was
    modified too recently to trust its stamp (git's racy case)."""
    out, racy, now = [], False, time.time_ns()
    for path in sorted(base.rglob("*")):
        try:
            st = path.lstat()
        except OSError:
            continue
        out.append((path.relative_to(base).as_posix(), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
        racy = racy or now - max(st.st_mtime_ns, st.st_ctime_ns) <= RACY_NS
    return tuple(out), racy


def _with_metadata(root: Layer, host: Path, repo: Path) -> tuple[dict[str, str], bool]:
    """The root kustomization with ``buildMetadata`` origins added, for the scratch copy
    (relative path -> text); and whether the annotations are syncer's (to strip again)."""
    have = root.data.get("buildMetadata")
    have = [str(v) for v in have] if isinstance(have, list) else []
    want = [v for v in ("originAnnotations", "transformerAnnotations") if v not in have]
    if not want:
        return {}, False
    if have:
        raise ConfigError(f"{root.file.relative_to(repo).as_posix()}: buildMetadata {have} without "
                          "originAnnotations and transformerAnnotations: syncer cannot tell the origin of objects")
    text = read_text(root.file, repo)
    if not text.endswith("\n") and text:
        text += "\n"
    return {root.file.relative_to(host).as_posix(): text + "buildMetadata: [originAnnotations, transformerAnnotations]\n"}, True


def _load(repo: Path, installation: str, host: Path, default_namespace: str,
          tool: str) -> tuple[Manifests, KustomizeMap]:
    shown = f"hosts/{installation}"
    host = host.resolve()
    base = find_root(host, repo)
    root = read_tree(base, repo)
    for layer in walk(root):
        if layer.remote:
            raise ConfigError(f"{layer.file.relative_to(repo).as_posix()}: remote base {layer.remote[0]!r}: kustomize "
                              "cannot render it offline (vendor it into the repository)")
    refuse_remote(host, repo)
    check_sizes(root, repo)
    helm = any(layer.data.get("helmCharts") for layer in walk(root))
    texts, ours = _with_metadata(root, host, repo)
    inside = base.relative_to(host).as_posix() if base != host else ""
    docs = render.render(host, shown if not inside else f"{shown}/{inside}", tool, texts, helm, inside)
    objects: dict[ObjectRef, GitObject] = {}
    origins: dict[ObjectRef, Origin] = {}
    for i, doc in enumerate(docs):
        where = f"kustomize build {shown} (document {i + 1})"
        if not isinstance(doc, dict):
            raise ConfigError(f"{where}: not a mapping")
        raw, steps = render.origin_of(doc, strip=ours)
        ref = object_ref(doc, default_namespace, where)
        origins[ref] = _origin(raw, steps, base)
        found = origins[ref].file or origins[ref].generator or root.file
        file = found.relative_to(repo.resolve()).as_posix() if found.is_relative_to(repo.resolve()) else shown
        generated = origins[ref].by in ("ConfigMapGenerator", "SecretGenerator") and HASH.search(ref.name)
        objects[ref] = GitObject(ref, file, i, (), doc, generator=HASH.sub("", ref.name) if generated else "")
    source_map = KustomizeMap(repo, installation, host, root, origins, default_namespace, helm, tool)
    source_map.objects = objects
    return Manifests(objects, ()), source_map


def _origin(raw: dict[str, object], steps: tuple[tuple[str, str], ...], base: Path) -> Origin:
    remote = str(raw.get("repo") or "")
    path, configured = raw.get("path"), raw.get("configuredIn")
    by = raw.get("configuredBy")
    kind = str(by.get("kind") or "") if isinstance(by, dict) else ""
    file = (base / path).resolve() if isinstance(path, str) and not remote else None
    generator = (base / configured).resolve() if isinstance(configured, str) and not remote else None
    kinds = tuple(dict.fromkeys(kind for _, kind in steps))
    ran = tuple(((base / where).resolve(), kind) for where, kind in steps if where)
    return Origin(file, generator, kind, remote, kinds, ran)
