"""The git side: every Kubernetes object declared under ``hosts/<installation>/``.

Files are read as text and parsed with ruamel's safe loader; the write-back step later
re-parses only the files it edits, with the position-keeping editor (``yamledit``).
A broken file is reported and skipped; the other files keep syncing.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.tag import Tag

from syncer import goyaml
from syncer.config import LEGACY_CONFIG_NAME
from syncer.errors import ConfigError
from syncer.repofile import read_inside
from syncer.kinds import CLUSTER_SCOPED, list_items
from syncer.model import Drift, FileError, ObjectRef, Path as ObjPath

_INSTALLATION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_SUFFIXES = (".yaml", ".yml")
MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class GitObject:
    """One object as declared in git, and where it sits in its file."""

    ref: ObjectRef
    file: str  # repo-relative, e.g. hosts/asgard/ollama-backends.yaml
    doc: int  # index of the YAML document in the file
    prefix: ObjPath  # () for a plain document, ("items", i) inside a List
    data: dict[str, Any]
    templated: bool = False  # the file holds template expressions: never edited
    #: Rendered by a tool (kustomize): ``file`` is the resource's origin, each field's own file
    #: comes from ``Manifests.source_map``; git's history of a field is not read.
    rendered: bool = False


def templated(text: str) -> bool:
    """Does a manifest hold template expressions (``{{ ... }}`` Helm/Go, ``${VAR}`` envsubst)?
    Such a file is an input to a tool, not what the cluster got: it is never edited."""
    return ("{{" in text or "${" in text) and bool(_TEMPLATE.search(text))


_GO_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.S)
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:?=+-][^}\n]*)?\}", re.S)


class SourceMap(Protocol):
    """Where the fields of rendered objects come from, for a source that is not plain files
    (``syncer.kustomize``). Plain manifests have none: a field lives in its object's file."""

    def place(self, obj: GitObject, drifts: list[Drift]) -> list[Drift]:
        """``drifts`` of ``obj`` with the file that sets each field and the edits in that
        file, or (never written) the reason no single place can be told."""
        ...

    def verify(self, repo: Path, texts: dict[str, str], drifts: list[Drift]) -> list[FileError]:
        """Render again with ``texts`` (file -> new text): one error per drift whose rendered
        value is not its live value (naming the files not to write)."""
        ...


@dataclass(frozen=True)
class Manifests:
    objects: dict[ObjectRef, GitObject]
    errors: tuple[FileError, ...]
    source_map: SourceMap | None = None  # None: plain files
    #: files that are no Kubernetes objects (a chart's source, a template, values): one note each
    skipped: tuple[FileError, ...] = ()


@dataclass(frozen=True)
class Skipped(FileError):
    """A file that is not a manifest and is left out with a note, never an error."""


#: kustomize's own files (``kustomization.yaml``, components): inputs to a build, never objects.
_KUSTOMIZE = "kustomize.config.k8s.io/"
#: A directory holding this file is a Helm chart's source: templates and values, not objects.
CHART_FILE = "Chart.yaml"


def _charts(files: list[Path], repo: Path) -> dict[Path, Skipped]:
    """The chart directories among ``files`` (a directory with a ``Chart.yaml``), one note each."""
    roots = sorted({p.parent for p in files if p.name == CHART_FILE})
    out: dict[Path, Skipped] = {}
    for root in roots:
        if any(r in root.parents for r in roots):
            continue  # a subchart (charts/x/Chart.yaml): its parent's note covers it
        shown = root.relative_to(repo).as_posix()
        count = sum(1 for p in files if root in p.parents)
        out[root] = Skipped(shown, f"{shown}/: a Helm chart's source ({CHART_FILE}, {count} files): skipped; "
                                   "syncer compares rendered manifests and never edits templates")
    return out


def _skip_reason(text: str, docs: list[Any] | None, entries: list[GitObject | FileError]) -> str | None:
    """Why a file is no manifest at all (a note, not an error), or None: a Helm/Go template that is not
    valid YAML or not objects as it stands, or YAML none of whose documents is an object (no
    ``apiVersion`` nor ``kind``: values, a tool's settings). A file where some document is an
    object keeps its other documents' problems as errors: a malformed manifest."""
    failed = docs is None or any(isinstance(e, FileError) for e in entries)
    if docs and all(isinstance(d, dict) and str(d.get("apiVersion", "")).startswith(_KUSTOMIZE)
                    for d in docs if d is not None):
        return "a kustomize file (Kustomization/Component), not an object the cluster holds: skipped"
    if failed and _GO_TEMPLATE.search(text):
        return "a template ({{ }} expressions), not objects as it stands: skipped"
    if docs is not None and failed and not any(
            isinstance(d, dict) and ("apiVersion" in d or "kind" in d) for d in docs):
        return "not a Kubernetes object (no document has apiVersion or kind): skipped"
    return None


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


