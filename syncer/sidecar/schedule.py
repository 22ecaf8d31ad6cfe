"""When the sidecar runs a pass: pure arithmetic over times, no threads and no I/O.

Every method takes ``now`` (seconds since the epoch) from the caller, so tests drive it
with plain numbers. A pass is due when

* something asked for one (``request``: start, config reload, a new leader), at once, even
  while a retry is pending: such events are rare, and a new leader that sat out its follower
  days' backoff would leave the PR as the old leader left it (perhaps mid-pass);
* a transient failure's retry time came (``failed``: ``retry_base`` doubling per failure in
  a row, at most ``retry_cap``; ``retry_later``, commit mode's pushes all lost the race: full
  jitter over the same); until then no change, resync or stability starts a pass;
* the watch cache changed and then was quiet for ``debounce`` seconds, or ``debounce_max``
  after the first change of a burst that never goes quiet;
* a waiting difference became stable (``wait_for``), or
* the periodic resync is due (``resync`` after the start of the last pass).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from syncer.backoff import full_jitter
from syncer.detect.classify import parse_time
from syncer.model import Action, Drift, ObjectRef

#: Requests that start a pass at once, even while a retry is pending.
IMMEDIATE = ("start", "config", "requested")


@dataclass(frozen=True)
class Timing:
    """When the sidecar's passes run: the loop's one set of timings (``LoopSettings.timing``)."""

    #: A pass starts once the watch has been quiet this long: the endpoint manager patches an
    #: Endpoints and a kubectl edit touches a ConfigMap in bursts of events within a second or two.
    debounce: float = 5.0
    #: ...but no later than this after the first event of a burst, however busy the stream.
    debounce_max: float = 30.0
    #: Full resync: a pass even without events. It is what notices commits pushed to git.
    resync: float = 600.0
    #: Retry after a transient failure: 5 s, doubling, at most 5 minutes (a bug's retry: the cap).
    retry_base: float = 5.0
    retry_cap: float = 300.0
    #: The loop wakes at least this often, so /healthz can tell it is alive.
    tick: float = 5.0


class Schedule:
    def __init__(self, timing: Timing, now: float, rand: Callable[[], float] = random.random) -> None:
        self.timing, self.rand = timing, rand
        self.force: str | None = "start"
        self.retry_at = 0.0
        self.failures = 0
        self.next_resync = now + timing.resync
        self.wait_until: float | None = None

    @property
    def debounce_max(self) -> float:
        return max(self.timing.debounce_max, self.timing.debounce)

    def _settled(self, dirty_since: float | None, last_change: float | None) -> float | None:
        """When a burst of changes (first at ``dirty_since``, last at ``last_change``) is due."""
        if dirty_since is None or last_change is None:
            return None
        return min(last_change + self.timing.debounce, dirty_since + self.debounce_max)

    def request(self, reason: str) -> None:
        """Ask for a pass as soon as possible; an earlier request keeps its reason, except a
        pending retry, which gives way to a reason that runs at once (``IMMEDIATE``). The
        failure count stays: if that pass fails too, the next retry waits longer."""
        if self.force is None or (reason in IMMEDIATE and self.force not in IMMEDIATE):
            self.force = reason

    def due(self, now: float, dirty_since: float | None = None, last_change: float | None = None) -> str | None:
        """Why a pass should run at ``now``, or None; the two times are the watch cache's."""
        if self.force in IMMEDIATE:
            return self.force
        if now < self.retry_at:
            return None
        if self.force:
            return self.force
        settled = self._settled(dirty_since, last_change)
        if settled is not None and now >= settled:
            return "change"
        if self.wait_until is not None and now >= self.wait_until:
            return "stable"
        if now >= self.next_resync:
            return "resync"
        return None

    def next_wakeup(self, now: float, dirty_since: float | None = None, last_change: float | None = None) -> float:
        """The earliest time a pass can be due: at once for a request that runs at once, else
        never before a pending retry."""
        if self.force in IMMEDIATE:
            return now
        times = [self.next_resync]
        settled = self._settled(dirty_since, last_change)
        if settled is not None:
            times.append(settled)
        if self.wait_until is not None:
            times.append(self.wait_until)
        if self.force:
            times.append(now)
        return max(min(times), self.retry_at)

    def started(self, now: float) -> None:
        """A pass starts at ``now``: requests are taken, the resync counts from here."""
        self.force = None
        self.next_resync = now + self.timing.resync

    def again(self, reason: str) -> None:
        """A pass at once for ``reason``, replacing the reason of a request made meanwhile."""
        self.force = reason

    def succeeded(self) -> None:
        self.failures, self.retry_at = 0, 0.0

    def failed(self, now: float, transient: bool) -> float:
        """A pass failed; returns the retry delay (0: a permanent failure waits for the next
        change, config reload or resync)."""
        self.failures += 1
        if not transient:
            return 0.0
        delay = min(self.timing.retry_cap, self.timing.retry_base * 2.0 ** (self.failures - 1))
        # a request that runs at once, made while this pass ran (a new leader), is not lost
        self.retry_at, self.force = now + delay, self.force if self.force in IMMEDIATE else "retry"
        return delay

    def retry_later(self, now: float) -> float:
        """Commit mode's pushes all lost the race (a fleet syncing at once): retry after full
        jitter over the failure backoff, so the installations that lost together spread out
        instead of coming back in step; returns the delay."""
        self.failures += 1
        delay = full_jitter(self.failures, self.timing.retry_base, self.timing.retry_cap, self.rand)
        self.retry_at, self.force = now + delay, self.force if self.force in IMMEDIATE else "retry"
        return delay

    def crashed(self, now: float) -> None:
        """A bug escaped a pass: wait the longest retry before the next one."""
        self.retry_at = now + self.timing.retry_cap

    def wait_for(self, deadline: float | None) -> None:
        """A pass at ``deadline`` (a waiting difference then stable long enough); None: none."""
        self.wait_until = deadline


def stable_deadline(drifts: Iterable[Drift], stable_for: float, since: Mapping[ObjectRef, datetime],
                    now: float) -> float | None:
    """The first future moment a waiting difference has been stable for ``stable_for`` seconds:
    its change time (managedFields, else when the watch saw it change) plus ``stable_for``."""
    deadlines = []
    for d in drifts:
        if d.action is Action.WAIT:
            changed = parse_time(d.changed_at) or since.get(d.ref)
            if changed is not None:
                deadlines.append(changed.timestamp() + stable_for)
    return min((t for t in deadlines if t > now), default=None)
