"""The Helm source: ``hosts/<installation>/`` as a chart directory, or Flux HelmReleases whose chart
is in this repository.

The real ``helm template`` renders each release (``render``) from the values ``layout`` finds;
the rendered objects (hooks left out) are the declared objects, compared with live as plain
manifests are. A HelmRelease and its values ConfigMaps are manifests of the directory too, and
compared as such. Which values line sets a field, and the proof that an edit there renders the
live value and nothing else, is the ``HelmMap`` (``sourcemap``). A render is redone only when
a file of the installation or of its charts changed (size, mtime, ctime, inode), so a sidecar
pass without a git change renders nothing; nor is the same edit rendered twice.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from syncer.cache import Caches, Lru
from syncer.config import Config
from syncer.errors import SyncerError
from syncer.model import Drift, FileError, ObjectRef
from syncer.sources.helm import layout
from syncer.sources.helm.layout import FLUX_GROUP, Release, chart_release, flux_releases, is_chart
from syncer.sources.helm.render import binary
from syncer.sources.helm.sourcemap import HelmMap, Renderer
from syncer.sources.manifests import RACY_NS, GitObject, Manifests, host_dir, load_manifests, object_ref
from syncer.sources.source import DEFAULT_TOOLS, Planner, Tools, Verified, proven

__all__ = ["HelmSource"]

#: A load as ``Caches.renders`` keeps it: the stamp of the trees, the objects, their source map.
Render = tuple[tuple[tuple[str, int, int, int, int], ...], Manifests, HelmMap]
#: Whether a file names a HelmRelease whose chart comes from a GitRepository, by its stamp:
#: ``claims`` asks every pass, and reads again only the files that changed.
_MARKED: Lru[tuple[str, int, int, int], bool] = Lru(65_536)


def _yaml_files(directory: str) -> Iterator[os.DirEntry[str]]:
    """The YAML files under ``directory``, symlinks left out (scandir: one stat each, no Path objects)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _yaml_files(entry.path)
        elif entry.name.endswith((".yaml", ".yml")) and entry.is_file(follow_symlinks=False):
            yield entry


def _names_a_release(entry: os.DirEntry[str]) -> bool:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    key = (entry.path, st.st_size, st.st_mtime_ns, st.st_ino)
    found = _MARKED.get(key)
    if found is None:
        try:
            with open(entry.path, "rb") as fh:
                text = fh.read(1 << 20)
        except OSError:
            return False
        found = FLUX_GROUP.encode() in text and b"GitRepository" in text
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS:
            _MARKED.put(key, found)
    return found


class HelmSource:
    """``hosts/<installation>/`` as what helm renders: a chart directory, or HelmReleases."""

    name = "helm"
    proposes_files = False
    new_file_note = "a chart renders only its templates (add the object to the chart)"
    declares = "objects helm renders"

    def __init__(self, repo: Path, installation: str, config: Config, tools: Tools = DEFAULT_TOOLS) -> None:
        self.repo, self.installation, self.namespace = repo, installation, config.namespace
        self.helm = tools.helm
        self.release = config.release
        self._map: HelmMap | None = None  # the last load's

    @staticmethod
    def claims(host: Path) -> bool:
        """A chart directory (``Chart.yaml``, as Argo CD detects one); or a directory of plain
        manifests (no kustomization) one of which is a Flux HelmRelease with a GitRepository chart."""
        if is_chart(host):
            return True
        from syncer.sources.kustomize.layers import holds_kustomization

        if holds_kustomization(host):
            return False
        return any(_names_a_release(entry) for entry in _yaml_files(str(host)))

    def load(self, caches: Caches) -> Manifests:
        """The objects the releases render (plus, for HelmReleases, the directory's own
        manifests), kept in ``caches`` while no file of the trees changes; the helm binary is
        ``tools.helm``, the cluster's capabilities ``Caches.helm_capabilities``."""
        repo, installation, namespace = self.repo, self.installation, self.namespace
        host = host_dir(repo, installation).resolve()
        helm = binary(self.helm)
        kube_version, api_versions = caches.helm_capabilities() if caches.helm_capabilities is not None else ("", ())
        renderer = Renderer(helm, kube_version, api_versions)
        chart = is_chart(host)
        plain = None if chart else load_manifests(repo, installation, namespace, caches=caches)
        charts = [] if plain is None else sorted({(repo / str(layout.local_chart(o)).removeprefix("./")).resolve()
                                                  for o in plain.objects.values() if layout.local_chart(o)})
        stamp, racy = _stamp([host, *[c for c in charts if not c.is_relative_to(host) and c.is_dir()]])
        key = ("helm", str(host), namespace, self.release or "", helm, kube_version, " ".join(api_versions))
        last: Render | None = caches.renders.get_fresh(key, lambda made: made[0] == stamp)
        if last is None:
            if plain is None:
                releases = [chart_release(repo, host, self.release or installation, namespace)]
                manifests, source_map = _load(repo, installation, renderer, releases, Manifests({}, ()), namespace)
            else:
                releases = flux_releases(repo, plain, namespace)
                manifests, source_map = _load(repo, installation, renderer, releases, plain, namespace)
            last = (stamp, manifests, source_map)
            if not racy:
                caches.renders.put(key, last)
        self._map = last[2]
        return last[1]

    def history_file(self, obj: GitObject) -> str | None:
        rendered = self._map is not None and obj.ref in self._map.owners
        return None if rendered else obj.file  # a rendered field's file is its values line, not its template

    def likely_lists(self, at_least: int) -> list[tuple[str, str, str]]:
        return []  # what is declared is what helm renders: nothing to tell from the files

    def checkout_paths(self, caches: Caches) -> list[str]:
        """The repo-relative chart directories the HelmReleases name outside ``hosts/<installation>/``."""
        host = host_dir(self.repo, self.installation)
        if is_chart(host):
            return []
        try:
            plain = load_manifests(self.repo, self.installation, self.namespace, caches=caches)
        except SyncerError:
            return []
        prefix = f"hosts/{self.installation}/"
        found = {str(layout.local_chart(o)).removeprefix("./").rstrip("/") for o in plain.objects.values()
                 if layout.local_chart(o)}
        return sorted(p for p in found if p and not (p + "/").startswith(prefix) and ".." not in p.split("/"))

    def place(self, obj: GitObject, drifts: Sequence[Drift], caches: Caches) -> list[Drift]:
        return self._loaded().place(obj, list(drifts))

    def verify(self, drifts: Sequence[Drift], plan: Planner, caches: Caches) -> Verified:
        return proven(drifts, plan, lambda texts, checked: self._loaded().check(texts, checked))

    def _loaded(self) -> HelmMap:
        if self._map is None:
            raise RuntimeError("HelmSource: place or verify before load")
        return self._map


