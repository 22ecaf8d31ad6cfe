"""The one seam to the Kubernetes API: ``KubeClient`` behind the narrow ``Kube`` protocol.

Everything syncer sends to an API server goes through ``KubeClient`` (the live source, the
watches, the state record, the lease). Its callers see ``call`` for one JSON request,
``open_watch`` for a newline-delimited event stream, and discovery (``resource``,
``collection_path``, ``object_path``); failures are the typed errors of ``kube.errors``.
Each request carries the User-Agent ``syncer/<version>``, a deadline (``kube.transport``) and
the credentials of its ``Connection`` (``kube.config``: ``Connection.headers``). The sidecar's
per-object watches speak HTTP/2 over the same ``Connection`` (``kube.http2``).
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import warnings
from collections.abc import Generator, Sequence
from contextlib import nullcontext
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import urllib3
from urllib3 import BaseHTTPResponse, HTTPHeaderDict
from urllib3.connectionpool import HTTPConnectionPool

from syncer.bounds import MAX_JSON_DEPTH
from syncer.errors import NOTHING_READABLE, ClusterError
from syncer.kinds import ALTERNATE_VERSIONS
from syncer.kube.budget import Budget
from syncer.kube.config import Connection, ReadYaml, load_connection, ssl_context
from syncer.kube.errors import ApiError, ClusterUnreachable, TooLarge, Unparsable, api_error, cause
from syncer.kube.transport import (
    DEFAULT_TIMEOUTS, REQUEST, Armed, HTTPPool, HTTPSPool, Stream, Timeouts, drop, socket_options,
)
from syncer.model import JSON, ObjectRef
from syncer.secrets.redact import redact_url


log = logging.getLogger("syncer.kube")

#: An answer larger than this is refused (a LIST page of big ConfigMaps is the largest we ask for;
#: etcd's own limit is 1.5 MiB per object and lists are paged).
MAX_BODY = 64 * 1024 * 1024


class WatchStream(Protocol):
    """An open watch: raw bytes as they arrive; ``close`` unblocks a read from another thread."""

    def chunks(self) -> Generator[bytes, None, None]: ...

    def close(self) -> None: ...


class Kube(Protocol):
    """What syncer needs from an API server; ``KubeClient`` is the real one."""

    @property
    def host(self) -> str: ...

    def call(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: object = None,
             what: str = "", timeouts: Timeouts | None = None) -> JSON | None: ...

    def open_watch(self, path: str, query: Sequence[tuple[str, str]], *, what: str, budget: float,
                   idle: float | None = None) -> WatchStream: ...

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]: ...

    def group_versions(self, group: str | None) -> list[str]: ...

    def collection_path(self, ref: ObjectRef) -> str: ...

    def object_path(self, ref: ObjectRef) -> str: ...


#: Seconds a discovery answer that lacks a kind stands before discovery is asked again.
DISCOVERY_MISS_TTL = 60.0


def _say_insecure(host: str) -> None:
    """``insecure-skip-tls-verify``: one warning per client (a process makes one), instead of
    urllib3's InsecureRequestWarning on every request (17 per ``diff``, two lines each; thousands
    in a sidecar's log). A one-shot command tells it with its output (``logs.Collector``)."""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    log.warning("TLS verification is off for the API server at %s (insecure-skip-tls-verify in the "
                "kubeconfig): its certificate is not checked", host)


