"""The sidecar's control loop: one thread that decides when to run a pass, and runs it.

A pass is due when

* the watch cache changed and has then been quiet for ``debounce`` seconds (a burst of
  events is one pass; a stream that never goes quiet still gets a pass ``debounce_max``
  after its first event),
* a ``stable`` difference becomes old enough to write (its change time + ``stableFor``),
* the periodic resync is due (it also catches changes pushed to git), or
* something asked for one (start, config reload, retry after a transient failure).

A pass, on the leader: fetch git and reset the clone to the base branch, detect from the
cache (no API request), write back (``sync.deliver``: PR or commit), then record the objects git
and the cluster agree on in the state store. Followers (``--leader-elect``) fetch and detect
only, for metrics. Every pass updates the metrics and tracks outages: an Endpoints that is
``cleared`` is never written; its start is logged, and its end is logged and sent as a
``drift.cleared`` webhook carrying both times. ``undeclared`` addresses are sent once each.

Failures are counted per stage (git, forge, detect, state) and retried: transient ones with
exponential backoff, permanent ones at the next change or resync; a bug (``crashed``) is logged
with its traceback, counted, and waits the longest retry. The clock is injected, and
``step`` runs at most one pass, so tests can replay a morning of events in milliseconds.

The parts: ``schedule`` (when a pass is due: pure arithmetic), ``passes`` (one pass and its
failure policy), ``syncer.writeback.alerts`` (outages, undeclared addresses and PR webhooks, shared
with the one-shot ``syncer sync``) and ``record`` (what is agreed); this module runs them
in one thread and applies a pass's outcome (metrics, logs, alerts, state record, watches).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from syncer.writeback.alerts import Outage, Tracker, send, with_pr
from syncer.cache import Caches, by_identity
from syncer.detect.classify import parse_time, provenance
from syncer.config import Config
from syncer.detect.endpoints import address_root
from syncer.errors import ClusterError, ConfigError
from syncer.gather.collect import objects_to_read
from syncer.gitrepo import Workspace
from syncer.logs import event
from syncer.model import ObjectRef
from syncer.sidecar.decisions import log_decisions
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.metrics import Metrics
from syncer.sidecar.passes import PassReport, PassRunner
from syncer.sidecar.record import agreed
from syncer.sidecar.schedule import Schedule, Timing, stable_deadline
from syncer.sources.source import DEFAULT_TOOLS, Tools
from syncer.sidecar.server import Health
from syncer.sidecar.trim import trim
from syncer.writeback.deliver import DEFAULT_MODE, Loaded, Mode, Outcome, load_installation
from syncer.writeback.landing import PushBudget

if TYPE_CHECKING:
    from syncer.forges.base import Forge
    from syncer.writeback.notify import Notifier
    from syncer.sidecar.state import ConfigMapStore

log = logging.getLogger("syncer.loop")

__all__ = ["Loop", "LoopSettings", "Outage", "PassReport", "tracked_refs"]


@dataclass(frozen=True)
class LoopSettings:
    installation: str
    mode: Mode = DEFAULT_MODE
    reproduce: str = ""
    #: When passes run (debounce, resync, retries, the loop's tick).
    timing: Timing = Timing()
    #: The programs the installation's source runs (``--kustomize``).
    tools: Tools = DEFAULT_TOOLS
    #: How long commit mode retries pushes that lost the race within one pass (``--push-budget``).
    budget: PushBudget = PushBudget()


def tracked_refs(loaded: Loaded, caches: Caches | None = None) -> frozenset[ObjectRef]:
    """What to watch: what detection reads (``gather.objects_to_read``). Remembered in
    ``caches.tracked`` while the manifests and config stay the same objects (no file changed:
    syncer/sources/manifests.py); None: computed each time. The remembered set itself (not a
    copy: one set of every tracked object is enough)."""
    if caches is None:
        return frozenset(objects_to_read(loaded.config, loaded.manifests))
    refs: frozenset[ObjectRef] = by_identity(caches.tracked, (loaded.manifests, loaded.config), "tracked",
                                             lambda: frozenset(objects_to_read(loaded.config, loaded.manifests)))
    return refs


class Loop:
    def __init__(self, settings: LoopSettings, ws: Workspace, cache: LiveCache, *, metrics: Metrics, health: Health,
                 forge: "Forge | None" = None, store: "ConfigMapStore | None" = None,
                 notifier: "Notifier | None" = None, is_leader: Callable[[], bool] = lambda: True,
                 config: Callable[[], Config | None] = lambda: None,
                 on_refs: Callable[[frozenset[ObjectRef]], None] = lambda _: None,
                 clock: Callable[[], float] = time.time, caches: Caches | None = None,
                 probe: Callable[[], object] | None = None) -> None:
        """``config`` gives the ``--config`` override (None: the repository's syncer.conf);
        ``on_refs`` receives the objects to watch after each pass; ``caches``: what the
        installation remembers across passes (None: a new one, kept by this loop); ``probe``:
        the request that tells a pass without a state record whether the API server still
        takes syncer's credentials (``PassRunner``)."""
        self.caches = caches if caches is not None else Caches()
        self.settings, self.ws, self.cache = settings, ws, cache
        self.metrics, self.health = metrics, health
        self.store, self.notifier = store, notifier
        self.is_leader, self.config, self.on_refs, self.clock = is_leader, config, on_refs, clock
        self.schedule = Schedule(settings.timing, clock())
        self.runner = PassRunner(settings.installation, settings.mode, settings.reproduce, ws, cache,
                                 metrics=metrics, health=health, forge=forge, store=store, config=config,
                                 caches=self.caches, probe=probe, tools=settings.tools, budget=settings.budget)
        self.tracker = Tracker(self._change_time)
        self._wake = threading.Event()
        self._errors: set[str] = set()
        self._warnings: set[str] = set()
        self._since: dict[ObjectRef, datetime] | None = None  # change times the previous pass saw
        self._notes: set[str] = set()
        self.last: PassReport | None = None
        self.passes = 0

    @property
    def outages(self) -> list[Outage]:
        """Ended outages, newest last (at most 100)."""
        return self.tracker.outages

    # -- scheduling -----------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    def poke(self, reason: str = "requested") -> None:
        """Ask for a pass as soon as possible."""
        self.schedule.request(reason)
        self._wake.set()

    def due(self, now: float) -> str | None:
        """Why a pass should run now, or None."""
        return self.schedule.due(now, self.cache.dirty_since, self.cache.last_change)

    def next_wakeup(self, now: float) -> float:
        return self.schedule.next_wakeup(now, self.cache.dirty_since, self.cache.last_change)

    def step(self) -> PassReport | None:
        """Run one pass if one is due; the loop thread calls this, and so can tests."""
        reason = self.due(self.clock())
        return self.run_pass(reason) if reason else None

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._wake.clear()
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - not in syncer's error tree: a bug (``crashed``)
                self.crashed(exc)
            self.health.loop_ticked()
            if stop.is_set():
                break
            now = self.clock()
            self._wake.wait(min(self.settings.timing.tick, max(0.0, self.next_wakeup(now) - now)))

    def crashed(self, exc: Exception) -> None:
        """A bug ended a pass (an exception outside syncer's error tree: ``passes``). The sidecar
        goes on, deliberately, rather than exit for the kubelet to restart it: a restart re-lists
        every watched object (seconds of API server load at thousands of them), would not cure a
        bug that one object's content triggers (it would crash-loop, and the other objects' drifts
        would stop being proposed), and in sidecar mode the container sits in the reconciler's
        pod. So the bug is logged with its traceback and counted (``syncer_internal_errors_total``
        and a failed pass); what the installation remembers between passes is dropped, since a
        bug may have left it half-made (the watches' live objects are the server's and stay);
        the next pass waits the longest retry, never a tight loop. Readiness and liveness say
        what they always say (the upstreams, the loop ticking): a bug is not an unreachable
        upstream, and an unready sidecar would take the reconciler's pod out of its Services."""
        self.metrics.internal_error()
        self.metrics.passes.labels(self.settings.installation, "error").inc()
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        event(log, logging.ERROR, "pass failed: a bug in syncer; retrying after the longest backoff",
              error=f"{type(exc).__name__}: {exc}", traceback=trace)
        self.caches.clear()
        self.schedule.crashed(self.clock())

    # -- one pass -------------------------------------------------------------------

    def run_pass(self, reason: str) -> PassReport:
        now = self.clock()
        self.cache.take_dirty()
        self.schedule.started(now)
        leader = self.is_leader()
        self.passes += 1
        report = self.runner.run(reason, leader, now, self.schedule)
        self.last = report
        if report.error is not None or report.deferred is not None:  # the retry is set in the schedule
            return report
        self.schedule.succeeded()
        self._after(report, report.outcome, datetime.fromtimestamp(now, timezone.utc))
        self.metrics.last_sync.set(self.clock())
        self.metrics.passes.labels(self.settings.installation, "ok" if leader else "follower").inc()
        trim()  # what the pass freed goes back to the system, not kept as the RSS's high point
        return report

    def _after(self, report: PassReport, out: Outcome | None, now: datetime) -> None:
        if out is None:
            return
        result = out.result
        since = self.cache.observed_since()
        self.metrics.observe(result, now, since)
        self._log_outcome(report, out)
        ended, alerts = self.tracker.observe(result, now, since)
        for _ in ended:
            self.metrics.outages.labels(self.settings.installation).inc()
        if report.leader:  # followers only log
            send(self.notifier, self.settings.installation, with_pr(out, alerts))
        if report.leader and self.settings.mode is Mode.PR:
            open_ = out.pr.outcome.value in ("opened", "updated", "unchanged", "human-pushed") if out.pr \
                else out.commit is not None
            self.metrics.pr_open.labels(self.settings.installation).set(1 if open_ else 0)
        loaded = out.loaded  # as detection loaded it, unless the pass wrote files
        if loaded is None:
            try:
                loaded = load_installation(self.ws.path, self.settings.installation, self.config(), caches=self.caches,
                                           tools=self.settings.tools)
            except ConfigError as exc:
                event(log, logging.ERROR, "cannot load the installation after the pass", error=exc.message)
                return
        self.schedule.wait_for(stable_deadline(result.drifts, loaded.config.stable_for, since, self.clock()))
        if self._since is not None:  # not the first pass: it handled every object, no event
            log_decisions([r for r, t in since.items() if self._since.get(r) != t], result, out.written,
                          committing=self.settings.mode is Mode.COMMIT, stable_for=loaded.config.stable_for,
                          since=since)
        self._since = since
        if report.leader and self.store is not None:
            self._record_agreement(out, loaded)
            if out.commit is not None and self.settings.mode is Mode.COMMIT:
                # What was just committed now agrees with the cluster: re-check at once so the
                # record (the base for the next change) does not wait for the next resync.
                self.schedule.again("recheck")
        self.cache.declare(loaded.manifests.objects)  # what the watch cache shares of git's objects
        self.on_refs(tracked_refs(loaded, self.caches))

    def _log_outcome(self, report: PassReport, out: Outcome) -> None:
        result = out.result
        event(log, logging.INFO, "pass done", reason=report.reason, leader=report.leader,
              drifts=len(result.drifts), written=len(out.written), commit=(out.commit or "")[:12] or None,
              pr=out.pr.outcome.value if out.pr else None)
        for d in out.written:
            event(log, logging.INFO, "copied back" if self.settings.mode is Mode.COMMIT else "proposed", ref=d.ref,
                  path=d.path_text, detail=d.detail, manager=d.manager, changed_at=d.changed_at)
        errors = {e.message for e in result.errors}
        for message in sorted(errors - self._errors):
            event(log, logging.ERROR, "cannot compare", error=message)
        self._errors = errors
        warnings = {e.message for e in result.warnings}
        for message in sorted(warnings - self._warnings):
            event(log, logging.WARNING, "cannot compare", error=message)
        self._warnings = warnings
        notes = {n.message for n in result.notes}  # files skipped, versions not compared: once each
        for message in sorted(notes - self._notes):
            event(log, logging.INFO, "note", note=message)
        self._notes = notes
        for message in out.messages:
            event(log, logging.INFO, message)

    def _change_time(self, refs: set[ObjectRef], since: Mapping[ObjectRef, datetime]) -> datetime | None:
        """When the objects last changed: their managedFields time for addresses, else when we saw them."""
        times = []
        for ref in refs:
            try:
                live = self.cache.get(ref)
            except ClusterError:
                live = None
            when = parse_time(provenance(live, address_root(ref.kind))[1]) if live else None
            when = when or since.get(ref)
            if when is not None:
                times.append(when)
        return max(times, default=None)

    def _record_agreement(self, out: Outcome, loaded: Loaded) -> None:
        assert self.store is not None
        objects = agreed(out.result, loaded.manifests, self.caches)
        try:
            if self.store.record(objects, keep=loaded.manifests.objects):
                event(log, logging.INFO, "recorded agreed state", ref=self.store.describe(), objects=len(objects))
        except ClusterError as exc:
            self.metrics.error("state")
            event(log, logging.ERROR, "cannot record the agreed state; retrying at the next pass",
                  ref=self.store.describe(), error=exc.message)