def _stamp(bases: list[Path]) -> tuple[tuple[tuple[str, int, int, int, int], ...], bool]:
    out, racy, now = [], False, time.time_ns()
    for base in bases:
        for path in sorted(base.rglob("*")):
            try:
                st = path.lstat()
            except OSError:
                continue
            out.append((str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
            racy = racy or now - max(st.st_mtime_ns, st.st_ctime_ns) <= RACY_NS
    return tuple(out), racy


def _load(repo: Path, installation: str, renderer: Renderer, releases: list[Release], plain: Manifests,
          default_namespace: str) -> tuple[Manifests, HelmMap]:
    objects: dict[ObjectRef, GitObject] = dict(plain.objects)
    errors: list[FileError] = list(plain.errors)
    owners: dict[ObjectRef, int] = {}
    source_map = HelmMap(repo, installation, renderer, releases, [], owners, dict(plain.objects), default_namespace)
    root = repo.resolve()
    for i, rel in enumerate(releases):
        got = source_map.render_with(i, {})
        source_map.verifications -= 1  # the load's own render is no verification
        source_map.renders.append(got)
        for n, (template, doc) in enumerate(got.docs):
            where = f"helm template {rel.chart_shown} ({template or f'document {n + 1}'})"
            ref = object_ref(doc, rel.namespace, where)
            file = _template_file(root, rel, template)
            if ref in objects:
                first = objects[ref].file
                errors.append(FileError(file, f"{ref} is declared twice: in {first} and by release {rel.name} ({file})"))
                continue
            objects[ref] = GitObject(ref, file, n, (), doc)
            owners[ref] = i
    source_map.objects = {r: o for r, o in objects.items() if r in owners}
    charts = {rel.chart_shown: rel.name for rel in releases}
    skipped = tuple(replace(note, message=f"{note.file}/: the chart of Helm release {charts[note.file]}: rendered "
                                          "by helm template, its templates never edited")
                    if note.file in charts else note for note in plain.skipped)
    releases_read = tuple((rel.storage or rel.namespace, rel.name, rel.namespace) for rel in releases)
    return Manifests(objects, tuple(errors), skipped=skipped, releases=releases_read), source_map


def _template_file(root: Path, rel: Release, template: str) -> str:
    """The repo-relative file of a rendered template (``chart/charts/sub/templates/x.yaml``
    as helm names it, from the chart's own name)."""
    parts = template.split("/")
    found = rel.chart.joinpath(*parts[1:]) if len(parts) > 1 else rel.chart
    return found.relative_to(root).as_posix() if found.is_relative_to(root) else rel.chart_shown
