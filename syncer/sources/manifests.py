"""Git objects and their files: ``GitObject`` and ``Manifests`` (what every source loads), and
the objects plain YAML files under ``hosts/<installation>/`` declare (``syncer.sources.plain``).

Files are read as text and parsed as kubectl reads them (``syncer.yamlread``); the write-back
step later re-parses only the files it edits, with the position-keeping editor (``yamledit``).
A broken file is reported and skipped; the other files keep syncing; a file that is no
manifest (``syncer.sources.skipped``) is one note. What a load remembers for the next one (each
file's objects, the index) lives in the caller's ``Caches`` (``files``, ``indexes``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncer.cache import Caches
from syncer.config import LEGACY_CONFIG_NAME
from syncer.errors import ConfigError
from syncer.kinds import CLUSTER_SCOPED, list_items
from syncer.model import FileError, ObjectRef, Path as ObjPath
from syncer.repofile import read_inside
from syncer.parsestore import ParseStore
from syncer.sources.skipped import Skipped, charts, skip_reason, templated
from syncer.yamlread import parse_documents

__all__ = ["GitObject", "Manifests", "check_installation", "default_installation", "host_dir",
           "load_manifests", "manifest_files", "object_ref", "parse_documents"]

_INSTALLATION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_SUFFIXES = (".yaml", ".yml")
MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class GitObject:
    """One object as declared in git, and where it sits in its file."""

    ref: ObjectRef
    file: str  # repo-relative, e.g. hosts/asgard/ollama-backends.yaml; a rendered object's origin
    doc: int  # index of the YAML document in the file
    prefix: ObjPath  # () for a plain document, ("items", i) inside a List
    data: dict[str, Any]
    templated: bool = False  # the file holds template expressions: never edited
    #: the generator of a generated object whose name carries a content hash (kustomize: a new
    #: content is a new name), else ""
    generator: str = ""


@dataclass(frozen=True)
class Manifests:
    """What a source loaded (``Source.load``): the declared objects by ref, and the problems."""

    objects: dict[ObjectRef, GitObject]
    errors: tuple[FileError, ...]
    #: files that are no Kubernetes objects (a chart's source, a template, values): one note each
    skipped: tuple[FileError, ...] = ()
    #: the Helm releases that render the objects, (namespace of its records, release, namespace):
    #: what Helm last deployed of them is a base of who moved (``gather.helmrelease``)
    releases: tuple[tuple[str, str, str], ...] = ()


def check_installation(name: str) -> str:
    if not _INSTALLATION.fullmatch(name) or name in (".", ".."):  # fullmatch: "$" allows a final "\n"
        raise ConfigError(f"installation {name!r}: not a valid name (letters, digits, '.', '_', '-')")
    return name


def host_dir(repo: Path, installation: str) -> Path:
    """``repo/hosts/<installation>``, refusing names and symlinks that lead outside the repo."""
    check_installation(installation)
    hosts = repo / "hosts"
    path = hosts / installation
    if not path.is_dir():
        known = sorted(p.name for p in hosts.iterdir() if p.is_dir()) if hosts.is_dir() else []
        hint = f" (known: {', '.join(known)})" if known else " (no hosts/ directory)"
        raise ConfigError(f"unknown installation {installation!r}: {path} is not a directory{hint}")
    if not path.resolve().is_relative_to(repo.resolve()):
        raise ConfigError(f"hosts/{installation}: resolves outside the repository ({path.resolve()})")
    return path


def default_installation(repo: Path) -> str:
    hosts = repo / "hosts"
    names = sorted(p.name for p in hosts.iterdir() if p.is_dir()) if hosts.is_dir() else []
    if len(names) == 1:
        return names[0]
    if not names:
        raise ConfigError(f"{hosts}: no installation directories; pass INSTALLATION")
    raise ConfigError(f"several installations under {hosts} ({', '.join(names)}): pass INSTALLATION")


def object_ref(obj: dict[str, Any], default_namespace: str, where: str) -> ObjectRef:
    """The identity of a manifest; ConfigError naming ``where`` when kind/name are missing."""
    meta = obj.get("metadata")
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise ConfigError(f"{where}: document has no kind")
    if not isinstance(api_version, str) or not api_version:
        raise ConfigError(f"{where}: {kind} has no apiVersion")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ConfigError(f"{where}: {kind} has no metadata.name")
    ns = meta.get("namespace")
    if kind in CLUSTER_SCOPED:
        ns = ""
    elif not isinstance(ns, str) or not ns:
        ns = default_namespace
    return ObjectRef(api_version, kind, ns, meta["name"])



def _read(path: Path, display: str, repo: Path) -> str:
    return read_inside(path, display, repo, MAX_FILE_BYTES)


def manifest_files(repo: Path, installation: str) -> list[Path]:
    base = host_dir(repo, installation)
    return sorted(
        p for p in base.rglob("*") if p.suffix in _SUFFIXES and p.name != LEGACY_CONFIG_NAME and (p.is_file() or p.is_symlink())
    )


#: A file modified less than this long ago is parsed again at the next load (its timestamps
#: could still be shared with a later write of the same size: git's "racy" case).
RACY_NS = 1_000_000_000


#: A file's objects and errors as ``Caches.files`` keeps them, with the (size, mtime, ctime,
#: inode) of the file they were read from.
FileParse = tuple[tuple[int, ...], list["GitObject | FileError"]]


def _file(path: Path, display: str, repo: Path, default_namespace: str, caches: Caches) -> list[GitObject | FileError]:
    """Each file's objects and errors, reused while its (size, mtime, ctime, inode) stay the same.

    The sidecar loads the installation at least twice per pass and once per pass forever; a
    file that did not change is not read or parsed again. The cached objects are shared
    between loads: read-only, as ``GitObject.data`` always was."""
    key = (str(path.absolute()), default_namespace)
    try:
        st = path.stat()
    except OSError:
        st = None
    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) if st is not None else ()
    hit: FileParse | None = caches.files.get_fresh(key, lambda parse: bool(stamp) and parse[0] == stamp)
    if hit is not None:
        return hit[1]
    entries = _file_objects(path, display, repo, default_namespace, caches.stored)
    if st is not None and time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS:
        caches.files.put(key, (stamp, entries))
    return entries


def _forget_gone(caches: Caches, base: Path, present: list[Path]) -> None:
    """Forget the files under ``base`` that are no longer there."""
    prefix, keep = str(base.absolute()) + "/", {str(p.absolute()) for p in present}
    caches.files.discard_where(lambda key: key[0].startswith(prefix) and key[0] not in keep)


def _file_objects(path: Path, display: str, repo: Path, default_namespace: str,
                  stored: ParseStore | None = None) -> list[GitObject | FileError]:
    """The objects one file declares and its problems, in the order they appear; ``stored``:
    the parses of the last command (None: the file is parsed)."""
    out: list[GitObject | FileError] = []
    try:
        text = _read(path, display, repo)
    except (ConfigError, OSError) as exc:
        return [FileError(display, str(exc))]
    try:
        docs = parse_documents(text, display) if stored is None else stored.documents(text, display, parse_documents)
    except ConfigError as exc:
        why = skip_reason(text, None, [])
        return [Skipped(display, f"{display}: {why}") if why else FileError(display, str(exc))]
    out = _documents_objects(display, text, docs, default_namespace)
    why = skip_reason(text, docs, out)
    return [Skipped(display, f"{display}: {why}")] if why else out


def _documents_objects(display: str, text: str, docs: list[object], default_namespace: str) -> list[GitObject | FileError]:
    out: list[GitObject | FileError] = []
    marked = templated(text)
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        where = f"{display} (document {i + 1})"
        if not isinstance(doc, dict):
            out.append(FileError(display, f"{where}: not a mapping"))
            continue
        entries: list[tuple[ObjPath, object]]
        items = list_items(doc)
        if items is not None:
            entries = [(("items", j), item) for j, item in enumerate(items)]
        else:
            entries = [((), doc)]
        for prefix, obj in entries:
            here = where if not prefix else f"{where} items[{prefix[1]}]"
            try:
                if not isinstance(obj, dict):
                    raise ConfigError(f"{here}: not a mapping")
                ref = object_ref(obj, default_namespace, here)
            except ConfigError as exc:
                out.append(FileError(display, str(exc)))
                continue
            out.append(GitObject(ref, display, i, prefix, obj, marked))
    return out


#: The last index built per (repo, installation, namespace), with the per-file lists it was
#: built from (``Caches.indexes``): while every file gives back the same (cached) list, the
#: same ``Manifests`` is handed out again, so detection can remember what it derives from it
#: (syncer/detect/engine.py).
Index = tuple[tuple[tuple[str, list["GitObject | FileError"]], ...], "Manifests"]


def load_manifests(repo: Path, installation: str, default_namespace: str, *,
                   caches: Caches | None = None) -> Manifests:
    """Index every object under ``hosts/<installation>/`` by its ObjectRef; ``caches`` keeps
    each file's objects and the index for the next load (None: nothing remembered).

    The result is shared and read-only, like the ``GitObject`` data it holds."""
    caches = caches if caches is not None else Caches()
    files = manifest_files(repo, installation)
    _forget_gone(caches, host_dir(repo, installation), files)
    chart_notes = charts(files, Path(repo))
    if chart_notes:
        files = [p for p in files if not any(root in p.parents for root in chart_notes)]
    shown = [path.relative_to(repo).as_posix() for path in files]
    parts = tuple((display, _file(path, display, repo, default_namespace, caches))
                  for path, display in zip(files, shown))
    notes: list[tuple[str, list[GitObject | FileError]]] = [(note.file, [note]) for note in chart_notes.values()]
    parts = tuple(notes) + parts
    key = (str(Path(repo).absolute()), installation, default_namespace)
    last: Index | None = caches.indexes.get_fresh(key, lambda index: len(index[0]) == len(parts) and all(
        a[0] == b[0] and a[1] is b[1] for a, b in zip(index[0], parts)))
    if last is not None:
        return last[1]
    manifests = _index(parts)
    caches.indexes.put(key, (parts, manifests))
    if caches.stored is not None:
        caches.stored.save()
    return manifests


def _index(parts: tuple[tuple[str, list[GitObject | FileError]], ...]) -> Manifests:
    objects: dict[ObjectRef, GitObject] = {}
    errors: list[FileError] = []
    skipped: list[FileError] = []
    for display, entries in parts:
        for obj in entries:
            if isinstance(obj, Skipped):
                skipped.append(obj)
                continue
            if isinstance(obj, FileError):
                errors.append(obj)
                continue
            if obj.ref in objects:
                first = objects[obj.ref].file
                errors.append(FileError(display, f"{obj.ref} is declared twice: in {first} and in {display}"))
                continue
            objects[obj.ref] = obj
    return Manifests(objects, tuple(errors), skipped=tuple(skipped))
