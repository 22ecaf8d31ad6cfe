"""What syncer remembers between passes: one ``Caches`` object per installation, built by the
caller (the one-shot command, the sidecar) and passed in, made of ``Lru`` maps of one class.

Every remembered value is the result of a pure function of read-only inputs: the parse of a
file's bytes, the field differences of a git object and a live object (both never modified:
the parse cache and the watch cache hand back the same objects), a render of a kustomization,
a judgement of a text. Nothing here changes what syncer decides; dropping any entry only costs
time. ``Caches.counters()`` is what tests and ``bench/`` read to see that a pass reused work.

Keys:
* by value (a path and its stat, a digest of a text): ``Lru.get`` / ``Lru.put``;
* by identity (``Lru.by_identity``): the ids of objects plus a hashable extra; the entry holds
  the objects, so an id cannot be reused while its entry lives, and a changed object is a new
  object, hence a miss.

Bounds: entries always; bytes where values can be large (``size_of``), so a hostile input
cannot grow a cache without limit (a few hundred distinct 1 MB values held by count alone
would be hundreds of MiB).
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from syncer.model import ObjectRef

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")

_ABSENT: Any = object()


class Lru(Generic[K, V]):
    """A thread-safe least-recently-used map bounded by entries (and bytes, with ``size_of``).

    ``generation`` moves on ``clear()``: whatever a caller derived from the entries is stale."""

    def __init__(self, max_entries: int, *, max_bytes: int | None = None,
                 size_of: Callable[[K, V], int] | None = None) -> None:
        if max_bytes is not None and size_of is None:
            raise ValueError("max_bytes needs size_of")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._size_of = size_of
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.generation = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held_bytes(self) -> int:
        """Bytes the entries hold, as ``size_of`` estimates them (0 without one)."""
        return self._bytes

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value for ``key`` (counted as a hit), or ``default`` (counted as a miss)."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return default
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: K, value: V) -> None:
        size = self._size_of(key, value) if self._size_of is not None else 0
        if self.max_bytes is not None and size > self.max_bytes:
            return  # larger than the whole cache: not remembered
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while self._entries and (len(self._entries) > self.max_entries
                                     or (self.max_bytes is not None and self._bytes > self.max_bytes)):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def get_or(self, key: K, compute: Callable[[], V]) -> V:
        """The value for ``key``, computed (outside the lock) and remembered when absent."""
        found = self.get(key, _ABSENT)
        if found is not _ABSENT:
            return found  # type: ignore[return-value]  # _ABSENT is the only non-V default
        value = compute()
        self.put(key, value)
        return value

    def served(self, n: int) -> None:
        """Count ``n`` hits known without asking (a caller remembering them another way)."""
        with self._lock:
            self.hits += n

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self.generation += 1

    def values(self) -> Iterator[V]:
        """The values, least recently used first (a copy: safe while others put)."""
        with self._lock:
            held = [v for v, _ in self._entries.values()]
        return iter(held)

    def get_fresh(self, key: K, fresh: Callable[[V], bool]) -> V | None:
        """The value for ``key`` when ``fresh(value)`` (a hit), else None (a miss: a stale
        entry is dropped), for a value that carries what it was made from (a file's stamp)."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None and fresh(found[0]):
                self._entries.move_to_end(key)
                self.hits += 1
                return found[0]
            if found is not None:
                del self._entries[key]
                self._bytes -= found[1]
            self.misses += 1
            return None

    def discard_where(self, gone: Callable[[K], bool]) -> None:
        """Forget the entries whose key ``gone`` says is no longer needed (a deleted file)."""
        with self._lock:
            for key in [k for k in self._entries if gone(k)]:
                self._bytes -= self._entries.pop(key)[1]


#: A map of results by the identity of their input objects (``by_identity``).
ByIdentity = Lru[tuple[Hashable, ...], tuple[tuple[object, ...], T]]


def by_identity(lru: ByIdentity[T], objects: tuple[object, ...],
                extra: Hashable, compute: Callable[[], T], keep: Callable[[T], bool] | None = None) -> T:
    """``compute()`` remembered by the identity of ``objects`` (held by the entry) and ``extra``;
    with ``keep``, only a value it keeps is remembered."""
    key = (*map(id, objects), extra)
    found = lru.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], objects)):
        return found[1]
    value = compute()
    if keep is None or keep(value):
        lru.put(key, (objects, value))
    return value


def digest(*texts: str | None) -> bytes:
    """One SHA-256 over ``texts`` (None and "" differ; the parts cannot run together)."""
    h = hashlib.sha256()
    for text in texts:
        if text is None:
            h.update(b"\x00N")
            continue
        raw = text.encode("utf-8", "surrogatepass")
        h.update(b"\x00S%d:" % len(raw))
        h.update(raw)
    return h.digest()


#: Texts up to this many characters are their own key (hashing them would cost more than it saves).
SHORT = 256


def text_key(text: str) -> str | bytes:
    """``text`` itself when short, else its digest: what a key holds of a text (never a long text)."""
    return text if len(text) <= SHORT else digest(text)


def small_size(key: Hashable, value: object) -> int:
    """Bytes of an entry whose key is a few strings/bytes and whose value is small (a reason, a bool)."""
    parts = key if isinstance(key, tuple) else (key,)
    return 64 + sys.getsizeof(value) + sum(sys.getsizeof(p) for p in parts if isinstance(p, (str, bytes)))


def _identity() -> Lru[Any, Any]:
    return Lru(20_000)


