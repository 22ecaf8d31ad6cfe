"""The live objects as the watches last saw them: a ``LiveSource`` served from memory.

Watch threads write (``put``, ``stream_up``/``stream_down``, ``fail``); the loop reads
(``get`` during detection, ``observed_since``, ``dirty_since``/``last_change`` to debounce).
A pass therefore costs no API request at all.

"Changed" means the compared content changed: the object is normalized (server-owned
metadata such as resourceVersion and managedFields dropped) and hashed, so a bookmark or a
status-only update neither wakes the loop nor resets an object's ``observed_since``.

``get`` refuses to answer from data it cannot vouch for, raising a per-object
``ClusterError`` instead (detection then reports that object and goes on with the rest):
an object never listed yet, one whose watch is forbidden, or one whose stream has been down
for longer than ``stale_after``. A short reconnect (the watch resumes from its last
resourceVersion, so nothing is missed) does not count.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from syncer.errors import ClusterError
from syncer.kube import Refused
from syncer.gather.live import LiveSource
from syncer.detect.normalize import normalize
from syncer.detect.ownership import owner
from syncer.detect.provenance import changed_paths
from syncer.model import ObjectRef, Observed, Path
from syncer.sidecar.compact import Shared, compact

if TYPE_CHECKING:
    from syncer.gather.live import Lister


class Declared(Protocol):
    """An object as git declares it (``sources.manifests.GitObject``)."""

    @property
    def data(self) -> dict[str, Any]: ...


@dataclass(slots=True)
class _Entry:
    obj: dict[str, Any] | None = None
    digest: bytes | None = None  # None: never listed
    changed_at: float = 0.0  # clock time the compared content last changed
    #: clock time the watch saw each field change (``detect.provenance``), at most MAX_FIELDS paths
    fields: dict[Path, float] | None = None
    #: the managers owning the fields of the last change (the watch's event line)
    changed_by: tuple[str, ...] = ()
    down_since: float | None = None  # stream broken since
    error: str | None = None  # permanent problem (403, kind not served)
    status: int | None = None  # the API status of ``error`` (403: the Role lacks the object)
    raised: ClusterError | None = None  # raised as it is by ``get`` (an API not served: syncer/gather/served.py)


#: Field change times kept per object: the newest win.
MAX_FIELDS = 64


def _note_fields(entry: _Entry, old: dict[str, Any], new: dict[str, Any], now: float) -> None:
    """When each field of the object changed, as the watch saw it, and who owns what changed."""
    paths = changed_paths(normalize(old), normalize(new))
    fields = dict(entry.fields or {})
    for path in paths:
        fields.pop(path, None)
        fields[path] = now
    while len(fields) > MAX_FIELDS:
        fields.pop(next(iter(fields)))
    entry.fields = fields
    managers: list[str] = []
    for path in paths:
        who = owner(new, path)
        if who is not None and who.manager not in managers:
            managers.append(who.manager)
    entry.changed_by = tuple(managers)


def _digest(obj: dict[str, Any] | None) -> bytes:
    """The compared content's hash (the compact form compares as the object it came from)."""
    if obj is None:
        return b"absent"
    text = json.dumps(normalize(obj), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).digest()


