"""Prometheus metrics of the sidecar, on a registry of their own.

Each ``Metrics`` owns a fresh ``CollectorRegistry`` (never the process-global one), so two
sidecars in one test process do not collide and ``/metrics`` shows only syncer's series.

Names are part of the product contract (SPEC §3):

    syncer_drift_objects{installation,class}            objects drifting, per drift class
    syncer_drift_age_seconds{installation,kind,name}    since when an object has drifted
    syncer_last_sync_timestamp_seconds                   end of the last successful pass
    syncer_sync_errors_total{stage}                      failed passes / watch errors per stage
    syncer_pull_request_open{installation}               1 while syncer's PR (or branch) is open
    syncer_watch_restarts_total                          watch streams re-established after an error

plus ``syncer_unreadable_objects{installation,kind}`` (tracked objects the account may not
read: the Role lacks their grant), ``syncer_failing_objects{installation}`` (objects or files that could not be compared in
the latest pass: a hostile or broken object costs only itself, and this says so),
``syncer_leader{installation}``, ``syncer_ready{installation}`` (1 while ``/readyz`` answers 200,
computed at each scrape), ``syncer_outages_total{installation}``,
``syncer_passes_total{installation,result}`` (``ok``, ``error``, ``follower``, or
``retry_later``: commit mode's pushes all lost the race to other pushes, retried later), ``syncer_internal_errors_total{installation}``
(passes a bug ended: ``Loop.crashed``) and ``syncer_credentials_rejected_total{upstream}``
(requests an upstream answered by rejecting syncer's credentials: ``api-server`` 401s, ``forge``
401s, ``git`` authentication failures; ``/readyz`` is 503 while the latest answer was one).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from syncer.detect.classify import parse_time
from syncer.model import DriftClass, ObjectRef, Result

#: Stages a failure is counted under.
STAGES = ("watch", "git", "forge", "detect", "state", "object")
#: Upstreams whose rejections of syncer's credentials are counted.
UPSTREAMS = ("api-server", "forge", "git")


class Metrics:
    def __init__(self, installation: str, registry: CollectorRegistry | None = None) -> None:
        self.installation = installation
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.drift_objects = Gauge("syncer_drift_objects", "Objects whose live state differs from git, per class.",
                                   ["installation", "class"], registry=r)
        self.drift_age = Gauge("syncer_drift_age_seconds",
                               "Seconds since the oldest difference of an object appeared.",
                               ["installation", "kind", "name"], registry=r)
        self.last_sync = Gauge("syncer_last_sync_timestamp_seconds",
                               "Unix time at which the last successful pass ended.", registry=r)
        self.sync_errors = Counter("syncer_sync_errors", "Failures, per stage (watch, git, forge, detect, state).",
                                   ["stage"], registry=r)
        self.pr_open = Gauge("syncer_pull_request_open", "1 while syncer's pull request (or branch) is open.",
                             ["installation"], registry=r)
        self.watch_restarts = Counter("syncer_watch_restarts", "Watch streams re-established after an error.",
                                      registry=r)
        self.failing = Gauge("syncer_failing_objects",
                             "Objects or files that could not be compared in the latest pass (see the log).",
                             ["installation"], registry=r)
        self.ready = Gauge("syncer_ready", "1 while /readyz answers 200: the API server and the git remote were "
                           "reached recently.", ["installation"], registry=r)
        self.leader = Gauge("syncer_leader", "1 while this replica holds the leader Lease (or runs alone).",
                            ["installation"], registry=r)
        self.outages = Counter("syncer_outages", "Endpoints outages (cleared, then back) seen end to end.",
                               ["installation"], registry=r)
        self.passes = Counter("syncer_passes", "Passes run, by result (ok, error, follower, retry_later).",
                              ["installation", "result"], registry=r)
        self.internal_errors = Counter(
            "syncer_internal_errors", "Passes a bug in syncer ended (an exception outside its error tree; the "
            "log has the traceback).", ["installation"], registry=r)
        self.internal_errors.labels(installation).inc(0)
        self.credentials_rejected = Counter(
            "syncer_credentials_rejected", "Requests an upstream (api-server, forge, git) answered by rejecting "
            "syncer's credentials (401): an expired or revoked token.", ["upstream"], registry=r)
        for upstream in UPSTREAMS:
            self.credentials_rejected.labels(upstream).inc(0)
        for stage in STAGES:
            self.sync_errors.labels(stage).inc(0)
        for cls in DriftClass:
            self.drift_objects.labels(installation, cls.value).set(0)
        self.pr_open.labels(installation).set(0)
        self.failing.labels(installation).set(0)
        self.unreadable = Gauge("syncer_unreadable_objects",
                                "Tracked objects this account may not read (403), per kind: a grant missing "
                                "from the Role (the log names it).", ["installation", "kind"], registry=r)
        self._aged: set[tuple[str, str]] = set()
        self._unreadable_kinds: set[str] = set()

    def error(self, stage: str) -> None:
        self.sync_errors.labels(stage).inc()

    def internal_error(self) -> None:
        """A bug ended a pass (``Loop.crashed``)."""
        self.internal_errors.labels(self.installation).inc()

    def rejected(self, upstream: str) -> None:
        """``upstream`` (one of ``UPSTREAMS``) rejected syncer's credentials once more."""
        self.credentials_rejected.labels(upstream).inc()

    def observe(self, result: Result, now: datetime, observed_since: Mapping[ObjectRef, datetime]) -> None:
        """Drift gauges from one pass's ``result``; objects no longer drifting drop out."""
        self.failing.labels(self.installation).set(len(result.errors))
        kinds: dict[str, int] = {}
        for ref in result.unreadable:
            kinds[ref.kind] = kinds.get(ref.kind, 0) + 1
        for kind in self._unreadable_kinds - set(kinds):
            self.unreadable.labels(self.installation, kind).set(0)  # granted since: back to 0, not gone
        for kind, count in kinds.items():
            self.unreadable.labels(self.installation, kind).set(count)
        self._unreadable_kinds |= set(kinds)
        if result.errors:
            self.error("object")
        classes: dict[DriftClass, set[ObjectRef]] = {cls: set() for cls in DriftClass}
        oldest: dict[ObjectRef, datetime] = {}
        for d in result.drifts:
            classes[d.cls].add(d.ref)
            since = parse_time(d.changed_at) or observed_since.get(d.ref) or now
            if d.ref not in oldest or since < oldest[d.ref]:
                oldest[d.ref] = since
        for cls, refs in classes.items():
            self.drift_objects.labels(self.installation, cls.value).set(len(refs))
        ages: dict[tuple[str, str], float] = {}
        for ref, since in oldest.items():
            key = (ref.kind, ref.name)  # the same name in two namespaces: the older drift wins
            ages[key] = max(ages.get(key, 0.0), (now - since).total_seconds())
        for key, age in ages.items():
            self.drift_age.labels(self.installation, *key).set(max(0.0, age))
        aged = set(ages)
        for key in self._aged - aged:
            self.drift_age.remove(self.installation, *key)
        self._aged = aged

    def render(self) -> bytes:
        return generate_latest(self.registry)
