"""Which Helm releases ``hosts/<installation>/`` declares, and the values each is rendered with.

Two layouts, as the GitOps tools that deploy them read them:

* a **chart directory** (``hosts/<installation>/Chart.yaml``, as Argo CD detects a Helm
  source): the release is ``release:`` of syncer.conf, else the installation's name, in the
  config's namespace; the chart's own ``values.yaml`` is the one values file the installation
  owns (an umbrella's ``<dependency>:`` subtree included); its dependencies are vendored
  under ``charts/``.
* **Flux HelmReleases** (``helm.toolkit.fluxcd.io``) among the directory's manifests whose
  chart is a path of this repository (``sourceRef`` a GitRepository): values are the
  ``valuesFrom`` ConfigMaps (each one's ``valuesKey``, default ``values.yaml``) merged in order,
  then ``spec.values``, as helm-controller merges them; the release name and namespace are
  helm-controller's (``spec.releaseName``, else ``<targetNamespace>-<name>`` with a target
  namespace, else the name; shortened past 53 characters; the namespace ``targetNamespace``,
  else the HelmRelease's).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.manifests import GitObject, Manifests
from syncer.model import ObjectRef, Path as ObjPath
from syncer.repofile import read_inside
from syncer.sources.skipped import CHART_FILE
from syncer.yamlread import parse_documents

FLUX_GROUP = "helm.toolkit.fluxcd.io/"
#: helm-controller's longest release name (Helm's own limit): longer ones are shortened.
MAX_RELEASE_NAME = 53
_HASH_CHARS = 12


def is_chart(directory: Path) -> bool:
    return (directory / CHART_FILE).is_file()


@dataclass(frozen=True)
class ValuesSource:
    """One place a release's values are written in git, the installation owns it."""

    file: str  # repo-relative
    doc: int  # the document of the file
    at: ObjPath  # where the values mapping sits in that document: () a values.yaml, ("spec", "values")
    inner: bool  # the values are YAML text held in a string there (a ConfigMap's block scalar)
    data: Any  # the values as parsed
    what: str  # how the file is named to people: "values.yaml", "HelmRelease podinfo spec.values"


@dataclass(frozen=True)
class Release:
    """One Helm release the installation declares, ready to render."""

    name: str
    namespace: str
    chart: Path  # absolute, resolved
    chart_shown: str  # repo-relative
    #: the values files' texts given to helm, lowest precedence first (the chart's values.yaml is its own)
    values: tuple[str, ...]
    #: where a values key may be written, highest precedence first
    owned: tuple[ValuesSource, ...]
    owner: ObjectRef | None = None  # the HelmRelease; None for a chart directory
    #: the HelmRelease's reconcile interval (said in the notes on GitOps-managed objects)
    interval: str = ""
    #: labels and annotations helm-controller's post-renderers put on every object it applies
    #: (its origin labels, ``spec.commonMetadata``): part of what it renders, so of git's objects
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    #: where Helm keeps the release's revisions ("": the release's namespace)
    storage: str = ""


def shorten(name: str) -> str:
    """A release name as helm-controller gives it to Helm: past 53 characters, its first 40
    then ``-`` and 12 hex digits of its SHA-256."""
    if len(name) <= MAX_RELEASE_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_CHARS]
    return name[:MAX_RELEASE_NAME - _HASH_CHARS - 1] + "-" + digest


def _shown(repo: Path, path: Path) -> str:
    return path.relative_to(repo.resolve()).as_posix()


def _check_dependencies(chart: Path, repo: Path) -> None:
    """Every dependency of the chart vendored under ``charts/`` (a directory or a ``.tgz``)."""
    try:
        meta = parse_documents(read_inside(chart / CHART_FILE, _shown(repo, chart / CHART_FILE), repo), CHART_FILE)
    except OSError as exc:
        raise ConfigError(f"{_shown(repo, chart)}/{CHART_FILE}: cannot read: {exc}") from exc
    data = meta[0] if meta and isinstance(meta[0], dict) else {}
    deps = data.get("dependencies")
    requirements = chart / "requirements.yaml"
    if deps is None and requirements.is_file():
        req = parse_documents(read_inside(requirements, _shown(repo, requirements), repo), "requirements.yaml")
        deps = req[0].get("dependencies") if req and isinstance(req[0], dict) else None
    vendored = chart / "charts"
    have = {p.name for p in vendored.iterdir()} if vendored.is_dir() else set()
    for dep in deps if isinstance(deps, list) else []:
        name = dep.get("name") if isinstance(dep, dict) else None
        if not isinstance(name, str):
            continue
        if name in have or any(n.startswith(f"{name}-") and n.endswith(".tgz") for n in have):
            continue
        raise ConfigError(f"{_shown(repo, chart)}/{CHART_FILE}: dependency {name!r} is not vendored under "
                          f"{_shown(repo, chart)}/charts/ (syncer renders offline and never runs helm dependency: "
                          f"run `helm dependency build {_shown(repo, chart)}` and commit charts/)")


