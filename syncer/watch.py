"""Watch the tracked objects by name: list, then watch from the list's resourceVersion.

Three small pieces, in the manner of kopf's ``watching.py``:

* ``list_object``    one request: the collection narrowed by ``fieldSelector=metadata.name=X``
                     -> the object (or ``None``) and the list's resourceVersion;
* ``stream``         one watch from a resourceVersion with bookmarks, parsed line by line from
                     the raw newline-delimited JSON; an ``ERROR`` event with code 410 raises
                     ``Gone``;
* ``ObjectWatcher``  the endless loop of one object, in a thread: re-list on ``Gone`` (never
                     re-watch at the expired version), after any other failure reconnect from
                     the last version with capped exponential backoff and full jitter, and put
                     every change into the ``LiveCache``.

Naming the object in every list and watch is what lets a Role limited by ``resourceNames``
suffice: the API server authorizes a collection request against resourceNames only when the
field selector pins ``metadata.name``.

``call``/``send`` are the one seam to the official client (kubernetes >= 35 call style:
``param_serialize`` then ``call_api``); they translate answers into ``ApiError`` so client
exceptions never leak inward. ``state`` and ``lease`` use them too.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from syncer.errors import ClusterError
from syncer.live import KubeSource
from syncer.livecache import LiveCache
from syncer.logs import event
from syncer.model import ObjectRef

log = logging.getLogger("syncer.watch")

JSON = dict[str, Any]

#: Connect and read timeouts of one plain request (list, get, put), as for ``syncer diff``.
REQUEST_TIMEOUT = (5.0, 15.0)
#: A single watch event line larger than this is refused (etcd's own limit is 1.5 MiB/object).
MAX_LINE = 16 * 1024 * 1024


@dataclass(frozen=True)
class WatchSettings:
    #: An API server that does not accept a connection within 5 s is down for us.
    connect_timeout: float = 5.0
    #: Client-side inactivity limit on a watch. The API server sends a BOOKMARK about every
    #: 60 s on an idle watch (allowWatchBookmarks), so 150 s of silence means the stream is
    #: dead (half-open TCP, a proxy that swallowed it), not idle.
    read_timeout: float = 150.0
    #: Server-side lifetime of one watch request: an idle object costs one request per hour.
    watch_seconds: int = 3600
    #: Reconnect backoff: full jitter over base * 2**n, capped, so N replicas that lost the
    #: same API server do not come back in lockstep.
    backoff_base: float = 0.5
    backoff_cap: float = 30.0

    def backoff(self, failures: int, rand: Callable[[], float]) -> float:
        return float(rand()) * min(self.backoff_cap, self.backoff_base * 2.0 ** max(0, failures - 1))


class ApiError(ClusterError):
    """The API server answered, but not with success."""

    def __init__(self, message: str, status: int, reason: str = "", *, transient: bool | None = None) -> None:
        super().__init__(message, transient=transient)
        self.status = status
        self.reason = reason


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
        return ApiError(f"API server refused {what} ({status}): {message}", status, reason, transient=False)
    transient = status == 429 or status >= 500 or status == 409
    return ApiError(f"API server error on {what} ({status}): {message}", status, reason, transient=transient)


def send(api: Any, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: Any = None,
         timeout: tuple[float, float] = REQUEST_TIMEOUT, what: str = "") -> Any:
    """Send one request; returns the client's ``RESTResponse`` (any status, body unread)."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        m, url, hdrs, data, post = api.param_serialize(method, path, query_params=list(query),
                                                       header_params=headers, body=body, auth_settings=["BearerToken"])
        return api.call_api(m, url, header_params=hdrs, body=data, post_params=post, _request_timeout=timeout)
    except (ApiException, HTTPError, OSError) as exc:
        raise ClusterError(f"cannot reach the API server at {api.configuration.host} ({what or path}): "
                           f"{type(exc).__name__}", transient=True) from None


def call(api: Any, method: str, path: str, *, query: Sequence[tuple[str, str]] = (), body: Any = None,
         timeout: tuple[float, float] = REQUEST_TIMEOUT, what: str = "") -> JSON | None:
    """One request: the JSON answer on 2xx, ``None`` on 404, ``ApiError`` otherwise."""
    from urllib3.exceptions import HTTPError

    what = what or f"{method} {path}"
    resp = send(api, method, path, query=query, body=body, timeout=timeout, what=what)
    try:
        data = resp.read()
    except (HTTPError, OSError) as exc:
        raise ClusterError(f"cannot reach the API server at {api.configuration.host} ({what}): "
                           f"{type(exc).__name__}", transient=True) from None
    if resp.status == 404:
        return None
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        doc = None
    if not 200 <= resp.status < 300:
        raise api_error(resp.status, doc if isinstance(doc, dict) else data, what)
    if not isinstance(doc, dict):
        raise ClusterError(f"API server sent non-JSON for {what}", transient=True)
    return doc


