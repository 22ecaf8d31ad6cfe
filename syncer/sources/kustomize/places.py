"""The places inside one kustomization that can set a rendered field, one finder each.

Each finder looks at one layer (a kustomization or a component) for one kind of transformer or
generator -- ``replicas:``, ``images:``, a patch (strategic-merge or JSON 6902, a file or
inline), a ``configMapGenerator`` entry (a literal, a line of an ``envs:`` file, a ``files:``
file) -- and answers the place (file and edits) when it sets the drifted field, None when it
does not, or ``NotWritable`` with the reason when it sets it but no edit there can hold the
live value. The order in which layers are asked is the source map's (``sourcemap``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

from syncer.errors import ConfigError
from syncer.sources.kustomize.fields import map_path, read_yaml_text, same, split_image
from syncer.sources.kustomize.layers import Layer, entries, read_text
from syncer.sources.manifests import GitObject
from syncer.model import LINE, Drift, Edit, Path, format_path
from syncer.detect.normalize import get_path, pointer_to_path
from syncer.yamledit import YamlEditError, YamlFile

_PATTERN = re.compile(r"[*+?\[\](){}|^$\\]")
IMAGE_PATH = re.compile(r"^(containers|initContainers|ephemeralContainers)$")
#: The list of a kustomization each patch transformer reads its patches from.
PATCH_KEYS = {"PatchStrategicMergeTransformer": ("patchesStrategicMerge",),
              "PatchJson6902Transformer": ("patchesJson6902",), "PatchTransformer": ("patches",)}


@dataclass(frozen=True)
class Place:
    file: FsPath  # absolute
    edits: tuple[Edit, ...]


class NotWritable(Exception):
    """The field's source cannot be told, or cannot be written: the message says why."""


def is_image(path: Path) -> bool:
    return len(path) >= 4 and path[-1] == "image" and isinstance(path[-2], int) and bool(IMAGE_PATH.match(str(path[-3])))


