"""The sidecar's scheduler (``syncer.sidecar.schedule``): pure arithmetic over times.

No threads, no sleeps, no clock: every call gets ``now`` as a number, so a morning of events
is a handful of assertions.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef
from syncer.sidecar.schedule import Schedule, Timing, stable_deadline

T0 = 1_000_000.0
TIMING = Timing(debounce=5.0, debounce_max=30.0, resync=600.0, retry_base=5.0, retry_cap=300.0)


def started(now: float = T0) -> Schedule:
    """A schedule whose start pass has run at ``now``."""
    s = Schedule(TIMING, now)
    assert s.due(now) == "start"
    s.started(now)
    s.succeeded()
    return s


def test_the_first_pass_is_due_at_once_then_nothing_until_the_resync() -> None:
    s = Schedule(TIMING, T0)
    assert s.due(T0) == "start" and s.next_wakeup(T0) == T0
    s.started(T0)
    assert s.due(T0) is None and s.due(T0 + 599.9) is None
    assert s.next_wakeup(T0) == T0 + 600
    assert s.due(T0 + 600) == "resync"


def test_a_burst_is_one_pass_after_it_has_been_quiet_for_the_debounce() -> None:
    s = started()
    first = T0 + 10
    for i in range(4):  # an event a second
        last = first + i
        assert s.due(last, first, last) is None
        assert s.next_wakeup(last, first, last) == last + 5
    assert s.due(last + 4.9, first, last) is None
    assert s.due(last + 5, first, last) == "change"


def test_a_stream_that_never_goes_quiet_still_gets_a_pass_at_debounce_max() -> None:
    s = started()
    first = T0 + 10
    last = first + 29.5  # events every half second since ``first``
    assert s.next_wakeup(last, first, last) == first + 30
    assert s.due(first + 29.9, first, first + 29.8) is None
    assert s.due(first + 30, first, first + 29.9) == "change"


def test_debounce_max_is_never_shorter_than_the_debounce() -> None:
    s = Schedule(Timing(debounce=60.0, debounce_max=10.0), T0)
    s.started(T0)
    assert s.next_wakeup(T0 + 1, T0 + 1, T0 + 1) == T0 + 61


def test_transient_failures_back_off_exponentially_up_to_the_cap() -> None:
    s = started()
    now, delays = T0, []
    for _ in range(9):
        s.started(now)
        delays.append(s.failed(now, transient=True))
        assert s.due(now + delays[-1] - 0.1) is None
        assert s.next_wakeup(now) == now + delays[-1]
        now += delays[-1]
        assert s.due(now) == "retry"
    assert delays == [5, 10, 20, 40, 80, 160, 300, 300, 300]
    s.started(now)
    s.succeeded()
    assert s.failed(now, transient=True) == 5  # a success resets the count


def test_a_pending_retry_holds_back_changes_and_resyncs() -> None:
    s = started()
    s.started(T0 + 1)
    assert s.failed(T0 + 1, transient=True) == 5
    assert s.due(T0 + 3, T0 + 1, T0 + 1) is None  # the change is settled, but the retry waits
    s.request("change")  # not a reason that runs at once: the retry keeps its reason and time
    assert s.due(T0 + 3) is None and s.due(T0 + 6) == "retry"
    assert s.next_wakeup(T0 + 3) == T0 + 6


@pytest.mark.parametrize("reason", ["config", "requested"])
def test_a_config_reload_or_a_new_leader_does_not_wait_out_a_retry(reason: str) -> None:
    s = started()
    s.started(T0 + 1)
    assert s.failed(T0 + 1, transient=True) == 5
    s.request(reason)  # a new leader must not leave the PR as the old one left it for 5 s
    assert s.due(T0 + 2) == reason and s.next_wakeup(T0 + 2) == T0 + 2
    s.started(T0 + 2)
    assert s.failed(T0 + 2, transient=True) == 10  # it failed again: the backoff goes on growing
    assert s.due(T0 + 3) is None


def test_a_request_runs_at_once() -> None:
    s = started()
    s.request("config")
    assert s.due(T0 + 1) == "config" and s.next_wakeup(T0 + 1) == T0 + 1


def test_a_permanent_failure_waits_for_the_next_change_or_resync() -> None:
    s = started()
    s.started(T0 + 1)
    assert s.failed(T0 + 1, transient=False) == 0
    assert s.due(T0 + 2) is None and s.next_wakeup(T0 + 2) == T0 + 601
    assert s.due(T0 + 20, T0 + 10, T0 + 10) == "change"


def test_an_earlier_request_keeps_its_reason_and_again_replaces_it() -> None:
    s = started()
    s.request("requested")
    s.request("config")
    assert s.due(T0) == "requested"
    s.again("recheck")
    assert s.due(T0) == "recheck"
    s.started(T0)
    assert s.due(T0) is None


def test_a_crash_waits_the_longest_retry() -> None:
    s = started()
    s.crashed(T0)
    assert s.next_wakeup(T0, T0 - 50, T0 - 50) == T0 + 300  # the change is settled, the wait is not over
    assert s.due(T0 + 299, T0 - 50, T0 - 50) is None
    assert s.due(T0 + 300, T0 - 50, T0 - 50) == "change"


def test_a_waiting_difference_gets_a_pass_when_stable() -> None:
    s = started()
    s.wait_for(T0 + 120)
    assert s.next_wakeup(T0) == T0 + 120
    assert s.due(T0 + 119) is None and s.due(T0 + 120) == "stable"
    s.wait_for(None)
    assert s.next_wakeup(T0) == T0 + 600


def _drift(name: str, action: Action, changed_at: str | None) -> Drift:
    ref = ObjectRef("v1", "Endpoints", "ai", name)
    return Drift(ref, "hosts/a/e.yaml", ("subsets",), "10.0.0.1", "10.0.0.2", Direction.CLUSTER, DriftClass.PICK,
                 action, "mgr", changed_at, "10.0.0.1 → 10.0.0.2", "")


def test_stable_deadline_is_the_first_future_change_time_plus_stable_for() -> None:
    now = datetime(2026, 8, 21, 7, 0, tzinfo=timezone.utc)
    seen = ObjectRef("v1", "Endpoints", "ai", "seen")
    drifts = [_drift("a", Action.WAIT, "2026-08-21T06:58:00Z"),  # stable at 07:03
              _drift("b", Action.WAIT, "2026-08-21T06:59:00Z"),  # 07:04
              _drift("old", Action.WAIT, "2026-08-21T06:00:00Z"),  # long stable: not in the future
              _drift("w", Action.WRITE, "2026-08-21T06:59:30Z"),  # not waiting
              _drift("seen", Action.WAIT, None)]  # no managedFields time: when the watch saw it
    since = {seen: now - timedelta(seconds=150)}  # stable at 07:02:30, the first
    deadline = stable_deadline(drifts, 300.0, since, now.timestamp())
    assert deadline == (now + timedelta(seconds=150)).timestamp()
    assert stable_deadline(drifts[:2], 300.0, {}, now.timestamp()) == datetime(
        2026, 8, 21, 7, 3, tzinfo=timezone.utc).timestamp()
    assert stable_deadline(drifts[2:4], 300.0, {}, now.timestamp()) is None


def test_a_new_leader_asking_during_a_pass_that_then_fails_is_not_made_to_wait() -> None:
    """Was: ``failed`` set the retry over a request made while the pass ran, so a new leader
    sat out the backoff (up to ``retry_cap``)."""
    s = started()
    s.started(T0 + 1)
    s.request("requested")  # leadership changed while the pass was running
    assert s.failed(T0 + 2, transient=True) == 5
    assert s.due(T0 + 2) == "requested"
