"""Watch the tracked objects by name: list, then watch from the list's resourceVersion.

Three small pieces, in the manner of kopf's ``watching.py``:

* ``list_object``    one request: the collection narrowed by ``fieldSelector=metadata.name=X``
                     -> the object (or ``None``) and the list's resourceVersion;
* ``stream``         one watch from a resourceVersion with bookmarks, parsed line by line from
                     the raw newline-delimited JSON; an ``ERROR`` event with code 410 raises
                     ``Gone``;
* ``ObjectWatcher``  the endless loop of one object, in a thread: re-list on ``Gone`` (never
                     re-watch at the expired version), after any other failure reconnect from
                     the last version with capped exponential backoff and full jitter, and put
                     every change into the ``LiveCache``.

Naming the object in every list and watch is what lets a Role limited by ``resourceNames``
suffice: the API server authorizes a collection request against resourceNames only when the
field selector pins ``metadata.name``.

Every request goes through the ``Kube`` seam (syncer/kube.py); an idle watch stays open until
the server ends it at ``timeoutSeconds`` (TCP keepalive notices a dead peer meanwhile), so
ten quiet objects cost ten requests an hour. Where the Role may list and watch a whole kind,
one stream per kind and namespace replaces the per-object ones (kindwatch.py); watchset.py
decides which, per collection.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from syncer.bounds import load_json
from syncer.errors import ClusterError
from syncer.kube import ApiError, Gone, Kube, WatchStream, api_error
from syncer.kube.budget import BUDGET, LARGE, MAX_EVENT, MAX_EVENT_VALUES, Budget, Lines
from syncer.kube.lists import named_items
from syncer.logs import event
from syncer.model import JSON, ObjectRef
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.retry import Retry, Retrying, WatchSettings, as_cluster_error

log = logging.getLogger("syncer.watch")


#: A single watch event line larger than this is refused (etcd's own limit is 1.5 MiB/object);
#: every stream's buffer counts against one budget for them all (syncer/kube/budget.py).
MAX_LINE = MAX_EVENT

__all__ = ["ApiError", "Gone", "ObjectWatcher", "Target", "Watched", "WatchSettings", "api_error", "lines",
           "list_object", "stream", "target_for"]


@dataclass(frozen=True)
class Target:
    """Where one object is listed and watched: its collection, narrowed to its name."""

    ref: ObjectRef
    path: str  # e.g. /api/v1/namespaces/ai/endpoints

    @property
    def query(self) -> list[tuple[str, str]]:
        return [("fieldSelector", f"metadata.name={self.ref.name}")]

    @property
    def label(self) -> str:
        return str(self.ref)


class Watched(Protocol):
    """What ``stream`` watches: one object (``Target``) or a whole collection (kindwatch.py)."""

    @property
    def path(self) -> str: ...

    @property
    def query(self) -> list[tuple[str, str]]: ...

    @property
    def label(self) -> str: ...


def target_for(kube: Kube, ref: ObjectRef) -> Target:
    return Target(ref, kube.collection_path(ref))


def list_object(api: Kube, target: Target) -> tuple[JSON | None, str]:
    """The object (``None`` when absent) and the list's resourceVersion to watch from."""
    what = f"list {target.ref}"
    return listed(target, api.call("GET", target.path, query=target.query, what=what), what)


def listed(target: Target, doc: JSON | None, what: str) -> tuple[JSON | None, str]:
    """``list_object``'s answer from the list ``doc`` (``None``: not served)."""
    if doc is None:
        raise ClusterError(f"{what}: the API server does not serve {target.path}", transient=False)
    rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
    if not rv:
        raise ClusterError(f"{what}: the list carries no resourceVersion", transient=True)
    found = None
    for name, item in named_items(doc):
        if name == target.ref.name:
            found = {"apiVersion": target.ref.api_version, "kind": target.ref.kind, **item}
    return found, rv


def lines(chunks: Iterable[bytes], what: str = "watch", budget: Budget = BUDGET) -> Iterator[bytes]:
    """Newline-delimited lines from the pieces of a stream, as they arrive, each held against
    ``budget`` until the consumer asks for the next one (by then it is parsed)."""
    reader = Lines(what, budget)
    try:
        for chunk in chunks:
            for line in reader.feed(chunk):
                try:
                    yield line
                finally:
                    reader.release(len(line))
        if last := reader.rest():
            try:
                yield last
            finally:
                reader.release(len(last))
    finally:
        reader.close()


