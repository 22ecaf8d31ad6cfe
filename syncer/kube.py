"""The one seam to the Kubernetes API: connection, timeouts, errors, discovery, User-Agent.

Everything syncer sends to an API server goes through ``KubeClient`` (the live source, the
watches, the state record, the lease). Its callers see a narrow protocol (``Kube``): ``call``
for one JSON request, ``open_watch`` for a newline-delimited event stream, and discovery
(``resource``, ``collection_path``, ``object_path``); and typed errors to branch on
(``KubeError`` and its subclasses, drawn in ``syncer.errors``' tree).

Timeouts (``Timeouts``): a connect timeout, a per-read idle timeout, and a TOTAL deadline per
request. The deadline is enforced by one watchdog thread that shuts the socket down when it
passes, so a server trickling a byte every 2 s (which never trips a read timeout) cannot hold
a call past its budget. Watches get their own budget (the server-side ``timeoutSeconds`` plus a
margin) and TCP keepalive on every connection detects a dead peer without re-opening them.

The transport is a urllib3 connection pool (keep-alive, bounded) built from a small
kubeconfig reader: token, token file, client certificates, CA, ``insecure-skip-tls-verify``,
``tls-server-name``, and the in-cluster service account. Only kubeconfigs that need a
credential plugin (``exec``, ``auth-provider``) import the official ``kubernetes`` package,
which then refreshes the bearer token; everyone else is spared its ~40 MiB and ~0.4 s import.
It is the optional extra ``syncer[exec-auth]``; without it such a kubeconfig is one clear error.
"""

from __future__ import annotations

import base64
import heapq
import itertools
import json
import logging
import os
import socket
import ssl
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from syncer import __version__
from syncer.bounds import MAX_JSON_DEPTH
from syncer.endpoints import ALTERNATE_VERSIONS
from syncer.errors import ClusterError, ConfigError
from syncer.model import ObjectRef
from syncer.redact import redact_url

JSON = dict[str, Any]

log = logging.getLogger("syncer.kube")

#: Sent on every request: the API server's audit log and its metrics name syncer by it.
USER_AGENT = f"syncer/{__version__}"

#: An answer larger than this is refused (a LIST page of big ConfigMaps is the largest we ask for;
#: etcd's own limit is 1.5 MiB per object and lists are paged).
MAX_BODY = 64 * 1024 * 1024

IN_CLUSTER_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class Timeouts:
    """The one timeout policy of every plain request (get, list, put, post)."""

    #: An API server that does not accept a connection within 5 s is down for our purposes.
    connect: float = 5.0
    #: Longest silence between two reads; 15 s covers a slow etcd read.
    read: float = 15.0
    #: The whole request, connect to last byte, however the bytes trickle in.
    total: float = 30.0


DEFAULT_TIMEOUTS = Timeouts()

#: TCP keepalive on every connection: a peer that stops answering is noticed after about
#: IDLE + INTERVAL * COUNT seconds of silence, without a request (an idle watch stays open).
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 30, 10, 3


# -- errors ---------------------------------------------------------------------------------

class KubeError(ClusterError):
    """A request to the API server failed."""

    status: int | None = None


class ClusterUnreachable(KubeError):
    """No complete answer: connection refused or reset, TLS failure, a timeout or the deadline."""

    transient = True


class TooLarge(ClusterUnreachable):
    """The answer was larger than the client accepts."""

    transient = False


class Unparsable(KubeError):
    """The answer is over the nesting limit (``bounds``): that object cannot be read."""

    transient = False


class ApiError(KubeError):
    """The API server answered, but not with success."""

    def __init__(self, message: str, status: int, reason: str = "", *, transient: bool | None = None) -> None:
        super().__init__(message, transient=transient)
        self.status = status
        self.reason = reason


class Refused(ApiError):
    """401 / 403: the credentials do not allow this request."""


class Conflict(ApiError):
    """409: a write lost a race (resourceVersion precondition) or the object already exists."""


