"""One object's list or watch as an HTTP/2 stream's bytes arrive (the multiplexer's framing).

A list's answer, or an error's ``Status``, is held whole (at most ``MAX_BODY`` bytes) and parsed
when the stream ends; a watch's answer is newline-delimited events, handed on line by line as
each completes (at most ``MAX_LINE`` bytes a line). The stream also knows its deadlines: the
whole request's budget and the silence allowed between two reads. No I/O here: the multiplexer
(h2watch.py) feeds the bytes in and applies what they say.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from syncer.bounds import load_json
from syncer.errors import ClusterError
from syncer.kube import MAX_BODY, ApiError, ClusterUnreachable, Connection, api_error
from syncer.kube.http2 import H2Conn
from syncer.model import JSON
from syncer.sidecar.watch import MAX_LINE

if TYPE_CHECKING:
    from syncer.sidecar.h2watch import MuxWatch

__all__ = ["Stream"]


class Stream:
    """One stream: an object's list or watch (``watching``), on ``conn`` as stream ``sid``."""

    __slots__ = ("w", "conn", "sid", "watching", "what", "deadline", "idle", "heard", "status", "buf")

    def __init__(self, w: MuxWatch, conn: H2Conn, sid: int, watching: bool, budget: float, idle: float) -> None:
        self.w, self.conn, self.sid, self.watching = w, conn, sid, watching
        self.what = f"{'watch' if watching else 'list'} {w.ref}"
        now = time.monotonic()
        self.deadline, self.idle, self.heard = now + budget, idle, now
        self.status = 0
        self.buf = bytearray()

    def late(self, now: float) -> bool:
        """Past its budget, or silent longer than it may be."""
        return now > self.deadline or now - self.heard > self.idle

    def response(self, headers: Mapping[bytes, bytes]) -> bool:
        """The answer's headers arrived (as h2 gives them: bytes); True when they open a watch's
        stream of events."""
        self.status = int(headers.get(b":status") or 0)
        return self.watching and self.status == 200

    def data(self, data: bytes) -> list[bytes]:
        """``data`` taken in: the watch event lines it completes (none for a list or an error,
        held whole until the stream ends)."""
        self.buf += data
        if self.status != 200 or not self.watching:
            if len(self.buf) > MAX_BODY:
                raise ClusterUnreachable(f"{self.what}: answer larger than {MAX_BODY} bytes", transient=True)
            return []
        lines = []
        while (end := self.buf.find(b"\n")) >= 0:
            line = bytes(self.buf[:end]).strip()
            del self.buf[: end + 1]
            if line:
                lines.append(line)
        if len(self.buf) > MAX_LINE:
            raise ClusterError(f"watch event larger than {MAX_LINE} bytes", transient=True)
        return lines

    def last_line(self) -> bytes:
        """What a watch left after its last newline, at its end (the server may omit the newline)."""
        return bytes(self.buf).strip()

    def answer(self) -> JSON | None:
        """A list's answer, at the stream's end."""
        doc = load_json(bytes(self.buf).decode("utf-8"), self.what, max_bytes=MAX_BODY)
        return doc if isinstance(doc, dict) else None

    def failure(self, conn: Connection) -> ApiError:
        """The error an answer other than 200 says (its ``Status`` when it sent one); a 401 has
        ``conn`` read a token file again for the next request."""
        try:
            body: object = load_json(bytes(self.buf).decode("utf-8", "replace"), self.what, max_bytes=MAX_BODY)
        except ValueError:
            body = bytes(self.buf)
        if self.status == 401:
            conn.rejected()
        return api_error(self.status or 502, body, self.what, conn.describe())