@dataclass(frozen=True)
class Target:
    """Where one object is listed and watched: its collection, narrowed to its name."""

    ref: ObjectRef
    path: str  # e.g. /api/v1/namespaces/ai/endpoints

    @property
    def query(self) -> list[tuple[str, str]]:
        return [("fieldSelector", f"metadata.name={self.ref.name}")]


def target_for(kube: KubeSource, ref: ObjectRef) -> Target:
    plural, namespaced = kube.resource(ref.api_version, ref.kind)
    prefix = "/api/v1" if ref.api_version == "v1" else f"/apis/{ref.api_version}"
    path = f"{prefix}/namespaces/{ref.namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    return Target(ref, path)


def list_object(api: Any, target: Target, timeout: tuple[float, float] = REQUEST_TIMEOUT) -> tuple[JSON | None, str]:
    """The object (``None`` when absent) and the list's resourceVersion to watch from."""
    what = f"list {target.ref}"
    doc = call(api, "GET", target.path, query=target.query, timeout=timeout, what=what)
    if doc is None:
        raise ClusterError(f"{what}: the API server does not serve {target.path}", transient=False)
    rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
    if not rv:
        raise ClusterError(f"{what}: the list carries no resourceVersion", transient=True)
    found = None
    for item in doc.get("items") or []:
        if isinstance(item, dict) and (item.get("metadata") or {}).get("name") == target.ref.name:
            found = {"apiVersion": target.ref.api_version, "kind": target.ref.kind, **item}
    return found, rv


def _chunks(raw: Any) -> Iterator[bytes]:
    if getattr(raw, "chunked", False):
        yield from raw.stream(None, decode_content=True)  # one piece per HTTP chunk, never waits for more
        return
    while True:
        data = raw.read1(65536)
        if not data:
            return
        yield data


def lines(raw: Any) -> Iterator[bytes]:
    """Newline-delimited lines from a raw urllib3 response, as they arrive."""
    buf = bytearray()
    for chunk in _chunks(raw):
        buf += chunk
        while (end := buf.find(b"\n")) >= 0:
            line = bytes(buf[:end]).strip()
            del buf[: end + 1]
            if line:
                yield line
        if len(buf) > MAX_LINE:
            raise ClusterError(f"watch event larger than {MAX_LINE} bytes", transient=True)
    if bytes(buf).strip():
        yield bytes(buf).strip()


def stream(api: Any, target: Target, rv: str, settings: WatchSettings,
           on_open: Callable[[Any], None] | None = None) -> Iterator[tuple[str, JSON]]:
    """Events (type, object) of one watch from ``rv``; ends when the server ends the watch."""
    what = f"watch {target.ref}"
    query = [*target.query, ("watch", "1"), ("resourceVersion", rv), ("allowWatchBookmarks", "true"),
             ("timeoutSeconds", str(settings.watch_seconds))]
    resp = send(api, "GET", target.path, query=query, timeout=(settings.connect_timeout, settings.read_timeout),
                what=what)
    if resp.status != 200:
        data = resp.read()
        try:
            body: Any = json.loads(data)
        except ValueError:
            body = data
        raise api_error(resp.status, body, what)
    raw = resp.response
    if on_open is not None:
        on_open(raw)
    complete = False
    try:
        for line in lines(raw):
            try:
                ev = json.loads(line)
            except ValueError:
                raise ClusterError(f"{what}: malformed event line", transient=True) from None
            etype, obj = ev.get("type"), ev.get("object")
            if not isinstance(obj, dict):
                continue
            if etype == "ERROR":
                raise api_error(int(obj.get("code") or 500), obj, what)
            if etype in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                yield str(etype), obj
        complete = True
    finally:
        if complete:
            raw.release_conn()
        else:
            raw.close()


