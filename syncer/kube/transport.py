"""The wire under ``KubeClient``: timeouts, the deadline watchdog, keep-alive pools, the watch stream.

Timeouts (``Timeouts``): a connect timeout, a per-read idle timeout, and a TOTAL deadline per
request. The deadline is enforced by one watchdog thread that shuts the socket down when it
passes, so a server trickling a byte every 2 s (which never trips a read timeout) cannot hold
a call past its budget. Watches get their own budget (the server-side ``timeoutSeconds`` plus a
margin) and TCP keepalive on every connection detects a dead peer without re-opening them.

The pools are urllib3's (keep-alive, bounded), with connections that arm the watchdog when a
request starts: the request's deadline is set per thread in ``REQUEST`` before it is sent.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import socket
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import urllib3
from urllib3 import BaseHTTPResponse
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from syncer.kube.errors import ClusterUnreachable, cause


@dataclass(frozen=True)
class Timeouts:
    """The one timeout policy of every plain request (get, list, put, post)."""

    #: An API server that does not accept a connection within 5 s is down for our purposes.
    connect: float = 5.0
    #: Longest silence between two reads; 15 s covers a slow etcd read.
    read: float = 15.0
    #: The whole request, connect to last byte, however the bytes trickle in.
    total: float = 30.0


DEFAULT_TIMEOUTS = Timeouts()

#: TCP keepalive on every connection: a peer that stops answering is noticed after about
#: IDLE + INTERVAL * COUNT seconds of silence, without a request (an idle watch stays open).
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 30, 10, 3


class _Watchdog:
    """One thread that shuts down the socket of any request still running past its deadline."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Armed]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, conn: HTTPConnection) -> Armed:
        armed = Armed(conn)
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._seq), armed))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kube deadlines", daemon=True)
                self._thread.start()
            if self._heap[0][2] is armed:
                self._cond.notify()
        return armed

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    while self._heap and self._heap[0][2].done:
                        heapq.heappop(self._heap)
                    self._cond.wait(None if not self._heap else max(0.0, self._heap[0][0] - time.monotonic()))
                _, _, armed = heapq.heappop(self._heap)
            armed.fire()


class Armed:
    """One request's entry with the watchdog: ``fire`` shuts its socket down unless ``disarm`` came first."""

    def __init__(self, conn: HTTPConnection) -> None:
        self.conn, self.done, self.fired = conn, False, False
        self._lock = threading.Lock()

    def fire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.fired = True
            sock = getattr(self.conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # any blocked recv returns at once
            except OSError:
                pass

    def disarm(self) -> None:
        with self._lock:
            self.done = True


WATCHDOG = _Watchdog()
#: The request this thread is sending: its ``deadline``, and once connected the ``armed`` watchdog entry.
REQUEST = threading.local()


def _register(conn: HTTPConnection) -> None:
    deadline = getattr(REQUEST, "deadline", None)
    if deadline is not None:
        REQUEST.armed = WATCHDOG.arm(deadline, conn)


class _DeadlineHTTP(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _DeadlineHTTPS(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class HTTPPool(HTTPConnectionPool):
    """A keep-alive pool whose connections arm the watchdog for this thread's ``REQUEST``."""

    ConnectionCls = _DeadlineHTTP


class HTTPSPool(HTTPSConnectionPool):
    """``HTTPPool`` over TLS."""

    ConnectionCls = _DeadlineHTTPS


class _QuietPoolFull(logging.Filter):
    """urllib3 warns each time it closes a connection the pool has no room to keep; with one
    watch per object (a resourceNames Role) that is a line per object at every start or
    reconnect, thousands of lines that say nothing. Nothing is lost: the connection is closed."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Connection pool is full")


logging.getLogger("urllib3.connectionpool").addFilter(_QuietPoolFull())


def socket_options() -> list[tuple[int, int, int]]:
    """urllib3's defaults plus TCP keepalive (``KEEPALIVE_*``) where the platform has it."""
    opts = list(HTTPConnection.default_socket_options) + [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE), ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
                        ("TCP_KEEPCNT", KEEPALIVE_COUNT)):
        if hasattr(socket, name):
            opts.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return opts


def drop(resp: BaseHTTPResponse) -> None:
    """Close a response's connection and hand the slot back (the pool reconnects it later)."""
    resp.close()
    resp.release_conn()


class Stream:
    """A watch response; ``chunks`` yields bytes as they arrive, ``close`` unblocks it."""

    def __init__(self, resp: BaseHTTPResponse, armed: Armed | None, what: str, host: str) -> None:
        self._resp, self._armed, self._what, self._host = resp, armed, what, host
        self._closed = False
        self._finished = False

    def chunks(self) -> Generator[bytes, None, None]:
        raw = self._resp
        clean = False
        try:
            if getattr(raw, "chunked", False):
                # at most 64 KiB a piece (a piece per HTTP chunk when smaller): one chunk header
                # announcing a terabyte must not be read whole, nor a compressed piece unpacked whole
                yield from raw.stream(65536, decode_content=True)
            else:
                while data := raw.read1(65536):
                    yield data
            clean = not self._closed
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if self._closed:
                return
            fired = self._armed is not None and self._armed.fired
            raise ClusterUnreachable(
                f"watch to {self._host} ({self._what}): " + ("budget over; reconnecting" if fired else
                                                               f"connection lost ({cause(exc)})"),
                transient=True) from None
        finally:
            self._finish(clean)

    def _finish(self, clean: bool) -> None:
        """Once, in the reading thread: hand the connection back (closed unless the server
        ended the stream cleanly)."""
        if self._finished:
            return
        self._finished = True
        if self._armed is not None:
            self._armed.disarm()
        if not clean:
            self._resp.close()  # the pool reconnects when it hands this connection out again
        self._resp.release_conn()

    def close(self) -> None:
        """Abandon the stream, from any thread: a pending read returns at once; the reading
        thread then releases the connection."""
        self._closed = True
        try:
            self._resp.shutdown()
        except Exception:  # noqa: BLE001 - best effort on a connection we are abandoning
            pass