class Gone(ApiError):
    """410: the resourceVersion we asked for is no longer in the server's history."""


def api_error(status: int, body: Any, what: str) -> ApiError:
    """Our error for a non-2xx answer; ``body`` is the Status object, or raw bytes."""
    if isinstance(body, dict):
        message, reason = str(body.get("message") or ""), str(body.get("reason") or "")
    else:
        message, reason = (body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")), ""
    message = " ".join(message.split())[:300]  # bodies are truncated before they reach a log line
    if status == 410:
        return Gone(f"{what}: resourceVersion expired (410): {message}", status, reason, transient=True)
    if status in (401, 403):
        return Refused(f"API server refused {what} ({status}): {message}", status, reason, transient=False)
    if status == 409:
        return Conflict(f"API server error on {what} ({status}): {message}", status, reason, transient=True)
    transient = status == 429 or status >= 500
    return ApiError(f"API server error on {what} ({status}): {message}", status, reason, transient=transient)


def cause(exc: BaseException) -> str:
    """What went wrong on the wire, in words (``connection refused``, ``cannot resolve host``,
    ``timed out``, ``TLS: certificate verify failed``), not a class name such as NewConnectionError."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__ or getattr(current, "reason", None)
    for err in seen:  # the most specific first (urllib3's NewConnectionError is a ConnectTimeoutError)
        if isinstance(err, ConnectionRefusedError):
            return "connection refused"
        if isinstance(err, ssl.SSLCertVerificationError):
            return f"TLS: {err.verify_message or 'certificate verify failed'}"
        if isinstance(err, ssl.SSLError):
            return f"TLS: {err.reason or err}"
        if isinstance(err, socket.gaierror):
            return f"cannot resolve the host name ({err.strerror or err})"
        if isinstance(err, ConnectionResetError):
            return "connection reset by the server"
        if isinstance(err, OSError) and err.strerror and not isinstance(err, TimeoutError):
            return err.strerror[:1].lower() + err.strerror[1:]
    for err in seen:
        if isinstance(err, (TimeoutError, socket.timeout, urllib3.exceptions.TimeoutError)):
            return "timed out"
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return "the connection broke off mid-answer"
    return type(exc).__name__


# -- the protocol callers see ---------------------------------------------------------------

class WatchStream(Protocol):
    """An open watch: raw bytes as they arrive; ``close`` unblocks a read from another thread."""

    def chunks(self) -> Generator[bytes, None, None]: ...

    def close(self) -> None: ...


class Kube(Protocol):
    """What syncer needs from an API server; ``KubeClient`` is the real one."""

    @property
    def host(self) -> str: ...

    def call(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: Any = None,
             what: str = "", timeouts: Timeouts | None = None) -> JSON | None: ...

    def open_watch(self, path: str, query: Sequence[tuple[str, str]], *, what: str, budget: float,
                   idle: float | None = None) -> WatchStream: ...

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]: ...

    def collection_path(self, ref: ObjectRef) -> str: ...

    def object_path(self, ref: ObjectRef) -> str: ...


# -- deadlines --------------------------------------------------------------------------------

class _Watchdog:
    """One thread that shuts down the socket of any request still running past its deadline."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Armed]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, conn: HTTPConnection) -> _Armed:
        armed = _Armed(conn)
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._seq), armed))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kube deadlines", daemon=True)
                self._thread.start()
            if self._heap[0][2] is armed:
                self._cond.notify()
        return armed

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    while self._heap and self._heap[0][2].done:
                        heapq.heappop(self._heap)
                    self._cond.wait(None if not self._heap else max(0.0, self._heap[0][0] - time.monotonic()))
                _, _, armed = heapq.heappop(self._heap)
            armed.fire()


