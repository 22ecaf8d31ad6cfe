"""One sidecar pass and its failure policy.

A pass reads the state record (direction depends on it: no pass without it), then writes
back through ``sync.deliver``: the leader in the configured mode, a follower
(``--leader-elect``) as a dry run in the clone, for metrics only.

A failure syncer's error tree names (``SyncerError``, ``syncer.errors``) is blamed on a stage
(``state``, ``git``, ``forge``, ``detect``), counted, shown in readiness when git failed or an
upstream rejected syncer's credentials, and retried as its ``transient`` says: a transient one
after the schedule's backoff, a permanent one at the next change, config reload or resync.

Commit mode's pushes all losing the race to other pushes (``landing.KeptMoving``: a fleet of
installations syncing at once) is no failure: logged at WARNING, counted as a pass with result
``retry_later``, readiness untouched, and retried after a jittered backoff (``Schedule.retry_later``).

Any other exception is a bug, not a failure of an upstream: it is not retried as if it were
transient, it raises out of the pass, and the loop (``Loop.run``) has the one policy for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from syncer.cache import Caches
from syncer.config import Config
from syncer.errors import CredentialsRejected, ForgeAuthFailed, ForgeError, GitError, SyncerError
from syncer.gitoutcome import GitAuthFailed
from syncer.gitrepo import Workspace
from syncer.logs import event
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.metrics import Metrics
from syncer.sidecar.schedule import Schedule
from syncer.sidecar.server import Health
from syncer.sources.source import DEFAULT_TOOLS, Tools
from syncer.writeback.deliver import Mode, Outcome, deliver
from syncer.writeback.landing import KeptMoving, PushBudget

if TYPE_CHECKING:
    from syncer.forges.base import Forge
    from syncer.sidecar.state import ConfigMapStore

log = logging.getLogger("syncer.loop")  # the loop's logger: JSON logs name it, and queries filter on it


@dataclass
class PassReport:
    reason: str
    leader: bool
    outcome: Outcome | None = None
    error: SyncerError | None = None
    stage: str = ""
    #: Commit mode's pushes all lost the race (``landing.KeptMoving``): not an error, the
    #: installation is retried later with jittered backoff.
    deferred: KeptMoving | None = None


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
                 caches: Caches | None = None, probe: Callable[[], object] | None = None,
                 tools: Tools = DEFAULT_TOOLS, budget: PushBudget = PushBudget()) -> None:
        """``probe``: one cheap request to the API server, made at each pass without a state
        record (whose read is that request otherwise), raising ``CredentialsRejected`` on a 401:
        a revoked token is seen within one resync although the open watches, authenticated when
        they began, go on streaming; ``tools``: the programs the installation's source runs."""
        self.installation, self.mode, self.reproduce, self.tools = installation, mode, reproduce, tools
        self.budget = budget
        self.ws, self.cache = ws, cache
        self.caches = caches if caches is not None else Caches()
        self.metrics, self.health = metrics, health
        self.forge, self.store, self.config = forge, store, config
        self.probe = probe
        #: what the installation remembers between passes (syncer/cache.py), one per installation
        self.caches = caches if caches is not None else Caches()

    def run(self, reason: str, leader: bool, now: float, schedule: Schedule) -> PassReport:
        """One pass at ``now``; a failure is reported in the result (``error``, ``stage``) and
        its retry set in ``schedule``; a bug raises."""
        report = PassReport(reason, leader)
        self.health.pass_started()
        try:
            report.outcome = self._deliver(leader, datetime.fromtimestamp(now, timezone.utc), report)
        except KeptMoving as exc:
            self._retry_later(report, exc, now, schedule)
        except SyncerError as exc:
            self._failed(report, exc, now, schedule)
        finally:
            self.health.pass_ended()
        return report

    def _deliver(self, leader: bool, now: datetime, report: PassReport) -> Outcome:
        config = self.config()
        if self.store is not None:
            report.stage = "state"
            self.store.refresh()  # direction depends on it: no pass without it
            self.cache.accepted()  # a new request: it took the credentials
            if getattr(self.store, "rejected", None):
                self.metrics.error("state")
        elif self.probe is not None:
            report.stage = "state"
            self.probe()
        report.stage = "git"
        mode = self.mode if leader else Mode.DRY_RUN  # a follower only looks
        try:
            out = deliver(mode, self.ws, self.installation, self.cache, now, self.reproduce, self.forge, self.store,
                          config=config, observed_since=self.cache.observed_since(), caches=self.caches,
                          tools=self.tools, budget=self.budget)
        except KeptMoving:
            self.health.git_reached()  # it answered every push: the remote is up, only busy
            raise
        except GitError:
            raise
        except SyncerError:
            self.health.git_reached()
            raise
        self.health.git_reached()
        if self.forge is not None and mode is Mode.PR:
            self.health.forge_reached()  # the pass's forge calls worked
        return out

    def _retry_later(self, report: PassReport, exc: KeptMoving, now: float, schedule: Schedule) -> None:
        """Every push lost the race to other pushes (a fleet syncing at once): nothing failed and
        nothing was lost, so no error is counted and readiness stays; the installation's next
        try waits a jittered, growing time, so the losers of this burst do not meet again."""
        report.deferred, report.stage = exc, "git"
        self.metrics.passes.labels(self.installation, "retry_later").inc()
        delay = schedule.retry_later(now)
        event(log, logging.WARNING, f"{exc.base} kept moving; retrying this installation in {delay:.1f}s",
              outcome="retry_later", pushes=exc.pushes, seconds=round(exc.seconds, 1))

    def _failed(self, report: PassReport, exc: SyncerError, now: float, schedule: Schedule) -> None:
        stage = report.stage if report.stage == "state" else stage_of(exc)
        report.error, report.stage = exc, stage
        self.metrics.error(stage)
        self.metrics.passes.labels(self.installation, "error").inc()
        if isinstance(exc, GitError):
            self.health.git_failed(exc.message)
        if isinstance(exc, CredentialsRejected):  # /readyz 503 at once, not a resync later
            self.cache.credentials_rejected(exc.message)
        elif isinstance(exc, ForgeAuthFailed):
            self.health.forge_rejected(exc.message)
            self.metrics.rejected("forge")
        elif isinstance(exc, GitAuthFailed):
            self.metrics.rejected("git")
        delay = schedule.failed(now, exc.transient)
        then = f"retrying in {delay:.0f}s" if exc.transient else "needs a fix; retrying at the next change or resync"
        event(log, logging.ERROR, f"{stage} failed; {then}", stage=stage, error=exc.message, transient=exc.transient)
