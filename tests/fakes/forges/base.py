"""What the three fake forges share: the threaded loopback server, the request log,
fault injection, pull-request state kept next to a real bare git repository, and the
injected clock (``FakeTime``). One module per forge builds on it (``github``, ``gitea``,
``gitlab``)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlencode

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
EPOCH = datetime(2026, 8, 20, 9, 0, 0, tzinfo=timezone.utc)
_AUTH_HEADERS = {"authorization", "private-token"}


# -- helpers for tests -------------------------------------------------------------------


class FakeTime:
    """Injected ``clock``/``sleep``: real time plus everything "slept" so far."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return time.time() + self.offset

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.offset += max(seconds, 0.0)


def init_bare_repo(path: Path, branches: tuple[str, ...] = ("main",)) -> Path:
    """A bare git repository at ``path`` with one commit on each of ``branches``."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(path.parent),
    }

    def git(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(path), *args], input=stdin, env=env,
            capture_output=True, text=True, check=True,
        )
        return done.stdout.strip()

    subprocess.run(["git", "init", "--bare", "-q", str(path)], env=env, check=True)
    blob = git("hash-object", "-w", "--stdin", stdin="hello\n")
    tree = git("mktree", stdin=f"100644 blob {blob}\tREADME\n")
    commit = git("commit-tree", tree, "-m", "initial")
    for branch in branches:
        git("update-ref", f"refs/heads/{branch}", commit)
    return path


# -- state -----------------------------------------------------------------------------------


@dataclass
class LoggedRequest:
    method: str
    path: str  # without the API prefix, still percent-encoded
    query: dict[str, str]
    body: Any
    headers: dict[str, str]  # auth headers masked
    status: int = 0  # what the fake answered (0: no answer yet, or it hung up)


@dataclass
class FakePR:
    number: int
    title: str
    body: str
    head: str
    base: str
    labels: list[str] = field(default_factory=list)
    state: str = "open"  # open | closed
    merged: bool = False
    created: int = 0
    updated: int = 0
    closed: int | None = None
    comments: list[dict[str, Any]] = field(default_factory=list)
    #: Where the head branch lives: "" for the repository itself, else a fork's "owner/name".
    head_repo: str = ""
    author: str = ""  # who opened it: "" for the token's user (``FakeForgeServer.account``)
    head_sha: str = ""  # "" for the branch's commit in ``git_dir``; a fork's commit is not there


@dataclass
class _Fault:
    status: int = 0
    retry_after: float | None = None
    ratelimit_reset: float | None = None
    hang: float = 0.0
    body: Any = None  # replaces the forge's usual error body


Reply = tuple[int, Any, dict[str, str]]


def iso(tick: int | None) -> str | None:
    if tick is None:
        return None
    return (EPOCH + timedelta(seconds=tick)).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate small writes
    server: _Server

    def _any(self) -> None:
        self.server.fake._handle(self)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeForgeServer

    def server_bind(self) -> None:  # skip HTTPServer's reverse DNS lookup (getfqdn): slow
        import socketserver

        socketserver.TCPServer.server_bind(self)
        # A non-blocking accept: when a connection goes away between serve_forever's select and
        # its accept, a blocking accept waits forever and stop() (shutdown) with it -- seen once
        # under load, hanging the whole test run. Non-blocking, accept fails and the loop goes on.
        # (Accepted sockets are blocking as usual.)
        self.socket.setblocking(False)
        host, port = self.socket.getsockname()[:2]
        self.server_name, self.server_port = str(host), int(port)


class FakeForgeServer:
    """Common plumbing: the HTTP server, the request log, faults, auth, pagination."""

    kind = ""
    prefix = ""  # API path prefix, e.g. /api/v1

    def __init__(
        self,
        *,
        git_dir: Path | str | None = None,
        token: str = "fake-token",
        repo: str = "acme/infra",
        page_size: int = 30,
        account: str = "syncer-bot",
    ) -> None:
        self.git_dir = Path(git_dir) if git_dir is not None else None
        self.token = token
        self.repo = repo
        self.owner, _, self.name = repo.partition("/")
        self.page_size = page_size
        self.account = account  # the user the token belongs to (GET /user)
        self.prs: list[FakePR] = []
        self.labels: dict[str, dict[str, Any]] = {}
        self.requests: list[LoggedRequest] = []
        self.rate_remaining = 5000
        self._faults: list[_Fault] = []
        self._tick = 0
        self._ids = 1000
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    # lifecycle
    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def api_url(self) -> str:
        return self.url + self.prefix

    # steering and inspection
    def fail_next(
        self,
        status: int,
        count: int = 1,
        retry_after: float | None = None,
        ratelimit_reset: float | None = None,
        body: Any = None,
    ) -> None:
        """Answer the next ``count`` requests with ``status`` (and rate-limit headers)."""
        with self._lock:
            self._faults.extend(
                _Fault(status=status, retry_after=retry_after, ratelimit_reset=ratelimit_reset, body=body)
                for _ in range(count)
            )

    def hang_next(self, seconds: float, count: int = 1) -> None:
        with self._lock:
            self._faults.extend(_Fault(hang=seconds) for _ in range(count))

    def stop_faults(self) -> None:
        """Forget faults not yet used up."""
        with self._lock:
            self._faults.clear()

    @property
    def writes(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.method in WRITE_METHODS]

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def add_pr(
        self, head: str, base: str = "main", *, title: str = "a PR", body: str = "",
        labels: tuple[str, ...] = (), state: str = "open", merged: bool = False,
        head_repo: str = "", author: str = "", head_sha: str = "",
    ) -> FakePR:
        """A PR opened by someone (by default the token's user, from the repository itself);
        ``head_repo="mallory/infra"`` makes it come from a fork, as a stranger's would."""
        with self._lock:
            pr = FakePR(number=self._next_number(), title=title, body=body, head=head,
                        base=base, labels=list(labels), created=self._now(), updated=self._now(),
                        head_repo=head_repo, author=author, head_sha=head_sha)
            for name in labels:
                self._label(name)
            self.prs.append(pr)
            if state != "open" or merged:
                self.close_pr(pr.number, merged=merged)
            return pr

    def close_pr(self, number: int, *, merged: bool = False) -> None:
        """What a human does in the web UI: close (or merge) a PR."""
        with self._lock:
            pr = self.pr(number)
            pr.state, pr.merged, pr.closed = "closed", merged, self._now()
            pr.updated = pr.closed

    def pr(self, number: int) -> FakePR:
        return next(p for p in self.prs if p.number == number)

    def open_prs(self) -> list[FakePR]:
        return [p for p in self.prs if p.state == "open"]

    def comment_bodies(self, number: int) -> list[str]:
        return [c["body"] for c in self.pr(number).comments if not c.get("system")]

    # shared helpers for the subclasses
    def branch_exists(self, name: str) -> bool:
        if self.git_dir is None:
            return True
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "rev-parse", "--verify", "--quiet",
             f"refs/heads/{name}"],
            capture_output=True, text=True,
        )
        return done.returncode == 0

    def author_of(self, pr: FakePR) -> str:
        return pr.author or self.account

    def head_sha_of(self, pr: FakePR) -> str:
        return pr.head_sha or ("f0" * 20 if pr.head_repo else self.sha(pr.head))

    def duplicate(self, head: str, base: str) -> FakePR | None:
        """The open PR from the repository's own ``head`` into ``base``: what makes the forges
        answer "already exists". One from a fork's branch of the same name does not count."""
        return next((p for p in self.open_prs() if p.head == head and p.base == base and not p.head_repo), None)

    def sha(self, branch: str) -> str:
        if self.git_dir is None:
            return "0" * 40
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "rev-parse", "--verify", "--quiet",
             f"refs/heads/{branch}"],
            capture_output=True, text=True,
        )
        return done.stdout.strip() or "0" * 40

    def _now(self) -> int:
        self._tick += 1
        return self._tick

    def _new_id(self) -> int:
        self._ids += 1
        return self._ids

    def _next_number(self) -> int:
        return max((p.number for p in self.prs), default=0) + 1

    def _label(self, name: str, color: str = "ededed", description: str | None = None) -> dict[str, Any]:
        if name not in self.labels:
            self.labels[name] = {"id": self._new_id(), "name": name, "color": color,
                                 "description": description}
        return self.labels[name]

    def _page(self, items: list[Any], query: dict[str, str], size_key: str, default: int) -> tuple[list[Any], int, int]:
        """Slice ``items`` by ``page`` and the size parameter (capped at ``page_size``)."""
        try:
            size = min(int(query.get(size_key, default)), self.page_size)
            page = max(int(query.get("page", 1)), 1)
        except ValueError:
            size, page = min(default, self.page_size), 1
        size = max(size, 1)
        pages = max((len(items) + size - 1) // size, 1)
        return items[(page - 1) * size : page * size], page, pages

    def _link(self, path: str, query: dict[str, str], page: int, pages: int) -> str:
        def at(n: int) -> str:
            return f"{self.api_url}{path}?{urlencode({**query, 'page': n})}"

        links = []
        if page < pages:
            links += [f'<{at(page + 1)}>; rel="next"', f'<{at(pages)}>; rel="last"']
        if page > 1:
            links += [f'<{at(1)}>; rel="first"', f'<{at(page - 1)}>; rel="prev"']
        return ", ".join(links)

    # the request pipeline
    def _handle(self, h: _Handler) -> None:
        raw_path, _, raw_query = h.path.partition("?")
        query = dict(parse_qsl(raw_query, keep_blank_values=True))
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body: Any = None
        if raw:
            if "application/x-www-form-urlencoded" in (h.headers.get("Content-Type") or ""):
                body = dict(parse_qsl(raw.decode()))
            else:
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = _Unparsable(raw)
        path = raw_path[len(self.prefix):] if self.prefix and raw_path.startswith(self.prefix) else raw_path
        headers = {k: ("***" if k.lower() in _AUTH_HEADERS else v) for k, v in h.headers.items()}
        logged = LoggedRequest(h.command, path, query, body, headers)
        with self._lock:
            self.requests.append(logged)
            fault = self._faults.pop(0) if self._faults else None
        if fault is not None and fault.hang:
            if self._stopping.wait(fault.hang):
                return
            fault = None
        with self._lock:
            if fault is not None:
                reply = self._fault_reply(fault)
                if fault.body is not None:
                    reply = (reply[0], fault.body, reply[2])
            elif self.prefix and not raw_path.startswith(self.prefix) and self.kind != "github":
                reply = self._not_found()
            elif not self._auth_ok(h.headers.get("Authorization"), h.headers.get("PRIVATE-TOKEN")):
                reply = self._unauthorized()
            elif isinstance(body, _Unparsable):
                reply = self._bad_json()
            else:
                reply = self._route(h.command, path, query, body)
            logged.status = reply[0]
        self._send(h, reply)

    def _send(self, h: _Handler, reply: Reply) -> None:
        status, payload, headers = reply
        if payload is None:
            data = b""
        elif isinstance(payload, str):
            data = payload.encode()
            headers = {"Content-Type": "text/plain; charset=utf-8", **headers}
        else:
            data = json.dumps(payload).encode()
            headers = {"Content-Type": "application/json; charset=utf-8", **headers}
        try:
            h.send_response(status)
            for k, v in {**self._common_headers(), **headers}.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except OSError:  # the client gave up (timeout) and closed the connection
            pass

    # per-forge hooks
    def _auth_ok(self, authorization: str | None, private_token: str | None) -> bool:
        raise NotImplementedError

    def _unauthorized(self) -> Reply:
        raise NotImplementedError

    def _not_found(self) -> Reply:
        raise NotImplementedError

    def _bad_json(self) -> Reply:
        return 400, {"message": "Problems parsing JSON"}, {}

    def _fault_reply(self, fault: _Fault) -> Reply:
        raise NotImplementedError

    def _common_headers(self) -> dict[str, str]:
        return {}

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        raise NotImplementedError


class _Unparsable:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") else None


# -- GitHub ----------------------------------------------------------------------------------