class _Armed:
    def __init__(self, conn: HTTPConnection) -> None:
        self.conn, self.done, self.fired = conn, False, False
        self._lock = threading.Lock()

    def fire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.fired = True
            sock = getattr(self.conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # any blocked recv returns at once
            except OSError:
                pass

    def disarm(self) -> None:
        with self._lock:
            self.done = True


_WATCHDOG = _Watchdog()
_current = threading.local()  # the deadline of the request this thread is sending


def _register(conn: HTTPConnection) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None:
        _current.armed = _WATCHDOG.arm(deadline, conn)


class _DeadlineHTTP(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _DeadlineHTTPS(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _DeadlineHTTP


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _DeadlineHTTPS


class _QuietPoolFull(logging.Filter):
    """urllib3 warns each time it closes a connection the pool has no room to keep; with one
    watch per object (a resourceNames Role) that is a line per object at every start or
    reconnect, thousands at 5,000 objects (issue #24). Nothing is lost: the connection is closed."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Connection pool is full")


logging.getLogger("urllib3.connectionpool").addFilter(_QuietPoolFull())


def _socket_options() -> list[tuple[int, int, int]]:
    opts = list(HTTPConnection.default_socket_options) + [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE), ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
                        ("TCP_KEEPCNT", KEEPALIVE_COUNT)):
        if hasattr(socket, name):
            opts.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return opts


# -- connection settings (kubeconfig / in-cluster) -------------------------------------------

@dataclass
class Connection:
    """Where the API server is and how to authenticate; built by ``load_connection``."""

    server: str
    token: str | None = None
    token_file: Path | None = None
    ca_data: bytes | None = None  # PEM
    cert_data: bytes | None = None  # PEM client certificate
    key_data: bytes | None = None  # PEM client key
    insecure: bool = False
    tls_server_name: str | None = None
    basic: tuple[str, str] | None = None
    #: Credential plugins: returns the current "Bearer ..." header (refreshing as needed).
    auth_hook: Callable[[], str] | None = None
    _file_token: tuple[float, str] = field(default=(0.0, ""), repr=False)

    def authorization(self) -> str | None:
        if self.auth_hook is not None:
            return self.auth_hook()
        if self.token_file is not None:  # projected tokens rotate: re-read at most once a minute
            read_at, token = self._file_token
            if time.monotonic() - read_at > 60 or not token:
                try:
                    token = self.token_file.read_text(encoding="utf-8").strip()
                except OSError as exc:
                    raise ConfigError(f"token file {self.token_file}: {exc.strerror or exc}") from None
                self._file_token = (time.monotonic(), token)
            return f"Bearer {token}"
        if self.token:
            return f"Bearer {self.token}"
        if self.basic is not None:
            return "Basic " + base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
        return None


def _named(doc: dict[str, Any], section: str, key: str, where: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get(key), dict):
            out.setdefault(entry["name"], entry[key])
    return out


def _file_or_data(entry: dict[str, Any], name: str, base: Path, where: str) -> bytes | None:
    data = entry.get(f"{name}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=False)
        except ValueError:
            raise ConfigError(f"kubeconfig {where}: {name}-data is not base64") from None
    path = entry.get(name)
    if path:
        full = (base / str(path)).expanduser()
        try:
            return full.read_bytes()
        except OSError as exc:
            raise ConfigError(f"kubeconfig {where}: {name} {full}: {exc.strerror or exc}") from None
    return None


def _kubeconfig_files(kubeconfig: str | None) -> list[Path]:
    if kubeconfig:
        return [Path(kubeconfig)]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p) for p in env.split(os.pathsep) if p]
    default = Path("~/.kube/config").expanduser()
    return [default] if default.exists() else []


def load_connection(kubeconfig: str | None, context: str | None) -> Connection:
    """Connection settings from a kubeconfig (explicit, $KUBECONFIG, ~/.kube/config) or in-cluster.

    A kubeconfig of the wrong shape (``clusters: 5``) is one clear ConfigError, never a traceback.
    """
    try:
        return _load_connection(kubeconfig, context)
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise ConfigError(f"kubeconfig {where}: malformed ({type(exc).__name__}: {str(exc)[:80]})") from None


#: Where a pod's service account namespace is (kubectl's default namespace inside a pod).
SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def context_namespace(kubeconfig: str | None, context: str | None) -> tuple[str, str] | None:
    """kubectl's default namespace, as (namespace, where it came from): the kubeconfig context's
    ``namespace`` (``default`` when it names none), in a pod without a kubeconfig the service
    account's; None when there is no readable kubeconfig nor service account."""
    from syncer.manifests import parse_documents

    files = _kubeconfig_files(kubeconfig)
    if not files and not context:
        try:
            ns = SA_NAMESPACE_FILE.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return (ns, "the pod's service account namespace") if ns else None
    current, contexts = "", []
    for path in files:
        try:
            docs = [d for d in parse_documents(path.read_text(encoding="utf-8"), str(path)) if isinstance(d, dict)]
        except (OSError, UnicodeDecodeError, ConfigError):
            continue
        for doc in docs[:1]:
            contexts += [c for c in doc.get("contexts") or [] if isinstance(c, dict)]
            current = current or str(doc.get("current-context") or "")
    name = context or current
    ctx = _named({"contexts": contexts}, "contexts", "context", "").get(name) if name else None
    if ctx is None:
        return None
    ns = str(ctx.get("namespace") or "")
    return (ns, f"the namespace of kubeconfig context {name}") if ns else \
        ("default", f"kubeconfig context {name} names no namespace: kubectl's default")


def _load_connection(kubeconfig: str | None, context: str | None) -> Connection:
    files = _kubeconfig_files(kubeconfig)
    if not files and not context:
        return _in_cluster()
    where = kubeconfig or os.environ.get("KUBECONFIG") or str(files[0] if files else "~/.kube/config")
    from syncer.manifests import parse_documents

    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    current = ""
    bases: dict[tuple[str, str], Path] = {}
    read = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if kubeconfig:
                raise ConfigError(f"kubeconfig {where}: no such file") from None
            continue
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"kubeconfig {where}: {path}: {exc}") from None
        docs = [d for d in parse_documents(text, str(path)) if d is not None]
        doc = docs[0] if docs else {}
        if not isinstance(doc, dict):
            raise ConfigError(f"kubeconfig {where}: {path}: not a kubeconfig mapping")
        for section in ("clusters", "users", "contexts"):
            for entry in doc.get(section) or []:
                merged[section].append(entry)
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    bases.setdefault((section, entry["name"]), path.parent)
        current = current or str(doc.get("current-context") or "")
        read += 1
    if not read:  # $KUBECONFIG names only files that do not exist: say that, not "no current-context"
        raise ConfigError(f"kubeconfig {where}: no such file" + (" (none of $KUBECONFIG's files exists)"
                                                                  if len(files) > 1 else ""))
    name = context or current
    contexts = _named(merged, "contexts", "context", where)
    if not name or name not in contexts:
        raise ConfigError(f"kubeconfig {where}: " + (f"context {name!r} not found" if name else "no current-context"))
    ctx = contexts[name]
    clusters, users = _named(merged, "clusters", "cluster", where), _named(merged, "users", "user", where)
    cluster_name, user_name = str(ctx.get("cluster") or ""), str(ctx.get("user") or "")
    if cluster_name not in clusters:
        raise ConfigError(f"kubeconfig {where}: cluster {cluster_name!r} of context {name!r} not found")
    cluster = clusters[cluster_name]
    user = users.get(user_name, {})
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("http://", "https://")):
        raise ConfigError(f"kubeconfig {where}: cluster {cluster_name!r} has no http(s) server")
    if cluster.get("proxy-url"):
        raise ConfigError(f"kubeconfig {where}: cluster {cluster_name!r}: proxy-url is not supported")
    cbase = bases.get(("clusters", cluster_name), Path("."))
    ubase = bases.get(("users", user_name), Path("."))
    conn = Connection(
        server=server,
        ca_data=_file_or_data(cluster, "certificate-authority", cbase, where),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=str(cluster.get("tls-server-name") or "") or None,
        cert_data=_file_or_data(user, "client-certificate", ubase, where),
        key_data=_file_or_data(user, "client-key", ubase, where),
    )
    if user.get("token"):
        conn.token = str(user["token"])
    elif user.get("tokenFile"):
        conn.token_file = (ubase / str(user["tokenFile"])).expanduser()
    elif user.get("username") and user.get("password"):
        conn.basic = (str(user["username"]), str(user["password"]))
    elif user.get("exec") or user.get("auth-provider"):
        conn.auth_hook = _plugin_auth(kubeconfig, name, where)
    return conn


def _plugin_auth(kubeconfig: str | None, context: str, where: str) -> Callable[[], str]:
    """A credential plugin (exec / auth-provider): the official client runs it and refreshes."""
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError:
        raise ConfigError(f"kubeconfig {where}: its user runs a credential plugin (exec/auth-provider), which needs "
                          "the official kubernetes client: pip install 'syncer[exec-auth]'") from None

    conf = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, context=context,  # type: ignore[no-untyped-call]
                                client_configuration=conf)
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        raise ConfigError(f"kubeconfig {where}: {exc}") from exc

    def header() -> str:
        # The client keeps the token under "authorization" up to v34 and "BearerToken" from v35 on.
        value = conf.get_api_key_with_prefix("BearerToken") or conf.get_api_key_with_prefix("authorization") or ""
        return str(value)

    return header


