"""``hosts/<installation>/syncer.conf``: what to track and how, parsed strictly.

Unknown keys, wrong types and bad durations are ConfigErrors naming the file and the
field: a typo must never silently change what syncer writes to git.

Where the file lives: next to the manifests it governs, under a name no applier picks up.
``kubectl apply -f DIR`` reads only ``.yaml``/``.yml``/``.json`` files (and subdirectories
only with ``-R``), Argo CD directory apps ``.yaml``/``.yml``/``.json``/``.jsonnet`` (subdirectories
with ``recurse``), Flux's generated kustomization every ``.yaml``/``.yml`` file in the whole
tree, dot-directories included, failing on one that holds no Kubernetes object; kustomize only
what ``resources`` lists. A file whose extension none of them reads is the one placement all four
leave alone however they recurse; a dot-directory is not (Flux and ``-R`` descend into it), and
a root-level file is inside the path of a tool pointed at the repository root. The content is
still YAML. The old name, ``hosts/<installation>/syncer.yaml``, is still read, with a one-line
deprecation warning, because it breaks ``kubectl apply -f hosts/<installation>/``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NewType

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from syncer.secrets import userpattern
from syncer.durations import STABLE_FOR, long_number_line
from syncer.durations import parse_duration as parse_duration  # re-exported: callers read it from config
from syncer.cache import Caches
from syncer.errors import ConfigError
from syncer.configvalues import Selector, expect, optional_kinds, release_name, selector, unknown
from syncer.repofile import excerpt, read_inside
from syncer.kinds import NEVER_WRITTEN as NEVER_WRITTEN  # the table lives in kinds; re-exported
from syncer.model import Track
from syncer.detect.ownership import DEFAULT_APPLIERS
from syncer.yamlread import malformed

#: The config's name inside ``hosts/<installation>/``: an extension no applier reads.
CONFIG_NAME = "syncer.conf"
#: The config's legacy name, still read with a deprecation warning: a YAML file that is no
#: manifest there breaks kubectl apply -f and Flux.
LEGACY_CONFIG_NAME = "syncer.yaml"

_TOP_KEYS = {"installation", "namespace", "track", "stableFor", "candidates", "ignore", "secretKeys", "appliers",
             "untracked", "optional", "release"}
_CANDIDATE_KEYS = {"endpoints", "configMap", "key", "namespace"}
_IGNORE_KEYS = {"kind", "name", "namespace", "pointers", "labels", "annotations"}
_UNTRACKED_KEYS = {"mode", "kinds"}


@dataclass(frozen=True)
class Candidates:
    """Endpoints ``endpoints`` may legitimately point at the addresses in ConfigMap ``configMap``[``key``]."""

    endpoints: str
    config_map: str
    key: str
    namespace: str
    #: The entry named its namespace. Without one it binds the Service where the manifests
    #: declare its Endpoints/EndpointSlices (see ``Config.bound_to``), else the config's.
    explicit: bool = True


def _selected(selector: Selector, found: Any) -> bool:
    if not selector:
        return True
    if not isinstance(found, dict):
        return False
    return all(key in found and (want is None or found[key] == want) for key, want in selector)


@dataclass(frozen=True)
class IgnoreRule:
    """``pointers`` of the objects it matches are not compared; a rule without pointers
    leaves the whole object out of the untracked objects (``untracked:``)."""

    kind: str
    name: str | None
    namespace: str | None
    pointers: tuple[str, ...]
    labels: Selector = ()
    annotations: Selector = ()

    def matches(self, kind: str, namespace: str, name: str, metadata: Any = None) -> bool:
        """Does the rule cover this object? A rule with label or annotation selectors needs the
        object's ``metadata`` (the live one) to match."""
        if not (self.kind in (kind, "*")
                and (self.name is None or self.name == name)
                and (self.namespace is None or self.namespace == namespace)):
            return False
        if not (self.labels or self.annotations):
            return True
        meta = metadata if isinstance(metadata, dict) else {}
        return _selected(self.labels, meta.get("labels")) and _selected(self.annotations, meta.get("annotations"))


