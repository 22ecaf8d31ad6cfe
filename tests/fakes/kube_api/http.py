"""HTTP plumbing: the threaded loopback server, its handler and the response writers."""

from __future__ import annotations

import json
import socket
import time as _time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from .request_log import RequestRecord
from .status import _ApiError, status_body

if TYPE_CHECKING:
    from .server import FakeKubeAPI


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: "FakeKubeAPI"

    def handle_error(self, request: Any, client_address: Any) -> None:  # noqa: D401 - quiet
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Go's net/http sets TCP_NODELAY; without it, headers and body written separately on a
    # keep-alive connection stall ~40 ms each on Nagle + delayed ACK.
    disable_nagle_algorithm = True
    server: _Server
    record: RequestRecord | None = None

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        # like the apiserver: no "Server:" header
        if self.record is not None:
            self.record.status = code
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def _dispatch(self) -> None:
        self.server.fake._handle(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch


class HTTPMixin:
    """Reading a request off the socket, faults and authentication, and the response writers."""

    def _handle(self, h: _Handler) -> None:
        try:
            self._handle_inner(h)
        except OSError:  # client went away (broken pipe, reset, ...)
            h.close_connection = True
        except Exception as exc:  # a bug in the fake: make it visible instead of dropping the connection
            import traceback

            with self._lock:
                self.errors.append(traceback.format_exc())
            try:
                self._send_json(h, 500, status_body(500, "InternalError",
                                                    f"Internal error occurred: fake kube API bug: {exc!r}"))
            except OSError:
                pass
            h.close_connection = True

    def _handle_inner(self, h: _Handler) -> None:
        url = urlsplit(h.path)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        body = b""
        if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(h.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    h.rfile.readline()
                    break
                chunks.append(h.rfile.read(size))
                h.rfile.readline()
            body = b"".join(chunks)
        else:
            length = int(h.headers.get("Content-Length") or 0)
            if length:
                body = h.rfile.read(length)
        rec = RequestRecord(h.command, url.path, query, _time.time(),
                            {k: v for k, v in h.headers.items()}, body)
        h.record = rec
        with self._lock:
            self.requests.append(rec)
            hang = self._take(self._hangs, h.command, h.path)
            fail = self._take(self._fails, h.command, h.path)
        if hang is not None:
            self._stop_event.wait(hang.seconds)
            if self._stopping:
                self._abort(h)
                return
        try:
            if fail is not None:
                raise self._injected(fail, h.command, url.path, query)
            self._authenticate(h, url.path)
            flood = self._flooding(h.path, rec.is_watch)
            if flood is not None:
                self._flood(h, flood)
                return
            self._route(h, h.command, url.path, query, body)
        except _ApiError as err:
            self._send_json(h, err.code, err.body, err.headers)

    def _common_headers(self, h: _Handler) -> None:
        h.send_header("Audit-Id", str(uuid.uuid4()))
        h.send_header("Cache-Control", "no-cache, private")
        h.send_header("X-Kubernetes-Pf-Flowschema-Uid", self._flow_uid)
        h.send_header("X-Kubernetes-Pf-Prioritylevel-Uid", self._level_uid)

    def _send_json(self, h: _Handler, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(body, separators=(",", ":")) + "\n").encode()
        h.send_response(code)
        self._common_headers(h)
        h.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _send_text(self, h: _Handler, code: int, text: str) -> None:
        data = text.encode()
        h.send_response(code)
        self._common_headers(h)
        h.send_header("Content-Type", "text/plain; charset=utf-8")
        h.send_header("X-Content-Type-Options", "nosniff")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)

    def _page_not_found(self, h: _Handler) -> None:
        self._send_text(h, 404, "404 page not found\n")

    @staticmethod
    def _abort(h: _Handler) -> None:
        h.close_connection = True
        try:
            h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
