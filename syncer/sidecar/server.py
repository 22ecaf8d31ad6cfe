"""The sidecar's HTTP endpoints, on the standard library's ``ThreadingHTTPServer``.

    GET /healthz   200 while the process and its loop are alive: the loop ticked within
                   3 x its tick, or is inside a pass that has not exceeded ``MAX_PASS``.
                   503 otherwise (the kubelet restarts the container).
    GET /readyz    200 when the upstreams answered: the API server and the git remote were
                   both reached within the last resync interval (plus a grace for the pass
                   itself) and the latest attempt at each did not fail, and neither the API
                   server nor the forge rejects syncer's credentials. 503 with the reason
                   as text otherwise.
    GET /metrics   Prometheus text from the sidecar's own registry.

``Health`` is the shared, thread-safe record those answers are computed from; the loop, the
watchers (through the ``LiveCache``) and git passes report into it.
"""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST

from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.metrics import Metrics

#: Extra time on top of the resync interval before an upstream counts as "not reached
#: recently": a resync pass itself takes some seconds (git fetch), and must not make the pod
#: flap unready at every interval boundary.
READY_GRACE = 30.0
#: A pass may block this long without the loop counting as stuck: up to two network git
#: commands (120 s each, see ``gitrepo``) and a forge call with its retries (60 s).
MAX_PASS = 300.0


class Health:
    def __init__(self, cache: LiveCache, *, tick: float, resync: float, clock: Callable[[], float] = time.time) -> None:
        self.cache = cache
        self.tick = tick
        self.window = resync + READY_GRACE
        self.clock = clock
        self._lock = threading.Lock()
        self.started_at = clock()
        self.ticked_at: float | None = None
        self.git_ok_at: float | None = None
        self.git_error: str | None = None
        #: The forge rejected syncer's token (401), why; cleared by a pass whose forge calls worked.
        self.forge_error: str | None = None
        self.pass_since: float | None = None

    def loop_ticked(self) -> None:
        with self._lock:
            self.ticked_at = self.clock()

    def pass_started(self) -> None:
        with self._lock:
            self.pass_since = self.clock()

    def pass_ended(self) -> None:
        with self._lock:
            self.pass_since = None
            self.ticked_at = self.clock()

    def git_reached(self) -> None:
        with self._lock:
            self.git_ok_at, self.git_error = self.clock(), None

    def git_failed(self, message: str) -> None:
        with self._lock:
            self.git_error = message

    def forge_rejected(self, message: str) -> None:
        with self._lock:
            self.forge_error = message

    def forge_reached(self) -> None:
        with self._lock:
            self.forge_error = None

    def healthz(self) -> tuple[bool, str]:
        now = self.clock()
        with self._lock:
            last = self.ticked_at if self.ticked_at is not None else self.started_at
            running = self.pass_since
        if running is not None and now - running <= MAX_PASS:
            return True, f"ok (pass running for {now - running:.0f}s)\n"
        if running is not None:
            return False, f"loop stuck: pass running for {now - running:.0f}s (limit {MAX_PASS:.0f}s)\n"
        age = now - last
        if age > 3 * self.tick:
            return False, f"loop stuck: last tick {age:.0f}s ago (limit {3 * self.tick:.0f}s)\n"
        return True, "ok\n"

    def readyz(self) -> tuple[bool, str]:
        now = self.clock()
        with self._lock:
            git_ok, git_error, forge_error = self.git_ok_at, self.git_error, self.forge_error
        api_error = self.cache.auth_error or self.cache.api_error
        problems = [p for p in (self._upstream("API server", self.cache.api_ok_at, api_error, now),
                                self._upstream("git remote", git_ok, git_error, now),
                                f"forge: {forge_error}" if forge_error else None) if p]
        if problems:
            return False, "".join(p + "\n" for p in problems)
        return True, "ok\n"

    def _upstream(self, name: str, ok_at: float | None, error: str | None, now: float) -> str | None:
        """Why upstream ``name`` makes the sidecar unready, or None."""
        if error:
            return f"{name}: {error}"
        if ok_at is None:
            return f"{name}: not reached yet"
        if now - ok_at > self.window:
            return f"{name}: not reached for {now - ok_at:.0f}s"
        return None