class UntrackedMode(str, enum.Enum):
    """What ``untracked:`` does with live objects git does not declare."""

    IGNORE = "ignore"  # nothing (the default)
    REPORT = "report"  # list them as drifts of class ``untracked``
    PROPOSE = "propose"  # also write each (never a Secret) as a new file


@dataclass(frozen=True)
class Untracked:
    mode: UntrackedMode = UntrackedMode.IGNORE
    #: The kinds looked at; empty: every kind the installation tracks, plus Secrets (names only).
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    installation: str
    namespace: str = "default"
    track: dict[str, Track] = field(default_factory=dict)
    stable_for: float = 600.0
    candidates: tuple[Candidates, ...] = ()
    ignore: tuple[IgnoreRule, ...] = ()
    secret_keys: tuple[str, ...] = ()  # extra key-name patterns redacted in PR text
    source: str = ""
    #: managedFields managers that write what git declares (besides any ``Apply`` operation):
    #: a field they own holds what was applied, so a difference there is git's pending change.
    appliers: tuple[str, ...] = DEFAULT_APPLIERS
    untracked: Untracked = Untracked()
    #: Reported kinds syncer may be refused (403) without that costing "in sync": such an
    #: object is one warning, not an error (any other object that cannot be read is one).
    optional: frozenset[str] = frozenset()
    #: A chart directory's Helm release name (``release:``); None: the installation's name.
    release: str | None = None

    def track_for(self, kind: str) -> Track:
        if kind in NEVER_WRITTEN:
            return Track.REPORT
        return self.track.get(kind, Track.REPORT)

    def ignored_pointers(self, kind: str, namespace: str, name: str, metadata: Any = None) -> tuple[str, ...]:
        out: list[str] = []
        for rule in self.ignore:
            if rule.matches(kind, namespace, name, metadata):
                out.extend(rule.pointers)
        return tuple(out)

    def bound_to(self, declared: Iterable[tuple[str, str]]) -> "BoundConfig":
        """This config with its bindings placed where the manifests put the objects they bind.

        ``declared``: the (namespace, Service) of every Endpoints and EndpointSlice git declares.
        A binding that names no namespace binds that Service's objects in the namespace where
        git declares them, and reads its ConfigMap in that same namespace -- so ``-n``, a default
        for manifests that name none (as kubectl's), cannot unbind Endpoints that manifests place
        in their own namespace. Declared in the config's namespace, or nowhere: it stays there.
        The same config comes back when nothing moves. Done once, where an installation is loaded
        (``load_installation``): what reads the result takes a ``BoundConfig``.
        """
        unplaced = {c.endpoints for c in self.candidates if not c.explicit}
        if not unplaced:
            return BoundConfig(self)
        spaces: dict[str, set[str]] = {}
        for namespace, service in declared:
            if service in unplaced:
                spaces.setdefault(service, set()).add(namespace)
        out: list[Candidates] = []
        moved = False
        for c in self.candidates:
            where = spaces.get(c.endpoints, set())
            if c.explicit or not where or c.namespace in where:
                out.append(c)
                continue
            moved = True
            out.extend(dataclasses.replace(c, namespace=ns, explicit=True) for ns in sorted(where))
        return BoundConfig(dataclasses.replace(self, candidates=tuple(out)) if moved else self)

    def candidates_for(self, namespace: str, endpoints: str) -> Candidates | None:
        return self._candidates_index.get((namespace, endpoints))

    @functools.cached_property
    def _candidates_index(self) -> dict[tuple[str, str], Candidates]:
        index: dict[tuple[str, str], Candidates] = {}
        for c in self.candidates:
            index.setdefault((c.namespace, c.endpoints), c)
        return index


#: A config whose bindings are placed where the manifests put what they bind (``Config.bound_to``):
#: what detection and everything after loading read. A type for the checker only: at run time the
#: same object (so what is remembered by the config's identity still is).
BoundConfig = NewType("BoundConfig", Config)


