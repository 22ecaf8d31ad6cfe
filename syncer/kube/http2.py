"""One HTTP/2 connection to the API server, carrying many requests at once (sans-IO ``h2``).

The HTTP/1.1 transport's twin: the same ``Connection`` (its TLS context, its credentials and
every request's headers: ``Connection.headers``), the same client timeouts and socket options
(``transport.socket_options``), failures as the same errors (``kube.errors``). The sidecar's
multiplexer (sidecar/h2watch.py) owns a few of these and drives them from one thread with a
selector: ``connect`` opens the first (``None`` when the client is not the real one over https),
``H2Conn.open`` the others; each insists on ``h2`` by ALPN (and says why not otherwise: the
caller keeps a thread per watch), waits for the server's SETTINGS so it knows how many streams
it may open, and then:

* ``request``   queues one GET (headers only) on a new stream, and returns its id; ``flush``
                sends what is queued, in one write;
* ``receive``   reads what the socket holds, without blocking, and returns the h2 events; the
                flow-control window of each DATA frame is handed back at once (the caller
                consumes every byte as it arrives);
* ``cancel``    resets a stream the caller gave up on.

``Pool`` shards the streams over as many connections as their number needs.

Every wait is bounded: the connect and TLS handshake by ``connect`` seconds, a write by
``WRITE_TIMEOUT``; reads never block.

Why not httpx's HTTP/2: httpcore does not open another connection when one's streams are all
used (httpx #1414, httpcore #248), and a watch holds its stream for an hour; the API server
allows 100 streams per connection by default (``--http2-max-streams-per-connection``).
"""

from __future__ import annotations

import math
import select
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from syncer.kube.client import Kube, KubeClient
from syncer.kube.config import Connection, ssl_context
from syncer.kube.errors import ClusterUnreachable
from syncer.kube.transport import DEFAULT_TIMEOUTS, socket_options

__all__ = ["Endpoint", "H2Conn", "Pool", "WRITE_TIMEOUT", "connect"]

#: A write (a request's headers, a window update) that the kernel does not take within this
#: long means the connection is stuck.
WRITE_TIMEOUT = 10.0

#: A connection window large enough that thousands of quiet watches never wait on it.
CONNECTION_WINDOW = 16 * 1024 * 1024


#: The TLS context per kubeconfig connection (``Endpoint.tls``).
_CONTEXTS: dict[int, tuple[Connection, ssl.SSLContext]] = {}


@dataclass(frozen=True)
class Endpoint:
    """Where the API server is and how each request authenticates, from a ``KubeClient``."""

    host: str
    port: int
    prefix: str  # the server URL's path, before every API path
    authority: str
    server_hostname: str | None
    conn: Connection
    connect_timeout: float
    read_timeout: float
    total_timeout: float

    @classmethod
    def of(cls, api: Kube) -> "Endpoint | None":
        """The endpoint of ``api``; ``None`` unless it is the real client over https."""
        if not isinstance(api, KubeClient):
            return None
        parts = urlsplit(api.conn.server)
        if parts.scheme != "https" or not parts.hostname:
            return None
        t = api.timeouts or DEFAULT_TIMEOUTS
        port = parts.port or 443
        name = api.conn.tls_server_name or (None if api.conn.insecure else parts.hostname)
        return cls(parts.hostname, port, parts.path.rstrip("/"), parts.netloc.rsplit("@", 1)[-1], name, api.conn,
                   t.connect, t.read, t.total)

    def tls(self) -> ssl.SSLContext:
        """The TLS context of every connection to this endpoint, built once (loading the system's
        and the kubeconfig's CAs costs more CPU than a connection's handshake)."""
        ctx = _CONTEXTS.get(id(self.conn))
        if ctx is None or ctx[0] is not self.conn:
            context = ssl_context(self.conn)
            context.set_alpn_protocols(["h2", "http/1.1"])
            ctx = _CONTEXTS[id(self.conn)] = (self.conn, context)
        return ctx[1]

    def headers(self, path: str) -> list[tuple[bytes, bytes]]:
        """A GET's pseudo-headers, then the headers every request carries (``Connection.headers``),
        lowercase as HTTP/2 wants them."""
        headers = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", self.authority.encode()),
                   (b":path", (self.prefix + path).encode()), (b"accept", b"application/json")]
        headers += [(name.lower().encode(), value.encode()) for name, value in self.conn.headers()]
        return headers


