"""``syncer run``: the parts of the sidecar, started and stopped in the right order.

The CLI builds the real clients (Kubernetes ``ApiClient``, git ``Workspace``, forge,
notifier) and hands them to ``Sidecar``; tests hand it clients pointed at loopback fakes.

Start: probe the state-record and Lease permissions once with the real request (a 403 is a
startup error naming verb and resource), list and watch every tracked object (one it may not
read is a warning naming the grant, and a gap in ``syncer_unreadable_objects``; the rest goes on), take part in leader election,
serve HTTP, watch the ``--config`` directory, run the loop.

Stop (SIGTERM): stop the watches, let the current pass finish for up to ``grace`` seconds,
else abandon it (the next pass starts by resetting the clone to the remote base branch, and
branch pushes are atomic, so nothing half-written can remain), release the Lease only when no
pass is still running, stop HTTP.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syncer.cache import Caches
from syncer.config import Config, parse_config
from syncer.errors import ClusterError, ConfigError, CredentialsRejected
from syncer.filewatch import DirWatcher
from syncer.gitrepo import Workspace
from syncer.kube import ApiError, Conflict, Kube, Refused
from syncer.gather.live import KubeSource
from syncer.logs import event
from syncer.sidecar.lease import LEASE_DURATION, RENEW_INTERVAL, LeaderElector, identity
from syncer.sidecar.livecache import LiveCache
from syncer.sidecar.loop import Loop, LoopSettings, tracked_refs
from syncer.sidecar.metrics import Metrics
from syncer.sidecar.server import Health, StatusServer
from syncer.sidecar.state import DEFAULT_NAME, ConfigMapStore
from syncer.sidecar.watch import WatchSettings
from syncer.sidecar.watchset import WatchSet
from syncer.writeback.deliver import load_installation
from syncer.model import JSON, ObjectRef

if TYPE_CHECKING:
    from syncer.forges.base import Forge
    from syncer.writeback.notify import Notifier

log = logging.getLogger("syncer.sidecar")


class StartupError(ConfigError):
    """The sidecar cannot run as configured (typically: a permission is missing)."""


@dataclass(frozen=True)
class SidecarSettings:
    loop: LoopSettings
    watch: WatchSettings = field(default_factory=WatchSettings)
    listen: tuple[str, int] | None = ("0.0.0.0", 8080)
    state_configmap: str | None = DEFAULT_NAME  # None: no state record
    leader_elect: bool = False
    lease_name: str = ""  # default syncer-<installation>
    lease_duration: float = LEASE_DURATION
    lease_renew: float = RENEW_INTERVAL
    holder: str = ""  # default: POD_NAME, else host name and pid
    config_file: Path | None = None
    #: How long start() waits for every watch's first answer (list + watch) before going on.
    startup_timeout: float = 30.0
    #: SIGTERM: how long the current pass may still run; the kubelet's default grace is 30 s
    #: and we promise to exit within 10 s.
    grace: float = 7.0


class ConfigOverride:
    """``--config FILE``: syncer.conf kept outside the repository (typically a mounted ConfigMap)."""

    def __init__(self, path: Path, installation: str) -> None:
        self.path, self.installation = path, installation
        self.current = self.read()
        self.generation = 0

    def read(self) -> Config:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--config {self.path}: cannot read: {exc}") from exc
        return parse_config(text, str(self.path), self.installation)

    def reload(self) -> bool:
        """Re-read the file; True when the config changed. A broken file keeps the old config."""
        try:
            new = self.read()
        except ConfigError as exc:
            event(log, logging.ERROR, "config reload failed; keeping the previous config", ref=str(self.path),
                  error=exc.message)
            return False
        if new == self.current:
            return False
        self.current, self.generation = new, self.generation + 1
        event(log, logging.INFO, "config reloaded", ref=str(self.path), stableFor=new.stable_for)
        return True


def probe(api: Kube, kind: str, path: str, namespace: str, name: str, body: JSON) -> list[str]:
    """Try get, then update (and create when absent) with dryRun: the real requests, nothing
    written. Returns one message per verb the API server refused."""
    missing: list[str] = []
    ref = f"{kind} {namespace}/{name}"

    def attempt(verb: str, method: str, url: str, query: list[tuple[str, str]], payload: Any = None,
                refused: Callable[[ApiError], bool] = lambda _: True) -> Any:
        try:
            return api.call(method, url, query=query, body=payload, what=f"{verb} {ref}")
        except Refused as exc:
            if refused(exc):
                missing.append(f"cannot {verb} {ref}: {exc.message}")
        except Conflict:  # 409 on a dry-run create: it exists, so create is allowed
            pass
        return None

    current = attempt("get", "GET", f"{path}/{name}", [])
    if missing:
        return missing
    dry = [("dryRun", "All")]
    if current is None:
        attempt("create", "POST", path, dry, body)
    create_refused = bool(missing)

    def update_refused(exc: ApiError) -> bool:
        # A PUT of an absent object whose kind allows create-on-update (Lease) is authorized
        # as `create` too, after `update` passed; kube-apiserver refuses that with an empty
        # reason ('leases.coordination.k8s.io "x" is forbidden: '). When create was already
        # refused, that is the same missing create, not a missing update.
        return not (create_refused and "cannot update" not in exc.message)

    meta = {k: v for k, v in ((current or body).get("metadata") or {}).items() if k != "managedFields"}
    attempt("update", "PUT", f"{path}/{name}", dry, {**(current or body), "metadata": meta}, update_refused)
    return missing


class Sidecar:
    def __init__(self, api: Kube, ws: Workspace, settings: SidecarSettings, *, forge: "Forge | None" = None,
                 notifier: "Notifier | None" = None, clock: Callable[[], float] = time.time) -> None:
        self.api, self.ws, self.settings = api, ws, settings
        s = settings.loop
        self.installation = s.installation
        self.metrics = Metrics(s.installation)
        self.stop_event = threading.Event()
        self.cache = LiveCache(api.host, clock=clock, on_change=self._changed)
        self.cache.on_rejected = lambda: self.metrics.rejected("api-server")
        self.cache.lister = KubeSource(api)  # untracked objects (``untracked:``) are listed at each pass
        self.health = Health(self.cache, tick=s.timing.tick, resync=s.timing.resync, clock=clock)
        self.health.git_reached()  # ``ws`` was just cloned (or fetched) from the remote: it answered
        self.watches = WatchSet(api, self.cache, settings.watch, on_restart=self.metrics.watch_restarts.inc,
                                on_error=lambda: self.metrics.error("watch"))
        self.override = ConfigOverride(settings.config_file, s.installation) if settings.config_file else None
        self.caches = Caches()  # what this installation remembers across passes (syncer/cache.py)
        loaded = load_installation(ws.path, s.installation, self.override.current if self.override else None,
                                   caches=self.caches, tools=s.tools, include=ws.include)
        self.namespace = loaded.config.namespace
        #: the objects to watch at start (the loop tells the watches later ones; dropped once started)
        self.refs: frozenset[ObjectRef] = tracked_refs(loaded, self.caches)
        self.cache.declare(loaded.manifests.objects)  # the first lists share what is the same in git
        self.store = (ConfigMapStore(api, self.namespace, s.installation, settings.state_configmap)
                      if settings.state_configmap else None)
        self.elector = (LeaderElector(api, self.namespace, settings.lease_name or f"syncer-{s.installation}",
                                      settings.holder or identity(), duration=settings.lease_duration,
                                      renew=settings.lease_renew, on_change=self._leadership)
                        if settings.leader_elect else None)
        self.loop = Loop(s, ws, self.cache, metrics=self.metrics, health=self.health, forge=forge, store=self.store,
                         notifier=notifier, is_leader=self.is_leader, config=self._config,
                         on_refs=self.watches.reconcile, clock=clock, caches=self.caches,
                         probe=None if self.store is not None else self._probe)
        self.server: StatusServer | None = None
        self.dirwatch: DirWatcher | None = None
        self._thread: threading.Thread | None = None
        self.metrics.leader.labels(s.installation).set(0 if self.elector else 1)

    def _probe(self) -> None:
        """One request that needs accepted credentials (a pass without a state record makes it):
        a rejection (401) is raised, any other answer means they were taken."""
        try:
            self.api.call("GET", "/version", what="get the API server's version")
        except CredentialsRejected:
            raise
        except ClusterError:
            return  # unreachable, or an answer without the version: the watches say which
        self.cache.accepted()

    def is_leader(self) -> bool:
        return self.elector.is_leader() if self.elector is not None else True

    def _config(self) -> Config | None:
        return self.override.current if self.override is not None else None

    def _changed(self) -> None:
        self.loop.wake()

    def _leadership(self, leader: bool) -> None:
        self.metrics.leader.labels(self.installation).set(1 if leader else 0)
        if leader:
            self.loop.poke("requested")  # a new leader looks at once instead of at the next resync

    def _config_changed(self, _paths: set[str]) -> None:
        if self.override is not None and self.override.reload():
            self.loop.poke("config")

    def check_permissions(self) -> None:
        """Probe state and lease verbs; a missing one is a ``StartupError`` naming it."""
        missing: list[str] = []
        try:
            if self.store is not None:
                body = {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": self.store.name, "namespace": self.namespace}}
                missing += probe(self.api, "ConfigMap", self.store.path, self.namespace, self.store.name, body)
            if self.elector is not None:
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": self.elector.name, "namespace": self.namespace}, "spec": {}}
                missing += probe(self.api, "Lease", self.elector.path, self.namespace, self.elector.name, body)
        except ClusterError as exc:  # unreachable, 5xx: not a permission problem; readiness will say
            event(log, logging.WARNING, "could not probe permissions", error=exc.message)
        if missing:
            raise StartupError("missing permission (fix the Role): " + "; ".join(missing))

    def start(self, run_loop: bool = True) -> "Sidecar":
        """Start everything; ``run_loop=False`` leaves the loop to the caller's ``loop.step()``."""
        s = self.settings
        if self.server is not None:  # `syncer run` served the probes while it cloned: take that server over
            self.server.health, self.server.metrics = self.health, self.metrics
        self.check_permissions()
        self.watches.reconcile(self.refs)
        refused = self.watches.wait_first(s.startup_timeout)
        rejected = [e for e in refused if isinstance(e, CredentialsRejected)]
        refused = [e for e in refused if not isinstance(e, CredentialsRejected)]
        if rejected:  # nothing can be read: not ready until the API server takes them
            event(log, logging.ERROR, "the API server rejects syncer's credentials: not ready; retrying with "
                  "backoff (a new token is read at the next request)", error=rejected[0].message)
        if refused:  # each named once by its watcher; the rest of the installation goes on
            event(log, logging.WARNING, f"{len(refused)} tracked object(s) not readable by this account; syncing "
                  "the rest (see syncer_unreadable_objects)", objects=len(self.refs))
        if self.elector is not None:
            self.elector.try_acquire_or_renew()
            self.elector.start()
        if s.listen is not None and self.server is None:
            self.server = StatusServer(s.listen[0], s.listen[1], self.health, self.metrics).start()
        if self.override is not None and s.config_file is not None:
            self.dirwatch = DirWatcher(s.config_file.parent, self._config_changed).start()
        if run_loop:
            self._thread = threading.Thread(target=self.loop.run, args=(self.stop_event,), name="loop", daemon=True)
            self._thread.start()
        event(log, logging.INFO, "sidecar started", objects=len(self.refs), leader=self.is_leader(),
              listen=f"{s.listen[0]}:{self.server.port}" if self.server and s.listen else None)
        self.refs = frozenset()  # the watches hold them now: a set of every object, not kept twice
        return self

    def stop(self) -> bool:
        """Shut down; True when no pass had to be abandoned."""
        self.stop_event.set()
        self.loop.wake()
        if self.dirwatch is not None:
            self.dirwatch.stop(1.0)
        self.watches.stop()
        finished = True
        if self._thread is not None:
            self._thread.join(self.settings.grace)
            finished = not self._thread.is_alive()
        if self.elector is not None:
            # With a pass still running we keep the Lease: it expires on its own, by which time
            # this process is gone, so two replicas never write at once.
            self.elector.stop(release=finished)
        if self.server is not None:
            self.server.stop()
        event(log, logging.INFO, "sidecar stopped" if finished else "sidecar stopped; abandoned a running pass")
        return finished
