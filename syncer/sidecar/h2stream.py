"""One object's list or watch as an HTTP/2 stream's bytes arrive (the multiplexer's framing).

A list's answer, or an error's ``Status``, is held whole (within the watches' memory budget,
``kube.budget``: at most one event's worth) and parsed when the stream ends; a watch's answer
is newline-delimited events, handed on line by line as each completes (``budget.Lines``), each
line's memory given back once it was applied. The stream also knows its deadlines: the whole
request's and the silence allowed between two reads. No I/O here: the multiplexer (h2watch.py)
feeds the bytes in and applies what they say.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from syncer.bounds import load_json
from syncer.kube import MAX_BODY, ApiError, Connection, api_error
from syncer.kube.budget import Budget, EventTooLarge, Lines
from syncer.kube.http2 import H2Conn
from syncer.model import JSON

if TYPE_CHECKING:
    from syncer.sidecar.h2watch import MuxWatch

__all__ = ["Stream"]


class Stream:
    """One stream: an object's list or watch (``watching``), on ``conn`` as stream ``sid``; its
    buffers drawn from ``memory``."""

    __slots__ = ("w", "conn", "sid", "watching", "what", "deadline", "idle", "heard", "status", "buf", "held",
                 "lines", "memory")

    def __init__(self, w: MuxWatch, conn: H2Conn, sid: int, watching: bool, budget: float, idle: float,
                 memory: Budget) -> None:
        self.w, self.conn, self.sid, self.watching = w, conn, sid, watching
        self.what = f"{'watch' if watching else 'list'} {w.ref}"
        now = time.monotonic()
        self.deadline, self.idle, self.heard = now + budget, idle, now
        self.status = 0
        self.memory = memory
        self.buf = bytearray()  # a list's answer or an error's Status, whole
        self.held = 0  # of ``buf``, taken from the budget
        self.lines: Lines | None = None  # a watch's events

    def late(self, now: float) -> bool:
        """Past its deadline, or silent longer than it may be."""
        return now > self.deadline or now - self.heard > self.idle

    def response(self, headers: Mapping[bytes, bytes]) -> bool:
        """The answer's headers arrived (as h2 gives them: bytes); True when they open a watch's
        stream of events."""
        self.status = int(headers.get(b":status") or 0)
        return self.watching and self.status == 200

    def data(self, data: bytes) -> Iterator[bytes]:
        """``data`` taken in: the watch event lines it completes, each line's memory given back
        once the caller is done with it (none for a list or an error, held whole until the end)."""
        if self.status != 200 or not self.watching:  # a list of one object, or an error's Status: whole
            self.memory.take(len(data), self.what)
            self.held += len(data)
            self.buf += data
            if len(self.buf) > self.memory.per_event:
                raise EventTooLarge(f"{self.what}: an answer of more than {self.memory.per_event // 2 ** 20} MiB "
                                    "for one object; not read", transient=True)
            return
        if self.lines is None:
            self.lines = Lines(self.what, self.memory)
        for line in self.lines.feed(data):
            try:
                yield line
            finally:
                self.lines.release(len(line))

    def last_line(self) -> bytes:
        """What a watch left after its last newline, at its end (the server may omit the newline)."""
        return self.lines.rest() if self.lines is not None else b""

    def answer(self) -> JSON | None:
        """A list's answer, at the stream's end (its parse counted in the budget)."""
        with self.memory.parsing(len(self.buf)):
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
        return api_error(self.status or 502, body, self.what, conn.describe(), conn.known())

    def free(self) -> None:
        """Give back what this stream holds (once; the stream is over)."""
        self.memory.give(self.held)
        self.held = 0
        if self.lines is not None:
            self.lines.close()