class Finders:
    """The finders, for the source map that mixes them in (``shown``, ``_inside``, ``_yaml``, ``repo``)."""

    repo: FsPath

    def shown(self, path: FsPath) -> str:
        raise NotImplementedError

    def _inside(self, path: FsPath) -> bool:
        raise NotImplementedError

    def _yaml(self, path: FsPath) -> list[Any]:
        raise NotImplementedError

    @staticmethod
    def _check(value: Any, current: Any, file: FsPath, what: str) -> None:
        if not same(value, current):
            raise NotWritable(f"{what} in {file.name} holds {value!r} but kustomize renders {current!r} "
                              "(a later transformer changes it)")

    def _replicas(self, layer: Layer, names: set[str], drift: Drift, current: Any) -> Place | None:
        for i, item in entries(layer, "replicas"):
            if drift.path == ("spec", "replicas") and item.get("name") in names:
                self._check(item.get("count"), current, layer.file, "replicas")
                return Place(layer.file, (Edit(("replicas", i, "count"), drift.live, doc=0),))
        return None

    def _image(self, layer: Layer, current: Any, live: Any) -> Place | None:
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
                raise NotWritable(f"images: entry {item.get('name')!r} in {self.shown(layer.file)} does not set "
                                  f"{', '.join(missing) or 'the form'} the live image {live!r} needs")
            return Place(layer.file, tuple(edits))
        return None

    def _patches(self, layer: Layer, keys: tuple[str, ...] = ("patchesStrategicMerge", "patches", "patchesJson6902"),
                 ) -> list[tuple[FsPath, int, Any, Path, bool]]:
        """The patches of ``keys`` of a layer in the order kustomize applies them: (file,
        document, (target, patch), where it sits in the kustomization, inline)."""
        out: list[tuple[FsPath, int, Any, Path, bool]] = []
        for key in keys:
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

    def _patch(self, obj: GitObject, names: set[str], drift: Drift, current: Any, file: FsPath,
               doc_index: int, patch: Any, at: Path, inline: bool) -> Place | None:
        target, doc = patch
        if not self._targets(target, doc, obj, names):
            return None
        path = drift.path
        if isinstance(doc, list):  # JSON 6902
            later: dict[Path, int] = {}  # items the ops after this one append to each list
            for j in range(len(doc) - 1, -1, -1):
                op = doc[j]
                if not isinstance(op, dict) or not isinstance(op.get("path"), str):
                    continue
                where = pointer_to_path(op["path"])
                if where[-1:] == ("-",) and op.get("op") in ("add", "copy", "move"):
                    # appended: counted from the end of the list as rendered, past the items the
                    # later ops of this patch append after it
                    after = later.get(where[:-1], 0)
                    later[where[:-1]] = after + 1
                    items = get_path(obj.data, where[:-1])
                    where = where[:-1] + (len(items) - 1 - after,) if isinstance(items, list) and len(items) > after \
                        else where
                inner = where == path[:len(where)]
                if not inner and path != where[:len(path)]:
                    continue
                if op.get("op") not in ("add", "replace") or not inner:
                    raise NotWritable(f"a JSON 6902 {op.get('op')} at {op['path']} in {self.shown(file)} sets it")
                rest = map_path(obj.ref.kind, get_path(obj.data, where), path[len(where):], op.get("value"), where)
                if rest is None:
                    raise NotWritable(f"a JSON 6902 {op['op']} at {op['path']} in {self.shown(file)} sets it whole")
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

    def _edit_at(self, file: FsPath, doc_index: int, path: Path, drift: Drift, at: Path, inline: bool) -> Place:
        if not inline:
            return Place(file, (Edit(path, drift.live, doc=doc_index),))
        text = get_path(self._yaml(file)[0], at)
        try:
            inner = YamlFile.parse(text, self.shown(file))
            inner.set_value(0, path, drift.live)
        except YamlEditError as exc:
            raise NotWritable(f"the inline patch in {self.shown(file)} cannot be edited: {exc.message}") from exc
        return Place(file, (Edit(at, inner.render(), doc=0),))

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
            # a label or annotation selector: the layer's transformer ran on this object (the
            # source map asks only such layers); which patch it was is proven by rendering
            return True
        if isinstance(doc, dict):
            meta = doc.get("metadata")
            return doc.get("kind") == obj.ref.kind and isinstance(meta, dict) and meta.get("name") in names
        return False

    def _generator(self, layer: Layer, names: set[str], drift: Drift, current: Any) -> Place | None:
        """The place in ``layer``'s ``configMapGenerator`` entry for the drifted key: a literal,
        the last line of an ``envs:`` file, a ``files:`` file; NotWritable when the entry
        replaces the data (``behavior: replace``) without the key."""
        key = str(drift.path[1])
        for gi, item in reversed(entries(layer, "configMapGenerator")):
            if item.get("name") not in names:
                continue
            literals = item.get("literals")
            for li, literal in reversed(list(enumerate(literals if isinstance(literals, list) else []))):
                if isinstance(literal, str) and literal.partition("=")[0].strip() == key:
                    self._check(literal.partition("=")[2], current, layer.file, f"the literal {key}")
                    if not isinstance(drift.live, str) or "\n" in drift.live:
                        raise NotWritable(f"the live value of {key} cannot be a one-line literal")
                    return Place(layer.file, (Edit(("configMapGenerator", gi, "literals", li), f"{key}={drift.live}",
                                                   doc=0),))
            listed = item.get("files")
            for entry in reversed(listed if isinstance(listed, list) else []):
                found = self._file_source(layer, entry, key, drift, current)
                if found is not None:
                    return found
            listed = item.get("envs")
            envs: list[Any] = listed if isinstance(listed, list) else [item.get("env")]
            for env in reversed([e for e in envs if isinstance(e, str)]):  # a later file wins
                found = self._env_line(layer, (layer.dir / env).resolve(), key, drift, current)
                if found is not None:
                    return found
            if item.get("behavior") == "replace":
                raise NotWritable(f"the generator {item.get('name')!r} in {self.shown(layer.file)} replaces the "
                                  f"data and sets no {key}")
        return None

    def _file_source(self, layer: Layer, entry: Any, key: str, drift: Drift, current: Any) -> Place | None:
        """A ``files:`` entry (``path`` or ``key=path``) whose key is the drifted one: the whole
        file is the value, so the live value is written as the file's new text."""
        if not isinstance(entry, str):
            return None
        named, eq, source = entry.partition("=")
        source = source if eq else named
        if (named.strip() if eq else FsPath(source).name) != key:
            return None
        file = (layer.dir / source.strip()).resolve()
        if not self._inside(file) or not file.is_file():
            raise NotWritable(f"{key} comes from {source.strip()}, which is outside this installation")
        text = read_text(file, self.repo)
        if text != current:
            raise NotWritable(f"{self.shown(file)} does not hold what kustomize renders as {key}")
        if not isinstance(drift.live, str):
            raise NotWritable(f"the live value of {key} is not text")
        return Place(file, (Edit((), drift.live, doc=LINE),))

    def _env_line(self, layer: Layer, file: FsPath, key: str, drift: Drift, current: Any) -> Place | None:
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
                raise NotWritable(f"the live value of {key} cannot be one line of {self.shown(file)}")
            indent = line[:len(line) - len(line.lstrip())]
            return Place(file, (Edit((i,), f"{indent}{key}={drift.live}", doc=LINE),))
        return None


__all__ = ["Finders", "NotWritable", "PATCH_KEYS", "Place", "is_image"]
