"""Plain domain values shared by every part of syncer.

Nothing here does I/O. Objects from YAML or the API stay plain ``dict`` data; these types
name them (``ObjectRef``) and describe what differs between git and the cluster (``Drift``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: A path into a manifest: mapping keys (str) and sequence indexes (int), e.g.
#: ``("data", "MAC_ADDRS")`` or ``("subsets", 0, "addresses", 0, "ip")``.
Path = tuple[str | int, ...]
#: A JSON object as decoded (a Kubernetes object, an API answer): the one spelling of it.
JSON = dict[str, Any]


def format_path(path: Path) -> str:
    """``("data", "MAC_ADDRS")`` -> ``data.MAC_ADDRS``; indexes as ``[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out == "":
            out = part
        else:
            out += "." + part
    return out


@dataclass(frozen=True, order=True)
class ObjectRef:
    """Identity of a Kubernetes object: apiVersion/kind/namespace/name."""

    api_version: str
    kind: str
    namespace: str  # "" for cluster-scoped objects
    name: str

    def __post_init__(self) -> None:
        # Computed once: a pass at 5,000 objects looks refs up in sets and maps some 50,000
        # times, and a dataclass would hash the four strings again each time.
        object.__setattr__(self, "_hash", hash((self.api_version, self.kind, self.namespace, self.name)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[no-any-return,attr-defined]

    def __eq__(self, other: object) -> bool:
        # Equal refs that are not the same object meet in every map lookup of a pass (thousands):
        # the remembered hash tells most of them apart before four string comparisons.
        if self is other:
            return True
        if other.__class__ is not ObjectRef:
            return NotImplemented
        return (self._hash == other._hash  # type: ignore[attr-defined]
                and self.name == other.name and self.namespace == other.namespace
                and self.kind == other.kind and self.api_version == other.api_version)

    def __str__(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{ns}{self.name}"


class Direction(str, enum.Enum):
    """Who moved away from the last agreed state."""

    CLUSTER = "cluster"  # live changed: copy back into git
    GIT = "git"  # git changed, not applied yet: pending apply, never reverted
    CONFLICT = "conflict"  # both changed: report only
    UNKNOWN = "unknown"  # no base known: propose via PR, never commit directly


class DriftClass(str, enum.Enum):
    VALUE = "value"  # a value differs
    ADDED = "added"  # a key exists only live
    REMOVED = "removed"  # a key or object exists only in git
    PICK = "pick"  # Endpoints point at one of the declared candidates
    UNDECLARED = "undeclared"  # Endpoints point at an address no candidate list holds
    CLEARED = "cleared"  # Endpoints have no ready address (backend absent right now)
    UNTRACKED = "untracked"  # an object only live: git declares nothing of it (``untracked:``)


class Action(str, enum.Enum):
    WRITE = "write"  # copy the live value into git
    REPORT = "report"  # show it, never write it
    WAIT = "wait"  # would be written once it has been stable long enough


class GitSays(str, enum.Enum):
    """What git's history says of a drifted value (``syncer.gather.history``)."""

    MOVED = "moved"  # git changed this value after the cluster last applied it
    COPIED = "copied"  # the value was last written by syncer, copying the cluster
    UNREADABLE = "unreadable"  # the history exists but could not be read (time, fetch): never write on it


class Track(str, enum.Enum):
    """Per-kind policy from syncer.conf."""

    WRITEBACK = "writeback"
    STABLE = "stable"
    REPORT = "report"
    IGNORE = "ignore"


@dataclass(frozen=True)
class Edit:
    """One change to make in git: set the value at ``path``, or add a key that git lacks."""

    path: Path  # inside the object
    value: Any
    add: bool = False  # True: ``path[-1]`` is a new key of the mapping at ``path[:-1]``
    #: Set for a rendered object's field (``syncer.sources.kustomize``): ``path`` is then the full path
    #: inside document ``doc`` of the drift's file, which is not the object's own file.
    doc: int | None = None
    #: The path is a Helm values key (``syncer.helm``): ``{{ }}`` in the file is text of values
    #: (a value fed to ``tpl``, a comment), not a template of the file, so it does not stop the edit.
    values: bool = False
    #: Set when the value at ``path`` is YAML text (a values document in a ConfigMap's block
    #: scalar): the edit sets ``inner`` inside that text to ``value``, keeping the text's format.
    inner: Path = ()


#: ``Edit.doc`` of a line of a file that is not YAML (a generator's env file): ``path`` is then
#: ``(line index,)`` and ``value`` the line's new text.
LINE = -1


@dataclass(frozen=True)
class Reconciler:
    """A forward GitOps controller that puts an object back as its own git declares it (Argo CD,
    Flux), as the live object shows it (labels, annotations, field managers): it will revert a
    live value syncer copies into git unless syncer's change reaches the controller's git first."""

    tool: str  # "Flux Kustomization", "Flux HelmRelease", "Argo CD Application", or the controller alone
    name: str = ""
    namespace: str = ""
    every: str = ""  # its reconcile interval when its object could be read ("": unknown)
    self_heal: bool | None = None  # Argo CD: automated sync with self-heal (None: unknown)
    suspended: bool = False


@dataclass(frozen=True)
class Drift:
    """One difference between git and the cluster, at one path of one object."""

    ref: ObjectRef
    file: str  # repo-relative path of the manifest file holding the object
    path: Path  # path inside the object (not inside the file)
    git: Any  # value in git (``None`` when absent)
    live: Any  # value live (``None`` when absent)
    direction: Direction
    cls: DriftClass
    action: Action
    manager: str | None = None  # managedFields manager that last set the field live
    changed_at: str | None = None  # RFC 3339 time of that change
    detail: str = ""  # human summary, e.g. "+192.168.68.75 -192.168.68.58"
    reason: str = ""  # why this action (e.g. "held 3m of 10m", "Secret: never written")
    edits: tuple[Edit, ...] = ()  # what write-back changes in the file for this drift
    service: str = ""  # Endpoints family: the Service whose address set was judged (see syncer.detect.endpoints)
    reconciler: Reconciler | None = None  # the GitOps controller that will put the live value back
    base: str = ""  # the base that decided the direction (syncer.detect.bases: last-applied, ownership, ...)
    base_why: str = ""  # what that base showed, in one line
    base_note: str = ""  # a base that was set aside, and why (a tainted last-applied annotation)
    #: "uncertain" when managedFields credit a manager that cannot have written this value (an
    #: applier that applied another one: ``kubectl scale`` on v1.20); ``manager`` is then None.
    attribution: str = ""
    #: Endpoints family: the candidate hosts of the binding as this detection read them (None:
    #: no candidate list binds the Service). Never shown; what ``sync.keep_transient`` checks.
    candidates: frozenset[str] | None = None

    @property
    def path_text(self) -> str:
        return format_path(self.path)

    def to_json(self) -> JSON:
        return {
            "kind": self.ref.kind,
            "apiVersion": self.ref.api_version,
            "namespace": self.ref.namespace,
            "name": self.ref.name,
            "file": self.file or None,  # an untracked object not proposed has no file
            "path": self.path_text,
            "git": self.git,
            "live": self.live,
            "direction": self.direction.value,
            "class": self.cls.value,
            "manager": self.manager,
            "changed_at": self.changed_at,
            **({"attribution": self.attribution} if self.attribution else {}),
            "action": self.action.value,
            "base": self.base or None,
            "base_why": self.base_why or None,
            **({"base_note": self.base_note} if self.base_note else {}),
            "detail": self.detail,
            "reason": self.reason,
            **({"service": self.service} if self.service else {}),
            **({"reconciled_by": _reconciled(self.reconciler)} if self.reconciler is not None else {}),
        }


def _reconciled(r: Reconciler) -> dict[str, Any]:
    return {"tool": r.tool, "name": r.name or None, "namespace": r.namespace or None, "interval": r.every or None,
            "self_heal": r.self_heal, "suspended": r.suspended}


@dataclass(frozen=True)
class FileError:
    """A problem confined to one file or object; the rest keeps syncing."""

    file: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "message": self.message}


@dataclass(frozen=True)
class Result:
    """Everything one comparison found, ready to report or write back."""

    installation: str
    drifts: tuple[Drift, ...] = ()
    errors: tuple[FileError, ...] = ()
    checked: tuple[ObjectRef, ...] = field(default=())
    #: Problems that cost nothing written: objects of ``report`` kinds the account may not read.
    warnings: tuple[FileError, ...] = ()
    #: Objects the account may not read (403), of any kind: the Role lacks their grant.
    unreadable: tuple[ObjectRef, ...] = ()
    #: what was left out, one line each, no drift and no error: files that are no manifests (a
    #: chart's source, a template), an object the snapshot holds in another version than git's
    notes: tuple[FileError, ...] = ()
    #: Declared objects that were not compared, each with why in a few words (``access denied
    #: (403)``, ``API not served``, ``read failed``); its line in ``errors`` or ``warnings`` says more.
    uncompared: tuple[tuple[ObjectRef, str], ...] = ()

    @property
    def in_sync(self) -> bool:
        """In sync: nothing differs, and nothing kept an object from being compared (an error
        means some declared object was not read or not compared: never "in sync")."""
        return not self.drifts and not self.errors

    def writable(self) -> tuple[Drift, ...]:
        return tuple(d for d in self.drifts if d.action is Action.WRITE)

    def to_json(self) -> JSON:
        return {
            "installation": self.installation,
            "in_sync": self.in_sync,
            "drifts": [d.to_json() for d in self.drifts],
            "errors": [e.to_json() for e in self.errors],
            "warnings": [e.to_json() for e in self.warnings],
            "notes": [e.to_json() for e in self.notes],
            "checked": len(self.checked),
            "not_compared": [{"kind": ref.kind, "namespace": ref.namespace, "name": ref.name, "reason": why}
                             for ref, why in self.uncompared],
        }


class Observed(dict["ObjectRef", datetime]):
    """What the sidecar's watch saw: when each object's compared content last changed (the
    mapping itself), and per object when each field last changed (``fields``; see
    ``detect.provenance``: a managedFields time is per manager and operation, not per field)."""

    def __init__(self, since: Mapping["ObjectRef", datetime] | Iterable[tuple["ObjectRef", datetime]] = (),
                 fields: Mapping["ObjectRef", Mapping[Path, datetime]] | None = None) -> None:
        super().__init__(since)
        self.fields: dict[ObjectRef, Mapping[Path, datetime]] = dict(fields or {})


def field_times(observed: Mapping["ObjectRef", datetime], ref: "ObjectRef") -> Mapping[Path, datetime] | None:
    """When the watch saw each field of ``ref`` change (None: not watched field by field)."""
    return observed.fields.get(ref) if isinstance(observed, Observed) else None