class ObjectWatcher:
    """Keeps one object current in the cache, forever (until ``stop``)."""

    def __init__(self, api: Any, target: Target, cache: LiveCache, settings: WatchSettings = WatchSettings(), *,
                 on_restart: Callable[[], None] = lambda: None, on_error: Callable[[], None] = lambda: None,
                 sleep: Callable[[float], None] | None = None, rand: Callable[[], float] = random.random) -> None:
        self.api, self.target, self.cache, self.settings = api, target, cache, settings
        self.ref = target.ref
        self.on_restart, self.on_error = on_restart, on_error
        self.rand = rand
        self.stopped = threading.Event()
        self._sleep = sleep or self.stopped.wait
        #: Set once the first list and watch were answered, well or not; ``first_error`` holds
        #: a refusal (401/403) of either, which makes startup fail.
        self.first = threading.Event()
        self.first_error: ApiError | None = None
        self._raw: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> "ObjectWatcher":
        self._thread = threading.Thread(target=self.run, name=f"watch {self.ref}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        raw = self._raw
        if raw is not None:  # unblock a read that would otherwise wait for the next bookmark
            try:
                raw.shutdown() if hasattr(raw, "shutdown") else raw.close()
            except Exception:  # noqa: BLE001 - best effort on a connection we are abandoning
                pass

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _opened(self, raw: Any) -> None:
        self._raw = raw
        if self.stopped.is_set():
            self.stop()
        self.cache.stream_up(self.ref)
        self.first.set()

    def run(self) -> None:
        from urllib3.exceptions import HTTPError

        rv: str | None = None
        failures = 0
        while not self.stopped.is_set():
            try:
                if rv is None:
                    obj, rv = list_object(self.api, self.target)
                    self.cache.put(self.ref, obj)
                for etype, obj in stream(self.api, self.target, rv, self.settings, self._opened):
                    failures = 0
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if etype != "BOOKMARK":
                        self.cache.put(self.ref, None if etype == "DELETED" else obj)
                    self.cache.api_reached()
                continue  # the server closed the watch after timeoutSeconds: go on from rv
            except Gone as exc:
                if self.stopped.is_set():
                    break
                event(log, logging.INFO, "watch history expired; re-listing", ref=self.ref, error=exc.message)
                rv = None  # never watch again at the expired version
                failures += 1
                error: ClusterError = exc
            except ClusterError as exc:
                error = exc
            except (HTTPError, OSError, ValueError) as exc:
                error = ClusterError(f"watch {self.ref}: connection lost ({type(exc).__name__})", transient=True)
            finally:
                self._raw = None
            if self.stopped.is_set():
                break
            failures += 0 if isinstance(error, Gone) else 1
            self._failed(error)
            self.on_restart()
            if not (isinstance(error, Gone) and failures == 1):  # the first re-list after 410 is immediate
                self._sleep(self.settings.backoff(failures, self.rand))

    def _failed(self, error: ClusterError) -> None:
        status = error.status if isinstance(error, ApiError) else None
        if isinstance(error, Gone):
            return
        self.on_error()
        if status in (401, 403) or not error.transient:
            self.cache.fail(self.ref, error.message)
            if isinstance(error, ApiError) and status in (401, 403) and not self.first.is_set():
                self.first_error = error
        else:
            self.cache.stream_down(self.ref)
        if status is None or status >= 500 or status == 429:  # down or overloaded: not usable
            self.cache.api_unreachable(error.message)
        else:  # it answered (403, 404): reachable, this object has a problem of its own
            self.cache.api_reached()
        self.first.set()
        event(log, logging.WARNING, "watch failed; reconnecting", ref=self.ref, error=error.message)


class WatchSet:
    """The watchers of one installation, kept in line with the objects git declares."""

    def __init__(self, api: Any, cache: LiveCache, settings: WatchSettings = WatchSettings(), *,
                 on_restart: Callable[[], None] = lambda: None, on_error: Callable[[], None] = lambda: None) -> None:
        self.api, self.cache, self.settings = api, cache, settings
        self.kube = KubeSource(api)
        self.on_restart, self.on_error = on_restart, on_error
        self.watchers: dict[ObjectRef, ObjectWatcher] = {}
        self._lock = threading.Lock()

    def reconcile(self, refs: Iterable[ObjectRef]) -> None:
        """Start watching new ``refs``, stop watching the ones no longer wanted."""
        wanted = set(refs)
        with self._lock:
            for ref in sorted(set(self.watchers) - wanted):
                self.watchers.pop(ref).stop()
                self.cache.forget(ref)
            for ref in sorted(wanted - set(self.watchers)):
                try:
                    target = target_for(self.kube, ref)
                except ClusterError as exc:  # discovery failed: try again at the next reconcile
                    self.cache.fail(ref, exc.message)
                    event(log, logging.WARNING, "cannot watch", ref=ref, error=exc.message)
                    continue
                self.cache.expect(ref)
                self.watchers[ref] = ObjectWatcher(self.api, target, self.cache, self.settings,
                                                   on_restart=self.on_restart, on_error=self.on_error).start()

    def wait_first(self, timeout: float) -> list[ApiError]:
        """Wait for every watcher's first answer; the refusals (401/403) among them."""
        import time

        deadline = time.monotonic() + timeout
        with self._lock:
            watchers = list(self.watchers.values())
        for w in watchers:
            w.first.wait(max(0.0, deadline - time.monotonic()))
        return [w.first_error for w in watchers if w.first_error is not None]

    def stop(self, timeout: float = 1.0) -> None:
        with self._lock:
            watchers = list(self.watchers.values())
        for w in watchers:
            w.stop()
        for w in watchers:
            w.join(timeout / max(1, len(watchers)))