#: A request (its request line and headers) must have arrived this long after the connection
#: was accepted -- or, on a kept-alive connection, after the previous answer -- or the
#: connection is closed. A total, not a per-read, deadline: a probe sends its request at once,
#: while a client trickling a byte every few seconds would pass any per-read timeout for ever.
REQUEST_DEADLINE = 5.0
#: Connections served at once; more are answered 503 and closed at once, so a flood of idle
#: connections can neither exhaust file descriptors nor starve the kubelet's probes for long.
MAX_WORKERS = 16


class _DeadlineReader(io.RawIOBase):
    """The socket's reading side, refusing to wait past ``deadline`` (``time.monotonic``).

    Each read gets only the time left, and a read once the deadline has passed fails at once
    with ``TimeoutError``; ``http.server`` then discards the connection.
    """

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not received within its deadline")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    server: "StatusServer"
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_DEADLINE  # socket timeout of writes; reads are bounded by _DeadlineReader

    def __init__(self, request: Any, client_address: Any, server: "StatusServer",
                 accepted: float | None = None) -> None:
        self._accepted = time.monotonic() if accepted is None else accepted
        super().__init__(request, client_address, server)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self._reader = _DeadlineReader(self.connection, self._accepted + self.server.request_deadline)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        super().handle_one_request()
        # the next request on this connection gets its own deadline, from this answer on
        self._reader.deadline = time.monotonic() + self.server.request_deadline

    def parse_request(self) -> bool:
        ok = super().parse_request()
        self.connection.settimeout(self.timeout)  # the answer's writes: a fresh bound of their own
        return ok

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - probes every few seconds
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            ok, text = self.server.health.healthz()
            self._send(200 if ok else 503, text.encode(), "text/plain; charset=utf-8")
        elif path == "/readyz":
            ok, text = self.server.health.readyz()
            self._send(200 if ok else 503, text.encode(), "text/plain; charset=utf-8")
        elif path == "/metrics":
            metrics = self.server.metrics
            metrics.ready.labels(metrics.installation).set(1 if self.server.health.readyz()[0] else 0)
            self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
        else:
            self._send(404, b"not found: try /healthz, /readyz or /metrics\n", "text/plain; charset=utf-8")

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


class Probes(Protocol):
    """What the server asks for ``/healthz`` and ``/readyz``: ``Health``, or ``StartingHealth``
    while the sidecar is still starting (syncer/sidecar/starting.py)."""

    def healthz(self) -> tuple[bool, str]: ...

    def readyz(self) -> tuple[bool, str]: ...


class StatusServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int, health: Probes, metrics: Metrics,
                 max_workers: int = MAX_WORKERS, request_deadline: float = REQUEST_DEADLINE) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _Handler)
        self.health, self.metrics = health, metrics
        self.request_deadline = request_deadline
        self._thread: threading.Thread | None = None
        self._slots = threading.BoundedSemaphore(max_workers)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A worker thread per connection, at most ``max_workers`` at once; the connection's
        request deadline counts from here, right after ``accept``."""
        accepted = time.monotonic()
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(0.5)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n"
                                b"Connection: close\r\n\r\nbusy\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        worker = threading.Thread(target=self._serve, args=(request, client_address, accepted),
                                  name="http-conn", daemon=True)
        try:
            worker.start()
        except BaseException:
            self._slots.release()
            self.shutdown_request(request)
            raise

    def _serve(self, request: Any, client_address: Any, accepted: float) -> None:
        try:
            _Handler(request, client_address, self, accepted)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._slots.release()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> "StatusServer":
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::]:8080`` for IPv6, ``:8080`` for all interfaces)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isascii() or not port.isdigit() or len(port) > 5 or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT, e.g. 0.0.0.0:8080")
    return host.strip("[]") or "0.0.0.0", int(port)
