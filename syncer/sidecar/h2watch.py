"""Per-object watches multiplexed over a few HTTP/2 connections, driven by ONE thread.

A Role limited by ``resourceNames`` allows a list or watch narrowed to one name only, so each
tracked object needs a watch of its own (watch.py). ``ObjectWatcher`` gives each a thread and a
connection; at thousands of objects that is thousands of both. Where the API server speaks
HTTP/2 (every kube-apiserver does, by ALPN), ``Multiplexer`` carries the same requests as
streams instead:

* one thread, a selector over the connections (``syncer.kube.http2``: TLS, credentials and
  headers are the Kubernetes client's) and a wake-up socket;
* the streams sharded over connections (``kube.http2.Pool``): each carries at most 90 % of the
  server's ``SETTINGS_MAX_CONCURRENT_STREAMS`` (``--http2-max-streams-per-connection``) and
  never more than ``MAX_STREAMS``, and one with no room means a new one, so no stream ever
  waits behind a full connection;
* each object has at most one stream at a time: its list (``fieldSelector=metadata.name=X``)
  or its watch from the list's version with bookmarks (the queries of watch.py), whose DATA is
  cut into lines (``h2stream.Stream``, within the watches' memory budget) and decoded as it
  arrives (``decode_event``); an event naming another object is dropped there;
* the guarantees of ``ObjectWatcher`` stay, through the same ``Retry`` (retry.py): 410 re-lists
  (never re-watches the expired version), any other failure reconnects from the last version
  after a capped, jittered backoff, the server's end of a watch (``timeoutSeconds``) resumes at
  once; a list is bounded by the client's timeouts, a watch by ``watch_seconds + grace`` and
  ``read_timeout`` of silence, as in watch.py.

``WatchSet`` (watchset.py) asks ``Multiplexer.open`` for one; ``None`` (not the real client,
not https, or no ``h2`` by ALPN) keeps a thread per object.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import random
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from urllib.parse import urlencode

import h2.events

from syncer.errors import ClusterError
from syncer.kube import ClusterUnreachable, Gone, Kube
from syncer.kube.budget import BUDGET, Budget
from syncer.kube.http2 import Endpoint, H2Conn, Pool, connect
from syncer.logs import event
from syncer.sidecar.h2stream import Stream
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.retry import Flag, Retry, Retrying, WatchSettings, as_cluster_error
from syncer.sidecar.watch import Target, decode_event, listed, watch_query, watched

log = logging.getLogger("syncer.watch")

#: Streams per connection at most, whatever the server allows (within it: 90 % of its limit).
MAX_STREAMS = 250

#: Lists in flight at most: thousands sent at once would wait at the server past their deadline.
MAX_LISTS = 200

#: How often deadlines are looked at (a stream over its budget is ended within this long).
TICK = 1.0

__all__ = ["MAX_STREAMS", "Multiplexer", "MuxWatch"]


class MuxWatch(Retrying):
    """One object watched by a ``Multiplexer``: what ``WatchSet`` holds per object."""

    __slots__ = ("mux", "target", "ref", "retry", "rv", "stopped", "due", "request")

    def __init__(self, mux: "Multiplexer", target: Target, retry: Retry) -> None:
        self.mux, self.target, self.ref, self.retry = mux, target, target.ref, retry
        self.rv: str | None = None
        self.stopped = False
        self.due = 0.0
        self.request: Stream | None = None


    def stop(self) -> None:
        """Write nothing more for this object (its stream is reset by the multiplexer)."""
        self.stopped = True
        self.mux.call(lambda: self.mux.drop(self))

    def join(self, timeout: float | None = None) -> None:
        """Nothing to wait for: the multiplexer's thread is stopped with the multiplexer."""