def parse_config(text: str, source: str, default_installation: str, namespace_override: str | None = None) -> Config:
    """Parse the text of a syncer.conf; ``source`` names it in errors. ``namespace_override`` (``-n``)
    replaces the file's default namespace, as kubectl's ``-n`` does for manifests without one."""
    try:
        try:
            raw = YAML(typ="safe").load(text)  # the C parser when ruamel.yaml.clib is there
        except YAMLError:
            raw = YAML(typ="safe", pure=True).load(text)  # its wording and position for the error
    except YAMLError as exc:
        raise malformed(exc, source) from exc  # as a manifest's error says it (line and column)
    except ValueError:  # Python's int() refuses more than 4,300 digits
        line = long_number_line(text)
        raise ConfigError(f"{source}{f':{line}' if line else ''}: a number too long to read; not read") from None
    if raw is None:
        raw = {}
    expect(raw, dict, source, "a mapping")
    unknown(raw, _TOP_KEYS, source)
    installation = str(expect(raw.get("installation", default_installation), str, f"{source}: installation", "a string"))
    if installation != default_installation:
        raise ConfigError(
            f"{source}: installation {installation!r} does not match its directory hosts/{default_installation}/"
        )
    namespace = expect(raw.get("namespace", "default"), str, f"{source}: namespace", "a string")
    namespace = namespace_override or namespace

    track: dict[str, Track] = {}
    for kind, mode in expect(raw.get("track") or {}, dict, f"{source}: track", "a mapping of kind to mode").items():
        try:
            track[str(kind)] = Track(str(mode))
        except ValueError:
            raise ConfigError(
                f"{source}: track.{kind}: unknown mode {mode!r} (use writeback, stable, report or ignore)"
            ) from None

    stable_for = parse_duration(raw.get("stableFor", "10m"), f"{source}: stableFor", STABLE_FOR)

    candidates: list[Candidates] = []
    for i, item in enumerate(expect(raw.get("candidates") or [], list, f"{source}: candidates", "a list")):
        where = f"{source}: candidates[{i}]"
        expect(item, dict, where, "a mapping")
        unknown(item, _CANDIDATE_KEYS, where)
        for k in ("endpoints", "configMap", "key"):
            if k not in item:
                raise ConfigError(f"{where}: missing {k!r}")
            expect(item[k], str, f"{where}.{k}", "a string")
        candidates.append(
            Candidates(item["endpoints"], item["configMap"], item["key"], str(item.get("namespace", namespace)),
                       explicit="namespace" in item)
        )

    ignore: list[IgnoreRule] = []
    for i, item in enumerate(expect(raw.get("ignore") or [], list, f"{source}: ignore", "a list")):
        where = f"{source}: ignore[{i}]"
        expect(item, dict, where, "a mapping")
        unknown(item, _IGNORE_KEYS, where)
        if "kind" not in item:
            raise ConfigError(f"{where}: missing 'kind'")
        pointers = expect(item.get("pointers") or [], list, f"{where}.pointers", "a list of JSON pointers")
        for p in pointers:
            if not isinstance(p, str) or not p.startswith("/"):
                raise ConfigError(f"{where}.pointers: {p!r} is not a JSON pointer (must start with '/')")
        ignore.append(IgnoreRule(str(item["kind"]), item.get("name"), item.get("namespace"), tuple(pointers),
                                 selector(item.get("labels"), f"{where}.labels"),
                                 selector(item.get("annotations"), f"{where}.annotations")))

    # regular expressions from the repository: run on RE2 (linear time), refused here if they cannot be
    secret_keys = userpattern.check_all(expect(raw.get("secretKeys") or [], list, f"{source}: secretKeys", "a list"),
                                        f"{source}: secretKeys")
    appliers = DEFAULT_APPLIERS
    if "appliers" in raw:
        items = expect(raw["appliers"], list, f"{source}: appliers", "a list of field manager names")
        for i, name in enumerate(items):
            if not isinstance(name, str) or not name.strip():
                raise ConfigError(f"{source}: appliers[{i}]: expected a field manager name, got {name!r}")
        appliers = tuple(items)
    untracked = _untracked(raw.get("untracked"), f"{source}: untracked")
    optional = optional_kinds(raw.get("optional"), track, f"{source}: optional")
    release = release_name(raw.get("release"), f"{source}: release")
    return Config(installation, namespace, track, stable_for, tuple(candidates), tuple(ignore), secret_keys, source,
                  appliers, untracked, optional, release)


