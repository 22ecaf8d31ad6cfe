"""The watches of one installation, kept in line with the objects git declares.

Per collection (a kind in a namespace) one of two paths, said in one log line ``watching``
when it is taken:

* **one watch for the collection** (``KindWatcher``, kindwatch.py) when ``LIST_FROM`` or more
  of its objects are tracked (the rule of the one-shot reads, syncer/gather/live.py; never for
  Secrets, whose LIST would read every Secret of the namespace). Tried first: it needs
  ``list`` and ``watch`` on the kind in the namespace, which the chart grants with
  ``rbac.watchKinds``. A 403 falls back, for good, to
* **one watch per object**, narrowed by name, which a Role limited by ``resourceNames``
  allows: streams of ONE HTTP/2 multiplexer (``Multiplexer``, h2watch.py: one thread, a
  connection per 90 objects where the server allows 100 streams) where the server speaks
  HTTP/2, else ``ObjectWatcher`` (watch.py: one connection and one thread per object). The ``watching`` line says which (``over``), and
  one line says once why there is no multiplexer.

An object is watched one way at a time: when a collection grows past ``LIST_FROM`` its
per-object watches give way to a collection watch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from syncer.gather import served
from syncer.errors import ClusterError
from syncer.kube import ApiError, Kube
from syncer.gather.live import LIST_FROM, NEVER_LISTED
from syncer.logs import event
from syncer.model import ObjectRef
from syncer.sidecar.h2watch import Multiplexer, MuxWatch
from syncer.sidecar.kindwatch import Collection, KindWatcher
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.watch import ObjectWatcher, WatchSettings, target_for

log = logging.getLogger("syncer.watch")

#: (apiVersion, kind, namespace) of a collection.
Key = tuple[str, str, str]

__all__ = ["WatchSet"]


def _key(ref: ObjectRef) -> Key:
    return ref.api_version, ref.kind, ref.namespace


def _label(key: Key) -> str:
    return f"{key[1]} in {key[2]}" if key[2] else f"{key[1]} in the cluster"


class WatchSet:
    """The watchers of one installation: per object, or per collection where allowed."""

    def __init__(self, api: Kube, cache: LiveCache, settings: WatchSettings = WatchSettings(), *,
                 on_restart: Callable[[], None] = lambda: None, on_error: Callable[[], None] = lambda: None,
                 list_from: int = LIST_FROM, multiplex: bool = True) -> None:
        """``multiplex``: carry the per-object watches over HTTP/2 where the server speaks it."""
        self.api, self.cache, self.settings = api, cache, settings
        self.on_restart, self.on_error = on_restart, on_error
        self.list_from = list_from
        self.watchers: dict[ObjectRef, ObjectWatcher | MuxWatch] = {}
        #: The one multiplexer of the per-object watches (h2watch.py), once opened; ``_single``
        #: says why there is none for good (the server chose no HTTP/2, not the real client).
        self.mux: Multiplexer | None = None
        self._single: str | None = None if multiplex else "not asked to"
        self.kinds: dict[Key, KindWatcher] = {}
        #: Collections whose collection watch was refused (403): per object from then on.
        self.refused: set[Key] = set()
        self._lock = threading.Lock()
        self._stopping = False

    # -- which path ---------------------------------------------------------------------

    def _collection_wide(self, key: Key, members: set[ObjectRef]) -> bool:
        return key not in self.refused and key[1] not in NEVER_LISTED and len(members) >= self.list_from

    def reconcile(self, refs: Iterable[ObjectRef]) -> None:
        """Start watching new ``refs``, stop watching the ones no longer wanted."""
        wanted = set(refs)
        groups: dict[Key, set[ObjectRef]] = {}
        for ref in wanted:
            groups.setdefault(_key(ref), set()).add(ref)
        with self._lock:
            if self._stopping:  # a pass still running while the sidecar stops starts nothing new
                return
            for ref in sorted(set(self.watchers) - wanted):
                self.watchers.pop(ref).stop()
                self.cache.forget(ref)
            for key, kw in list(self.kinds.items()):
                members, had = groups.get(key, set()), set(kw.refs)
                if not members:
                    self.kinds.pop(key).stop()
                elif members != had:
                    for ref in members - had:
                        self.cache.expect(ref)
                    kw.set_refs(members)
                for ref in had - members:
                    self.cache.forget(ref)
            for key, members in sorted(groups.items()):
                if key in self.kinds:
                    continue
                if self._collection_wide(key, members):
                    self._start_collection(key, members)
                else:
                    self._start_objects(key, members - set(self.watchers), "")

    def _start_collection(self, key: Key, members: set[ObjectRef]) -> None:
        first = min(members)
        try:
            path = served.collection_path(self.api, first)
        except ClusterError as exc:  # discovery failed: try again at the next reconcile
            for ref in sorted(members):
                self.cache.fail(ref, exc.message, raised=served.NotServed(ref, self.api)
                                if isinstance(exc, served.NotServed) else None)
            event(log, logging.WARNING, "cannot watch", ref=_label(key), error=exc.message)
            return
        for ref in members & set(self.watchers):  # the collection grew: its own watch takes over
            self.watchers.pop(ref).stop()
        for ref in members:
            self.cache.expect(ref)
        event(log, logging.INFO, "watching", ref=_label(key), path="one watch for the kind", objects=len(members))
        self.kinds[key] = KindWatcher(self.api, Collection(key[0], key[1], key[2], path), members, self.cache,
                                      self.settings, on_restart=self.on_restart, on_error=self.on_error,
                                      on_refused=self._refused).start()

    def _multiplexer(self) -> Multiplexer | None:
        """The multiplexer, opened at the first need; ``None``: a thread per object (for now)."""
        if self.mux is not None or self._single is not None:
            return self.mux
        try:
            self.mux, why = Multiplexer.open(self.api, self.cache, self.settings, on_restart=self.on_restart,
                                             on_error=self.on_error)
        except ClusterError as exc:  # unreachable: these objects get threads, the next ones try again
            event(log, logging.WARNING, "cannot open an HTTP/2 connection; one connection per watch",
                  ref=self.api.host, error=exc.message)
            return None
        if self.mux is None:
            self._single = why
            if why:
                event(log, logging.INFO, "no HTTP/2: one connection and thread per watch", ref=self.api.host,
                      reason=why)
        else:
            event(log, logging.INFO, "per-object watches multiplexed over HTTP/2", ref=self.api.host,
                  streams_per_connection=self.mux.per_connection)
        return self.mux

    def _start_objects(self, key: Key, refs: set[ObjectRef], why: str) -> None:
        mux = self._multiplexer() if refs else None
        over = "a connection and a thread each"
        if mux is not None:
            muxed = sum(isinstance(w, MuxWatch) for w in self.watchers.values()) + len(refs)
            over = f"HTTP/2 multiplexed over {mux.connections_for(muxed)} connections"
        if refs and why:
            event(log, logging.INFO, "watching", ref=_label(key), path="one watch per object", objects=len(refs),
                  over=over, reason=why)
        elif refs:
            event(log, logging.INFO, "watching", ref=_label(key), path="one watch per object", objects=len(refs),
                  over=over)
        failed: list[tuple[ObjectRef, str]] = []
        for ref in sorted(refs):
            try:
                target = target_for(self.api, ref)
            except ClusterError as exc:  # discovery failed: try again at the next reconcile
                found = served.not_served(self.api, ref, exc)
                self.cache.fail(ref, exc.message, raised=found if isinstance(found, served.NotServed) else None)
                failed.append((ref, exc.message))
                continue
            self.cache.expect(ref)
            self.watchers[ref] = mux.watch(target) if mux is not None else ObjectWatcher(
                self.api, target, self.cache, self.settings, on_restart=self.on_restart, on_error=self.on_error).start()
        if failed:  # one line, not one per object (an API server down at start: every object fails alike)
            ref, message = failed[0]
            event(log, logging.WARNING, "cannot watch" + (f" {len(failed)} objects; the first" if len(failed) > 1
                                                          else ""), ref=ref, error=message)

    def _refused(self, kw: KindWatcher, error: ApiError) -> bool:
        """A collection watch got 403: its objects are watched one by one from now on."""
        key = (kw.target.api_version, kw.target.kind, kw.target.namespace)
        with self._lock:
            if self._stopping or self.kinds.get(key) is not kw:
                return True
            del self.kinds[key]
            self.refused.add(key)
            self._start_objects(key, set(kw.refs), f"the Role does not allow a watch of the kind: {error.message}")
        return True

    # -- waiting and stopping ---------------------------------------------------------------

    def _all(self) -> list[ObjectWatcher | MuxWatch | KindWatcher]:
        with self._lock:
            return [*self.watchers.values(), *self.kinds.values()]

    def wait_first(self, timeout: float) -> list[ApiError]:
        """Wait for every watcher's first answer; the refusals (401/403) among them. A collection
        refused meanwhile is waited for again as the per-object watches that replace it."""
        deadline = time.monotonic() + timeout
        seen: set[ObjectWatcher | MuxWatch | KindWatcher] = set()
        while True:
            current = self._all()
            for w in current:
                w.first.wait(max(0.0, deadline - time.monotonic()))
            seen |= set(current)
            now = self._all()
            if all(w in seen for w in now) or time.monotonic() >= deadline:
                return [w.first_error for w in now if w.first_error is not None]

    def stop(self, timeout: float = 1.0) -> None:
        with self._lock:
            self._stopping = True
        watchers = self._all()
        for w in watchers:
            w.stop()
        for w in watchers:
            w.join(timeout / max(1, len(watchers)))
        if self.mux is not None:
            self.mux.stop(timeout)
