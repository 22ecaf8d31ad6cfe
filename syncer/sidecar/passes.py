"""One sidecar pass and its failure policy.

A pass reads the state record (direction depends on it: no pass without it), then writes
back through ``sync.deliver``: the leader in the configured mode, a follower
(``--leader-elect``) as a dry run in the clone, for metrics only.

A failure is blamed on a stage (``state``, ``git``, ``forge``, ``detect``), counted, shown
in readiness when git failed, and retried: a transient one after the schedule's backoff, a
permanent one at the next change, config reload or resync. A bug (any other exception)
costs one pass, never the sidecar.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from syncer.cache import Caches
from syncer.config import Config
from syncer.errors import ForgeError, GitError, SyncerError
from syncer.gitrepo import Workspace
from syncer.logs import event
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.metrics import Metrics
from syncer.sidecar.schedule import Schedule
from syncer.sidecar.server import Health
from syncer.writeback.deliver import Mode, Outcome, deliver

if TYPE_CHECKING:
    from syncer.forges.base import Forge
    from syncer.sidecar.state import ConfigMapStore

log = logging.getLogger("syncer.loop")  # the name these lines had before the split (JSON logs show it)


@dataclass
class PassReport:
    reason: str
    leader: bool
    outcome: Outcome | None = None
    error: SyncerError | None = None
    stage: str = ""


def stage_of(exc: BaseException) -> str:
    """The stage a failure outside the state read is blamed on."""
    if isinstance(exc, GitError):
        return "git"
    if isinstance(exc, ForgeError):
        return "forge"
    return "detect"


class PassRunner:
    """Runs the passes of ``installation``: ``mode`` when leading (else a dry run), ``reproduce``
    quoted in the PR; ``caches``: what the installation remembers across passes (None: a new
    one, kept here)."""

    def __init__(self, installation: str, mode: Mode, reproduce: str, ws: Workspace, cache: LiveCache, *,
                 metrics: Metrics, health: Health, forge: "Forge | None" = None,
                 store: "ConfigMapStore | None" = None, config: Callable[[], Config | None] = lambda: None,
                 caches: Caches | None = None) -> None:
        self.installation, self.mode, self.reproduce = installation, mode, reproduce
        self.ws, self.cache = ws, cache
        self.caches = caches if caches is not None else Caches()
        self.metrics, self.health = metrics, health
        self.forge, self.store, self.config = forge, store, config
        #: what the installation remembers between passes (syncer/cache.py), one per installation
        self.caches = caches if caches is not None else Caches()

    def run(self, reason: str, leader: bool, now: float, schedule: Schedule) -> PassReport:
        """One pass at ``now``; a failure is reported in the result (``error``, ``stage``) and
        its retry set in ``schedule``."""
        report = PassReport(reason, leader)
        self.health.pass_started()
        try:
            report.outcome = self._deliver(leader, datetime.fromtimestamp(now, timezone.utc), report)
        except SyncerError as exc:
            self._failed(report, exc, now, schedule)
        except Exception as exc:  # noqa: BLE001 - a bug must cost one pass, not the sidecar
            self._failed(report, SyncerError(f"{type(exc).__name__}: {exc}", transient=True), now, schedule)
        finally:
            self.health.pass_ended()
        return report

    def _deliver(self, leader: bool, now: datetime, report: PassReport) -> Outcome:
        config = self.config()
        if self.store is not None:
            report.stage = "state"
            self.store.refresh()  # direction depends on it: no pass without it
            if getattr(self.store, "rejected", None):
                self.metrics.error("state")
        report.stage = "git"
        mode = self.mode if leader else Mode.DRY_RUN  # a follower only looks
        try:
            out = deliver(mode, self.ws, self.installation, self.cache, now, self.reproduce, self.forge, self.store,
                          config=config, observed_since=self.cache.observed_since(), caches=self.caches)
        except GitError:
            raise
        except SyncerError:
            self.health.git_reached()
            raise
        self.health.git_reached()
        return out

    def _failed(self, report: PassReport, exc: SyncerError, now: float, schedule: Schedule) -> None:
        stage = report.stage if report.stage == "state" else stage_of(exc)
        report.error, report.stage = exc, stage
        self.metrics.error(stage)
        self.metrics.passes.labels(self.installation, "error").inc()
        if isinstance(exc, GitError):
            self.health.git_failed(exc.message)
        delay = schedule.failed(now, exc.transient)
        then = f"retrying in {delay:.0f}s" if exc.transient else "needs a fix; retrying at the next change or resync"
        event(log, logging.ERROR, f"{stage} failed; {then}", stage=stage, error=exc.message, transient=exc.transient)
