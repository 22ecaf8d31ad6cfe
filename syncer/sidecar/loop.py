"""The sidecar's control loop: one thread that decides when to run a pass, and runs it.

A pass is due when

* the watch cache changed and has then been quiet for ``debounce`` seconds (a burst of
  events is one pass; a stream that never goes quiet still gets a pass ``debounce_max``
  after its first event),
* a ``stable`` difference becomes old enough to write (its change time + ``stableFor``),
* the periodic resync is due (it also catches changes pushed to git), or
* something asked for one (start, config reload, retry after a transient failure).

A pass, on the leader: fetch git and reset the clone to the base branch, detect from the
cache (no API request), write back (``sync_pr``/``sync_commit``), then record the objects git
and the cluster agree on in the state store. Followers (``--leader-elect``) fetch and detect
only, for metrics. Every pass updates the metrics and tracks outages: an Endpoints that is
``cleared`` is never written; its start is logged, and its end is logged and sent as a
``drift.cleared`` webhook carrying both times. ``undeclared`` addresses are sent once each.

Failures are counted per stage (git, forge, detect, state) and retried: transient ones with
exponential backoff, permanent ones at the next change or resync. The clock is injected, and
``step`` runs at most one pass, so tests can replay a morning of events in milliseconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from syncer.classify import parse_time, provenance
from syncer.config import Config, NEVER_WRITTEN
from syncer.endpoints import SLICE, address_root
from syncer.errors import ClusterError, ConfigError, ForgeError, GitError, SyncerError
from syncer.gitrepo import Workspace
from syncer.logs import event
from syncer.model import Action, Drift, DriftClass, ObjectRef, Result, Track
from syncer.normalize import normalize
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.metrics import Metrics
from syncer.sidecar.server import Health
from syncer.sync import Loaded, Mode, Outcome, dry_run, load_installation, sync_commit, sync_pr

if TYPE_CHECKING:
    from syncer.forges.base import Forge
    from syncer.notify import Notifier
    from syncer.sidecar.state import ConfigMapStore

log = logging.getLogger("syncer.loop")


@dataclass(frozen=True)
class LoopSettings:
    installation: str
    mode: Mode = Mode.PR
    reproduce: str = ""
    #: A pass starts once the watch has been quiet this long: the endpoint manager patches an
    #: Endpoints and a kubectl edit touches a ConfigMap in bursts of events within a second or two.
    debounce: float = 5.0
    #: ...but no later than this after the first event of a burst, however busy the stream.
    debounce_max: float = 30.0
    #: Full resync: a pass even without events. It is what notices commits pushed to git.
    resync: float = 600.0
    #: The loop wakes at least this often, so /healthz can tell it is alive.
    tick: float = 5.0
    #: Retry after a transient failure: 5 s, doubling, at most 5 minutes.
    retry_base: float = 5.0
    retry_cap: float = 300.0


@dataclass(frozen=True)
class Outage:
    """An Endpoints without a ready address, from ``started_at`` to ``ended_at``."""

    ref: ObjectRef
    started_at: datetime
    ended_at: datetime | None = None
    was: str | None = None  # what git declares

    def to_json(self) -> dict[str, Any]:
        end = self.ended_at
        return {"kind": self.ref.kind, "namespace": self.ref.namespace, "name": self.ref.name,
                "started_at": _iso(self.started_at), "ended_at": _iso(end) if end else None,
                "duration_seconds": (end - self.started_at).total_seconds() if end else None, "git": self.was}


@dataclass
class PassReport:
    reason: str
    leader: bool
    outcome: Outcome | None = None
    error: SyncerError | None = None
    stage: str = ""
    outages_ended: list[Outage] = field(default_factory=list)


def tracked_refs(loaded: Loaded) -> set[ObjectRef]:
    """What to watch: every declared object not ignored, plus the candidate lists' ConfigMaps."""
    refs = {ref for ref in loaded.manifests.objects if loaded.config.track_for(ref.kind) is not Track.IGNORE}
    refs |= {ObjectRef("v1", "ConfigMap", c.namespace, c.config_map) for c in loaded.config.candidates}
    return refs


def _subject(d: Drift) -> ObjectRef:
    """What an outage or an undeclared address is about: the Endpoints itself, or the Service
    whose slices were judged together (one report for all of them)."""
    if d.ref.kind == SLICE and d.service:
        return ObjectRef("v1", "Service", d.ref.namespace, d.service)
    return d.ref