def _in_cluster() -> Connection:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    where = "in-cluster service account"
    if not host or not port:
        raise ConfigError(f"kubeconfig {where}: no kubeconfig found and KUBERNETES_SERVICE_HOST/PORT are not set "
                          "(not running in a pod): pass --kubeconfig")
    token_file = IN_CLUSTER_DIR / "token"
    if not token_file.exists():
        raise ConfigError(f"kubeconfig {where}: {token_file} does not exist")
    try:
        ca = (IN_CLUSTER_DIR / "ca.crt").read_bytes()
    except OSError as exc:
        raise ConfigError(f"kubeconfig {where}: {IN_CLUSTER_DIR / 'ca.crt'}: {exc.strerror or exc}") from None
    netloc = f"[{host}]" if ":" in host else host
    return Connection(server=f"https://{netloc}:{port}", token_file=token_file, ca_data=ca)


def _ssl_context(conn: Connection) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if conn.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif conn.ca_data:
        ctx = ssl.create_default_context(cadata=conn.ca_data.decode("ascii", "replace"))
    if conn.cert_data and conn.key_data:
        # load_cert_chain wants files: write them privately, load, delete at once.
        with tempfile.TemporaryDirectory(prefix="syncer-tls-") as tmp:
            cert, key = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
            for path, data in ((cert, conn.cert_data), (key, conn.key_data)):
                path.touch(mode=0o600)
                path.write_bytes(data)
            try:
                ctx.load_cert_chain(str(cert), str(key))
            except ssl.SSLError as exc:
                raise ConfigError(f"kubeconfig: client certificate/key cannot be used: {exc}") from None
    return ctx