def chart_release(repo: Path, host: Path, name: str, namespace: str) -> Release:
    """The release of a chart directory: its own values.yaml is the one file written."""
    host = host.resolve()
    _check_dependencies(host, repo)
    values = host / "values.yaml"
    owned: tuple[ValuesSource, ...] = ()
    if values.is_file():
        shown = _shown(repo, values)
        docs = parse_documents(read_inside(values, shown, repo), shown)
        data = docs[0] if docs and isinstance(docs[0], dict) else {}
        owned = (ValuesSource(shown, 0, (), False, data, shown),)
    return Release(name, namespace, host, _shown(repo, host), (), owned)


def _flux_releases(objects: dict[ObjectRef, GitObject]) -> list[GitObject]:
    return [o for r, o in objects.items() if r.kind == "HelmRelease" and r.api_version.startswith(FLUX_GROUP)]


def local_chart(obj: GitObject) -> str | None:
    """The chart path of a HelmRelease whose chart comes from a GitRepository (this
    repository, as syncer reads it), else None (a chart repository or OCI: not rendered here)."""
    spec = obj.data.get("spec")
    chart = spec.get("chart") if isinstance(spec, dict) else None
    inner = chart.get("spec") if isinstance(chart, dict) else None
    if not isinstance(inner, dict) or not isinstance(inner.get("chart"), str):
        return None
    source = inner.get("sourceRef")
    if not isinstance(source, dict) or source.get("kind") != "GitRepository":
        return None
    return str(inner["chart"])


def declares_release(manifests: Manifests) -> bool:
    """Does the directory hold a HelmRelease whose chart is a path of this repository?"""
    return any(local_chart(o) is not None for o in _flux_releases(manifests.objects))


