"""The reconnect rule every watch follows, whichever way it is carried.

One ``Retry`` per watch: of one object (``ObjectWatcher``, watch.py; or a stream of the HTTP/2
multiplexer, h2watch.py) or of a collection (``KindWatcher``, kindwatch.py). After a failure it
says how long to wait before the next try and reports the failure to the ``LiveCache``:

* ``Gone`` (410: the watch's version is compacted away): re-list, never re-watch that version;
  the first re-list is immediate, a second in a row backs off;
* credentials rejected (401, or none to send): the objects carry that error, which ends a
  pass as a whole (``get`` raises it: nothing can be compared), and the API server is marked
  as rejecting them (``/readyz`` 503) until it answers again; retried with backoff, so a
  rotated token heals it;
* a refusal (403) or a failure retrying will not fix: the objects carry the error (``get``
  raises), and a refusal before the first answer is named at startup (``first_error``);
* anything else (connection lost, 5xx, 429): the objects are "down" (stale after a while) and
  the API server is unreachable until the next answer;

and every delay is full jitter over a capped exponential (``WatchSettings.backoff``), so the
replicas that lost the same API server do not come back in lockstep.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from syncer.backoff import full_jitter
from syncer.errors import ClusterError, CredentialsRejected
from syncer.kube import ApiError, ClusterUnreachable, Gone
from syncer.logs import event
from syncer.model import ObjectRef
from syncer.sidecar.livecache import LiveCache

log = logging.getLogger("syncer.watch")

__all__ = ["Flag", "Retry", "Retrying", "WatchSettings", "as_cluster_error"]


@dataclass(frozen=True)
class WatchSettings:
    #: Client-side inactivity limit on a watch. A v1.20 API server sends no BOOKMARK on an idle
    #: watch until its ``timeoutSeconds`` nears, so silence is normal: a dead peer is found by
    #: TCP keepalive instead (syncer/kube/), and this only backs it up (a proxy that keeps the
    #: TCP connection but swallowed the stream).
    read_timeout: float = 3700.0
    #: Server-side lifetime of one watch request: an idle object costs one request per hour.
    watch_seconds: int = 3600
    #: Reconnect backoff: full jitter over base * 2**n, capped, so N replicas that lost the
    #: same API server do not come back in lockstep.
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    #: Extra time, past ``watch_seconds``, the client gives the server to end a watch itself.
    grace: float = 60.0

    def backoff(self, failures: int, rand: Callable[[], float]) -> float:
        return full_jitter(failures, self.backoff_base, self.backoff_cap, rand)


def as_cluster_error(exc: BaseException, label: str) -> ClusterError:
    """A failure of a watch as the ``ClusterError`` the rule speaks of."""
    if isinstance(exc, ClusterError):
        return exc
    return ClusterUnreachable(f"watch {label}: connection lost ({type(exc).__name__})", transient=True)


class Flag:
    """A flag set once, like ``threading.Event``, but many flags share one condition: the
    multiplexer's thousands of watches (a ``threading.Event`` weighs about 1.2 KiB)."""

    __slots__ = ("_cond", "_set")

    def __init__(self, cond: threading.Condition) -> None:
        self._cond, self._set = cond, False

    def set(self) -> None:
        if self._set:
            return
        with self._cond:
            self._set = True
            self._cond.notify_all()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._set, timeout)


class Retry:
    """Failures in a row of one watch, and what each one means for its objects."""

    def __init__(self, cache: LiveCache, settings: "WatchSettings", label: str,
                 refs: Callable[[], Iterable[ObjectRef]], *, on_restart: Callable[[], None],
                 on_error: Callable[[], None], rand: Callable[[], float] = random.random,
                 quiet_refusals: bool = True, first: Flag | None = None) -> None:
        """``quiet_refusals``: a 403 is logged at DEBUG (the pass that cannot compare the
        object says so once, naming the grant) instead of as a warning."""
        self.cache, self.settings, self.label, self.refs = cache, settings, label, refs
        self.on_restart, self.on_error, self.rand = on_restart, on_error, rand
        self.quiet_refusals = quiet_refusals
        self.failures = 0
        #: Set once the first list and watch were answered, well or not; ``first_error`` holds
        #: a refusal (401/403) of either, named at startup.
        self.first: threading.Event | Flag = first if first is not None else threading.Event()
        self.first_error: ApiError | None = None

    def answered(self) -> None:
        """An event arrived: the next failure starts the backoff anew."""
        self.failures = 0

    def after(self, error: ClusterError) -> float:
        """Count and report ``error``; the seconds to wait before the next try."""
        self.failures += 1
        if isinstance(error, Gone):
            event(log, logging.INFO, "watch history expired; re-listing", ref=self.label, error=error.message)
        else:
            self._report(error)
        self.on_restart()
        if isinstance(error, Gone) and self.failures == 1:  # the first re-list after 410 is immediate
            return 0.0
        return self.settings.backoff(self.failures, self.rand)

    def _report(self, error: ClusterError) -> None:
        status = error.status if isinstance(error, ApiError) else None
        self.on_error()
        refs = list(self.refs())
        if isinstance(error, CredentialsRejected):
            for ref in refs:
                self.cache.fail(ref, error.message, status, raised=error)
            first = self.cache.credentials_rejected(error.message)
            if isinstance(error, ApiError) and not self.first.is_set():
                self.first_error = error
            self.first.set()
            # one line when the credentials stop working, not one per watch and retry
            event(log, logging.ERROR if first else logging.DEBUG, "credentials rejected; retrying with backoff",
                  ref=self.label, error=error.message)
            return
        if status == 403 or not error.transient:
            for ref in refs:
                self.cache.fail(ref, error.message, status)
            if isinstance(error, ApiError) and status == 403 and not self.first.is_set():
                self.first_error = error
        else:
            for ref in refs:
                self.cache.stream_down(ref)
        if status is None or status >= 500 or status == 429:  # down or overloaded: not usable
            self.cache.api_unreachable(error.message)
        else:  # it answered (403, 404): reachable, the credentials taken, these objects have a problem of their own
            self.cache.accepted()
        self.first.set()
        if status == 403 and self.quiet_refusals:  # retried quietly (a grant added later is
            # picked up); the pass that cannot compare it says so once, naming the grant
            event(log, logging.DEBUG, "cannot read; retrying with backoff", ref=self.label, error=error.message)
            return
        event(log, logging.WARNING, "watch failed; reconnecting", ref=self.label, error=error.message)


class Retrying:
    """A watch that follows a ``Retry``: its first answer, as ``WatchSet.wait_first`` reads it."""

    __slots__ = ()
    retry: Retry

    @property
    def first(self) -> threading.Event | Flag:
        """Set once the first list and watch were answered, well or not."""
        return self.retry.first

    @property
    def first_error(self) -> ApiError | None:
        """A refusal (401/403) of the first list or watch, named at startup."""
        return self.retry.first_error
