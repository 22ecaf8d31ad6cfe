"""Watch streams: events, watchers, BOOKMARKs and compaction (410 Expired)."""

from __future__ import annotations

import bisect
import copy
import dataclasses
import json
import select
import socket
import time as _time
from typing import Any, Callable, Iterator

from .http import _Handler
from .resources import Resource
from .selectors import _Pred
from .status import _bad_request, status_body


_NEVER = float("inf")  # a bookmark time that never comes


@dataclasses.dataclass
class _Event:
    rv: int
    res: Resource
    ns: str
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None


@dataclasses.dataclass
class _Watcher:
    res: Resource
    ns: str
    expire_gen: int
    drop_gen: int


def iter_events(raw_lines: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    """Parse newline-delimited watch JSON (helper for raw ``call_api`` tests)."""
    for line in raw_lines:
        line = line.strip()
        if line:
            yield json.loads(line)


class WatchMixin:
    """Watches: replay from a resourceVersion, BOOKMARKs, timeouts, 410 after compaction."""

    too_large_rv_wait = 3.0  # seconds a watch waits for a future resourceVersion

    def expire_watches(self) -> None:
        """Compact history: open and future watches at any rv seen so far get 410 Expired.

        The global resourceVersion is bumped once (like a compaction revision), so
        a fresh list returns an rv that can be watched again.
        """
        with self._cond:
            self._rv += 1
            self._min_watch_rv = self._rv
            self._expire_gen += 1
            self._cond.notify_all()

    def drop_watches(self) -> None:
        """Abruptly close every open watch connection (no terminating chunk)."""
        with self._cond:
            self._drop_gen += 1
            self._cond.notify_all()

    @property
    def open_watches(self) -> int:
        with self._lock:
            return len(self._watchers)

    def wait_for_watches(self, n: int = 1, timeout: float = 5.0) -> bool:
        deadline = _time.monotonic() + timeout
        with self._cond:
            while len(self._watchers) < n:
                left = deadline - _time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def _serve_watch(self, h: _Handler, res: Resource, ns: str, preds: list[_Pred], query: dict[str, str]) -> None:
        rv_param = query.get("resourceVersion", "")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1", "True")
        send_initial = query.get("sendInitialEvents") in ("true", "1", "True")
        timeout_s = query.get("timeoutSeconds")
        try:
            timeout = float(timeout_s) if timeout_s else None
        except ValueError:
            raise _bad_request(f'strconv.ParseInt: parsing "{timeout_s}": invalid syntax') from None

        def matches(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            if ns and obj["metadata"].get("namespace", "") != ns:
                return False
            return all(p(obj) for p in preds)

        initial: list[dict[str, Any]] = []
        error: dict[str, Any] | None = None
        with self._cond:
            if rv_param in ("", "0") or send_initial:
                cursor = len(self._events)
                initial = [copy.deepcopy(o) for k, o in sorted(self._objects.items(), key=lambda kv: kv[0][1:])
                           if k[0] == res and matches(o)]
                start_rv = self._rv
            else:
                try:
                    start_rv = int(rv_param)
                except ValueError:
                    raise _bad_request(f'resourceVersion: Invalid value: "{rv_param}": '
                                       "strconv.ParseUint: parsing " f'"{rv_param}": invalid syntax') from None
                if start_rv < self._min_watch_rv:
                    error = status_body(410, "Expired", f"too old resource version: {start_rv} "
                                                        f"({self._min_watch_rv})")
                elif start_rv > self._rv:
                    deadline = _time.monotonic() + self.too_large_rv_wait
                    while start_rv > self._rv and _time.monotonic() < deadline and not self._stopping:
                        self._cond.wait(max(0.0, min(0.1, deadline - _time.monotonic())))
                    if start_rv > self._rv:
                        error = status_body(504, "Timeout",
                                            f"Too large resource version: {start_rv}, current: {self._rv}",
                                            {"causes": [{"reason": "ResourceVersionTooLarge",
                                                         "message": "Too large resource version"}],
                                             "retryAfterSeconds": 1})
                cursor = bisect.bisect_right(self._event_rvs, start_rv)
            watcher = _Watcher(res, ns, self._expire_gen, self._drop_gen)
            if error is None:
                self._watchers.append(watcher)
                self._cond.notify_all()

        h.send_response(200)
        self._common_headers(h)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()

        def emit(etype: str, obj: dict[str, Any]) -> None:
            line = json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"
            h.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))

        def finish() -> None:
            h.wfile.write(b"0\r\n\r\n")

        if error is not None:
            emit("ERROR", error)
            finish()
            return
        try:
            self._watch_loop(h, watcher, res, initial, cursor, start_rv, bookmarks, send_initial, timeout,
                             matches, emit, finish)
        finally:
            with self._cond:
                if watcher in self._watchers:
                    self._watchers.remove(watcher)
                self._cond.notify_all()

    def _watch_loop(self, h: _Handler, watcher: _Watcher, res: Resource, initial: list[dict[str, Any]],
                    cursor: int, last_rv: int, bookmarks: bool, send_initial: bool, timeout: float | None,
                    matches: Callable[[dict[str, Any] | None], bool],
                    emit: Callable[[str, dict[str, Any]], None], finish: Callable[[], None]) -> None:
        def bookmark(rv: int, initial_end: bool = False) -> None:
            md: dict[str, Any] = {"resourceVersion": str(rv)}
            if initial_end:
                md["annotations"] = {"k8s.io/initial-events-end": "true"}
            emit("BOOKMARK", {"kind": res.kind, "apiVersion": res.api_version, "metadata": md})

        for obj in initial:
            emit("ADDED", obj)
        if send_initial and bookmarks:
            bookmark(last_rv, initial_end=True)
        started = _time.monotonic()
        deadline = started + timeout if timeout else None
        # kube-apiserver v1.20 (the tests/realapi tier, docs/realapi.md): a BOOKMARK 2 s before
        # the watch's timeoutSeconds and about every ``bookmark_interval`` (60 s), each only when
        # the resource's newest resourceVersion has moved past what the watch delivered -- so
        # an idle watch in a quiet cluster gets none at all.
        interval = self.bookmark_interval
        sent_rv = last_rv  # the newest resourceVersion this watch has delivered
        next_bookmark = min(x for x in (started + interval if interval else None,
                                        deadline - 2.0 if deadline is not None else None, _NEVER) if x is not None)
        while True:
            with self._cond:
                while True:
                    now = _time.monotonic()
                    if (self._stopping or watcher.expire_gen != self._expire_gen
                            or watcher.drop_gen != self._drop_gen or cursor < len(self._events)):
                        break
                    if deadline is not None and now >= deadline:
                        break
                    if bookmarks and now >= next_bookmark:
                        break
                    if self._client_gone(h):
                        return
                    wake = min(x for x in (deadline, next_bookmark if bookmarks else None, now + 0.25)
                               if x is not None)
                    self._cond.wait(max(0.0, wake - now))
                batch = self._events[cursor:]
                cursor = len(self._events)
                current_rv = self._rv
                expired = watcher.expire_gen != self._expire_gen
                dropped = watcher.drop_gen != self._drop_gen
                stopping = self._stopping
            if dropped or stopping:
                self._abort(h)
                return
            for ev in batch:
                out = self._convert(ev, watcher, matches)
                if out is not None:
                    emit(*out)
                    sent_rv = ev.rv
                last_rv = ev.rv
            if expired:
                emit("ERROR", status_body(410, "Expired",
                                          f"too old resource version: {last_rv} ({self._min_watch_rv})"))
                finish()
                return
            now = _time.monotonic()
            if deadline is not None and now >= deadline:
                finish()
                return
            if bookmarks and now >= next_bookmark:
                near_end = deadline is not None and now >= deadline - 2.0
                if current_rv > sent_rv:
                    bookmark(current_rv)
                    sent_rv = current_rv
                periodic = now + interval if interval else _NEVER
                next_bookmark = min(periodic, deadline if near_end or deadline is None else deadline - 2.0) \
                    if deadline is not None else periodic

    @staticmethod
    def _convert(ev: _Event, watcher: _Watcher,
                 matches: Callable[[dict[str, Any] | None], bool]) -> tuple[str, dict[str, Any]] | None:
        if ev.res != watcher.res or (watcher.ns and ev.ns != watcher.ns):
            return None
        if ev.type in ("ADDED", "DELETED"):
            return (ev.type, copy.deepcopy(ev.obj)) if matches(ev.obj) else None
        now_ok, before_ok = matches(ev.obj), matches(ev.old)
        if now_ok and before_ok:
            return "MODIFIED", copy.deepcopy(ev.obj)
        if now_ok:
            return "ADDED", copy.deepcopy(ev.obj)
        if before_ok and ev.old is not None:
            gone = copy.deepcopy(ev.old)
            gone["metadata"]["resourceVersion"] = str(ev.rv)
            return "DELETED", gone
        return None

    @staticmethod
    def _client_gone(h: _Handler) -> bool:
        try:
            readable, _, _ = select.select([h.connection], [], [], 0)
            if readable:
                return bool(h.connection.recv(1, socket.MSG_PEEK) == b"")
        except (OSError, ValueError):
            return True
        return False