def decode_event(line: bytes, what: str, budget: Budget = BUDGET) -> tuple[str, JSON] | None:
    """One line of a watch: (type, object), ``None`` for a type syncer does not use; an ``ERROR``
    event raises its ``ApiError`` (410: ``Gone``). A large line is parsed only while no other
    large one is, its values counted first (``Budget.parsing``)."""
    try:  # a custom resource nested too deeply is this watch's error, never a RecursionError
        with budget.parsing(len(line)):
            ev = load_json(line.decode("utf-8"), what, max_bytes=MAX_LINE,
                           max_values=MAX_EVENT_VALUES if len(line) > LARGE else None)
    except ValueError:
        raise ClusterError(f"{what}: malformed event line", transient=True) from None
    if not isinstance(ev, dict):
        raise ClusterError(f"{what}: an event line that is no JSON object", transient=True)
    etype, obj = ev.get("type"), ev.get("object")
    if not isinstance(obj, dict):
        return None
    if etype == "ERROR":
        raise api_error(int(obj.get("code") or 500), obj, what)
    if etype in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
        return str(etype), obj
    return None


def watch_query(target: Watched, rv: str, settings: WatchSettings) -> list[tuple[str, str]]:
    """The query of a watch of ``target`` from ``rv``, with bookmarks, ended by the server."""
    return [*target.query, ("watch", "1"), ("resourceVersion", rv), ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(settings.watch_seconds))]


def stream(api: Kube, target: Watched, rv: str, settings: WatchSettings,
           on_open: Callable[[WatchStream], None] | None = None) -> Iterator[tuple[str, JSON]]:
    """Events (type, object) of one watch from ``rv``; ends when the server ends the watch."""
    what = f"watch {target.label}"
    query = watch_query(target, rv, settings)
    ws = api.open_watch(target.path, query, what=what, budget=settings.watch_seconds + settings.grace,
                        idle=settings.read_timeout)
    if on_open is not None:
        on_open(ws)
    complete = False
    chunks = ws.chunks()
    try:
        for line in lines(chunks, what):
            ev = decode_event(line, what)
            if ev is not None:
                yield ev
        complete = True
    finally:
        if not complete:
            ws.close()
            chunks.close()  # hands the connection back


def change_managers(cache: LiveCache, ref: ObjectRef, obj: JSON) -> str | None:
    """Who made the change just put in the cache: the managers owning the fields that changed
    (``LiveCache.changed_by``), not the newest managedFields entry, which may be another manager's
    later write of another field; a deletion or a first sight names none."""
    managers = cache.changed_by(ref)
    return ",".join(managers) if managers else None


class ObjectWatcher(Retrying):
    """Keeps one object current in the cache, forever (until ``stop``), in a thread of its own."""

    def __init__(self, api: Kube, target: Target, cache: LiveCache, settings: WatchSettings = WatchSettings(), *,
                 on_restart: Callable[[], None] = lambda: None, on_error: Callable[[], None] = lambda: None,
                 sleep: Callable[[float], None] | None = None, rand: Callable[[], float] = random.random) -> None:
        self.api, self.target, self.cache, self.settings = api, target, cache, settings
        self.ref = target.ref
        self.retry = Retry(cache, settings, str(self.ref), lambda: (self.ref,), on_restart=on_restart,
                           on_error=on_error, rand=rand)
        self.stopped = threading.Event()
        self._sleep = sleep or self.stopped.wait
        self._raw: WatchStream | None = None
        self._thread: threading.Thread | None = None


    def start(self) -> "ObjectWatcher":
        self._thread = threading.Thread(target=self.run, name=f"watch {self.ref}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        raw = self._raw
        if raw is not None:  # unblock a read that would otherwise wait for the next event
            raw.close()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _opened(self, raw: WatchStream) -> None:
        self._raw = raw
        if self.stopped.is_set():
            self.stop()
        self.cache.stream_up(self.ref)
        self.first.set()

    def run(self) -> None:
        rv: str | None = None
        while not self.stopped.is_set():
            try:
                if rv is None:
                    obj, rv = list_object(self.api, self.target)
                    if self.stopped.is_set():  # replaced (say, by a watch of its kind): write nothing more
                        break
                    self.cache.put(self.ref, obj)
                    self.cache.accepted()
                for etype, obj in stream(self.api, self.target, rv, self.settings, self._opened):
                    if self.stopped.is_set():
                        break
                    rv = watched(self.cache, self.ref, self.retry, etype, obj, rv)
                continue  # the server closed the watch after timeoutSeconds: go on from rv
            except (ClusterError, OSError, ValueError) as exc:
                error = as_cluster_error(exc, str(self.ref))
            finally:
                self._raw = None
            if self.stopped.is_set():
                break
            if isinstance(error, Gone):
                rv = None  # never watch again at the expired version
            self._sleep_for(self.retry.after(error))

    def _sleep_for(self, delay: float) -> None:
        if delay > 0:
            self._sleep(delay)


def watched(cache: LiveCache, ref: ObjectRef, retry: Retry, etype: str, obj: JSON, rv: str) -> str:
    """One event of the watch of ``ref`` into the cache; the version to resume from."""
    retry.answered()
    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
    if etype != "BOOKMARK" and cache.put(ref, None if etype == "DELETED" else obj):
        # a change arrived (not a re-list): the pass that handles it says what it decided
        event(log, logging.INFO, "event", ref=ref, type=etype, manager=change_managers(cache, ref, obj))
    cache.api_reached()
    return rv
