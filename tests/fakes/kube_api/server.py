"""``FakeKubeAPI``: its state, its lifecycle (start, stop, kubeconfig) and the mixins it is made of.

Each concern lives in its own module and contributes one mixin: the object store
(:mod:`.store`), reads and writes over HTTP (:mod:`.reads`, :mod:`.writes`), watches
(:mod:`.watch`), discovery (:mod:`.discovery`), routing (:mod:`.routing`), authentication
and RBAC (:mod:`.rbac`), fault injection (:mod:`.faults`), the request log
(:mod:`.request_log`) and the HTTP plumbing (:mod:`.http`). All of them share the state
set up in :meth:`FakeKubeAPI.__init__`.
"""

from __future__ import annotations

import json
import pathlib
import socket
import threading
import uuid
from typing import Any

from .discovery import DiscoveryMixin
from .faults import FaultsMixin, Flood, _Fault
from .http import HTTPMixin, _Handler, _Server
from .managed_fields import ManagerKey, _ManagedEntry
from .rbac import DEFAULT_USER, RBACMixin
from .reads import ReadsMixin
from .request_log import RequestLogMixin, RequestRecord
from .resources import DEFAULT_RESOURCES, Resource
from .routing import RoutingMixin
from .store import StoreMixin
from .watch import WatchMixin, _Event, _Watcher
from .writes import WritesMixin


class FakeKubeAPI(StoreMixin, ReadsMixin, WritesMixin, WatchMixin, DiscoveryMixin, RoutingMixin, RBACMixin,
                  FaultsMixin, RequestLogMixin, HTTPMixin):
    """An in-memory kube-apiserver on ``http://127.0.0.1:<port>``.

    State (thread-safe; every write bumps one global resourceVersion and emits
    watch events): :meth:`put`, :meth:`patch`, :meth:`delete`, :meth:`get`,
    :meth:`list_objects`, :attr:`resource_version`, :meth:`managed_paths`.
    Faults: :meth:`fail_next`, :meth:`forbid`, :meth:`names_only`, :meth:`hang_next`,
    :meth:`expire_watches`, :meth:`drop_watches`, :meth:`clear_faults`.
    Observation: :attr:`requests`, :meth:`count`, :attr:`open_watches`,
    :meth:`wait_for_watches`, :attr:`errors`.

    Extra keyword-only knobs: ``user`` (name in 403 messages),
    ``bookmark_interval`` (seconds between periodic watch BOOKMARKs, 60 as kube-apiserver v1.20;
    None: only the one 2 s before a watch's timeoutSeconds; every BOOKMARK only when there is
    a newer resourceVersion than the watch delivered, so a quiet watch gets none),
    ``resources`` (registry; defaults to :data:`DEFAULT_RESOURCES`),
    ``git_version`` (reported by ``/version``).
    """

    def __init__(self, token: str = "test-token", *, user: str = DEFAULT_USER,
                 bookmark_interval: float | None = 60.0, resources: tuple[Resource, ...] = DEFAULT_RESOURCES,
                 git_version: str = "v1.31.0") -> None:
        self.token = token
        self.user = user
        self.bookmark_interval = bookmark_interval
        self.git_version = git_version
        self.requests: list[RequestRecord] = []
        self.errors: list[str] = []  # tracebacks of bugs inside the fake (answered as 500)
        self.url = ""
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._resources: list[Resource] = list(resources)
        self._rv = 1000
        self._min_watch_rv = 0
        self._objects: dict[tuple[Resource, str, str], dict[str, Any]] = {}
        self._managed: dict[tuple[Resource, str, str], dict[ManagerKey, _ManagedEntry]] = {}
        self._events: list[_Event] = []
        self._event_rvs: list[int] = []
        self._watchers: list[_Watcher] = []
        self._expire_gen = 0
        self._drop_gen = 0
        self._fails: list[_Fault] = []
        self._hangs: list[_Fault] = []
        self._floods: list[Flood] = []
        self._forbidden: list[tuple[str, str, str]] = []
        self._conns: set[socket.socket] = set()
        self._stopping = False
        self._stop_event = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._flow_uid = str(uuid.uuid4())
        self._level_uid = str(uuid.uuid4())

    def start(self) -> "FakeKubeAPI":
        if self._httpd is not None:
            return self
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-kube-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping = True
        self._stop_event.set()
        with self._cond:
            self._cond.notify_all()
        httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> "FakeKubeAPI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def kubeconfig(self, path: pathlib.Path, context: str = "fake", namespace: str = "default") -> pathlib.Path:
        """Write a kubeconfig (JSON, which is valid YAML) pointing at this server."""
        if not self.url:
            raise RuntimeError("start() the fake before writing a kubeconfig")
        path = pathlib.Path(path)
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": f"{context}-user", "user": {"token": self.token}}],
            "contexts": [{"name": context,
                          "context": {"cluster": context, "user": f"{context}-user", "namespace": namespace}}],
            "current-context": context,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cfg, indent=2) + "\n")
        return path

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)