# -- the client -------------------------------------------------------------------------------

def _drop(resp: Any) -> None:
    """Close a response's connection and hand the slot back (the pool reconnects it later)."""
    resp.close()
    resp.release_conn()


class _Stream:
    """A watch response; ``chunks`` yields bytes as they arrive, ``close`` unblocks it."""

    def __init__(self, resp: Any, armed: _Armed | None, what: str, host: str) -> None:
        self._resp, self._armed, self._what, self._host = resp, armed, what, host
        self._closed = False
        self._finished = False

    def chunks(self) -> Generator[bytes, None, None]:
        raw = self._resp
        clean = False
        try:
            if getattr(raw, "chunked", False):
                yield from raw.stream(None, decode_content=True)  # one piece per HTTP chunk
            else:
                while data := raw.read1(65536):
                    yield data
            clean = not self._closed
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if self._closed:
                return
            fired = self._armed is not None and self._armed.fired
            raise ClusterUnreachable(
                f"watch to {self._host} ({self._what}): " + ("budget over; reconnecting" if fired else
                                                               f"connection lost ({cause(exc)})"),
                transient=True) from None
        finally:
            self._finish(clean)

    def _finish(self, clean: bool) -> None:
        """Once, in the reading thread: hand the connection back (closed unless the server
        ended the stream cleanly)."""
        if self._finished:
            return
        self._finished = True
        if self._armed is not None:
            self._armed.disarm()
        if not clean:
            self._resp.close()  # the pool reconnects when it hands this connection out again
        self._resp.release_conn()

    def close(self) -> None:
        """Abandon the stream, from any thread: a pending read returns at once; the reading
        thread then releases the connection."""
        self._closed = True
        try:
            self._resp.shutdown()
        except Exception:  # noqa: BLE001 - best effort on a connection we are abandoning
            pass


