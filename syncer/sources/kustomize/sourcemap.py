"""Which file and position set a rendered field, and the check that an edit there renders right.

kustomize records, for each rendered object, the file (or generator) it came from and the
transformers that ran on it, in order, each with the kustomization that configured it
(``buildMetadata: [originAnnotations, transformerAnnotations]``). The field is traced along that
record from the last transformer back to the first -- in each kustomization (or component) the
transformer's own entries: ``replicas:`` (``count``), ``images:`` (``newTag``/``newName``/
``digest``), a patch (strategic-merge or JSON 6902, a file or inline, the later first) -- with a
``configMapGenerator`` entry of each layer on the object's path (a literal, an ``envs:`` line, a
``files:`` file; ``behavior: merge`` in an overlay) in its place in kustomize's order, and the
resource file last. The first place that sets the field is its source, and must hold exactly the
value kustomize renders; when it does not (a transformer computed the value), when nothing holds
it, or when it comes from a remote base or a Helm chart, the drift is reported with the reason
and never written. Which layers are on the object's path is told by the record too: of two
overlays over one base, only the one whose transformers ran on the object is asked. Every planned
edit is then proved by rendering the edited copy (``check``, per edit and together:
``syncer.sources.source.proven``): the rendered value must be the live value and nothing else of
the render may change, or that edit is not written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path as FsPath
from typing import Any

from syncer.kinds import NEVER_WRITTEN
from syncer.sources.kustomize.fields import HASH, map_path, same
from syncer.sources.kustomize.layers import Layer, paths, read_yaml, walk
from syncer.sources.kustomize.places import PATCH_KEYS, Finders, NotWritable, Place, is_image
from syncer.sources.kustomize.verify import check_render
from syncer.sources.manifests import GitObject
from syncer.model import Action, Drift, DriftClass, Edit, ObjectRef, format_path
from syncer.detect.normalize import MISSING, get_path
from syncer.secrets.redact import REDACTED


@dataclass(frozen=True)
class Origin:
    """Where kustomize says a rendered object came from."""

    file: FsPath | None  # the resource file (absolute), for a resource
    generator: FsPath | None  # the kustomization whose generator made it
    by: str  # the generator's kind (ConfigMapGenerator, HelmChartInflationGenerator...), or ""
    remote: str  # the repository of a remote base, or ""
    transformers: tuple[str, ...]  # the kinds of the transformers that ran on it (for messages)
    steps: tuple[tuple[FsPath, str], ...] = ()  # (kustomization file, transformer kind), in order


#: What ``_timeline`` yields: ("gen", layer) a layer's generators ran, ("tf", layer) its transformers.
Event = tuple[str, Layer]


class KustomizeMap(Finders):
    """Where the fields of one render come from, and its check of an edit (``KustomizeSource``)."""

    def __init__(self, repo: FsPath, installation: str, host: FsPath, root: Layer, origins: dict[ObjectRef, Origin],
                 default_namespace: str, helm: bool, tool: str) -> None:
        self.repo, self.installation, self.root = repo.resolve(), installation, root
        self.tool = tool  # the binary that rendered it, and renders each check
        self.host = host  # hosts/<installation>/, resolved: what is copied, read and written
        self.origins, self.default_namespace, self.helm = origins, default_namespace, helm
        self._docs: dict[FsPath, list[Any]] = {}  # the files of this render's tree, parsed as traced
        self.objects: dict[ObjectRef, GitObject] = {}  # the render this map belongs to (set by its loader)
        self._by_file = {layer.file.resolve(): layer for layer in walk(root)}

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

    def _names(self, obj: GitObject, origin: Origin, chain: list[Layer]) -> set[str]:
        """The names the object has in each layer of ``chain``: each layer (the one that made it
        too) adds its ``namePrefix``/``nameSuffix`` after its generators and patches ran, so a
        generator entry or a patch in a lower layer names it without them (stripped here, the
        outermost first)."""
        name = HASH.sub("", obj.ref.name)
        names = {obj.ref.name, name}
        for layer in chain:
            for here in [layer, *self._components(layer)]:
                prefix, suffix = here.data.get("namePrefix"), here.data.get("nameSuffix")
                if isinstance(prefix, str) and prefix and name.startswith(prefix):
                    name = name[len(prefix):]
                if isinstance(suffix, str) and suffix and name.endswith(suffix):
                    name = name[:-len(suffix)]
                names.add(name)
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
            except NotWritable as exc:
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

    def _path(self, origin: Origin) -> list[Layer]:
        """The layers from the root down to the one that made the object: of several chains (a
        base two overlays include), the one holding every kustomization whose transformers ran
        on it."""
        if origin.file is not None:
            chains = paths(self.root, lambda layer: origin.file in layer.files)
        else:
            chains = paths(self.root, lambda layer: layer.file.resolve() == origin.generator)
        if not chains:
            raise NotWritable("its origin is not in this installation's kustomizations")
        ran = {file for file, _ in origin.steps}

        def mine(chain: list[Layer]) -> set[FsPath]:
            return {layer.file.resolve() for here in chain for layer in [here, *self._components(here)]}
        return max(chains, key=lambda chain: (ran <= mine(chain), len(ran & mine(chain))))

    def _components(self, layer: Layer) -> list[Layer]:
        """A layer's components and theirs, in the order kustomize applies them."""
        out: list[Layer] = []
        for component in layer.components:
            out.extend(self._components(component))
            out.append(component)
        return out

    def _timeline(self, chain: list[Layer], generated: bool) -> list[Event]:
        """The generator and transformer phases that follow the object's creation, in
        kustomize's order: in each layer its components (after its resources: not for what
        the layer's own generator makes), its generators, its transformers; from the layer
        that made the object up to the root."""
        events: list[Event] = []
        owner = chain[-1]
        for component in [] if generated else self._components(owner):
            events.extend((("gen", component), ("tf", component)))
        events.extend((("gen", owner), ("tf", owner)))
        for depth in range(len(chain) - 2, -1, -1):
            layer, below = chain[depth], chain[depth + 1]
            components = self._components(layer)
            if below in layer.components:  # made inside a component: only the later ones follow
                components = components[components.index(below) + 1:]
            for component in components:
                events.extend((("gen", component), ("tf", component)))
            events.extend((("gen", layer), ("tf", layer)))
        return events

    def _trace(self, obj: GitObject, drift: Drift) -> Place:
        origin = self.origins.get(obj.ref)
        if origin is None:
            raise NotWritable("kustomize recorded no origin for this object")
        if origin.remote:
            raise NotWritable(f"it comes from the remote base {origin.remote}")
        if origin.by and origin.by != "ConfigMapGenerator":
            raise NotWritable(f"it is generated by {origin.by}")
        chain = self._path(origin)
        current = get_path(obj.data, drift.path)
        names = self._names(obj, origin, chain)
        data_key = obj.ref.kind == "ConfigMap" and len(drift.path) == 2 and drift.path[0] in ("data", "binaryData")
        for phase, layer in reversed(self._timeline(chain, origin.file is None)):
            if phase == "gen":
                found = self._generator(layer, names, drift, current) if data_key else None
            else:
                found = self._transformed(layer, origin, obj, names, drift, current)
            if found is not None:
                return found
        if origin.file is None:
            raise NotWritable(f"no literal, env line or file of the generator sets {format_path(drift.path)}")
        return self._in_resource(obj, origin, drift, current)

    def _transformed(self, layer: Layer, origin: Origin, obj: GitObject, names: set[str], drift: Drift,
                     current: Any) -> Place | None:
        """The place one of ``layer``'s transformers that ran on the object (the later first)
        gives the drifted field, or None."""
        kinds = [kind for file, kind in origin.steps if file == layer.file.resolve()]
        for kind in reversed(list(dict.fromkeys(reversed(kinds)))):  # each kind once, at its last run
            found: Place | None = None
            if kind == "ReplicaCountTransformer":
                found = self._replicas(layer, names, drift, current)
            elif kind == "ImageTagTransformer" and is_image(drift.path):
                found = self._image(layer, current, drift.live)
            elif kind in PATCH_KEYS:
                for where, doc_index, patch, at, inline in reversed(self._patches(layer, PATCH_KEYS[kind])):
                    found = self._patch(obj, names, drift, current, where, doc_index, patch, at, inline)
                    if found is not None:
                        break
            if found is not None:
                return found
        return None

    def _in_resource(self, obj: GitObject, origin: Origin, drift: Drift, current: Any) -> Place:
        assert origin.file is not None
        file = origin.file
        if not self._inside(file):
            raise NotWritable(f"its file {file} is outside hosts/{self.installation}/")
        declared = self._declared(origin, obj)
        if declared is None:
            raise NotWritable(f"{self.shown(file)} declares no {obj.ref.kind} kustomize renders as {obj.ref.name}")
        index, doc = declared
        why = f" ({', '.join(origin.transformers)} ran on it)" if origin.transformers else ""
        if drift.cls is DriftClass.ADDED and drift.edits:
            parent = map_path(obj.ref.kind, obj.data, drift.path[:-1], doc)
            if parent is None:
                raise NotWritable(f"{self.shown(file)} does not hold {format_path(drift.path[:-1])}{why}")
            last = drift.path[-1]
            return Place(file, (Edit(parent + (last if isinstance(last, str) else len(get_path(doc, parent)),),
                                      drift.live, add=True, doc=index),))
        mapped = map_path(obj.ref.kind, obj.data, drift.path, doc)
        if mapped is None:
            raise NotWritable(f"no file sets {format_path(drift.path)}: kustomize computes it{why}")
        held = get_path(doc, mapped)
        if held is not MISSING and not same(held, current):
            raise NotWritable(f"{self.shown(file)} holds {held!r} but kustomize renders {current!r}: "
                               f"a transformer computes it{why}")
        return Place(file, (Edit(mapped, drift.live, doc=index),))

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
                            self.helm, before, self.tool)


__all__ = ["KustomizeMap", "Origin"]
