"""Helm installations: a chart directory, or Flux HelmReleases whose chart is in this repository.

The real ``helm template`` renders each release (``render``) from the values ``layout`` finds;
the rendered objects (hooks left out) are the declared objects, compared with live as plain
manifests are. A HelmRelease and its values ConfigMaps are manifests of the directory too, and
compared as such. Which values line sets a field, and the proof that an edit there renders the
live value and nothing else, is the ``HelmMap`` (``sourcemap``). A render is redone only when
a file of the installation or of its charts changed (size, mtime, ctime, inode), so a sidecar
pass without a git change renders nothing.
"""

from __future__ import annotations

import time
from dataclasses import replace
from collections.abc import Callable
from pathlib import Path

from syncer.cache import Caches
from syncer.errors import SyncerError
from syncer.sources.helm import layout
from syncer.sources.helm.layout import Release, chart_release, declares_release, flux_releases, is_chart
from syncer.sources.helm.render import binary
from syncer.sources.helm.sourcemap import HelmMap, Renderer
from syncer.sources.manifests import RACY_NS, GitObject, Manifests, host_dir, load_manifests, object_ref
from syncer.model import FileError, ObjectRef

__all__ = ["HelmRender", "capabilities_of", "charts_outside", "is_chart_dir", "is_helm", "load_helm"]

#: A load as ``Caches.helm_renders`` keeps it, with the stamp of the trees it was made from.
HelmRender = tuple[tuple[tuple[str, int, int, int, int], ...], Manifests]


def is_chart_dir(repo: Path, installation: str) -> bool:
    """Is ``hosts/<installation>/`` a chart directory (a ``Chart.yaml``, as Argo CD detects it)?"""
    return is_chart(host_dir(repo, installation))


def is_helm(manifests: Manifests) -> bool:
    """Do plain manifests declare a HelmRelease whose chart is a path of this repository?"""
    return declares_release(manifests)


def charts_outside(repo: Path, installation: str, caches: Caches | None = None) -> list[str]:
    """The repo-relative chart directories the installation's HelmReleases name outside
    ``hosts/<installation>/`` (a sparse clone must check them out too)."""
    host = host_dir(repo, installation)
    if is_chart(host):
        return []
    try:
        plain = load_manifests(repo, installation, "", caches=caches)
    except SyncerError:
        return []
    prefix = f"hosts/{installation}/"
    found = {str(layout.local_chart(o)).removeprefix("./").rstrip("/") for o in plain.objects.values()
             if layout.local_chart(o)}
    return sorted(p for p in found if p and not (p + "/").startswith(prefix) and ".." not in p.split("/"))


def capabilities_of(source: object) -> Callable[[], tuple[str, tuple[str, ...]]]:
    """A reader, run once at most, of what ``helm install`` would learn from the cluster: its
    version (``--kube-version``) and API group versions (``--api-versions``); ("", ()) without an
    API server (a snapshot) or when it does not answer."""
    from syncer.gather.live import KubeSource

    kube_source = source if isinstance(source, KubeSource) else getattr(source, "lister", None)
    found: list[tuple[str, tuple[str, ...]]] = []

    def read() -> tuple[str, tuple[str, ...]]:
        if found:
            return found[0]
        answer: tuple[str, tuple[str, ...]] = ("", ())
        if isinstance(kube_source, KubeSource):
            kube = kube_source.kube
            try:
                version = kube.call("GET", "/version", what="the API server's version") or {}
                core = kube.call("GET", "/api", what="discovery of the core API") or {}
                groups = kube.call("GET", "/apis", what="discovery of API groups") or {}
                apis = [str(v) for v in core.get("versions") or []] + [
                    str(v.get("groupVersion")) for g in groups.get("groups") or [] if isinstance(g, dict)
                    for v in g.get("versions") or [] if isinstance(v, dict) and v.get("groupVersion")]
                answer = (str(version.get("gitVersion") or ""), tuple(apis))
            except SyncerError:
                pass
        found.append(answer)
        return answer

    return read


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


def load_helm(repo: Path, installation: str, default_namespace: str, *, release: str | None = None,
              caches: Caches | None = None, plain: Manifests | None = None) -> Manifests:
    """The objects ``hosts/<installation>/`` declares as Helm releases (plus, for HelmReleases,
    the directory's own manifests), with their source map. ``caches`` keeps the load while no
    file of the trees changes and names the helm binary (``Caches.helm_binary``)."""
    caches = caches if caches is not None else Caches()
    host = host_dir(repo, installation).resolve()
    helm = binary(caches.helm_binary)
    kube_version, api_versions = caches.helm_capabilities() if caches.helm_capabilities is not None else ("", ())
    renderer = Renderer(helm, kube_version, api_versions)
    chart = is_chart(host)
    if not chart and plain is None:
        plain = load_manifests(repo, installation, default_namespace, caches=caches)
    charts = [host] if chart else sorted({(repo / str(layout.local_chart(o)).removeprefix("./")).resolve()
                                          for o in plain.objects.values() if layout.local_chart(o)} if plain else set())
    stamp, racy = _stamp([host, *[c for c in charts if not c.is_relative_to(host) and c.is_dir()]])
    key = (str(host), default_namespace, release or "", helm, kube_version, " ".join(api_versions))
    last = caches.helm_renders.get_fresh(key, lambda made: made[0] == stamp)
    if last is not None:
        return last[1]
    if chart:
        releases = [chart_release(repo, host, release or installation, default_namespace)]
        manifests = _load(repo, installation, renderer, releases, Manifests({}, ()), default_namespace)
    else:
        assert plain is not None
        releases = flux_releases(repo, plain, default_namespace)
        manifests = _load(repo, installation, renderer, releases, plain, default_namespace)
    if not racy:
        caches.helm_renders.put(key, (stamp, manifests))
    return manifests


def _load(repo: Path, installation: str, renderer: Renderer, releases: list[Release], plain: Manifests,
          default_namespace: str) -> Manifests:
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
            objects[ref] = GitObject(ref, file, n, (), doc, rendered=True)
            owners[ref] = i
    source_map.objects = {r: o for r, o in objects.items() if r in owners}
    charts = {rel.chart_shown: rel.name for rel in releases}
    skipped = tuple(replace(note, message=f"{note.file}/: the chart of Helm release {charts[note.file]}: rendered "
                                          "by helm template, its templates never edited")
                    if note.file in charts else note for note in plain.skipped)
    return Manifests(objects, tuple(errors), source_map=source_map, skipped=skipped)


def _template_file(root: Path, rel: Release, template: str) -> str:
    """The repo-relative file of a rendered template (``chart/charts/sub/templates/x.yaml``
    as helm names it, from the chart's own name)."""
    parts = template.split("/")
    found = rel.chart.joinpath(*parts[1:]) if len(parts) > 1 else rel.chart
    return found.relative_to(root).as_posix() if found.is_relative_to(root) else rel.chart_shown