class Multiplexer:
    """The per-object watches of one installation over a few HTTP/2 connections, one thread."""

    def __init__(self, ep: Endpoint, first: H2Conn, cache: LiveCache, settings: WatchSettings, *,
                 on_restart: Callable[[], None], on_error: Callable[[], None],
                 rand: Callable[[], float] = random.random, max_streams: int = MAX_STREAMS,
                 budget: Budget = BUDGET) -> None:
        self.ep, self.cache, self.settings = ep, cache, settings
        self.budget = budget  # what the streams' buffers draw from, with every other watch's
        self.on_restart, self.on_error, self.rand = on_restart, on_error, rand
        self.max_streams = max_streams
        self._first = threading.Condition()  # of every watch's first answer (``Flag``)
        self._listing = 0  # lists in flight
        self._to_list: deque[MuxWatch] = deque()  # due to list, waiting for one of those to end
        self.pool = Pool(ep, first, max_streams, retry_after=TICK)
        self._requests: dict[tuple[int, int], Stream] = {}  # (id(conn), stream id) -> request
        self._due: list[tuple[float, int, MuxWatch]] = []
        self._seq = itertools.count()
        self._calls: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._stopping = False
        self._sel.register(first.sock, selectors.EVENT_READ, first)
        self._thread = threading.Thread(target=self._run, name="watch (HTTP/2)", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, api: Kube, cache: LiveCache, settings: WatchSettings, *, on_restart: Callable[[], None],
             on_error: Callable[[], None], max_streams: int = MAX_STREAMS,
             rand: Callable[[], float] = random.random) -> "tuple[Multiplexer | None, str]":
        """A multiplexer for ``api``, or ``None`` and why not (``""``: not asked to try again)."""
        opened = connect(api, max_streams)
        if opened is None:
            return None, ""
        ep, conn = opened
        if isinstance(conn, str):
            return None, conn
        return cls(ep, conn, cache, settings, on_restart=on_restart, on_error=on_error, rand=rand,
                   max_streams=max_streams), ""

    @property
    def per_connection(self) -> int:
        """Streams each connection carries (ours or the server's limit, the lower)."""
        return self.pool.per_connection

    def connections_for(self, objects: int) -> int:
        return self.pool.connections_for(objects)

    @property
    def opened(self) -> int:
        """Connections opened so far (the first included)."""
        return self.pool.opened

    # -- what other threads call ------------------------------------------------------------

    def watch(self, target: Target) -> MuxWatch:
        """Watch one more object, from now on."""
        retry = Retry(self.cache, self.settings, str(target.ref), lambda: (target.ref,),
                      on_restart=self.on_restart, on_error=self.on_error, rand=self.rand, first=Flag(self._first))
        w = MuxWatch(self, target, retry)
        self.call(lambda: self._schedule(w, 0.0))
        return w

    def call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the multiplexer's thread."""
        with self._lock:
            self._calls.append(fn)
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):  # already awake (buffer full) or closed
            pass

    def stop(self, timeout: float = 1.0) -> None:
        self._stopping = True
        self.call(lambda: None)
        self._thread.join(timeout)

    # -- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        last_tick = time.monotonic()
        try:
            while not self._stopping:
                try:
                    last_tick = self._turn(last_tick)
                except Exception as exc:  # noqa: BLE001 - a bug must not end every object's watch
                    event(log, logging.ERROR, "watch multiplexer: unexpected error; going on", ref=self.ep.host,
                          error=f"{type(exc).__name__}: {exc}", exc=exc)
                    time.sleep(TICK)
        finally:
            for req in list(self._requests.values()):
                req.free()
            self.pool.close()
            self._sel.close()
            self._wake_r.close()
            self._wake_w.close()

    def _turn(self, last_tick: float) -> float:
        """One turn of the loop: start what is due, read what arrived, end what is late."""
        now = time.monotonic()
        self._start_due(now)
        wait = TICK if not self._due else min(TICK, max(0.0, self._due[0][0] - now))
        for key, _ in self._sel.select(wait):
            if key.data is None:
                self._woken()
            else:
                self._readable(key.data)
        if time.monotonic() - last_tick >= TICK:
            last_tick = time.monotonic()
            self._check_deadlines(last_tick)
        self._flush()
        return last_tick

    def _flush(self) -> None:
        for conn in list(self.pool.conns):
            try:
                conn.flush()
            except OSError as exc:
                self._lost(conn, exc)

    def _woken(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass
        while True:
            with self._lock:
                if not self._calls:
                    return
                fn = self._calls.popleft()
            fn()

    def _schedule(self, w: MuxWatch, delay: float) -> None:
        if w.stopped:
            return
        w.due = time.monotonic() + delay
        heapq.heappush(self._due, (w.due, next(self._seq), w))

    def drop(self, w: MuxWatch) -> None:
        req = w.request
        if req is not None:
            self._end(req, cancel=True)

    def _start_due(self, now: float) -> None:
        while self._due and self._due[0][0] <= now:
            due, _, w = heapq.heappop(self._due)
            if w.stopped or w.request is not None or due != w.due:
                continue  # stopped, or rescheduled since
            if w.rv is None and self._listing >= MAX_LISTS:
                self._to_list.append(w)  # started when a list ends: none waits out its deadline queued
                continue
            try:
                self._start(w)
            except (ClusterError, OSError, ValueError) as exc:
                self._failed(w, exc)

    def _connection(self) -> H2Conn:
        conn, new = self.pool.with_room()
        if new:
            self._sel.register(conn.sock, selectors.EVENT_READ, conn)
        return conn

    def _start(self, w: MuxWatch) -> None:
        conn = self._connection()
        if w.rv is None:  # list first
            query, budget, idle = w.target.query, self.ep.total_timeout, self.ep.read_timeout
        else:
            query = watch_query(w.target, w.rv, self.settings)
            budget, idle = self.settings.watch_seconds + self.settings.grace, self.settings.read_timeout
        try:
            sid = conn.request(w.target.path + "?" + urlencode(query))
        except OSError as exc:
            self._lost(conn, exc)
            raise
        req = Stream(w, conn, sid, w.rv is not None, budget, idle, self.budget)
        self._listing += not req.watching
        w.request = req
        self._requests[(id(conn), sid)] = req

    def _readable(self, conn: H2Conn) -> None:
        try:
            conn.receive(lambda ev: self._on_event(conn, ev))
        except (OSError, ValueError) as exc:
            self._lost(conn, exc)

    def _lost(self, conn: H2Conn, exc: BaseException) -> None:
        """The connection is gone: every stream on it fails (each object backs off on its own)."""
        if self.pool.remove(conn):
            self._sel.unregister(conn.sock)
        conn.close()
        error = ClusterUnreachable(f"watch over HTTP/2 to {self.ep.host}:{self.ep.port}: connection lost "
                                   f"({type(exc).__name__}: {exc})", transient=True)
        for req in [r for r in self._requests.values() if r.conn is conn]:
            self._end(req)
            self._failed(req.w, error)

    def _on_event(self, conn: H2Conn, ev: h2.events.Event) -> None:
        if isinstance(ev, h2.events.ConnectionTerminated):  # GOAWAY (the server stops, say): h2 reads
            # nothing more on this connection, so its streams resume elsewhere from their versions
            self._lost(conn, ConnectionError(f"the server ended the connection (GOAWAY, code {ev.error_code})"))
            return
        sid = getattr(ev, "stream_id", None)
        req = self._requests.get((id(conn), sid)) if isinstance(sid, int) else None
        if req is None:
            return
        req.heard = time.monotonic()
        try:
            if isinstance(ev, h2.events.ResponseReceived):
                if req.response(dict(ev.headers or [])):
                    self.cache.stream_up(req.w.ref)
                    req.w.first.set()
            elif isinstance(ev, h2.events.DataReceived):
                for line in req.data(ev.data or b""):
                    self._line(req, line)
            elif isinstance(ev, h2.events.StreamEnded):
                self._end(req)
                self._complete(req)
            elif isinstance(ev, h2.events.StreamReset):
                self._end(req)
                raise ClusterUnreachable(f"{req.what}: the server reset the stream (code {ev.error_code})",
                                         transient=True)
        except Exception as exc:  # noqa: BLE001 - this object's stream fails, never the others'
            if req.w.request is req:
                self._end(req, cancel=True)
            self._failed(req.w, exc if isinstance(exc, (ClusterError, ValueError)) else ClusterError(
                f"{req.what}: {type(exc).__name__}: {exc}; retrying", transient=True))

    def _line(self, req: Stream, line: bytes) -> None:
        ev = decode_event(line, req.what, self.budget)
        w = req.w
        if ev is None or w.stopped:
            return
        etype, obj = ev
        if etype != "BOOKMARK" and (obj.get("metadata") or {}).get("name") != w.ref.name:
            return  # not the object this stream is for: dropped as decoded
        w.rv = watched(self.cache, w.ref, w.retry, etype, obj, w.rv or "")

    def _complete(self, req: Stream) -> None:
        """The server ended the stream: a list's answer, a watch's end, or an error."""
        w = req.w
        if req.status != 200:
            raise req.failure(self.ep.conn)
        if w.stopped:
            return
        if req.watching:
            if line := req.last_line():
                self._line(req, line)
            self._schedule(w, 0.0)  # timeoutSeconds passed: go on from rv
            return
        obj, rv = listed(w.target, req.answer(), req.what)
        self.cache.put(w.ref, obj)
        self.cache.accepted()
        w.rv = rv
        self._schedule(w, 0.0)

    def _end(self, req: Stream, cancel: bool = False) -> None:
        req.free()
        if self._requests.pop((id(req.conn), req.sid), None) is not None and not req.watching:
            self._listing -= 1
            while self._to_list:
                w = self._to_list.popleft()
                if not w.stopped and w.request is None:
                    self._schedule(w, 0.0)
                    break
        if req.w.request is req:
            req.w.request = None
        if cancel:
            req.conn.cancel(req.sid)
        else:
            req.conn.ended(req.sid)

    def _failed(self, w: MuxWatch, exc: BaseException) -> None:
        if w.stopped or self._stopping:
            return
        error = as_cluster_error(exc, str(w.ref))
        if isinstance(error, Gone):
            w.rv = None  # never watch again at the expired version
        self._schedule(w, w.retry.after(error))

    def _check_deadlines(self, now: float) -> None:
        for req in list(self._requests.values()):
            if req.late(now):
                self._end(req, cancel=True)
                self._failed(req.w, ClusterUnreachable(f"{req.what}: no complete answer in time; reconnecting",
                                                       transient=True))
