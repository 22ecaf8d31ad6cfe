"""One HTTP exchange with a total deadline and a size limit (forges, webhooks).

httpx's timeouts bound each socket operation, not the exchange: a server that trickles one
byte every few seconds, in its headers or its body, holds a call forever, and an endless
body is read into memory until the process dies. ``send`` bounds both:

- a watchdog thread shuts the connection's socket down at the deadline, which wakes a read
  blocked anywhere (headers or body); the deadline is also checked between body chunks, and
  every socket operation gets at most the time that is left;
- the body is read in chunks and refused once it passes ``max_bytes``.

The request asks for ``Connection: close`` so that each exchange opens the connection the
watchdog can see (syncer makes a handful of these calls per pass; the handshake is cheap
next to a stalled pass). Transports without sockets (``httpx.MockTransport``) still get the
between-chunks deadline and the size limit.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

#: Bodies larger than this are refused: a forge's largest answer (a page of 100 pull
#: requests with 64 KiB bodies) is about 7 MiB.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024


class DeadlineExceeded(httpx.TimeoutException):
    """The whole exchange took longer than its deadline (retried like any timeout)."""


class ResponseTooLarge(httpx.HTTPError):
    """The body passed ``max_bytes``; it was not read further."""


class _Watchdog:
    """Collects the sockets an exchange opens (httpx trace events) and shuts them at the deadline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self.fired = False

    def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with self._lock:
                    self._socks.append(sock)
                    fired = self.fired
                if fired:
                    self._shut(sock)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for sock in socks:
            self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: wakes a blocked TLS read too
        except OSError:
            pass


def send(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    timeout: float,
    max_bytes: int = MAX_RESPONSE_BYTES,
    clock: Callable[[], float] = time.monotonic,
    **kwargs: Any,
) -> httpx.Response:
    """``client.request(method, url, **kwargs)`` finished within ``timeout`` seconds in total,
    its body at most ``max_bytes``; the answer is fully read (``.content`` is there).

    Raises ``DeadlineExceeded`` (an ``httpx.TimeoutException``), ``ResponseTooLarge``, or
    what httpx raises.
    """
    deadline = clock() + timeout
    headers = {**dict(kwargs.pop("headers", None) or {}), "Connection": "close"}
    dog = _Watchdog()
    request = client.build_request(method, url, headers=headers, timeout=httpx.Timeout(max(timeout, 0.01)),
                                   extensions={"trace": dog.trace}, **kwargs)
    timer = threading.Timer(max(timeout, 0.0), dog.fire)
    timer.daemon = True
    timer.start()
    response: httpx.Response | None = None
    try:
        response = client.send(request, stream=True, follow_redirects=False)
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise ResponseTooLarge(f"{method} {request.url.path}: answer larger than {max_bytes} bytes; not read")
            chunks.append(chunk)
            if clock() > deadline:
                raise DeadlineExceeded(f"{method} {request.url.path}: no complete answer within {timeout:g}s",
                                       request=request)
        # The body is decoded already: the copy must not announce an encoding or a length.
        kept = [(k, v) for k, v in response.headers.multi_items()
                if k.lower() not in ("content-encoding", "transfer-encoding", "content-length")]
        return httpx.Response(response.status_code, headers=kept, content=b"".join(chunks), request=request)
    except (httpx.TransportError, OSError) as exc:
        if dog.fired or clock() > deadline:
            raise DeadlineExceeded(f"{method} {request.url.path}: no complete answer within {timeout:g}s",
                                   request=request) from exc
        raise
    finally:
        timer.cancel()
        if response is not None:
            response.close()
