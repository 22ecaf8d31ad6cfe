"""Leader election with a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection does it.

Only the leader writes (git, forge, state record); followers watch and compute metrics.

* acquire: GET the Lease; absent -> POST it with us as holder (409: another replica was
  first). Held by someone else and renewed recently -> follower. Free, ours, or expired ->
  PUT with ``metadata.resourceVersion`` (409: someone else won the race).
* renew: every ``renew`` seconds, a PUT of our own last copy (no GET needed while nobody
  else writes; a 409 falls back to the GET path).
* expiry is judged on *our* monotonic clock: a Lease counts as expired when its record has
  not changed for ``duration`` seconds since we last saw it change -- clock skew between
  nodes does not matter (client-go does the same).
* we stop acting as leader ``renew_deadline`` after our last successful renew (before the
  Lease can expire for the others), and release it on shutdown (holder cleared).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from syncer.errors import ClusterError
from syncer.kube import Conflict, Kube
from syncer.logs import event
from syncer.model import JSON

log = logging.getLogger("syncer.lease")

#: How long a Lease is valid without renewal: a crashed leader is replaced within this.
LEASE_DURATION = 15.0
#: How often the leader renews: three chances per lease duration.
RENEW_INTERVAL = 5.0


def identity() -> str:
    """Pod name (env ``POD_NAME``), else host name and process id."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{os.getpid()}"


def _micro_time(when: float) -> str:
    return datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, api: Kube, namespace: str, name: str, holder: str, *, duration: float = LEASE_DURATION,
                 renew: float = RENEW_INTERVAL, monotonic: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time, on_change: Callable[[bool], None] = lambda _: None) -> None:
        self.api, self.namespace, self.name, self.holder = api, namespace, name, holder
        self.duration, self.renew = duration, renew
        self.renew_deadline = duration * 2 / 3
        self.monotonic, self.wall = monotonic, wall
        self.on_change = on_change
        self._lock = threading.Lock()
        self._lease: JSON | None = None  # our last copy
        self._seen: tuple[Any, ...] | None = None  # the others' record, as last observed
        self._seen_at = 0.0
        self._renewed_at: float | None = None  # last successful acquire/renew (monotonic)
        self._was_leader = False
        self.stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"

    def is_leader(self) -> bool:
        with self._lock:
            return self._renewed_at is not None and self.monotonic() - self._renewed_at < self.renew_deadline

    # -- one round ------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True while we hold the Lease. API failures count as 'not renewed'."""
        try:
            held = self._attempt()
        except ClusterError as exc:
            event(log, logging.WARNING, "lease: cannot reach the API server", ref=self._ref(), error=exc.message)
            held = False
        with self._lock:
            if held:
                self._renewed_at = self.monotonic()
        leader = self.is_leader()
        if leader != self._was_leader:
            self._was_leader = leader
            event(log, logging.INFO, "became leader" if leader else "lost leadership", ref=self._ref(),
                  holder=self.holder)
            self.on_change(leader)
        return leader

    def _ref(self) -> str:
        return f"Lease/{self.namespace}/{self.name}"

    def _spec(self, old: JSON | None) -> JSON:
        now = _micro_time(self.wall())
        spec = dict(old or {})
        if spec.get("holderIdentity") != self.holder:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if old else 0)
        spec.update(holderIdentity=self.holder, leaseDurationSeconds=int(self.duration), renewTime=now)
        return spec

    def _attempt(self) -> bool:
        mine = self._lease
        if mine is not None and (mine.get("spec") or {}).get("holderIdentity") == self.holder:
            if self._put(mine, self._spec(mine.get("spec"))):  # fast renew, no GET
                return True
        current = self.api.call("GET", f"{self.path}/{self.name}", what=f"get {self._ref()}")
        if current is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace}, "spec": self._spec(None)}
            try:
                self._lease = self.api.call("POST", self.path, body=body, what=f"create {self._ref()}")
            except Conflict:  # another replica created it first
                return False
            return True
        spec = current.get("spec") or {}
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        now = self.monotonic()
        if record != self._seen:
            self._seen, self._seen_at = record, now
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.duration)
        if holder and holder != self.holder and now - self._seen_at < duration:
            self._lease = current
            return False
        return self._put(current, self._spec(spec))

    def _put(self, lease: JSON, spec: JSON) -> bool:
        meta = {k: v for k, v in (lease.get("metadata") or {}).items() if k != "managedFields"}
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}
        try:
            updated = self.api.call("PUT", f"{self.path}/{self.name}", body=body, what=f"update {self._ref()}")
        except Conflict:
            self._lease = None
            return False
        self._lease = updated
        return updated is not None

    # -- the thread -----------------------------------------------------------------

    def start(self) -> "LeaderElector":
        self._thread = threading.Thread(target=self._run, name="lease", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self.stopped.is_set():
            self.try_acquire_or_renew()
            # Followers look as often as the leader renews: a takeover comes at most one
            # interval after expiry, and an idle replica costs one request per interval.
            self.stopped.wait(self.renew)

    def stop(self, release: bool = True) -> None:
        self.stopped.set()
        if self._thread is not None:
            self._thread.join(2.0)
        if release:
            self.release()

    def release(self) -> None:
        """Give the Lease up (holder cleared), so a follower takes over without waiting."""
        with self._lock:
            held = self._renewed_at is not None
            self._renewed_at = None
        mine = self._lease
        if not held or mine is None or (mine.get("spec") or {}).get("holderIdentity") != self.holder:
            return
        spec = dict(mine.get("spec") or {})
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=_micro_time(self.wall()))
        try:
            self._put(mine, spec)
            event(log, logging.INFO, "released the lease", ref=self._ref(), holder=self.holder)
        except ClusterError as exc:
            event(log, logging.WARNING, "could not release the lease; it expires by itself", ref=self._ref(),
                  error=exc.message)
        if self._was_leader:
            self._was_leader = False
            self.on_change(False)