def _wait(sock: ssl.SSLSocket, write: bool, deadline: float, ep: "Endpoint") -> None:
    left = deadline - time.monotonic()
    if left <= 0 or not (select.select([], [sock], [], left) if write else select.select([sock], [], [], left))[
            1 if write else 0]:
        raise TimeoutError(f"no TLS and HTTP/2 handshake within {ep.connect_timeout:g}s")


def _tls(ep: "Endpoint", deadline: float) -> ssl.SSLSocket:
    """A TLS connection to ``ep``, handshake done by ``deadline`` (non-blocking from then on)."""
    raw = socket.create_connection((ep.host, ep.port), timeout=ep.connect_timeout)
    try:
        for option in socket_options():
            raw.setsockopt(*option)
        sock = ep.tls().wrap_socket(raw, server_hostname=ep.server_hostname or ep.host, do_handshake_on_connect=False)
    except BaseException:
        raw.close()
        raise
    try:
        sock.setblocking(False)
        while True:
            try:
                sock.do_handshake()
                return sock
            except ssl.SSLWantReadError:
                _wait(sock, False, deadline, ep)
            except ssl.SSLWantWriteError:
                _wait(sock, True, deadline, ep)
    except BaseException:
        sock.close()
        raise


class H2Conn:
    """One TLS connection speaking HTTP/2; at most ``limit`` streams open on it."""

    @classmethod
    def open(cls, ep: Endpoint, max_streams: int) -> "H2Conn | str":
        """A connection, or why the server will not speak HTTP/2 (it chose another protocol by
        ALPN: the caller keeps a connection and thread per watch). Connect, TLS handshake and the
        server's SETTINGS take ``connect`` seconds at most in all, however slowly a server
        trickles its bytes; a failure is ``ClusterUnreachable`` (transient)."""
        try:
            return cls._open(ep, max_streams)
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ClusterUnreachable(f"cannot reach the API server at {ep.host}:{ep.port}: {exc}",
                                     transient=True) from None

    @classmethod
    def _open(cls, ep: Endpoint, max_streams: int) -> "H2Conn | str":
        deadline = time.monotonic() + ep.connect_timeout
        sock = _tls(ep, deadline)
        chosen = sock.selected_alpn_protocol()
        if chosen != "h2":
            sock.close()
            return f"the API server at {ep.host}:{ep.port} did not choose HTTP/2 (ALPN: {chosen or 'none'})"
        return cls(ep, sock, deadline, max_streams)

    def __init__(self, ep: Endpoint, sock: ssl.SSLSocket, deadline: float, max_streams: int) -> None:
        self.ep, self.sock, self._deadline = ep, sock, deadline
        #: ``alive``: takes new streams (not after GOAWAY); ``closed``: the socket is closed.
        self.alive, self.closed = True, False
        try:
            # Our headers are built lowercase, without connection headers (Endpoint.headers): h2's
            # per-request normalization and validation cost more than the rest of a request; the
            # token is thereby indexed by HPACK once per connection instead of sent whole, in
            # Huffman code, per request (as Go's client, client-go's, does).
            self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(
                client_side=True, header_encoding=None, validate_outbound_headers=False,
                normalize_outbound_headers=False))
            self.h2.local_settings.enable_push = 0
            self.h2.initiate_connection()
            self.h2.increment_flow_control_window(CONNECTION_WINDOW)
            self.flush()
            self._server_settings()
        except BaseException:
            self.sock.close()
            raise
        self.max_streams = max_streams
        self.streams: set[int] = set()

    def _server_settings(self) -> None:
        """Read until the server's first SETTINGS (within the connect deadline)."""
        while True:
            try:
                data = self.sock.recv(65536)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                _wait(self.sock, False, self._deadline, self.ep)
                continue
            if not data:
                raise ConnectionError("the API server closed the connection before its SETTINGS")
            events = self.h2.receive_data(data)
            self.flush()
            if any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events):
                return

    @property
    def limit(self) -> int:
        """Streams this connection may carry: ours, or 90 % of the server's limit when lower
        (kube-apiserver from v1.29: 100 -> 90; v1.20: 250 -> 225)."""
        server = self.h2.remote_settings.max_concurrent_streams
        return max(1, min(self.max_streams, server * 9 // 10 if server >= 10 else server))

    @property
    def room(self) -> int:
        return self.limit - len(self.streams) if self.alive else 0

    def request(self, path: str) -> int:
        try:
            sid = self.h2.get_next_available_stream_id()
            self.h2.send_headers(sid, self.ep.headers(path), end_stream=True)
        except h2.exceptions.H2Error as exc:  # the connection is closing (GOAWAY) or out of stream ids
            self.alive = False
            raise ConnectionError(f"HTTP/2: no new stream ({type(exc).__name__})") from None
        self.streams.add(sid)
        return sid  # sent at the next flush: many requests, one write

    def cancel(self, sid: int) -> None:
        self.streams.discard(sid)
        if self.closed:
            return
        try:
            self.h2.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        except h2.exceptions.H2Error:  # already closed on the server's side
            pass

    def ended(self, sid: int) -> None:
        self.streams.discard(sid)

    def receive(self, on_event: Callable[[h2.events.Event], None]) -> None:
        """Everything the socket holds now, as events; OSError when the connection is lost."""
        while True:
            try:
                data = self.sock.recv(262144)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                break
            if not data:
                raise ConnectionError("the API server closed the connection")
            try:
                events = self.h2.receive_data(data)
            except h2.exceptions.ProtocolError as exc:
                raise ConnectionError(f"HTTP/2 protocol error: {exc}") from None
            for ev in events:
                if isinstance(ev, h2.events.DataReceived) and ev.flow_controlled_length:
                    self.h2.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id or 0)
                on_event(ev)
        self.flush()

    def flush(self) -> None:
        """Send what the requests, resets and window updates queued (bounded by WRITE_TIMEOUT)."""
        if self.closed:
            return
        data = self.h2.data_to_send()
        if not data:
            return
        blocking = self.sock.gettimeout()
        self.sock.settimeout(WRITE_TIMEOUT)
        try:
            self.sock.sendall(data)
        finally:
            self.sock.settimeout(blocking)

    def close(self) -> None:
        if self.closed:
            return
        self.alive, self.closed = False, True
        try:
            self.h2.close_connection()
            self.sock.setblocking(False)
            self.sock.send(self.h2.data_to_send())
        except (OSError, h2.exceptions.H2Error):
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def connect(api: Kube, max_streams: int) -> tuple[Endpoint, H2Conn | str] | None:
    """The first HTTP/2 connection to ``api``'s server (or why it will not speak HTTP/2), with the
    endpoint further ones are opened to; ``None`` unless ``api`` is the real client over https."""
    ep = Endpoint.of(api)
    return None if ep is None else (ep, H2Conn.open(ep, max_streams))


class Pool:
    """The HTTP/2 connections to one endpoint, each carrying at most its ``limit`` of streams: a
    request goes to the newest connection with room, else to a new one, so no stream waits behind
    a full connection. A connection that cannot be opened is not tried again for ``retry_after``
    seconds: the requests due meanwhile fail alike, without a connect each."""

    def __init__(self, ep: Endpoint, first: H2Conn, max_streams: int, retry_after: float = 1.0) -> None:
        self.ep, self.max_streams, self.retry_after = ep, max_streams, retry_after
        self.conns: list[H2Conn] = [first]
        #: Connections opened so far (the first included): a counter for tests and the bench.
        self.opened = 1
        self._no_connect_until, self._connect_error = 0.0, ""

    @property
    def per_connection(self) -> int:
        """Streams each connection carries (ours or the server's limit, the lower)."""
        return max(1, self.conns[0].limit if self.conns else self.max_streams)

    def connections_for(self, streams: int) -> int:
        return max(1, math.ceil(streams / self.per_connection))

    def with_room(self) -> tuple[H2Conn, bool]:
        """A connection with room for one more stream, and whether it was opened for it;
        ``ClusterUnreachable`` when none can be opened."""
        for conn in reversed(self.conns):  # the newest first: the older ones are mostly full
            if conn.room > 0:
                return conn, False
        now = time.monotonic()
        if now < self._no_connect_until:
            raise ClusterUnreachable(self._connect_error, transient=True)
        try:
            opened = H2Conn.open(self.ep, self.max_streams)
        except ClusterUnreachable as exc:
            opened = str(exc)
        if isinstance(opened, str):
            self._no_connect_until, self._connect_error = now + self.retry_after, opened
            raise ClusterUnreachable(opened, transient=True)
        self.conns.append(opened)
        self.opened += 1
        return opened, True

    def remove(self, conn: H2Conn) -> bool:
        """Forget a lost connection (the caller closes it); False when the pool had forgotten it."""
        if conn not in self.conns:
            return False
        self.conns.remove(conn)
        return True

    def close(self) -> None:
        for conn in list(self.conns):
            conn.close()
