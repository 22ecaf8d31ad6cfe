"""Which file and position set a rendered field, and the check that an edit there renders right.

kustomize records origins per resource (``buildMetadata``: the file, or the generator, of
each object), not per field. The field is traced by syncer through the layers from the
overlay the installation renders (applied last) down to the resource's own layer, in the
order kustomize applies them -- within a layer ``images:`` and ``replicas:`` run after the
patches, a later patch after an earlier one -- and the first place that sets the field is
its source: ``replicas:`` (``count``), ``images:`` (``newTag``/``newName``/``digest``), a
strategic-merge patch (a file, or inline), a JSON 6902 ``add``/``replace`` (its ``value``),
a ``configMapGenerator`` literal, else the resource file. That place must hold exactly the
rendered value; when it does not (a transformer computed the value), when nothing holds it,
or when it comes from a remote base or a Helm chart, the drift is reported with the reason
and never written. Every planned edit is then proved by rendering the edited copy (``check``,
per edit and together: ``syncer.sources.source.proven``): the rendered value must be the live
value and nothing else of the render may change, or that edit is not written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path as FsPath
from typing import Any

from syncer.errors import ConfigError
from syncer.kinds import NEVER_WRITTEN
from syncer.sources.kustomize.fields import HASH, map_path, read_yaml_text, same, split_image
from syncer.sources.kustomize.layers import Layer, chain, entries, read_text, read_yaml
from syncer.sources.kustomize.verify import check_render
from syncer.sources.manifests import GitObject
from syncer.model import LINE, Action, Drift, DriftClass, Edit, ObjectRef, Path, format_path
from syncer.detect.normalize import MISSING, get_path, pointer_to_path
from syncer.secrets.redact import REDACTED
from syncer.yamledit import YamlEditError, YamlFile

_PATTERN = re.compile(r"[*+?\[\](){}|^$\\]")
_IMAGE_PATH = re.compile(r"^(containers|initContainers|ephemeralContainers)$")


@dataclass(frozen=True)
class Origin:
    """Where kustomize says a rendered object came from."""

    file: FsPath | None  # the resource file (absolute), for a resource
    generator: FsPath | None  # the kustomization whose generator made it
    by: str  # the generator's kind (ConfigMapGenerator, HelmChartInflationGenerator...), or ""
    remote: str  # the repository of a remote base, or ""
    transformers: tuple[str, ...]


@dataclass(frozen=True)
class _Place:
    file: FsPath  # absolute
    edits: tuple[Edit, ...]


class _NotWritable(Exception):
    """The field's source cannot be told, or cannot be written: the message says why."""