class KubeClient:
    """The real ``Kube``: one keep-alive connection pool to one API server."""

    def __init__(self, conn: Connection, *, timeouts: Timeouts | None = None, max_body: int = MAX_BODY,
                 pool_size: int = 16) -> None:
        self.conn, self.max_body = conn, max_body
        self._timeouts = timeouts
        parts = urlsplit(conn.server)
        self._prefix = parts.path.rstrip("/")
        kw: dict[str, Any] = {"maxsize": pool_size, "block": False, "retries": False,
                              "socket_options": socket_options()}
        if parts.scheme == "https":
            if conn.insecure:
                _say_insecure(self.host)
            self._pool: HTTPConnectionPool = HTTPSPool(
                parts.hostname or "", parts.port or 443, ssl_context=ssl_context(conn),
                cert_reqs=ssl.CERT_NONE if conn.insecure else ssl.CERT_REQUIRED,
                assert_hostname=False if conn.insecure else None,
                server_hostname=conn.tls_server_name, **kw)
        else:
            self._pool = HTTPPool(parts.hostname or "", parts.port or 80, **kw)
        #: groupVersion -> (kind -> (plural, namespaced), when discovery answered)
        self._resources: dict[str, tuple[dict[str, tuple[str, bool]], float]] = {}
        self._lock = threading.Lock()
        self._groups: dict[str | None, tuple[list[str], float]] = {}
        self.clock = time.monotonic  # replaced by tests
        #: The sidecar's: every answer's bytes count against the watch streams' one budget while
        #: they are read and parsed (a hostile server's answers are bounded in total, not only
        #: each by ``max_body``). None: the one-shot commands, one request at a time.
        self.budget: Budget | None = None

    @property
    def host(self) -> str:
        """The server URL as shown in messages: a password in its userinfo is masked."""
        return redact_url(self.conn.server)

    @property
    def timeouts(self) -> Timeouts:
        return self._timeouts or DEFAULT_TIMEOUTS

    def close(self) -> None:
        self._pool.close()

    def _headers(self, body: bytes | None, accept: str = "application/json") -> HTTPHeaderDict:
        headers = HTTPHeaderDict({"Accept": accept})
        for name, value in self.conn.headers():  # HTTPHeaderDict keeps each of a repeated header
            headers.add(name, value)
        if body is not None:
            headers["Content-Type"] = "application/json"
        return headers

    def _url(self, path: str, query: Sequence[tuple[str, str]]) -> str:
        return self._prefix + path + (("?" + urlencode(list(query))) if query else "")

    def _unreachable(self, what: str, exc: BaseException, fired: bool, budget: float) -> ClusterUnreachable:
        if fired:
            return ClusterUnreachable(f"cannot reach the API server at {self.host} ({what}): "
                                      f"no complete answer within {budget:g}s", transient=True)
        return ClusterUnreachable(f"cannot reach the API server at {self.host} ({what}): {cause(exc)}",
                                  transient=True)

    def _send(self, method: str, path: str, query: Sequence[tuple[str, str]], body: object, what: str,
              timeouts: Timeouts, budget: float, stream: bool) -> tuple[BaseHTTPResponse, Armed | None]:
        data = None if body is None else json.dumps(body).encode()
        REQUEST.deadline, REQUEST.armed = time.monotonic() + budget, None
        try:
            resp = self._pool.urlopen(
                method, self._url(path, query), body=data, headers=self._headers(data),
                timeout=urllib3.Timeout(connect=timeouts.connect, read=timeouts.read),
                preload_content=False, decode_content=True, redirect=False, retries=False,
                release_conn=False)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            armed = REQUEST.armed
            if armed is not None:
                armed.disarm()
            raise self._unreachable(what, exc, bool(armed and armed.fired), budget) from None
        finally:
            REQUEST.deadline = None
        return resp, REQUEST.armed

    def _read(self, resp: BaseHTTPResponse, armed: Armed | None, what: str, budget: float,
              held: list[int] | None = None) -> bytes:
        """The whole answer; with ``held``, its bytes are taken from ``self.budget`` (and counted
        in ``held[0]`` for the caller to give back once parsed; on failure they are given back here)."""
        try:
            length = int(resp.headers.get("Content-Length") or 0)
            if length > self.max_body:
                drop(resp)
                raise TooLarge(f"{what}: answer of {length} bytes is larger than {self.max_body}")
            buf = bytearray()
            while chunk := resp.read(65536):
                if held is not None and self.budget is not None:
                    self.budget.take(len(chunk), what)
                    held[0] += len(chunk)
                buf += chunk
                if len(buf) > self.max_body:
                    drop(resp)
                    raise TooLarge(f"{what}: answer larger than {self.max_body} bytes")
            resp.release_conn()
            return bytes(buf)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            drop(resp)
            raise self._unreachable(what, exc, bool(armed and armed.fired), budget) from None
        except BaseException:
            drop(resp)
            raise
        finally:
            if armed is not None:
                armed.disarm()

    def call(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: object = None,
             what: str = "", timeouts: Timeouts | None = None) -> JSON | None:
        """One request: the JSON answer on 2xx, ``None`` on 404, a ``KubeError`` otherwise."""
        what = what or f"{method} {path}"
        t = timeouts or self.timeouts
        resp, armed = self._send(method, path, query, body, what, t, t.total, stream=False)
        held = [0]
        try:
            data = self._read(resp, armed, what, t.total, held)
            if resp.status == 404:
                return None
            try:
                with self.budget.parsing(len(data)) if self.budget is not None else nullcontext():
                    doc = self._parse(data, what)
            except ValueError:
                doc = None
        finally:
            if self.budget is not None:
                self.budget.give(held[0])
        if not 200 <= resp.status < 300:
            raise self._api_error(resp.status, doc if isinstance(doc, dict) else data, what)
        if not isinstance(doc, dict):
            raise ClusterUnreachable(f"API server sent non-JSON for {what}", transient=True)
        return doc

    def _parse(self, data: bytes, what: str) -> object:
        """An answer's JSON (its size is bounded by ``max_body`` already). A custom resource
        nested deeper than the decoder's recursion allows is ``Unparsable`` naming the request
        (so the object, when read by name), never a ``RecursionError`` that ends the run; one
        nested deeper than ``bounds.MAX_JSON_DEPTH`` but parsed is refused per object by
        detection (``bounds.check_nodes``). No scan of the text first: json's C decoder checks
        its own depth, and a Python scan of every answer would cost more than the parse."""
        if not data:
            return None
        try:
            return json.loads(data)
        except RecursionError:
            raise Unparsable(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels; not read",
                             transient=False) from None

    def open_watch(self, path: str, query: Sequence[tuple[str, str]], *, what: str, budget: float,
                   idle: float | None = None) -> Stream:
        """Open a watch; ``budget`` bounds the whole stream, ``idle`` the silence between reads."""
        t = Timeouts(self.timeouts.connect, idle if idle is not None else budget, budget)
        resp, armed = self._send("GET", path, query, None, what, t, budget, stream=True)
        if resp.status != 200:
            data = self._read(resp, armed, what, budget)
            try:
                body: object = self._parse(data, what)
            except ValueError:
                body = data
            raise self._api_error(resp.status, body, what)
        return Stream(resp, armed, what, self.host)

    def _api_error(self, status: int, body: object, what: str) -> ApiError:
        """``api_error``, naming the credentials sent; a 401 also makes a token file be read
        again at the next request (a rotated token heals without a restart)."""
        if status == 401:
            self.conn.rejected()
        return api_error(status, body, what, self.conn.describe(), self.conn.known())

    # -- discovery ------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) for a kind, from discovery, cached per groupVersion.

        A kind the cached table lacks is asked again once ``DISCOVERY_MISS_TTL`` seconds have
        passed since that table was read: a CRD installed after a sidecar started is served
        from then on (a served kind is never asked again: kinds do not move)."""
        with self._lock:
            cached = self._resources.get(api_version)
        if cached is None or (kind not in cached[0] and self.clock() - cached[1] >= DISCOVERY_MISS_TTL):
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            found = self.call("GET", path, what=f"discovery of {api_version}") or {}
            table: dict[str, tuple[str, bool]] = {}
            for res in found.get("resources", []):
                if "/" not in res.get("name", ""):
                    table.setdefault(res["kind"], (res["name"], bool(res.get("namespaced"))))
            cached = (table, self.clock())
            with self._lock:
                self._resources[api_version] = cached
        table = cached[0]
        if kind not in table:
            # A KubeError: it costs the objects of that kind only, never the whole run.
            raise ApiError(f"the API server does not serve {kind} in {api_version}", 404, "NotFound", transient=False)
        return table[kind]

    def group_versions(self, group: str | None) -> list[str]:
        """The group-versions discovery lists: of every group (``group`` None) or of one
        (``""``: the core ``v1``). Asked again after ``DISCOVERY_MISS_TTL`` like a missing kind."""
        if group == "":
            return ["v1"]
        with self._lock:
            cached = self._groups.get(group)
        if cached is not None and self.clock() - cached[1] < DISCOVERY_MISS_TTL:
            return cached[0]
        doc = self.call("GET", f"/apis/{group}" if group else "/apis", what="discovery of API groups") or {}
        groups = [doc] if group else doc.get("groups") or []
        found = [str(v.get("groupVersion")) for g in groups if isinstance(g, dict)
                 for v in g.get("versions") or [] if isinstance(v, dict) and v.get("groupVersion")]
        with self._lock:
            self._groups[group] = (found, self.clock())
        return found

    def served(self, api_version: str, kind: str) -> tuple[str, str, bool]:
        """(apiVersion, plural, namespaced) the server serves ``kind`` under: ``api_version``, or
        an older version of the same kind (EndpointSlices: v1beta1 on Kubernetes 1.19/1.20)."""
        try:
            return (api_version, *self.resource(api_version, kind))
        except NOTHING_READABLE:
            raise
        except ClusterError as exc:
            for alt in ALTERNATE_VERSIONS.get((api_version, kind), ()):
                try:
                    return (alt, *self.resource(alt, kind))
                except NOTHING_READABLE:
                    raise
                except ClusterError:
                    continue
            raise exc

    def collection_path(self, ref: ObjectRef) -> str:
        api_version, plural, namespaced = self.served(ref.api_version, ref.kind)
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        return f"{prefix}/namespaces/{ref.namespace}/{plural}" if namespaced else f"{prefix}/{plural}"

    def object_path(self, ref: ObjectRef) -> str:
        return f"{self.collection_path(ref)}/{ref.name}"


def kube_client(kubeconfig: str | None, context: str | None, *, read_yaml: ReadYaml, pool_size: int = 16,
                timeouts: Timeouts | None = None, impersonate: str | None = None,
                impersonate_groups: Sequence[str] = ()) -> KubeClient:
    """The client the CLI and the sidecar use (``read_yaml`` reads the kubeconfig: ``kube.config``;
    ``impersonate``: kubectl's ``--as`` and ``--as-group``)."""
    return KubeClient(load_connection(kubeconfig, context, read_yaml=read_yaml, impersonate=impersonate,
                                      impersonate_groups=impersonate_groups), pool_size=pool_size, timeouts=timeouts)