def _iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stage(exc: BaseException) -> str:
    if isinstance(exc, GitError):
        return "git"
    if isinstance(exc, ForgeError):
        return "forge"
    return "detect"


class Loop:
    def __init__(self, settings: LoopSettings, ws: Workspace, cache: LiveCache, *, metrics: Metrics, health: Health,
                 forge: "Forge | None" = None, store: "ConfigMapStore | None" = None,
                 notifier: "Notifier | None" = None, is_leader: Callable[[], bool] = lambda: True,
                 config: Callable[[], Config | None] = lambda: None,
                 on_refs: Callable[[set[ObjectRef]], None] = lambda _: None,
                 clock: Callable[[], float] = time.time) -> None:
        """``config`` gives the ``--config`` override (None: the repository's syncer.yaml);
        ``on_refs`` receives the objects to watch after each pass."""
        self.settings, self.ws, self.cache = settings, ws, cache
        self.metrics, self.health = metrics, health
        self.forge, self.store, self.notifier = forge, store, notifier
        self.is_leader, self.config, self.on_refs, self.clock = is_leader, config, on_refs, clock
        self._wake = threading.Event()
        self._force: str | None = "start"
        self._retry_at = 0.0
        self._failures = 0
        self._next_resync = clock() + settings.resync
        self._wait_until: float | None = None
        self._open: dict[ObjectRef, Outage] = {}
        self._members: dict[ObjectRef, set[ObjectRef]] = {}  # the objects an open outage is seen in
        self._undeclared: dict[ObjectRef, Any] = {}
        self._undeclared_members: dict[ObjectRef, set[ObjectRef]] = {}
        self._errors: set[str] = set()
        self.outages: list[Outage] = []  # ended outages, newest last (at most 100)
        self.last: PassReport | None = None
        self.passes = 0

    # -- scheduling -----------------------------------------------------------------

    @property
    def _debounce_max(self) -> float:
        return max(self.settings.debounce_max, self.settings.debounce)

    def wake(self) -> None:
        self._wake.set()

    def poke(self, reason: str = "requested") -> None:
        """Ask for a pass as soon as possible."""
        self._force = self._force or reason
        self._wake.set()

    def due(self, now: float) -> str | None:
        """Why a pass should run now, or None."""
        if self._force in ("start", "config", "requested"):
            return self._force
        if now < self._retry_at:
            return None
        if self._force:
            return self._force
        first, last = self.cache.dirty_since, self.cache.last_change
        if first is not None and last is not None and now >= min(last + self.settings.debounce,
                                                                 first + self._debounce_max):
            return "change"
        if self._wait_until is not None and now >= self._wait_until:
            return "stable"
        if now >= self._next_resync:
            return "resync"
        return None

    def next_wakeup(self, now: float) -> float:
        times = [self._next_resync]
        first, last = self.cache.dirty_since, self.cache.last_change
        if first is not None and last is not None:
            times.append(min(last + self.settings.debounce, first + self._debounce_max))
        if self._wait_until is not None:
            times.append(self._wait_until)
        if self._force:
            times.append(now)
        return max(min(times), self._retry_at)

    def step(self) -> PassReport | None:
        """Run one pass if one is due; the loop thread calls this, and so can tests."""
        reason = self.due(self.clock())
        return self.run_pass(reason) if reason else None

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._wake.clear()
            try:
                self.step()
            except Exception as exc:  # noqa: BLE001 - the loop must outlive any bug in a pass
                self.metrics.error("detect")
                event(log, logging.ERROR, "pass crashed", error=f"{type(exc).__name__}: {exc}")
                self._retry_at = self.clock() + self.settings.retry_cap
            self.health.loop_ticked()
            if stop.is_set():
                break
            now = self.clock()
            self._wake.wait(min(self.settings.tick, max(0.0, self.next_wakeup(now) - now)))

    # -- one pass -------------------------------------------------------------------

    def run_pass(self, reason: str) -> PassReport:
        now = self.clock()
        now_dt = datetime.fromtimestamp(now, timezone.utc)
        self.cache.take_dirty()
        self._force = None
        self._next_resync = now + self.settings.resync
        leader = self.is_leader()
        report = PassReport(reason, leader)
        self.passes += 1
        self.health.pass_started()
        try:
            report.outcome = self._write_back(leader, now_dt, report)
        except SyncerError as exc:
            self._failed(report, exc, now)
            return report
        except Exception as exc:  # noqa: BLE001 - a bug must cost one pass, not the sidecar
            self._failed(report, SyncerError(f"{type(exc).__name__}: {exc}", transient=True), now)
            return report
        finally:
            self.health.pass_ended()
            self.last = report
        self._failures, self._retry_at = 0, 0.0
        self._after(report, report.outcome, now_dt)
        self.metrics.last_sync.set(self.clock())
        self.metrics.passes.labels(self.settings.installation, "ok" if leader else "follower").inc()
        return report

    def _write_back(self, leader: bool, now: datetime, report: PassReport) -> Outcome:
        s = self.settings
        config = self.config()
        if self.store is not None:
            report.stage = "state"
            self.store.refresh()  # direction depends on it: no pass without it
            if getattr(self.store, "rejected", None):
                self.metrics.error("state")
        report.stage = "git"
        since = self.cache.observed_since()
        try:
            if leader and s.mode is Mode.COMMIT:
                out = sync_commit(self.ws, s.installation, self.cache, now, self.store, config=config,
                                  observed_since=since)
            elif leader and s.mode is Mode.PR:
                out = sync_pr(self.ws, s.installation, self.cache, now, s.reproduce, self.forge, self.store,
                              config=config, observed_since=since)
            else:
                self.ws.sync_to_base()
                out = dry_run(self.ws.path, s.installation, self.cache, now, s.reproduce, self.store, config=config,
                              observed_since=since)
        except GitError:
            raise
        except SyncerError:
            self.health.git_reached()
            raise
        self.health.git_reached()
        return out

    def _failed(self, report: PassReport, exc: SyncerError, now: float) -> None:
        stage = report.stage if report.stage == "state" else _stage(exc)
        report.error, report.stage = exc, stage
        self.metrics.error(stage)
        self.metrics.passes.labels(self.settings.installation, "error").inc()
        if isinstance(exc, GitError):
            self.health.git_failed(exc.message)
        self._failures += 1
        if exc.transient:
            delay = min(self.settings.retry_cap, self.settings.retry_base * 2 ** (self._failures - 1))
            self._retry_at, self._force = now + delay, "retry"
        else:
            delay = 0.0  # permanent: wait for the next change, config reload or resync
        then = f"retrying in {delay:.0f}s" if exc.transient else "needs a fix; retrying at the next change or resync"
        event(log, logging.ERROR, f"{stage} failed; {then}", stage=stage, error=exc.message, transient=exc.transient)

    def _after(self, report: PassReport, out: Outcome | None, now: datetime) -> None:
        if out is None:
            return
        result = out.result
        since = self.cache.observed_since()
        self.metrics.observe(result, now, since)
        self._log_outcome(report, out)
        self._track_outages(report, result, now, since)
        self._track_undeclared(report, result)
        if report.leader and out.pr is not None:
            self._pr_notify(out)
        if report.leader and self.settings.mode is Mode.PR:
            open_ = out.pr.outcome.value in ("opened", "updated", "unchanged", "human-pushed") if out.pr \
                else out.commit is not None
            self.metrics.pr_open.labels(self.settings.installation).set(1 if open_ else 0)
        loaded = out.loaded
        if loaded is None:
            try:
                loaded = load_installation(self.ws.path, self.settings.installation, self.config())
            except ConfigError as exc:
                event(log, logging.ERROR, "cannot load the installation after the pass", error=exc.message)
                return
        self._schedule_stable(result, loaded, since)
        if report.leader and self.store is not None:
            self._record_agreement(result, loaded)
            if out.commit is not None and self.settings.mode is Mode.COMMIT:
                # What was just committed now agrees with the cluster: re-check at once so the
                # record (the base for the next change) does not wait for the next resync.
                self._force = "recheck"
        self.on_refs(tracked_refs(loaded))

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
        for message in out.messages:
            event(log, logging.INFO, message)

    def _track_outages(self, report: PassReport, result: Result, now: datetime,
                       since: dict[ObjectRef, datetime]) -> None:
        cleared: dict[ObjectRef, list[Drift]] = {}
        for d in result.drifts:
            if d.cls is DriftClass.CLEARED:
                cleared.setdefault(_subject(d), []).append(d)
        for d in result.drifts:  # every slice seen moving while the Service is out: its end is theirs
            if _subject(d) in cleared or _subject(d) in self._open:
                self._members.setdefault(_subject(d), set()).add(d.ref)
        for key, ds in cleared.items():
            if key not in self._open:
                start = min((t for t in (parse_time(d.changed_at) for d in ds) if t is not None), default=None) \
                    or min((since[d.ref] for d in ds if d.ref in since), default=None) or now
                was = " ".join(d.git for d in ds if d.git) or None
                self._open[key] = Outage(key, start, None, was)
                event(log, logging.WARNING, "outage started: no ready address (never written to git)", ref=key,
                      since=_iso(start), git=was)
        for key in [k for k in self._open if k not in cleared and self._members.get(k, {k}) & set(result.checked)]:
            outage = self._open.pop(key)
            end = self._change_time(self._members.pop(key, {key}), since) or now
            ended = Outage(key, outage.started_at, max(end, outage.started_at), outage.was)
            self.outages = [*self.outages[-99:], ended]
            report.outages_ended.append(ended)
            self.metrics.outages.labels(self.settings.installation).inc()
            duration = ended.to_json()["duration_seconds"]
            event(log, logging.WARNING, "outage ended", ref=key, started_at=_iso(ended.started_at),
                  ended_at=_iso(end), duration_seconds=duration)
            if report.leader:
                self._notify("drift.cleared", {
                    "summary": f"{key} had no ready address from {_iso(ended.started_at)} to {_iso(end)} "
                               f"({duration:.0f}s)",
                    "outage": ended.to_json(),
                    "drifts": [d.to_json() for d in result.drifts if _subject(d) == key]})

    def _change_time(self, refs: set[ObjectRef], since: dict[ObjectRef, datetime]) -> datetime | None:
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

    def _track_undeclared(self, report: PassReport, result: Result) -> None:
        now: dict[ObjectRef, list[Drift]] = {}
        for d in result.drifts:
            if d.cls is DriftClass.UNDECLARED:
                now.setdefault(_subject(d), []).append(d)
        for key, ds in now.items():
            self._undeclared_members[key] = {d.ref for d in ds}
            live = " ".join(sorted({a for d in ds for a in str(d.live or "").split()})) or None
            if self._undeclared.get(key) != live:
                self._undeclared[key] = live
                event(log, logging.WARNING, "undeclared address: in no candidate list", ref=key, live=live,
                      git=" ".join(d.git for d in ds if d.git) or None, manager=ds[0].manager)
                if report.leader:
                    self._notify("drift.undeclared", {"summary": f"{key} points at {live}, which no candidate "
                                                                 "list declares", "drifts": [d.to_json() for d in ds]})
        checked = set(result.checked)
        for key in [k for k in self._undeclared if k not in now and self._undeclared_members.get(k, {k}) & checked]:
            del self._undeclared[key]
            self._undeclared_members.pop(key, None)

    def _pr_notify(self, out: Outcome) -> None:
        assert out.pr is not None
        name = {"opened": "pr.opened", "updated": "pr.updated", "closed": "pr.closed"}.get(out.pr.outcome.value)
        if name:
            self._notify(name, {"summary": out.pr.message, "pr": out.pr.pr,
                                "drifts": [d.to_json() for d in out.written]})

    def _notify(self, name: str, payload: dict[str, Any]) -> None:
        if self.notifier is not None:
            self.notifier.notify(name, {"installation": self.settings.installation, **payload})

    def _schedule_stable(self, result: Result, loaded: Loaded, since: dict[ObjectRef, datetime]) -> None:
        """A pass at the moment the first waiting difference has been stable long enough."""
        now = self.clock()
        deadlines = []
        for d in result.drifts:
            if d.action is Action.WAIT:
                changed = parse_time(d.changed_at) or since.get(d.ref)
                if changed is not None:
                    deadlines.append(changed.timestamp() + loaded.config.stable_for)
        self._wait_until = min((t for t in deadlines if t > now), default=None)

    def _record_agreement(self, result: Result, loaded: Loaded) -> None:
        assert self.store is not None
        drifting = {d.ref for d in result.drifts}
        agreed = {ref: normalize(loaded.manifests.objects[ref].data) for ref in result.checked
                  if ref not in drifting and ref in loaded.manifests.objects and ref.kind not in NEVER_WRITTEN}
        try:
            if self.store.record(agreed, keep=loaded.manifests.objects):
                event(log, logging.INFO, "recorded agreed state", ref=self.store.describe(), objects=len(agreed))
        except ClusterError as exc:
            self.metrics.error("state")
            event(log, logging.ERROR, "cannot record the agreed state; retrying at the next pass",
                  ref=self.store.describe(), error=exc.message)