def _line_of(text: str, doc: int) -> int:
    """Best-effort 1-based line where document ``doc`` starts (for error messages)."""
    if doc == 0:
        return 1
    seen = 0
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("---"):
            seen += 1
            if seen == doc + (1 if text.lstrip().startswith("---") else 0):
                return i
    return 1


#: Deeper flow nesting than this is refused before parsing: no manifest needs it, and the
#: YAML scanner slows down badly on pathological depth.
MAX_FLOW_DEPTH = 128


def _flow_depth_exceeded(text: str) -> int | None:
    """Line (1-based) where ``[``/``{`` nesting first passes MAX_FLOW_DEPTH, else None."""
    if text.count("[") + text.count("{") <= MAX_FLOW_DEPTH:
        return None
    depth, quote, line = 0, "", 1
    for ch in text:
        if ch == "\n":
            line += 1
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > MAX_FLOW_DEPTH:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
    return None


def _has_c_parser() -> bool:
    import importlib.util

    return importlib.util.find_spec("_ruamel_yaml") is not None  # ruamel.yaml.clib: libyaml's scanner/parser


#: ``ruamel.yaml.clib`` present: documents are read with the C parser (about 5x faster, the
#: same data on the corpus, the fidelity pairs and the examples), the pure one only to word an error.
C_PARSER = _has_c_parser()


_YAML_TAG = "tag:yaml.org,2002:"
#: One shared Tag per resolved type: ruamel makes a new one for every scalar and decodes its
#: URI character by character each time the constructor asks for it.
_TAGS = {t: Tag(suffix=_YAML_TAG + t) for t in ("null", "bool", "int", "float", "timestamp", "merge", "value",
                                                 "yaml")}
_TAGS["str"] = VersionedResolver.DEFAULT_SCALAR_TAG


class _Resolver(VersionedResolver):
    """ruamel's resolution (the loader's YAML version), with its rule table looked up once per load (the stock
    resolver probes the loader for a ``%YAML`` version through two AttributeErrors for every
    scalar; the C parser fixes the version anyway) and shared Tag objects."""

    @property
    def versioned_resolver(self) -> Any:
        table = self.__dict__.get("_table")
        if table is None:
            table = self.__dict__["_table"] = VersionedResolver.versioned_resolver.fget(self)  # type: ignore[attr-defined]
        return table

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not ScalarNode or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        if implicit[0]:  # plain: the first rule whose pattern matches, by first character
            table = self.versioned_resolver
            for tag, regexp in [*table.get(value[:1], ()), *table.get(None, ())]:
                if regexp.match(value):
                    return _TAGS.get(tag.removeprefix(_YAML_TAG)) or Tag(suffix=tag)
        return _TAGS["str"]


class _Unusual(Exception):
    """A document the fast builder leaves to ruamel's constructor."""



def _plain(node: Any, constructor: Any, seen: dict[int, Any]) -> Any:
    """The data of a composed node, for the shapes manifests have: mappings (string-like keys,
    no merge keys, no duplicates), sequences, and str/null/bool/int/float scalars, built as
    ruamel's safe constructor builds them. Anything else raises ``_Unusual``."""
    known = seen.get(id(node))
    if known is not None:
        if known[1] is _BUILDING:
            raise _Unusual  # a recursive alias
        return known[1]
    tag = node.ctag
    if isinstance(node, ScalarNode):
        if tag is _TAGS["str"] or (tag is not _TAGS["null"] and str(tag) == _YAML_TAG + "str"):
            value: Any = node.value
        elif tag is _TAGS["null"]:
            value = None
        elif tag is _TAGS["bool"]:
            value = constructor.construct_yaml_bool(node)
        elif tag is _TAGS["int"]:
            value = constructor.construct_yaml_int(node)
        elif tag is _TAGS["float"]:
            value = constructor.construct_yaml_float(node)
        else:
            raise _Unusual
        if node.anchor is not None:
            seen[id(node)] = (node, value)
        return value
    seen[id(node)] = (node, _BUILDING)
    if isinstance(node, MappingNode) and str(tag) == _YAML_TAG + "map":
        out: Any = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.ctag is _TAGS["merge"]:
                raise _Unusual
            key = _plain(key_node, constructor, seen)
            if key in out:
                raise _Unusual  # ruamel words the duplicate-key error
            out[key] = _plain(value_node, constructor, seen)
    elif isinstance(node, SequenceNode) and str(tag) == _YAML_TAG + "seq":
        out = [_plain(child, constructor, seen) for child in node.value]
    else:
        raise _Unusual
    seen[id(node)] = (node, out)
    return out


