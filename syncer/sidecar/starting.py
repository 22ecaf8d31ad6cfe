"""``syncer run`` before the sidecar proper exists: its upstreams at start.

A pod whose git remote (or DNS, or the forge's host) is down at start must not exit: a
restart would not bring the remote back sooner, and CrashLoopBackOff only stretches the wait
(up to five minutes). So the status server is up first, answering ``/healthz`` 200 and
``/readyz`` 503 with the reason, while the first contact is retried with capped exponential
backoff, each failure one log line. The sidecar then takes the same server over
(``StatusServer.health`` and ``.metrics`` are swapped), so there is no moment without one.

Only what a retry can fix is retried (git and cluster errors); a bad flag or config
(``ConfigError``) still ends the process with exit 2 and one line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from syncer.errors import ClusterError, GitError
from syncer.logs import event

log = logging.getLogger("syncer.sidecar")

T = TypeVar("T")

#: Backoff of the first contact: 1 s, 2 s, 4 s ... capped at a minute.
BACKOFF_BASE, BACKOFF_CAP = 1.0, 60.0


class StartingHealth:
    """The probes' answers while the sidecar is still starting."""

    def __init__(self) -> None:
        self.reason = "starting: cloning the git repository"

    def healthz(self) -> tuple[bool, str]:
        return True, f"ok ({self.reason})\n"

    def readyz(self) -> tuple[bool, str]:
        return False, f"{self.reason}\n"


def until_up(what: str, attempt: Callable[[], T], health: StartingHealth, stop: threading.Event, *,
             base: float = BACKOFF_BASE, cap: float = BACKOFF_CAP) -> T | None:
    """``attempt()`` until it works (its value) or ``stop`` is set (None); git and cluster
    errors are retried with backoff, said in the log and in ``/readyz``."""
    failures = 0
    health.reason = f"starting: {what}"
    while not stop.is_set():
        try:
            return attempt()
        except (GitError, ClusterError) as exc:
            failures += 1
            delay = min(cap, base * 2.0 ** (failures - 1))
            health.reason = f"starting: {what} failed ({failures} attempt(s)): {exc.message}"
            event(log, logging.WARNING, f"{what} failed; not ready, retrying in {delay:g}s", error=exc.message,
                  attempt=failures)
            stop.wait(delay)
    return None