class LiveCache(LiveSource):
    #: A watch down for longer than this makes its object "unknown" rather than stale data:
    #: a minute covers a reconnect with backoff, or an API server restart.
    STALE_AFTER = 60.0

    #: ``get`` returns the stored objects themselves: replaced on change, never modified (so
    #: detection may remember comparisons by identity, syncer/cache.py).
    immutable = True

    def __init__(self, host: str = "", *, clock: Callable[[], float] = time.time,
                 stale_after: float = STALE_AFTER, on_change: Callable[[], None] = lambda: None) -> None:
        self.host = host
        self.clock = clock
        self.stale_after = stale_after
        self.on_change = on_change
        self._lock = threading.Lock()
        self._entries: dict[ObjectRef, _Entry] = {}
        self._shared = Shared()  # what compact objects share (syncer/sidecar/compact.py)
        self._declared: Mapping[ObjectRef, Declared] = {}  # git's objects (``declare``)
        self.version = 0  # bumps on every change of compared content (or of a permanent error)
        self._forgotten = 0  # bumps when an entry goes: with version, what observed_since depends on
        self._since: tuple[tuple[int, int], Observed] | None = None
        self.dirty_since: float | None = None  # first change not yet taken by a pass
        self.last_change: float | None = None
        self.api_ok_at: float | None = None
        self.api_error: str | None = None
        #: The API server rejected the credentials (401), why; cleared by the next new request it
        #: answers (``accepted``, ``stream_up``), not by events of a watch opened before.
        self.auth_error: str | None = None
        #: Called once per rejected request (the sidecar counts them).
        self.on_rejected: Callable[[], None] = lambda: None
        #: Where ``list_objects`` lists from (the API server; set by the sidecar).
        self.lister: "Lister | None" = None

    # -- the watch side -------------------------------------------------------------

    def expect(self, ref: ObjectRef) -> None:
        with self._lock:
            self._entries.setdefault(ref, _Entry())

    def forget(self, ref: ObjectRef) -> None:
        with self._lock:
            if self._entries.pop(ref, None) is not None:
                self._forgotten += 1

    def declare(self, objects: Mapping[ObjectRef, Declared]) -> None:
        """The objects as git declares them (the sidecar's latest load): what ``compact`` shares."""
        self._declared = objects

    def compact(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` in the form the cache keeps (``compact``): for a list to hold its page's
        objects that way, and ``put`` them with ``compacted``."""
        meta = obj.get("metadata")
        declared = None
        if isinstance(meta, dict) and self._declared:
            try:
                found = self._declared.get(ObjectRef(str(obj.get("apiVersion")), str(obj.get("kind")),
                                                     str(meta.get("namespace") or ""), str(meta.get("name"))))
            except TypeError:
                found = None
            declared = found.data if found is not None else None
        with self._lock:
            return compact(obj, self._shared, declared)

    def put(self, ref: ObjectRef, obj: dict[str, Any] | None, *, compacted: bool = False) -> bool:
        """The object as listed or watched (``None``: it does not exist; ``compacted``: made by
        ``compact`` already); True when what is compared changed. Only the compact form is kept."""
        if obj is not None and not compacted:
            obj = self.compact(obj)
        digest = _digest(obj)
        now = self.clock()
        with self._lock:
            entry = self._entries.setdefault(ref, _Entry())
            changed = digest != entry.digest or entry.error is not None
            previous, listed = entry.obj, entry.digest is not None
            entry.obj, entry.down_since, entry.error, entry.raised = obj, None, None, None
            if changed:
                entry.digest, entry.changed_at = digest, now
                if listed and previous is not None and obj is not None:  # a change seen, not the first list
                    _note_fields(entry, previous, obj, now)
                else:
                    entry.changed_by = ()
                self._dirty(now)
            self._reached(now)
        if changed:
            self.on_change()
        return changed

    def stream_up(self, ref: ObjectRef) -> None:
        """A watch of ``ref`` was opened: a new request the API server accepted."""
        with self._lock:
            entry = self._entries.setdefault(ref, _Entry())
            entry.down_since = None
            self._reached(self.clock())
            self.auth_error = None

    def stream_down(self, ref: ObjectRef) -> None:
        with self._lock:
            entry = self._entries.setdefault(ref, _Entry())
            if entry.down_since is None:
                entry.down_since = self.clock()

    def fail(self, ref: ObjectRef, message: str, status: int | None = None, raised: ClusterError | None = None) -> None:
        """A problem a retry will not fix by itself (403, kind not served); ``status`` 403
        makes ``get`` raise ``Refused`` (the Role lacks the object), ``raised`` that error
        itself (``served.NotServed``), anything else ClusterError."""
        with self._lock:
            entry = self._entries.setdefault(ref, _Entry())
            changed = entry.error != message
            entry.error = message
            entry.status = status
            entry.raised = raised
            if changed:
                self._dirty(self.clock())
        if changed:
            self.on_change()

    def api_reached(self) -> None:
        with self._lock:
            self._reached(self.clock())

    def api_unreachable(self, message: str) -> None:
        with self._lock:
            self.api_error = message

    def credentials_rejected(self, message: str) -> bool:
        """The API server rejected syncer's credentials: not ready until it answers again (a
        rotated token, read again at the next request, heals it without a restart). True when
        they were taken until now (the first rejection: worth a log line)."""
        with self._lock:
            first, self.auth_error = self.auth_error is None, message
        self.on_rejected()
        return first

    def accepted(self) -> None:
        """A new request (a list, a state read) was answered: the credentials are taken again.
        An event on a watch opened earlier proves nothing of them: the server authenticated it
        when it began, and streams on after the token is revoked."""
        with self._lock:
            self._reached(self.clock())
            self.auth_error = None

    def _reached(self, now: float) -> None:
        self.api_ok_at = now
        self.api_error = None

    def _dirty(self, now: float) -> None:
        self.version += 1
        self.last_change = now
        if self.dirty_since is None:
            self.dirty_since = now

    # -- the loop side --------------------------------------------------------------

    def describe(self) -> str:
        return f"watch cache of API server {self.host}".rstrip()

    def served_kinds(self) -> frozenset[str] | None:
        """What the API server the watches read from serves (``LiveSource.served_kinds``)."""
        served = getattr(self.lister, "served_kinds", None)
        return served() if served is not None else None

    def list_objects(self, api_version: str, kind: str, namespace: str) -> list[dict[str, Any]]:
        """Untracked objects (``untracked:``) are not watched: listed from the API server at each pass."""
        if self.lister is None:
            raise ClusterError("untracked objects: no API server to list them from", transient=False)
        return self.lister.list_objects(api_version, kind, namespace)

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        with self._lock:
            entry = self._entries.get(ref)
            now = self.clock()
            if entry is None:
                raise ClusterError(f"{ref} is not watched", transient=True)
            if entry.error is not None:
                if entry.raised is not None:
                    raise entry.raised
                if entry.status == 403:
                    raise Refused(entry.error, entry.status, transient=False)
                raise ClusterError(entry.error, transient=False)
            if entry.digest is None:
                raise ClusterError(f"{ref}: not listed yet; compared at the next pass", transient=True)
            if entry.down_since is not None and now - entry.down_since > self.stale_after:
                raise ClusterError(f"{ref}: watch down for {now - entry.down_since:.0f}s; not comparing stale data",
                                   transient=True)
            return entry.obj  # replaced on change, never modified: read-only for callers

    def observed_since(self) -> Observed:
        """When each object's compared content last changed, as seen by the watch."""
        with self._lock:
            # Built again only when content changed or an entry went (a digest and its change
            # time are set together with a version bump): two calls a pass, 5,000 objects.
            key = (self.version, self._forgotten)
            if self._since is None or self._since[0] != key:
                self._since = None  # the old map goes before the new one is built, not after
                since = Observed(((ref, datetime.fromtimestamp(e.changed_at, timezone.utc))
                                  for ref, e in self._entries.items() if e.digest is not None),
                                 {ref: {p: datetime.fromtimestamp(t, timezone.utc) for p, t in e.fields.items()}
                                  for ref, e in self._entries.items() if e.fields})
                self._since = key, since
            # The map itself, read-only for callers (never a copy: at 50,000 objects a copy is
            # several MiB, and the loop keeps the previous pass's).
            return self._since[1]

    def changed_by(self, ref: ObjectRef) -> tuple[str, ...]:
        """The managers owning the fields of ``ref``'s last change, as the watch saw it."""
        with self._lock:
            entry = self._entries.get(ref)
            return entry.changed_by if entry is not None else ()

    def take_dirty(self) -> None:
        """A pass starts: changes so far are its to handle."""
        with self._lock:
            self.dirty_since = None

    def synced(self) -> bool:
        """Every expected object has been listed (or has failed for good)."""
        with self._lock:
            return all(e.digest is not None or e.error is not None for e in self._entries.values())

    def refs(self) -> list[ObjectRef]:
        with self._lock:
            return sorted(self._entries)