class KustomizeMap:
    """Where the fields of one render come from, and its check of an edit (``KustomizeSource``)."""

    def __init__(self, repo: FsPath, installation: str, host: FsPath, root: Layer, origins: dict[ObjectRef, Origin],
                 default_namespace: str, helm: bool) -> None:
        self.repo, self.installation, self.root = repo.resolve(), installation, root
        self.host = host  # hosts/<installation>/, resolved: what is copied, read and written
        self.origins, self.default_namespace, self.helm = origins, default_namespace, helm
        self._docs: dict[FsPath, list[Any]] = {}  # the files of this render's tree, parsed as traced
        self.objects: dict[ObjectRef, GitObject] = {}  # the render this map belongs to (set by its loader)

    # -- reading -------------------------------------------------------------------------
    def shown(self, path: FsPath) -> str:
        return path.relative_to(self.repo).as_posix() if path.is_relative_to(self.repo) else str(path)

    def _inside(self, path: FsPath) -> bool:
        return path.is_relative_to(self.host)

    def _yaml(self, path: FsPath) -> list[Any]:
        if path not in self._docs:
            self._docs[path] = read_yaml(path, self.repo)
        return self._docs[path]

    def origin_file(self, ref: ObjectRef) -> str:
        """The repo-relative file of an object's origin (its kustomization for a generated one)."""
        origin = self.origins.get(ref)
        where = (origin.file or origin.generator) if origin is not None else None
        return self.shown(where) if where is not None else self.shown(self.root.file)

    def _declared(self, origin: Origin, obj: GitObject) -> tuple[int, dict[str, Any]] | None:
        """The document of the resource file that declares ``obj`` (by kind; the longest name
        contained in the rendered name)."""
        assert origin.file is not None
        best: tuple[int, dict[str, Any]] | None = None
        for i, doc in enumerate(self._yaml(origin.file)):
            if not isinstance(doc, dict) or doc.get("kind") != obj.ref.kind:
                continue
            name = (doc.get("metadata") or {}).get("name")
            if isinstance(name, str) and name in obj.ref.name:
                if best is None or len(name) > len(best[1]["metadata"]["name"]):
                    best = (i, doc)
        return best

    def _names(self, obj: GitObject, origin: Origin) -> set[str]:
        names = {obj.ref.name, HASH.sub("", obj.ref.name)}
        if origin.file is not None:
            declared = self._declared(origin, obj)
            if declared is not None:
                names.add(declared[1]["metadata"]["name"])
        return names

    # -- tracing -------------------------------------------------------------------------
    def place(self, obj: GitObject, drifts: Sequence[Drift]) -> list[Drift]:
        out = []
        for drift in drifts:
            try:
                found = self._trace(obj, drift)
            except _NotWritable as exc:
                if obj.ref.kind in NEVER_WRITTEN or REDACTED in (drift.git, drift.live):
                    # never written anyway; and the reason could quote a value git holds
                    out.append(replace(drift, file=self.origin_file(obj.ref), edits=()))
                    continue
                reason = f"not written: {exc}"
                if drift.action is Action.REPORT:
                    reason = f"{drift.reason}; {reason}" if drift.reason else reason
                out.append(replace(drift, file=self.origin_file(obj.ref), action=Action.REPORT, reason=reason,
                                   edits=()))
                continue
            out.append(replace(drift, file=self.shown(found.file), edits=found.edits if drift.edits else ()))
        return out

    def _trace(self, obj: GitObject, drift: Drift) -> _Place:
        origin = self.origins.get(obj.ref)
        if origin is None:
            raise _NotWritable("kustomize recorded no origin for this object")
        if origin.remote:
            raise _NotWritable(f"it comes from the remote base {origin.remote}")
        if origin.by and origin.by != "ConfigMapGenerator":
            raise _NotWritable(f"it is generated by {origin.by}")
        if origin.file is not None:
            layers = chain(self.root, lambda layer: origin.file in layer.files)
        else:
            layers = chain(self.root, lambda layer: layer.file == origin.generator)
        if layers is None:
            raise _NotWritable("its origin is not in this installation's kustomizations")
        path, current = drift.path, get_path(obj.data, drift.path)
        names = self._names(obj, origin)
        for layer in layers:
            found = self._in_layer(layer, obj, origin, names, drift, current, last=layer is layers[-1])
            if found is not None:
                return found
        if origin.file is None:
            raise _NotWritable(f"no literal of the generator sets {format_path(path)}")
        return self._in_resource(obj, origin, drift, current)

    def _in_layer(self, layer: Layer, obj: GitObject, origin: Origin, names: set[str], drift: Drift, current: Any,
                  last: bool) -> _Place | None:
        path = drift.path
        for i, item in entries(layer, "replicas"):
            if path == ("spec", "replicas") and item.get("name") in names:
                self._check(item.get("count"), current, layer.file, "replicas")
                return _Place(layer.file, (Edit(("replicas", i, "count"), drift.live, doc=0),))
        if len(path) >= 4 and path[-1] == "image" and isinstance(path[-2], int) and _IMAGE_PATH.match(str(path[-3])):
            found = self._image(layer, current, drift.live)
            if found is not None:
                return found
        patches = self._patches(layer)
        for where, doc_index, patch, index_path, inline in reversed(patches):
            found = self._patch(layer, obj, names, drift, current, where, doc_index, patch, index_path, inline)
            if found is not None:
                return found
        if obj.ref.kind == "ConfigMap" and len(path) == 2 and path[0] in ("data", "binaryData"):
            return self._generator(layer, names, drift, current, last and origin.file is None)
        return None

    @staticmethod
    def _check(value: Any, current: Any, file: FsPath, what: str) -> None:
        if not same(value, current):
            raise _NotWritable(f"{what} in {file.name} holds {value!r} but kustomize renders {current!r} "
                               "(a later transformer changes it)")

    def _image(self, layer: Layer, current: Any, live: Any) -> _Place | None:
        if not isinstance(current, str) or not isinstance(live, str):
            return None
        name, tag, digest = split_image(current)
        lname, ltag, ldigest = split_image(live)
        for i, item in entries(layer, "images"):
            produced = item.get("newName") or item.get("name")
            if produced != name:
                continue
            if ("newTag" in item and str(item["newTag"]) != tag) or ("digest" in item and item["digest"] != digest):
                continue
            edits, missing = [], []
            for key, old, new in (("newName", name, lname), ("newTag", tag, ltag), ("digest", digest, ldigest)):
                if old == new:
                    continue
                if key in item:
                    edits.append(Edit(("images", i, key), new, doc=0))
                else:
                    missing.append(key)
            if missing or (ltag and "digest" in item) or (ldigest and "newTag" in item and not ltag):
                raise _NotWritable(f"images: entry {item.get('name')!r} in {self.shown(layer.file)} does not set "
                                   f"{', '.join(missing) or 'the form'} the live image {live!r} needs")
            return _Place(layer.file, tuple(edits))
        return None

    def _patches(self, layer: Layer) -> list[tuple[FsPath, int, Any, Path, bool]]:
        """Every patch of a layer in the order kustomize applies them: (file, document,
        the patch, where it sits in the file, inline)."""
        out: list[tuple[FsPath, int, Any, Path, bool]] = []
        for key in ("patchesStrategicMerge", "patches", "patchesJson6902"):
            items = layer.data.get(key)
            for i, item in enumerate(items if isinstance(items, list) else []):
                target = item.get("target") if isinstance(item, dict) else None
                if isinstance(item, str) and key == "patchesStrategicMerge" and "\n" not in item:
                    item = {"path": item}
                if isinstance(item, str):
                    item = {"patch": item}
                if not isinstance(item, dict):
                    continue
                if isinstance(item.get("path"), str):
                    file = (layer.dir / item["path"]).resolve()
                    if not self._inside(file) or not file.is_file():
                        continue
                    for d, doc in enumerate(self._yaml(file)):
                        out.append((file, d, (target, doc), (), False))
                elif isinstance(item.get("patch"), str):
                    try:
                        docs = read_yaml_text(item["patch"], self.shown(layer.file))
                    except ConfigError:
                        continue
                    at: Path = (key, i) if isinstance(layer.data[key][i], str) else (key, i, "patch")
                    for doc in docs[:1]:
                        out.append((layer.file, 0, (target, doc), at, True))
        return out

    def _patch(self, layer: Layer, obj: GitObject, names: set[str], drift: Drift, current: Any, file: FsPath,
               doc_index: int, patch: Any, at: Path, inline: bool) -> _Place | None:
        target, doc = patch
        if not self._targets(target, doc, obj, names):
            return None
        path = drift.path
        if isinstance(doc, list):  # JSON 6902
            for j in range(len(doc) - 1, -1, -1):
                op = doc[j]
                if not isinstance(op, dict) or not isinstance(op.get("path"), str):
                    continue
                where = pointer_to_path(op["path"])
                if where[-1:] == ("-",):  # appended: the last item of the list as rendered
                    items = get_path(obj.data, where[:-1])
                    where = where[:-1] + (len(items) - 1,) if isinstance(items, list) and items else where
                inner = where == path[:len(where)]
                if not inner and path != where[:len(path)]:
                    continue
                if op.get("op") not in ("add", "replace") or not inner:
                    raise _NotWritable(f"a JSON 6902 {op.get('op')} at {op['path']} in {self.shown(file)} sets it")
                rest = map_path(obj.ref.kind, get_path(obj.data, where), path[len(where):], op.get("value"), where)
                if rest is None:
                    raise _NotWritable(f"a JSON 6902 {op['op']} at {op['path']} in {self.shown(file)} sets it whole")
                self._check(get_path(op.get("value"), rest), current, file, f"the JSON 6902 value at {op['path']}")
                return self._edit_at(file, doc_index, (j, "value", *rest), drift, at, inline)
            return None
        if not isinstance(doc, dict):
            return None
        mapped = map_path(obj.ref.kind, obj.data, path, doc)
        if mapped is None:
            return None
        self._check(get_path(doc, mapped), current, file, f"the patch's {format_path(path)}")
        return self._edit_at(file, doc_index, mapped, drift, at, inline)

    def _edit_at(self, file: FsPath, doc_index: int, path: Path, drift: Drift, at: Path, inline: bool) -> _Place:
        if not inline:
            return _Place(file, (Edit(path, drift.live, doc=doc_index),))
        text = get_path(self._yaml(file)[0], at)
        try:
            inner = YamlFile.parse(text, self.shown(file))
            inner.set_value(0, path, drift.live)
        except YamlEditError as exc:
            raise _NotWritable(f"the inline patch in {self.shown(file)} cannot be edited: {exc.message}") from exc
        return _Place(file, (Edit(at, inner.render(), doc=0),))

    @staticmethod
    def _targets(target: Any, doc: Any, obj: GitObject, names: set[str]) -> bool:
        if isinstance(target, dict):
            if target.get("kind") not in (None, obj.ref.kind):
                return False
            name = target.get("name")
            if isinstance(name, str) and (_PATTERN.search(name) or name not in names):
                # a regular expression from the repository is never run (it could take forever):
                # such a patch is not traced, and the place found instead must still verify
                return False
            return not any(k in target for k in ("labelSelector", "annotationSelector"))  # not traced: unknown
        if isinstance(doc, dict):
            meta = doc.get("metadata")
            return doc.get("kind") == obj.ref.kind and isinstance(meta, dict) and meta.get("name") in names
        return False

    def _generator(self, layer: Layer, names: set[str], drift: Drift, current: Any, own: bool) -> _Place | None:
        key = str(drift.path[1])
        for gi, item in entries(layer, "configMapGenerator"):
            if item.get("name") not in names:
                continue
            literals = item.get("literals")
            for li, literal in enumerate(literals if isinstance(literals, list) else []):
                if isinstance(literal, str) and literal.partition("=")[0].strip() == key:
                    self._check(literal.partition("=")[2], current, layer.file, f"the literal {key}")
                    if not isinstance(drift.live, str) or "\n" in drift.live:
                        raise _NotWritable(f"the live value of {key} cannot be a one-line literal")
                    return _Place(layer.file, (Edit(("configMapGenerator", gi, "literals", li), f"{key}={drift.live}",
                                                    doc=0),))
            listed = item.get("envs")
            envs: list[Any] = listed if isinstance(listed, list) else [item.get("env")]
            for env in reversed([e for e in envs if isinstance(e, str)]):  # a later file wins
                found = self._env_line(layer, (layer.dir / env).resolve(), key, drift, current)
                if found is not None:
                    return found
            if item.get("files"):
                if own:
                    raise _NotWritable(f"{key} may come from a files: source of the generator "
                                       f"{item.get('name')!r}: not written")
        return None

    def _env_line(self, layer: Layer, file: FsPath, key: str, drift: Drift, current: Any) -> _Place | None:
        if not self._inside(file) or not file.is_file():
            return None
        lines = read_text(file, self.repo).splitlines()
        for i in range(len(lines) - 1, -1, -1):  # kustomize keeps the last of a key
            line = lines[i]
            name, eq, value = line.strip().partition("=")
            if not eq or line.lstrip().startswith("#") or name.strip() != key:
                continue
            self._check(value, current, file, f"the line {key}")
            if not isinstance(drift.live, str) or "\n" in drift.live or "\r" in drift.live:
                raise _NotWritable(f"the live value of {key} cannot be one line of {self.shown(file)}")
            indent = line[:len(line) - len(line.lstrip())]
            return _Place(file, (Edit((i,), f"{indent}{key}={drift.live}", doc=LINE),))
        return None

    def _in_resource(self, obj: GitObject, origin: Origin, drift: Drift, current: Any) -> _Place:
        assert origin.file is not None
        file = origin.file
        if not self._inside(file):
            raise _NotWritable(f"its file {file} is outside hosts/{self.installation}/")
        declared = self._declared(origin, obj)
        if declared is None:
            raise _NotWritable(f"{self.shown(file)} declares no {obj.ref.kind} kustomize renders as {obj.ref.name}")
        index, doc = declared
        why = f" ({', '.join(origin.transformers)} ran on it)" if origin.transformers else ""
        if drift.cls is DriftClass.ADDED and drift.edits:
            parent = map_path(obj.ref.kind, obj.data, drift.path[:-1], doc)
            if parent is None:
                raise _NotWritable(f"{self.shown(file)} does not hold {format_path(drift.path[:-1])}{why}")
            last = drift.path[-1]
            return _Place(file, (Edit(parent + (last if isinstance(last, str) else len(get_path(doc, parent)),),
                                      drift.live, add=True, doc=index),))
        mapped = map_path(obj.ref.kind, obj.data, drift.path, doc)
        if mapped is None:
            raise _NotWritable(f"no file sets {format_path(drift.path)}: kustomize computes it{why}")
        held = get_path(doc, mapped)
        if held is not MISSING and not same(held, current):
            raise _NotWritable(f"{self.shown(file)} holds {held!r} but kustomize renders {current!r}: "
                               f"a transformer computes it{why}")
        return _Place(file, (Edit(mapped, drift.live, doc=index),))

    # -- verifying -----------------------------------------------------------------------
    def check(self, texts: Mapping[str, str], drifts: Sequence[Drift]) -> list[str | None]:
        """Render with ``texts`` (repo-relative file -> text) in place of the files: for each of
        ``drifts``, why its field does not render as its live value (or the edits change more of
        the render than the drifted values), or None."""
        inside = self.root.dir.relative_to(self.host).as_posix() if self.root.dir != self.host else ""
        before = {ref: obj.data for ref, obj in self.objects.items()}
        prefix = self.shown(self.host) + "/"
        edited = {file.removeprefix(prefix): text for file, text in texts.items()}
        return check_render(self.host, self.shown(self.root.dir), inside, edited, drifts, self.default_namespace,
                            self.helm, before)


__all__ = ["KustomizeMap", "Origin"]