_INSECURE_SAID: set[str] = set()


def _say_insecure(host: str) -> None:
    """``insecure-skip-tls-verify``: one log line per server and process, the way kubectl says
    nothing per request, instead of urllib3's InsecureRequestWarning on every request (17 per
    ``diff``, two lines each; thousands in a sidecar's log)."""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    if host not in _INSECURE_SAID:
        _INSECURE_SAID.add(host)
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
                              "socket_options": _socket_options()}
        if parts.scheme == "https":
            if conn.insecure:
                _say_insecure(self.host)
            self._pool: HTTPConnectionPool = _HTTPSPool(
                parts.hostname or "", parts.port or 443, ssl_context=_ssl_context(conn),
                cert_reqs=ssl.CERT_NONE if conn.insecure else ssl.CERT_REQUIRED,
                assert_hostname=False if conn.insecure else None,
                server_hostname=conn.tls_server_name, **kw)
        else:
            self._pool = _HTTPPool(parts.hostname or "", parts.port or 80, **kw)
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        """The server URL as shown in messages: a password in its userinfo is masked."""
        return redact_url(self.conn.server)

    @property
    def timeouts(self) -> Timeouts:
        return self._timeouts or DEFAULT_TIMEOUTS

    def close(self) -> None:
        self._pool.close()

    def _headers(self, body: bytes | None, accept: str = "application/json") -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        auth = self.conn.authorization()
        if auth:
            headers["Authorization"] = auth
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

    def _send(self, method: str, path: str, query: Sequence[tuple[str, str]], body: Any, what: str,
              timeouts: Timeouts, budget: float, stream: bool) -> tuple[Any, _Armed | None]:
        data = None if body is None else json.dumps(body).encode()
        _current.deadline, _current.armed = time.monotonic() + budget, None
        try:
            resp = self._pool.urlopen(
                method, self._url(path, query), body=data, headers=self._headers(data),
                timeout=urllib3.Timeout(connect=timeouts.connect, read=timeouts.read),
                preload_content=False, decode_content=True, redirect=False, retries=False,
                release_conn=False)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            armed = _current.armed
            if armed is not None:
                armed.disarm()
            raise self._unreachable(what, exc, bool(armed and armed.fired), budget) from None
        finally:
            _current.deadline = None
        return resp, _current.armed

    def _read(self, resp: Any, armed: _Armed | None, what: str, budget: float) -> bytes:
        try:
            length = int(resp.headers.get("Content-Length") or 0)
            if length > self.max_body:
                _drop(resp)
                raise TooLarge(f"{what}: answer of {length} bytes is larger than {self.max_body}")
            buf = bytearray()
            while chunk := resp.read(65536):
                buf += chunk
                if len(buf) > self.max_body:
                    _drop(resp)
                    raise TooLarge(f"{what}: answer larger than {self.max_body} bytes")
            resp.release_conn()
            return bytes(buf)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            _drop(resp)
            raise self._unreachable(what, exc, bool(armed and armed.fired), budget) from None
        finally:
            if armed is not None:
                armed.disarm()

    def call(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: Any = None,
             what: str = "", timeouts: Timeouts | None = None) -> JSON | None:
        """One request: the JSON answer on 2xx, ``None`` on 404, a ``KubeError`` otherwise."""
        what = what or f"{method} {path}"
        t = timeouts or self.timeouts
        resp, armed = self._send(method, path, query, body, what, t, t.total, stream=False)
        data = self._read(resp, armed, what, t.total)
        if resp.status == 404:
            return None
        try:
            doc = self._parse(data, what)
        except ValueError:
            doc = None
        if not 200 <= resp.status < 300:
            raise api_error(resp.status, doc if isinstance(doc, dict) else data, what)
        if not isinstance(doc, dict):
            raise ClusterUnreachable(f"API server sent non-JSON for {what}", transient=True)
        return doc

    def _parse(self, data: bytes, what: str) -> Any:
        """An answer's JSON (its size is bounded by ``max_body`` already). A custom resource
        nested deeper than the decoder's recursion allows is ``Unparsable`` naming the request
        (so the object, when read by name), never a ``RecursionError`` that ends the run; one
        nested deeper than ``bounds.MAX_JSON_DEPTH`` but parsed is refused per object by
        detection (``bounds.check_nodes``). No scan of the text first: json's C decoder checks
        its own depth, and a Python scan of every answer cost more than the parse (36 ms per MB)."""
        if not data:
            return None
        try:
            return json.loads(data)
        except RecursionError:
            raise Unparsable(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels; not read",
                             transient=False) from None

    def open_watch(self, path: str, query: Sequence[tuple[str, str]], *, what: str, budget: float,
                   idle: float | None = None) -> _Stream:
        """Open a watch; ``budget`` bounds the whole stream, ``idle`` the silence between reads."""
        t = Timeouts(self.timeouts.connect, idle if idle is not None else budget, budget)
        resp, armed = self._send("GET", path, query, None, what, t, budget, stream=True)
        if resp.status != 200:
            data = self._read(resp, armed, what, budget)
            try:
                body: Any = self._parse(data, what)
            except ValueError:
                body = data
            raise api_error(resp.status, body, what)
        return _Stream(resp, armed, what, self.host)

    # -- discovery ------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) for a kind, from discovery, cached per groupVersion."""
        with self._lock:
            table = self._resources.get(api_version)
        if table is None:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            found = self.call("GET", path, what=f"discovery of {api_version}") or {}
            table = {}
            for res in found.get("resources", []):
                if "/" not in res.get("name", ""):
                    table.setdefault(res["kind"], (res["name"], bool(res.get("namespaced"))))
            with self._lock:
                self._resources[api_version] = table
        if kind not in table:
            # A KubeError: it costs the objects of that kind only, never the whole run.
            raise ApiError(f"the API server does not serve {kind} in {api_version}", 404, "NotFound", transient=False)
        return table[kind]

    def served(self, api_version: str, kind: str) -> tuple[str, str, bool]:
        """(apiVersion, plural, namespaced) the server serves ``kind`` under: ``api_version``, or
        an older version of the same kind (EndpointSlices: v1beta1 on Kubernetes 1.19/1.20)."""
        try:
            return (api_version, *self.resource(api_version, kind))
        except ClusterUnreachable:
            raise
        except ClusterError as exc:
            for alt in ALTERNATE_VERSIONS.get((api_version, kind), ()):
                try:
                    return (alt, *self.resource(alt, kind))
                except ClusterUnreachable:
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


def kube_client(kubeconfig: str | None, context: str | None, *, pool_size: int = 16,
                timeouts: Timeouts | None = None) -> KubeClient:
    """The client the CLI and the sidecar use."""
    return KubeClient(load_connection(kubeconfig, context), pool_size=pool_size, timeouts=timeouts)
