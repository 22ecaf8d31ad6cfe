"""Which webhooks an outcome sends, for the one-shot ``syncer sync`` and the sidecar alike.

An ``Alert`` is an event name (``notify.EVENTS``) and its payload; ``send`` adds the
installation and posts them through a ``Notifier``. The events and their payloads are
built here only, so a pull request or an undeclared address reads the same whichever entry
point saw it:

* ``pr.opened``/``pr.updated``/``pr.closed``: the pull request, with the drifts written;
* ``drift.undeclared``: an Endpoints (or the Service whose EndpointSlices were judged
  together) pointing at an address no candidate list declares;
* ``drift.cleared``: an Endpoints without a ready address (never written to git).

What differs is memory. ``one_shot`` reports what one run sees now: the PR event, and every
undeclared or cleared subject. The sidecar keeps a ``Tracker`` across passes: an undeclared
address is sent once (again when it changes), and an outage is sent when it ends, with its
start and end (``Outage``), since a flapping backend must not send a message per pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from syncer.detect.classify import parse_time
from syncer.detect.endpoints import SLICE
from syncer.logs import event
from syncer.model import JSON, Drift, DriftClass, ObjectRef, Result

if TYPE_CHECKING:
    from syncer.writeback.notify import Notifier
    from syncer.writeback.deliver import Outcome

log = logging.getLogger("syncer.loop")  # the loop's logger: JSON logs name it, and queries filter on it

#: An event name and its payload (without the installation, which ``send`` adds).
Alert = tuple[str, JSON]

#: When the given objects last changed, from the watch's change times (or None).
ChangedAt = Callable[[set[ObjectRef], Mapping[ObjectRef, datetime]], "datetime | None"]

#: Ended outages the sidecar remembers (``/`` status, tests).
MAX_OUTAGES = 100


def subject(d: Drift) -> ObjectRef:
    """What an outage or an undeclared address is about: the Endpoints itself, or the Service
    whose slices were judged together (one report for all of them)."""
    if d.ref.kind == SLICE and d.service:
        return ObjectRef("v1", "Service", d.ref.namespace, d.service)
    return d.ref


def iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Outage:
    """An Endpoints without a ready address, from ``started_at`` to ``ended_at``."""

    ref: ObjectRef
    started_at: datetime
    ended_at: datetime | None = None
    was: str | None = None  # what git declares

    def to_json(self) -> JSON:
        end = self.ended_at
        return {"kind": self.ref.kind, "namespace": self.ref.namespace, "name": self.ref.name,
                "started_at": iso(self.started_at), "ended_at": iso(end) if end else None,
                "duration_seconds": (end - self.started_at).total_seconds() if end else None, "git": self.was}


# -- the events -----------------------------------------------------------------------

def pr_alert(out: "Outcome") -> Alert | None:
    """The pull request's event, when it was opened, updated or closed."""
    if out.pr is None or out.pr.outcome.value not in ("opened", "updated", "closed"):
        return None
    return (f"pr.{out.pr.outcome.value}", {"summary": out.pr.message, "pr": out.pr.pr,
                                           "drifts": [d.to_json() for d in out.written]})


def drift_alert(key: ObjectRef, drifts: Sequence[Drift]) -> Alert:
    """An undeclared or cleared subject as one run sees it: its drifts (all of one class)."""
    return (f"drift.{drifts[0].cls.value}", {"summary": f"{key}: {drifts[0].detail}",
                                             "drifts": [d.to_json() for d in drifts]})


def outage_alert(outage: Outage, drifts: Sequence[Drift], seen_end: datetime | None = None) -> Alert:
    """An outage that ended, with its start, end and duration. ``seen_end`` is the end as
    observed, shown in the summary even when a skewed clock puts it before the start (the
    outage's own ``ended_at`` is never before its start)."""
    assert outage.ended_at is not None
    duration = (outage.ended_at - outage.started_at).total_seconds()
    return ("drift.cleared", {
        "summary": f"{outage.ref} had no ready address from {iso(outage.started_at)} to "
                   f"{iso(seen_end or outage.ended_at)} ({duration:.0f}s)",
        "outage": outage.to_json(),
        "drifts": [d.to_json() for d in drifts]})


def by_subject(result: Result, cls: DriftClass) -> dict[ObjectRef, list[Drift]]:
    """The drifts of class ``cls``, grouped by subject, in the order first seen."""
    grouped: dict[ObjectRef, list[Drift]] = {}
    for d in result.drifts:
        if d.cls is cls:
            grouped.setdefault(subject(d), []).append(d)
    return grouped


def with_pr(out: "Outcome", drift_alerts: Sequence[Alert]) -> list[Alert]:
    """What a write-back sends, in order: its PR event (if any), then the drift events."""
    pr = pr_alert(out)
    return [*([pr] if pr is not None else []), *drift_alerts]