_BUILDING = object()


def _load_c(text: str) -> list[Any]:
    """All documents with the C parser; most documents built by ``_plain``, the rest by ruamel."""
    constructor, parser = yaml_loader(pure=False).get_constructor_parser(text)
    docs = []
    try:
        while parser.check_node():
            node = parser.get_node()
            try:
                docs.append(_plain(node, constructor, {}) if node is not None else None)
            except _Unusual:
                docs.append(constructor.construct_document(node))
    finally:
        parser.dispose()
    return docs


class _GoResolver(_Resolver):
    """Always YAML 1.1 (``0755``, ``yes``), in every document of a file: ruamel's pure parser
    otherwise falls back to 1.2 after the first document."""

    @property
    def processing_version(self) -> Any:
        return (1, 1)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        plain = kind is ScalarNode and implicit[0] and not self.yaml_path_resolvers
        if plain:  # a plain scalar's tag depends on its text alone: each text resolved once per file
            known = self.__dict__.setdefault("_plain_tags", {}).get(value)
            if known is not None:
                return known
        tag = super().resolve(kind, value, implicit)
        if (kind is ScalarNode and implicit[0] and value[:1] in _NUMBER_START and tag is not _TAGS["timestamp"]
                and value not in goyaml.SPECIAL_FLOATS):
            # Numbers as Go reads them: 0o644 and +.5e3 are numbers, ._5 is not (see syncer.goyaml).
            number = goyaml.number(value)
            tag = _TAGS["str"] if number is None else _TAGS["int" if isinstance(number, int) else "float"]
        if plain:
            self.__dict__["_plain_tags"][value] = tag
        return tag


_NUMBER_START = frozenset("0123456789+-.")


class _GoYamlConstructor(SafeConstructor):
    """YAML 1.1 as Go's decoder (kubectl, helm, Argo CD) reads it: ``0755`` is 493 and
    ``yes``/``no``/``on``/``off``/``y``/``n`` are booleans -- but ``12:30`` stays a string (Go
    has no base-60 numbers), a timestamp stays its text, and numbers are Go's (``0o644`` is 420,
    ``+.5e3`` is 500: ``syncer.goyaml``)."""

    def construct_yaml_int(self, node: Any) -> Any:
        if ":" in str(node.value):
            return self.construct_scalar(node)
        number = goyaml.number(str(node.value))
        return number if number is not None else super().construct_yaml_int(node)

    def construct_yaml_float(self, node: Any) -> Any:
        if ":" in str(node.value):
            return self.construct_scalar(node)
        number = goyaml.number(str(node.value))
        return number if number is not None else super().construct_yaml_float(node)

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        return self.construct_scalar(node)


_GoYamlConstructor.add_constructor("tag:yaml.org,2002:timestamp", _GoYamlConstructor.construct_yaml_timestamp)
_GoYamlConstructor.add_constructor("tag:yaml.org,2002:int", _GoYamlConstructor.construct_yaml_int)
_GoYamlConstructor.add_constructor("tag:yaml.org,2002:float", _GoYamlConstructor.construct_yaml_float)


def yaml_loader(pure: bool) -> YAML:
    """A safe loader reading YAML as the forward tools do (see ``_GoYamlConstructor``)."""
    yaml = YAML(typ="safe", pure=pure)
    yaml.Resolver = _GoResolver
    yaml.version = (1, 1)
    yaml.Constructor = _GoYamlConstructor
    return yaml


def parse_documents(text: str, display: str) -> list[Any]:
    """All documents of one YAML text, read as kubectl reads them (YAML 1.1: ``0755`` is 493,
    ``yes`` is true); ConfigError ``file:line: problem`` when malformed."""
    too_deep = _flow_depth_exceeded(text)
    if too_deep is not None:
        raise ConfigError(f"{display}:{too_deep}: YAML nested deeper than {MAX_FLOW_DEPTH} levels; not read")
    if C_PARSER:
        try:
            return _no_surrogate(_load_c(text), text, display)
        except (YAMLError, RecursionError):
            pass  # the pure parser below says where and what, in the words our errors always used
    try:
        return _no_surrogate(list(yaml_loader(pure=True).load_all(text)), text, display)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{display}{at}: malformed YAML: {problem}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{display}: YAML nested too deeply") from exc


#: A YAML escape of a UTF-16 surrogate (``"\ud800"``): no character, and no output can encode it.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")


