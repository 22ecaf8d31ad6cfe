"""One memory budget for every watch stream of the process together, and the line splitter that
keeps to it.

A watch is newline-delimited JSON, one event a line. A hostile (or broken) API server can send a
line that never ends; each stream used to buffer up to 16 MiB of it on its own, so seven
per-object watches took the sidecar to 265 MiB, twice the chart's 128 MiB limit. Now:

* ``MAX_EVENT`` (4 MiB) per line: an event larger than that is an error for that object
  (``EventTooLarge``, retried with backoff like any failed watch). The largest object etcd
  stores is 1.5 MiB by default; its event, JSON-escaped, stays well under 4 MiB.
* ``TOTAL`` (32 MiB) for all streams together: the bytes every stream holds of lines not yet
  parsed, HTTP/1.1 per-object watches, kind-wide watches and the HTTP/2 streams alike. A stream
  whose next piece would pass it fails (``OverBudget``, that object only); the others go on.
* ``parsing``: a line over ``LARGE`` (256 KiB) is parsed only while no other large line is,
  and with its values counted first (``bounds.load_json``): what a parse allocates is some ten
  times the text, so seven threads parsing 4 MiB at once would again pass the limit.

The budget is process-wide (``BUDGET``): a sidecar is one process; tests pass their own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from syncer.errors import ClusterError

MAX_EVENT = 4 * 1024 * 1024
TOTAL = 32 * 1024 * 1024
LARGE = 256 * 1024
#: Values (entries, items, scalars) one event may hold: a 1 MiB ConfigMap of one-letter keys is
#: some 200,000; a parse of the most allowed stays within tens of MiB.
MAX_EVENT_VALUES = 400_000


class EventTooLarge(ClusterError):
    """One watch event (a line) longer than ``MAX_EVENT``."""

    transient = True


class OverBudget(ClusterError):
    """The streams together hold ``TOTAL`` bytes already: this one's next piece is refused."""

    transient = True


class Budget:
    """Bytes held by the streams, against one total. Thread-safe."""

    def __init__(self, total: int = TOTAL, per_event: int = MAX_EVENT) -> None:
        self.total, self.per_event = total, per_event
        self.used = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._parse = threading.Lock()

    def take(self, n: int, what: str) -> None:
        with self._lock:
            if self.used + n > self.total:
                raise OverBudget(f"{what}: the watch streams together hold {self.used // 1024} KiB, and "
                                 f"{n // 1024} KiB more would pass their {self.total // 2 ** 20} MiB budget; "
                                 "this stream is dropped and retried", transient=True)
            self.used += n
            self.peak = max(self.peak, self.used)

    def give(self, n: int) -> None:
        with self._lock:
            self.used -= n

    @contextmanager
    def parsing(self, size: int) -> Iterator[None]:
        """Around the parse of a line of ``size`` bytes: large ones one at a time."""
        if size <= LARGE:
            yield
            return
        with self._parse:
            yield


BUDGET = Budget()


class Lines:
    """Newline-delimited lines from the pieces of one stream, each piece taken from ``budget``
    before it is kept. A line handed out stays counted until ``release``; call ``close`` when
    the stream ends (it gives back what is still held).

    A line not ended yet is kept as the pieces it arrived in (at most 64 KiB each), never one
    buffer grown by copying: a growing buffer per thread leaves the C allocator holding every
    thread's largest one after it is freed, which made RSS track the number of streams rather
    than the budget."""

    def __init__(self, what: str, budget: Budget = BUDGET) -> None:
        self.what, self.budget = what, budget
        self._parts: list[bytes] = []
        self._pending = 0  # bytes in ``_parts``
        self._held = 0

    def feed(self, data: bytes) -> list[bytes]:
        """The lines ``data`` completes (stripped, empty ones dropped)."""
        if not data:
            return []
        self.budget.take(len(data), self.what)
        self._held += len(data)
        out: list[bytes] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            line = (b"".join([*self._parts, data[start:end]]) if self._parts else data[start:end]).strip()
            self._release_ended(self._pending + end + 1 - start, line, out)
            self._parts, self._pending = [], 0
            start = end + 1
        if start < len(data):
            self._parts.append(data[start:] if start else data)
            self._pending += len(data) - start
        if self._pending > self.budget.per_event:
            raise EventTooLarge(f"{self.what}: an event of more than {self.budget.per_event // 2 ** 20} MiB "
                                "(the server sent that much without ending the line); not read", transient=True)
        return out

    def _release_ended(self, size: int, line: bytes, out: list[bytes]) -> None:
        """A line of ``size`` bytes (its newline and spaces included) ended: keep ``line``'s share held."""
        if line:
            out.append(line)
        self.release(size - len(line))

    def rest(self) -> bytes:
        """What is left when the stream ended (a last line without its newline), still counted."""
        line = b"".join(self._parts).strip()
        self.release(self._pending - len(line))
        self._parts, self._pending = [], 0
        return line

    def release(self, n: int) -> None:
        n = min(n, self._held)
        self._held -= n
        self.budget.give(n)

    def close(self) -> None:
        self.release(self._held)
        self._parts, self._pending = [], 0