def _latest() -> Lru[Any, Any]:
    """A map of what is derived from the whole manifests (one entry per object in it): only the
    latest manifests' is kept. A pass uses one version; a commit makes the next one, which
    the next pass uses in turn. Each entry is as large as the installation (tens of MiB at
    50,000 objects, the manifests' index held with it), so keeping a few versions made the
    sidecar's memory grow with every committed edit."""
    return Lru(1)


@dataclass
class Caches:
    """Everything one installation remembers between passes. Lanes add their maps here as fields
    (one ``Lru`` each); ``counters`` and ``clear`` walk the fields, so a new map needs no other code.
    A value's type is its owner's (``FileParse`` of ``sources.manifests``...), named where it is
    read: this module, below every stage, imports none of them.

    Built once by the caller and passed down; a one-shot run may pass a fresh one (nothing to
    reuse) and tests build their own instead of clearing module state."""

    #: engine: field differences of (git object, live object, config), by identity (only where there are some).
    compared: Lru[Any, Any] = field(default_factory=_identity)
    #: engine: the trusted last-applied base of a live object, by identity.
    last_applied: Lru[Any, Any] = field(default_factory=_identity)
    #: engine: the tracking of the last few manifests (compare order, Endpoints family, which
    #: objects were found in sync: syncer/detect/tracking.py), by the identity of their objects.
    tracking: Lru[Any, Any] = field(default_factory=_latest)
    #: gather: the live objects detection reads (``objects_to_read``) of (manifests, config), by identity.
    to_read: Lru[Any, Any] = field(default_factory=_latest)
    # -- the maps of the modules below detection (sources, plan, secrets, config) --
    #: manifests: each file's objects and errors by (path, namespace), with the file's stamp.
    files: Lru[tuple[str, str], Any] = field(default_factory=lambda: Lru(65_536))
    #: manifests: the parses of the last command, on disk by a digest of each text
    #: (``parsestore.ParseStore``; a one-shot command's); None: every file is parsed.
    stored: Any = None
    #: manifests: the last index per (repo, installation, namespace), with the per-file lists it came from.
    indexes: Lru[tuple[str, str, str], Any] = field(default_factory=lambda: Lru(64))
    #: sources: a rendering source's last load per key (the source's name first, then its tree,
    #: namespace, binary...), with the stamp of the tree it was made from (``Source.load``).
    renders: Lru[tuple[str, ...], Any] = field(default_factory=lambda: Lru(16))
    #: sources: why each drift of a checked render does not render as live (None: it does), by a
    #: digest of the tree's stamp, the edited texts and the drifts (``Source.verify``).
    verified: Lru[bytes, tuple[str | None, ...]] = field(default_factory=lambda: Lru(1024))
    #: helm: the cluster's version and API group versions, as ``helm install`` would see them (read
    #: on first need, once; None: helm's defaults). Set by whoever has the live source.
    helm_capabilities: Callable[[], tuple[str, tuple[str, ...]]] | None = None
    #: writeback: new texts planned, by (file, digest of its text, the edits).
    planned: Lru[tuple[str, str, str], Any] = field(default_factory=lambda: Lru(512))
    #: writeback: a file's parses by (file, digest), bounded by the characters of text they hold.
    parsed: Lru[tuple[str, str], Any] = field(
        default_factory=lambda: Lru(4096, max_bytes=128 * 1024, size_of=lambda _, v: v.chars))
    #: history: objects by (blob, ref) as that version of a file declares them (content-addressed).
    versions: Lru[tuple[str, ObjectRef], object] = field(default_factory=lambda: Lru(4096))
    #: history: every file's versions by (repo, HEAD, scope, subject): one ``git log --raw``.
    logs: Lru[tuple[str, str, str, str], Any] = field(default_factory=lambda: Lru(64))
    #: endpoints: (namespace, Service) of the Endpoints git declares, by identity of the objects.
    declared: ByIdentity[frozenset[tuple[str, str]]] = field(default_factory=_latest)
    #: sidecar/loop: the objects to watch, by identity of (manifests, config).
    tracked: ByIdentity[frozenset[ObjectRef]] = field(default_factory=_latest)
    #: sidecar/record: git objects normalized as recorded, by identity.
    normalized: ByIdentity[dict[str, Any]] = field(default_factory=lambda: Lru(20_000))
    #: secrets: why a text is secret (None: it is not), by its key; bounded in bytes.
    judged: Lru[tuple[str | bytes, tuple[str, ...], bool], str | None] = field(
        default_factory=lambda: Lru(4096, max_bytes=4 << 20, size_of=small_size))
    #: lookalike: the note on a change of text, by the keys of both texts; bounded in bytes.
    notes: Lru[tuple[str | bytes | None, str | bytes], str | None] = field(
        default_factory=lambda: Lru(1024, max_bytes=1 << 20, size_of=small_size))
    #: untracked: the (kind, namespace) lists refused and logged already (said once).
    refusals_said: Lru[tuple[str, str], bool] = field(default_factory=lambda: Lru(4096))
    #: config: the parsed config by (text, file, installation, namespace): the same text, the same Config.
    configs: Lru[tuple[str, str, str, str | None], Any] = field(default_factory=lambda: Lru(8))

    def counters(self) -> dict[str, tuple[int, int, int]]:
        """name -> (hits, misses, entries) of every map."""
        return {f.name: (lru.hits, lru.misses, len(lru)) for f in fields(self)
                if isinstance(lru := getattr(self, f.name), Lru)}

    def clear(self) -> None:
        for f in fields(self):
            lru = getattr(self, f.name)
            if isinstance(lru, Lru):
                lru.clear()