def _no_surrogate(docs: list[Any], text: str, display: str) -> list[Any]:
    """``docs``, or ConfigError ``file:line`` when a string in them holds a lone surrogate."""
    found = _SURROGATE_ESCAPE.search(text)
    if found is None:
        return docs
    stack: list[Any] = list(docs)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and not node.isascii() and any("\ud800" <= ch <= "\udfff" for ch in node):
            line = text.count("\n", 0, found.start()) + 1
            raise ConfigError(f"{display}:{line}: a string holds {found.group()!s}, a lone UTF-16 surrogate "
                              "(no character: YAML text is UTF-8); not read")
    return docs


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


class _ParseCache:
    """Each file's objects and errors, reused while its (size, mtime, ctime, inode) stay the same.

    The sidecar loads the installation at least twice per pass and once per pass forever; a
    file that did not change is not read or parsed again. The cached objects are shared
    between loads: read-only, as ``GitObject.data`` always was.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], tuple[tuple[int, ...], list[GitObject | FileError]]] = {}
        self._lock = threading.Lock()

    def file(self, path: Path, display: str, repo: Path, default_namespace: str) -> list[GitObject | FileError]:
        key = (str(path.absolute()), default_namespace)
        try:
            st = path.stat()
        except OSError:
            st = None
        stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) if st is not None else ()
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None and stamp and hit[0] == stamp:
            return hit[1]
        entries = _file_objects(path, display, repo, default_namespace)
        if st is not None and time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS:
            with self._lock:
                self._entries[key] = (stamp, entries)
        return entries

    def forget_gone(self, base: Path, present: list[Path]) -> None:
        """Forget the files under ``base`` that are no longer there."""
        prefix, keep = str(base.absolute()) + "/", {str(p.absolute()) for p in present}
        with self._lock:
            for key in [k for k in self._entries if k[0].startswith(prefix) and k[0] not in keep]:
                del self._entries[key]


_CACHE = _ParseCache()


def _file_objects(path: Path, display: str, repo: Path, default_namespace: str) -> list[GitObject | FileError]:
    """The objects one file declares and its problems, in the order they appear."""
    out: list[GitObject | FileError] = []
    try:
        text = _read(path, display, repo)
    except (ConfigError, OSError) as exc:
        return [FileError(display, str(exc))]
    try:
        docs = parse_documents(text, display)
    except ConfigError as exc:
        why = _skip_reason(text, None, [])
        return [Skipped(display, f"{display}: {why}") if why else FileError(display, str(exc))]
    out = _documents_objects(display, text, docs, default_namespace)
    why = _skip_reason(text, docs, out)
    return [Skipped(display, f"{display}: {why}")] if why else out


def _documents_objects(display: str, text: str, docs: list[Any], default_namespace: str) -> list[GitObject | FileError]:
    out: list[GitObject | FileError] = []
    marked = templated(text)
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        where = f"{display} (document {i + 1})"
        if not isinstance(doc, dict):
            out.append(FileError(display, f"{where}: not a mapping"))
            continue
        entries: list[tuple[ObjPath, Any]]
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
#: built from: while every file gives back the same (cached) list, the same ``Manifests`` is
#: handed out again, so detection can remember what it derives from it (syncer/engine.py).
_INDEXES: dict[tuple[str, str, str], tuple[tuple[tuple[str, list[GitObject | FileError]], ...], Manifests]] = {}
_INDEXES_LOCK = threading.Lock()


def load_manifests(repo: Path, installation: str, default_namespace: str) -> Manifests:
    """Index every object under ``hosts/<installation>/`` by its ObjectRef.

    The result is shared and read-only, like the ``GitObject`` data it holds."""
    files = manifest_files(repo, installation)
    _CACHE.forget_gone(host_dir(repo, installation), files)
    charts = _charts(files, Path(repo))
    if charts:
        files = [p for p in files if not any(root in p.parents for root in charts)]
    shown = [path.relative_to(repo).as_posix() for path in files]
    parts = tuple((display, _CACHE.file(path, display, repo, default_namespace)) for path, display in zip(files, shown))
    notes: list[tuple[str, list[GitObject | FileError]]] = [(note.file, [note]) for note in charts.values()]
    parts = tuple(notes) + parts
    key = (str(Path(repo).absolute()), installation, default_namespace)
    with _INDEXES_LOCK:
        last = _INDEXES.get(key)
    if last is not None and len(last[0]) == len(parts) and all(
            a[0] == b[0] and a[1] is b[1] for a, b in zip(last[0], parts)):
        return last[1]
    manifests = _index(parts)
    with _INDEXES_LOCK:
        if len(_INDEXES) >= 64 and key not in _INDEXES:
            _INDEXES.clear()
        _INDEXES[key] = (parts, manifests)
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