def _untracked(raw: Any, where: str) -> Untracked:
    """``untracked: report`` or ``untracked: {mode: propose, kinds: [ConfigMap]}``."""
    if raw is None:
        return Untracked()
    kinds: tuple[str, ...] = ()
    mode = raw
    if isinstance(raw, dict):
        unknown(raw, _UNTRACKED_KEYS, where)
        mode = raw.get("mode", UntrackedMode.REPORT.value)
        listed = expect(raw.get("kinds") or [], list, f"{where}.kinds", "a list of kinds")
        for i, kind in enumerate(listed):
            if not isinstance(kind, str) or not kind.strip():
                raise ConfigError(f"{where}.kinds[{i}]: expected a kind such as ConfigMap, got {excerpt(kind)}")
        kinds = tuple(listed)
    try:
        return Untracked(UntrackedMode(str(mode)), kinds)
    except ValueError:
        raise ConfigError(f"{where}: unknown mode {excerpt(mode)} (use ignore, report or propose)") from None


#: The deprecated config files warned about: once per process (not a cache: a log line said).
_warned: set[str] = set()
_log = logging.getLogger("syncer.config")


def config_path(host_dir: Path, installation: str) -> Path | None:
    """The installation's config file: ``syncer.conf``, else the deprecated ``syncer.yaml``, else None.

    Both present is an error: they may disagree, and guessing which one counts could change what
    syncer writes.
    """
    new, old = host_dir / CONFIG_NAME, host_dir / LEGACY_CONFIG_NAME
    if new.exists() and old.exists():
        raise ConfigError(
            f"hosts/{installation}/: both {CONFIG_NAME} and {LEGACY_CONFIG_NAME} exist; keep only {CONFIG_NAME}"
        )
    if new.exists():
        return new
    if old.exists():
        display = f"hosts/{installation}/{LEGACY_CONFIG_NAME}"
        if display not in _warned:  # once per process: the sidecar reloads on every pass
            _warned.add(display)
            _log.warning(
                "%s: deprecated location (kubectl apply -f hosts/%s/ fails on it); git mv it to hosts/%s/%s",
                display, installation, installation, CONFIG_NAME,
            )
        return old
    return None


def load_config(host_dir: Path, installation: str, display: str | None = None, *,
                namespace: str | None = None, caches: Caches | None = None) -> Config:
    """Read the installation's config (see :func:`config_path`); none at all means all defaults
    (everything reported). ``display`` names the file in errors (default: its repo-relative path);
    ``namespace`` overrides its default namespace (``-n``). With ``caches``, the same text gives
    the same (frozen) Config (``caches.configs``: the sidecar reads it twice per pass, and
    detection remembers what it derives from it by identity)."""
    path = config_path(host_dir, installation)
    if path is None:
        return Config(installation=installation, namespace=namespace or "default",
                      source=display or f"hosts/{installation}/{CONFIG_NAME}")
    display = display or f"hosts/{installation}/{path.name}"
    # Only inside the repository (hosts/<installation>/ is two levels below its top): a
    # symlink to a token file is refused, not read and echoed in an error.
    text = read_inside(path, display, host_dir.parent.parent)
    if caches is None:
        return parse_config(text, display, installation, namespace)
    parsed: Config = caches.configs.get_or((text, display, installation, namespace),
                                           lambda: parse_config(text, display, installation, namespace))
    return parsed