def one_shot(out: "Outcome") -> list[Alert]:
    """``syncer sync``: the PR event, then every undeclared or cleared subject seen now."""
    grouped: dict[tuple[DriftClass, ObjectRef], list[Drift]] = {}
    for d in out.result.drifts:
        if d.cls in (DriftClass.UNDECLARED, DriftClass.CLEARED):
            grouped.setdefault((d.cls, subject(d)), []).append(d)
    return with_pr(out, [drift_alert(key, ds) for (_, key), ds in grouped.items()])


def send(notifier: "Notifier | None", installation: str, alerts: Sequence[Alert]) -> list[str]:
    """Post every alert; one message per failed delivery (``Notifier`` never raises)."""
    failures: list[str] = []
    if notifier is not None:
        for name, payload in alerts:
            failures += notifier.notify(name, {"installation": installation, **payload})
    return failures


# -- the sidecar's memory across passes -----------------------------------------------

class Tracker:
    """Outages and undeclared addresses across passes; logs each start, change and end.

    ``observe`` returns the drift alerts a pass raises: ended outages first, then undeclared
    addresses new or changed since the last pass (``with_pr`` puts the PR event first).
    ``changed_at(refs, since)`` tells when objects last changed (an outage ends when its
    Endpoints got an address back); ``since`` is when the watch saw each object change.
    """

    def __init__(self, changed_at: ChangedAt) -> None:
        self.changed_at = changed_at
        self._open: dict[ObjectRef, Outage] = {}
        self._members: dict[ObjectRef, set[ObjectRef]] = {}  # the objects an open outage is seen in
        self._undeclared: dict[ObjectRef, Any] = {}
        self._undeclared_members: dict[ObjectRef, set[ObjectRef]] = {}
        self.outages: list[Outage] = []  # ended outages, newest last (at most MAX_OUTAGES)

    def observe(self, result: Result, now: datetime,
                since: Mapping[ObjectRef, datetime]) -> tuple[list[Outage], list[Alert]]:
        """The outages that ended in this pass, and the alerts to send."""
        ended, alerts = self._outages(result, now, since)
        return ended, alerts + self._undeclared_alerts(result)

    def _outages(self, result: Result, now: datetime,
                 since: Mapping[ObjectRef, datetime]) -> tuple[list[Outage], list[Alert]]:
        cleared = by_subject(result, DriftClass.CLEARED)
        for d in result.drifts:  # every slice seen moving while the Service is out: its end is theirs
            if subject(d) in cleared or subject(d) in self._open:
                self._members.setdefault(subject(d), set()).add(d.ref)
        for key, ds in cleared.items():
            if key not in self._open:
                start = min((t for t in (parse_time(d.changed_at) for d in ds) if t is not None), default=None) \
                    or min((since[d.ref] for d in ds if d.ref in since), default=None) or now
                was = " ".join(d.git for d in ds if d.git) or None
                self._open[key] = Outage(key, start, None, was)
                event(log, logging.WARNING, "outage started: no ready address (never written to git)", ref=key,
                      since=iso(start), git=was)
        ended: list[Outage] = []
        alerts: list[Alert] = []
        checked = set(result.checked)
        for key in [k for k in self._open if k not in cleared and self._members.get(k, {k}) & checked]:
            outage = self._open.pop(key)
            end = self.changed_at(self._members.pop(key, {key}), since) or now
            done = Outage(key, outage.started_at, max(end, outage.started_at), outage.was)
            self.outages = [*self.outages[-(MAX_OUTAGES - 1):], done]
            ended.append(done)
            event(log, logging.WARNING, "outage ended", ref=key, started_at=iso(done.started_at),
                  ended_at=iso(end), duration_seconds=done.to_json()["duration_seconds"])
            alerts.append(outage_alert(done, [d for d in result.drifts if subject(d) == key], end))
        return ended, alerts

    def _undeclared_alerts(self, result: Result) -> list[Alert]:
        alerts: list[Alert] = []
        seen = by_subject(result, DriftClass.UNDECLARED)
        for key, ds in seen.items():
            self._undeclared_members[key] = {d.ref for d in ds}
            live = " ".join(sorted({a for d in ds for a in str(d.live or "").split()})) or None
            if self._undeclared.get(key) != live:
                self._undeclared[key] = live
                event(log, logging.WARNING, "undeclared address: in no candidate list", ref=key, live=live,
                      git=" ".join(d.git for d in ds if d.git) or None, manager=ds[0].manager)
                alerts.append(drift_alert(key, ds))
        checked = set(result.checked)
        for key in [k for k in self._undeclared if k not in seen and self._undeclared_members.get(k, {k}) & checked]:
            del self._undeclared[key]
            self._undeclared_members.pop(key, None)
        return alerts