def _values_text(obj: GitObject, key: str, where: str) -> str:
    """The values text a ConfigMap (or a Secret) declared in git holds under ``key``."""
    if obj.ref.kind == "Secret":
        string = obj.data.get("stringData") or {}
        if isinstance(string, dict) and key in string:
            return str(string[key])
        data = obj.data.get("data") or {}
        if isinstance(data, dict) and key in data:
            try:
                return base64.b64decode(str(data[key])).decode("utf-8")
            except (ValueError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{where}: {obj.ref} {key} is not base64 of UTF-8 text") from exc
    else:
        data = obj.data.get("data") or {}
        if isinstance(data, dict) and isinstance(data.get(key), str):
            return str(data[key])
    raise ConfigError(f"{where}: {obj.ref} has no key {key!r}")


def flux_release(repo: Path, obj: GitObject, objects: dict[ObjectRef, GitObject], default_namespace: str) -> Release:
    """The release a HelmRelease makes, its values as helm-controller merges them."""
    where = f"{obj.file}: {obj.ref.kind} {obj.ref.name}"
    spec = obj.data.get("spec") if isinstance(obj.data.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    path = local_chart(obj)
    assert path is not None
    chart = (repo / path.removeprefix("./")).resolve()
    if not chart.is_relative_to(repo.resolve()) or not is_chart(chart):
        raise ConfigError(f"{where}: spec.chart.spec.chart {path!r} is no chart directory of this repository "
                          f"(no {CHART_FILE} there)")
    _check_dependencies(chart, repo)
    for unsupported in ("postRenderers", "chartRef"):
        if spec.get(unsupported):
            raise ConfigError(f"{where}: spec.{unsupported} is not supported: syncer cannot render it as "
                              "helm-controller does")
    namespace = obj.ref.namespace or default_namespace
    target = spec.get("targetNamespace") if isinstance(spec.get("targetNamespace"), str) else ""
    name = spec.get("releaseName") if isinstance(spec.get("releaseName"), str) and spec.get("releaseName") else (
        f"{target}-{obj.ref.name}" if target else obj.ref.name)
    texts: list[str] = []
    inner = spec["chart"]["spec"]
    files = inner.get("valuesFiles") or ([inner["valuesFile"]] if isinstance(inner.get("valuesFile"), str) else [])
    for file in files if isinstance(files, list) else []:
        found = (repo / str(file).removeprefix("./")).resolve()
        if not found.is_relative_to(repo.resolve()) or not found.is_file():
            found = (chart / str(file).removeprefix("./")).resolve()
        if not found.is_relative_to(repo.resolve()) or not found.is_file():
            raise ConfigError(f"{where}: valuesFiles entry {file!r} is not a file of this repository")
        texts.append(read_inside(found, _shown(repo, found), repo))
    owned: list[ValuesSource] = []
    refs = spec.get("valuesFrom") or []
    for i, ref in enumerate(refs if isinstance(refs, list) else []):
        at = f"{where}: valuesFrom[{i}]"
        if not isinstance(ref, dict) or ref.get("kind") not in ("ConfigMap", "Secret") or not ref.get("name"):
            raise ConfigError(f"{at}: expected kind ConfigMap or Secret and a name")
        if ref.get("targetPath"):
            raise ConfigError(f"{at}: targetPath is not supported: syncer renders whole values documents")
        key = str(ref.get("valuesKey") or "values.yaml")
        found_obj = next((o for r, o in objects.items() if r.kind == ref["kind"] and r.name == ref["name"]
                          and r.namespace == namespace), None)
        if found_obj is None:
            if ref.get("optional"):
                continue
            raise ConfigError(f"{at}: {ref['kind']} {namespace}/{ref['name']} is not declared in this installation's "
                              "manifests (syncer renders from git alone)")
        text = _values_text(found_obj, key, at)
        texts.append(text)
        if found_obj.ref.kind == "ConfigMap":
            docs = parse_documents(text, f"{found_obj.file}: data.{key}")
            data = docs[0] if docs and isinstance(docs[0], dict) else {}
            owned.append(ValuesSource(found_obj.file, found_obj.doc, found_obj.prefix + ("data", key), True, data,
                                      f"ConfigMap {found_obj.ref.name} data.{key}"))
    values = spec.get("values")
    if values is not None and not isinstance(values, dict):
        raise ConfigError(f"{where}: spec.values is not a mapping")
    texts.append(json.dumps(values or {}))
    owned.append(ValuesSource(obj.file, obj.doc, obj.prefix + ("spec", "values"), False, values or {},
                              f"HelmRelease {obj.ref.name} spec.values"))
    interval = spec.get("interval") if isinstance(spec.get("interval"), str) else ""
    common = spec.get("commonMetadata") if isinstance(spec.get("commonMetadata"), dict) else {}
    assert isinstance(common, dict)
    labels = {str(k): str(v) for k, v in (common.get("labels") or {}).items()}
    labels.update({f"{FLUX_GROUP}name": obj.ref.name, f"{FLUX_GROUP}namespace": namespace})
    annotations = {str(k): str(v) for k, v in (common.get("annotations") or {}).items()}
    storage = spec.get("storageNamespace") if isinstance(spec.get("storageNamespace"), str) else ""
    return Release(shorten(str(name)), target or namespace, chart, _shown(repo, chart), tuple(texts),
                   tuple(reversed(owned)), obj.ref, str(interval), tuple(labels.items()), tuple(annotations.items()),
                   str(storage or namespace))


def flux_releases(repo: Path, manifests: Manifests, default_namespace: str) -> list[Release]:
    return [flux_release(repo, o, manifests.objects, default_namespace)
            for o in _flux_releases(manifests.objects) if local_chart(o) is not None]


def stamp(doc: dict[str, object], rel: Release) -> None:
    """``doc`` with the labels and annotations helm-controller adds to what it applies."""
    if not rel.labels and not rel.annotations:
        return
    meta = doc.setdefault("metadata", {})
    if not isinstance(meta, dict):
        return
    for key, extra in (("labels", rel.labels), ("annotations", rel.annotations)):
        if extra:
            have = meta.get(key)
            meta[key] = {**(have if isinstance(have, dict) else {}), **dict(extra)}
