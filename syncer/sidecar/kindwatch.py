"""Watch a kind in a namespace with ONE stream, when the Role allows it.

``ObjectWatcher`` (watch.py) holds a stream per object, so that a Role limited by
``resourceNames`` suffices; at thousands of objects that is thousands of connections and
threads. Where the Role grants ``list`` and ``watch`` on the kind in the namespace, one
``KindWatcher`` keeps all the tracked objects of that collection current instead:

* ``list_collection``  a paged LIST of the collection (500 a page; every page answers at the
                       first page's resourceVersion) -> the tracked objects, and that version;
                       untracked objects are dropped page by page;
* ``KindWatcher``      the endless loop of the collection, in one thread, with the guarantees
                       of ``ObjectWatcher``: watch from the list's version with bookmarks,
                       re-list on 410 (never re-watch the expired version), reconnect from the
                       last version with capped, jittered backoff after any other failure.
                       Events for objects syncer does not track are dropped as they are decoded.
                       A tracked name added later makes it list again (its object may exist,
                       and its events were dropped while it was not tracked).

A 403 on the collection is no error of the objects: ``on_refused`` hands them to per-object
watches (``WatchSet`` in watch.py decides, and says which path it took).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from syncer.errors import ClusterError
from syncer.kube import ApiError, Gone, Kube, WatchStream
from syncer.kube.lists import named_items
from syncer.logs import event
from syncer.model import JSON, ObjectRef
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.retry import Retry, Retrying, WatchSettings, as_cluster_error
from syncer.sidecar.trim import trim
from syncer.sidecar.watch import change_managers, stream

log = logging.getLogger("syncer.watch")


#: Objects per LIST page (as the one-shot reads, syncer/gather/live.py).
PAGE = 500

__all__ = ["Collection", "KindWatcher", "list_collection"]


@dataclass(frozen=True)
class Collection:
    """One kind in one namespace: where it is listed and watched, unfiltered."""

    api_version: str
    kind: str
    namespace: str
    path: str  # e.g. /api/v1/namespaces/ai/configmaps

    @property
    def query(self) -> list[tuple[str, str]]:
        return []

    @property
    def label(self) -> str:
        return f"{self.kind} in {self.namespace}" if self.namespace else f"{self.kind} in the cluster"


def list_collection(api: Kube, target: Collection, names: Iterable[str],
                    keep: Callable[[JSON], JSON] = lambda obj: obj) -> tuple[dict[str, JSON], str]:
    """The tracked objects of the collection by name, each as ``keep`` makes it (the cache's
    compact form: a page's objects are held whole only while the page is), and the list's
    resourceVersion."""
    wanted = set(names)
    what = f"list {target.label}"
    found: dict[str, JSON] = {}
    rv, token = "", ""
    while True:
        query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
        doc = api.call("GET", target.path, query=query, what=what)
        if doc is None:
            raise ClusterError(f"{what}: the API server does not serve {target.path}", transient=False)
        meta = doc.get("metadata") or {}
        rv = rv or str(meta.get("resourceVersion") or "")
        for name, item in named_items(doc):
            if name in wanted:
                found[name] = keep({"apiVersion": target.api_version, "kind": target.kind, **item})
        del doc  # one page at a time in memory
        token = str(meta.get("continue") or "")
        if not token:
            break
    if not rv:
        raise ClusterError(f"{what}: the list carries no resourceVersion", transient=True)
    return found, rv


class KindWatcher(Retrying):
    """Keeps the tracked objects of one collection current in the cache (until ``stop``)."""

    def __init__(self, api: Kube, target: Collection, refs: Iterable[ObjectRef], cache: LiveCache,
                 settings: WatchSettings = WatchSettings(), *, on_restart: Callable[[], None] = lambda: None,
                 on_error: Callable[[], None] = lambda: None,
                 on_refused: Callable[["KindWatcher", ApiError], bool] = lambda _w, _e: False,
                 sleep: Callable[[float], None] | None = None, rand: Callable[[], float] = random.random) -> None:
        """``on_refused`` is called on a 403; True: the objects are watched another way, stop."""
        self.api, self.target, self.cache, self.settings = api, target, cache, settings
        self.on_restart, self.on_error, self.on_refused = on_restart, on_error, on_refused
        self._names: dict[str, ObjectRef] = {r.name: r for r in refs}
        self.retry = Retry(cache, settings, target.label, lambda: self._names.values(), on_restart=on_restart,
                           on_error=on_error, rand=rand, quiet_refusals=False)
        self._relist = False
        self.stopped = threading.Event()
        self._sleep = sleep or self.stopped.wait
        self._raw: WatchStream | None = None
        self._thread: threading.Thread | None = None


    @property
    def refs(self) -> list[ObjectRef]:
        return sorted(self._names.values())

    def set_refs(self, refs: Iterable[ObjectRef]) -> None:
        """Track these objects of the collection from now on; a new one makes it list again."""
        names = {r.name: r for r in refs}
        added = set(names) - set(self._names)
        self._names = names  # one reference swap: the watch thread sees the old or the new table
        if added:
            self._relist = True
            raw = self._raw
            if raw is not None:
                raw.close()

    def start(self) -> "KindWatcher":
        self._thread = threading.Thread(target=self.run, name=f"watch {self.target.label}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        raw = self._raw
        if raw is not None:
            raw.close()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _opened(self, raw: WatchStream) -> None:
        self._raw = raw
        if self.stopped.is_set() or self._relist:
            raw.close()
        for ref in self._names.values():
            self.cache.stream_up(ref)
        self.first.set()

    def _listed(self) -> str:
        names = self._names
        found, rv = list_collection(self.api, self.target, names, self.cache.compact)
        for name, ref in names.items():
            self.cache.put(ref, found.pop(name, None), compacted=True)
        self.cache.accepted()
        trim()  # the pages' text and decoded objects, freed: back to the system
        return rv

    def _event(self, etype: str, obj: JSON) -> None:
        name = (obj.get("metadata") or {}).get("name")
        ref = self._names.get(name) if isinstance(name, str) else None
        if ref is not None and self.cache.put(ref, None if etype == "DELETED" else obj):
            # an object syncer does not track is dropped above; a change arrived: the pass that
            # handles it says what it decided
            event(log, logging.INFO, "event", ref=ref, type=etype, manager=change_managers(self.cache, ref, obj))

    def run(self) -> None:
        rv: str | None = None
        while not self.stopped.is_set():
            try:
                if rv is None or self._relist:
                    self._relist = False
                    rv = self._listed()
                for etype, obj in stream(self.api, self.target, rv, self.settings, self._opened):
                    if self.stopped.is_set():
                        break
                    self.retry.answered()
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if etype != "BOOKMARK":
                        self._event(etype, obj)
                    self.cache.api_reached()
                continue  # timeoutSeconds passed, or a new name asked for a list: go on
            except (ClusterError, OSError, ValueError) as exc:
                error = as_cluster_error(exc, self.target.label)
            finally:
                self._raw = None
            if self.stopped.is_set():
                break
            if isinstance(error, ApiError) and error.status == 403 and self.on_refused(self, error):
                self.stopped.set()
                self.first.set()
                break
            if isinstance(error, Gone):
                rv = None
            delay = self.retry.after(error)
            if delay > 0:
                self._sleep(delay)
