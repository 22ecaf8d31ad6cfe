"""Fault injection: failing or hanging the next matching requests."""

from __future__ import annotations

import dataclasses
from typing import Any
from urllib.parse import unquote

from .status import _ApiError, _DEFAULT_REASON


@dataclasses.dataclass
class _Fault:
    count: int
    path_contains: str
    method: str
    status: int = 0
    reason: str = ""
    message: str = ""
    retry_after: int | None = None
    seconds: float = 0.0

    def matches(self, method: str, raw_path: str) -> bool:
        if self.method and self.method.upper() != method:
            return False
        return not self.path_contains or self.path_contains in raw_path or self.path_contains in unquote(raw_path)


@dataclasses.dataclass
class Flood:
    """A hostile API server's watch answer: 200, then ``piece`` over and over and never a newline,
    ``size`` bytes in all (None: until the client goes away). ``chunked``: as HTTP chunks of
    ``len(piece)`` bytes, or one chunk header announcing ``size`` bytes (``"one-chunk"``), or a
    body without any framing, ended by closing the connection (``"close"``)."""

    path_contains: str = ""
    piece: bytes = b"x" * 65536
    size: int | None = None
    framing: str = "chunked"
    lists: bool = False  # the matching lists (GETs that are no watch) too
    sent: int = 0  # bytes sent so far, by every flooded watch


class FaultsMixin:
    """Injected failures and hangs, matched against the raw request path."""

    def fail_next(self, status: int, count: int = 1, path_contains: str = "", reason: str = "",
                  retry_after: int | None = None, *, message: str = "", method: str = "") -> None:
        with self._lock:
            self._fails.append(_Fault(count, path_contains, method, status=status, reason=reason,
                                      message=message, retry_after=retry_after))

    def hang_next(self, seconds: float, path_contains: str = "", *, count: int = 1, method: str = "") -> None:
        """Accept matching requests and say nothing for ``seconds`` (then answer normally)."""
        with self._lock:
            self._hangs.append(_Fault(count, path_contains, method, seconds=seconds))

    def flood_watches(self, path_contains: str = "", *, piece: bytes = b"x" * 65536, size: int | None = None,
                      framing: str = "chunked", lists: bool = False) -> Flood:
        """Answer every matching watch (from now on) as a hostile server does: a body without a
        newline (``Flood``). Lists (unless ``lists``) and everything else are answered normally."""
        flood = Flood(path_contains, piece, size, framing, lists)
        with self._lock:
            self._floods.append(flood)
        return flood

    def clear_faults(self) -> None:
        with self._lock:
            self._fails.clear()
            self._hangs.clear()
            self._forbidden.clear()
            self._floods.clear()

    def _flooding(self, raw_path: str, is_watch: bool) -> Flood | None:
        with self._lock:
            return next((f for f in self._floods if (is_watch or f.lists) and (
                not f.path_contains or f.path_contains in raw_path or f.path_contains in unquote(raw_path))), None)

    def _flood(self, h: Any, flood: Flood) -> None:
        """The hostile answer; ends when ``size`` is sent, the client goes away or the fake stops."""
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if flood.framing == "chunked":
            h.send_header("Transfer-Encoding", "chunked")
        elif flood.framing == "one-chunk":
            h.send_header("Transfer-Encoding", "chunked")
        h.close_connection = True
        h.end_headers()
        left = flood.size
        if flood.framing == "one-chunk":
            h.wfile.write(b"%x\r\n" % (left if left is not None else 1 << 40))
        while (left is None or left > 0) and not self._stopping:
            piece = flood.piece if left is None else flood.piece[:left]
            if flood.framing == "chunked":
                h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            else:
                h.wfile.write(piece)
            flood.sent += len(piece)
            if left is not None:
                left -= len(piece)
        if flood.framing == "chunked":
            h.wfile.write(b"0\r\n\r\n")
        elif flood.framing == "one-chunk":
            h.wfile.write(b"\r\n0\r\n\r\n")

    @staticmethod
    def _take(rules: list[_Fault], method: str, raw_path: str) -> _Fault | None:
        for rule in rules:
            if rule.count > 0 and rule.matches(method, raw_path):
                rule.count -= 1
                if rule.count <= 0:
                    rules.remove(rule)
                return rule
        return None

    def _injected(self, fault: _Fault, method: str, path: str, query: dict[str, str]) -> _ApiError:
        code = fault.status
        reason = fault.reason or _DEFAULT_REASON.get(code, "")
        details: dict[str, Any] = {}
        message = fault.message
        target = self._parse_resource_path(path)
        res, name = (target[0], target[2]) if target else (None, "")
        if res is not None:
            details = res.details(name)
        if not message:
            if code == 404 and res is not None and name:
                message = f'{res.qualified} "{name}" not found'
            elif code == 403 and res is not None:
                message = self._forbidden_message(res, self._verb(method, name, query, target), name,
                                                  target[1] if target else "", target[3] if target else "")
            elif code == 409 and res is not None and name:
                message = (f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been '
                           "modified; please apply your changes to the latest version and try again")
            elif code == 410:
                message = f"too old resource version: {query.get('resourceVersion') or 1} ({self._rv})"
            else:
                message = {
                    400: "the server rejected our request for an unknown reason",
                    401: "Unauthorized",
                    404: "the server could not find the requested resource",
                    422: "the server rejected our request due to an error in our request",
                    429: "Too many requests, please try again later.",
                    500: "Internal error occurred: injected fault",
                    503: "the server is currently unable to handle the request",
                    504: "the server was unable to return a response in the time allotted, but may "
                         "still be processing the request",
                }.get(code, f"the server responded with the status code {code} but did not return more "
                            "information")
        headers = {}
        if fault.retry_after is not None:
            headers["Retry-After"] = str(fault.retry_after)
            details["retryAfterSeconds"] = fault.retry_after
        if code == 401:
            details = {}
        return _ApiError(code, reason, message, details or None, headers)
