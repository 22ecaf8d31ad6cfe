"""Fake GitHub, Gitea and GitLab API servers for tests, speaking their real wire formats.

Each fake is a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` (random port) in a thread,
keeping state: pull/merge requests (number, state, title, body, labels, head, base,
merged), comments/notes, repository labels. Branch existence is checked in a real bare
git repository (``git_dir``) when a PR is opened, and the answers use the real status
codes and error bodies: GitHub 422 "Validation Failed" / "A pull request already
exists", Gitea 409 / 404, GitLab 409 / 400; 401 per forge; pagination by ``Link``,
``page``/``limit`` and ``x-next-page`` with a small ``page_size`` to force several pages;
rate-limit headers.

Tests steer them with ``fail_next(status, count, retry_after=, ratelimit_reset=)`` and
``hang_next(seconds, count)``, and inspect ``requests`` / ``writes`` (the request log).

``FakeTime`` gives a consistent injected clock/sleep pair (sleeping advances the clock
without waiting), and ``init_bare_repo`` makes the bare repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, quote, unquote, urlencode

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
    ) -> None:
        self.git_dir = Path(git_dir) if git_dir is not None else None
        self.token = token
        self.repo = repo
        self.owner, _, self.name = repo.partition("/")
        self.page_size = page_size
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
    ) -> FakePR:
        with self._lock:
            pr = FakePR(number=self._next_number(), title=title, body=body, head=head,
                        base=base, labels=list(labels), created=self._now(), updated=self._now())
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


class FakeGitHub(FakeForgeServer):
    """GitHub REST v3; serves both ``/repos/...`` and the Enterprise ``/api/v3/repos/...``."""

    kind = "github"
    prefix = "/api/v3"
    DOCS = "https://docs.github.com/rest"

    def _auth_ok(self, authorization: str | None, private_token: str | None) -> bool:
        return _bearer(authorization) == self.token

    def _unauthorized(self) -> Reply:
        return 401, {"message": "Bad credentials", "documentation_url": self.DOCS, "status": "401"}, {}

    def _not_found(self) -> Reply:
        return 404, {"message": "Not Found", "documentation_url": self.DOCS, "status": "404"}, {}

    def _common_headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self.rate_remaining),
            "x-ratelimit-used": str(5000 - self.rate_remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-resource": "core",
            "x-github-api-version-selected": "2022-11-28",
        }

    def _fault_reply(self, fault: _Fault) -> Reply:
        headers: dict[str, str] = {}
        limited = fault.status == 429 or fault.retry_after is not None or fault.ratelimit_reset is not None
        if limited:
            if fault.retry_after is not None:
                headers["retry-after"] = str(int(fault.retry_after))
            if fault.ratelimit_reset is not None:
                headers["x-ratelimit-remaining"] = "0"
                headers["x-ratelimit-reset"] = str(int(fault.ratelimit_reset))
            message = "API rate limit exceeded for user ID 1."
            return fault.status, {"message": message, "documentation_url": self.DOCS}, headers
        if fault.status == 401:
            return self._unauthorized()
        if fault.status == 403:
            return 403, {"message": "Resource not accessible by personal access token",
                         "documentation_url": self.DOCS, "status": "403"}, {}
        if fault.status == 404:
            return self._not_found()
        if fault.status >= 500:
            return fault.status, {"message": "Server Error"}, {}
        return fault.status, {"message": "Fault", "documentation_url": self.DOCS}, {}

    def _validation(self, errors: list[dict[str, Any]], doc: str = "") -> Reply:
        return 422, {"message": "Validation Failed", "errors": errors,
                     "documentation_url": doc or self.DOCS, "status": "422"}, {}

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        if not m or (unquote(m[1]), unquote(m[2])) != (self.owner, self.name):
            return self._not_found()
        rest = m[3] or ""
        if rest == "" and method == "GET":
            return 200, self._repo_json(), {}
        if rest == "/pulls":
            if method == "GET":
                return self._list_pulls(path, query)
            if method == "POST":
                return self._create_pull(body)
        if n := re.fullmatch(r"/pulls/(\d+)", rest):
            pr = self._find(int(n[1]))
            if pr is None:
                return self._not_found()
            if method == "GET":
                return 200, self._pull_json(pr, full=True), {}
            if method == "PATCH":
                return self._patch_pull(pr, body)
        if n := re.fullmatch(r"/issues/(\d+)/(comments|labels)", rest):
            pr = self._find(int(n[1]))
            if pr is None:
                return self._not_found()
            if n[2] == "comments":
                return self._comments(pr, method, path, query, body)
            return self._issue_labels(pr, method, body)
        return self._not_found()

    def _find(self, number: int) -> FakePR | None:
        return next((p for p in self.prs if p.number == number), None)

    def _list_pulls(self, path: str, query: dict[str, str]) -> Reply:
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            return self._validation([{"resource": "Issue", "field": "state", "code": "invalid"}])
        items = [p for p in self.prs if state == "all" or p.state == state]
        head = query.get("head")
        if head and ":" in head:  # GitHub ignores a head filter without "owner:"
            owner, _, branch = head.partition(":")
            items = [p for p in items if owner == self.owner and p.head == branch]
        if query.get("base"):
            items = [p for p in items if p.base == query["base"]]
        sort = query.get("sort", "created")
        direction = query.get("direction", "desc" if sort == "created" else "asc")
        key = (lambda p: p.updated) if sort == "updated" else (lambda p: p.created)
        items.sort(key=key, reverse=direction == "desc")
        page, number, pages = self._page(items, query, "per_page", 30)
        headers = {}
        if link := self._link(path, query, number, pages):
            headers["Link"] = link
        return 200, [self._pull_json(p, full=False) for p in page], headers

    def _create_pull(self, body: Any) -> Reply:
        doc = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
        if not isinstance(body, dict):
            return self._bad_json()
        missing = [k for k in ("head", "base") if not body.get(k)]
        if missing:
            return self._validation([{"resource": "PullRequest", "field": k, "code": "missing_field"} for k in missing], doc)
        if not body.get("title"):
            return self._validation([{"resource": "Issue", "field": "title", "code": "missing_field"}], doc)
        head = str(body["head"])
        if ":" in head:
            owner, _, head = head.partition(":")
            if owner != self.owner:
                return self._validation([{"resource": "PullRequest", "field": "head", "code": "invalid"}], doc)
        base = str(body["base"])
        for field_name, branch in (("head", head), ("base", base)):
            if not self.branch_exists(branch):
                return self._validation([{"resource": "PullRequest", "field": field_name, "code": "invalid"}], doc)
        if any(p.head == head and p.base == base for p in self.open_prs()):
            return self._validation([{"resource": "PullRequest", "code": "custom",
                                      "message": f"A pull request already exists for {self.owner}:{head}."}], doc)
        now = self._now()
        pr = FakePR(number=self._next_number(), title=str(body["title"]), body=str(body.get("body") or ""),
                    head=head, base=base, created=now, updated=now)
        self.prs.append(pr)
        location = f"{self.api_url}/repos/{self.repo}/pulls/{pr.number}"
        return 201, self._pull_json(pr, full=True), {"Location": location}

    def _patch_pull(self, pr: FakePR, body: Any) -> Reply:
        if not isinstance(body, dict):
            return self._bad_json()
        state = body.get("state")
        if state is not None and state not in ("open", "closed"):
            return self._validation([{"resource": "PullRequest", "field": "state", "code": "invalid"}])
        if state == "open" and pr.merged:
            return self._validation([{"resource": "PullRequest", "code": "custom",
                                      "message": "Cannot reopen a merged pull request"}])
        if "title" in body:
            pr.title = str(body["title"])
        if "body" in body:
            pr.body = str(body["body"] or "")
        if "base" in body:
            pr.base = str(body["base"])
        now = self._now()
        if state == "closed" and pr.state == "open":
            pr.state, pr.closed = "closed", now
        elif state == "open" and pr.state == "closed":
            pr.state, pr.closed = "open", None
        pr.updated = now
        return 200, self._pull_json(pr, full=True), {}

    def _comments(self, pr: FakePR, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        if method == "GET":
            page, number, pages = self._page(pr.comments, query, "per_page", 30)
            headers = {}
            if link := self._link(path, query, number, pages):
                headers["Link"] = link
            return 200, [self._comment_json(pr, c) for c in page], headers
        if method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return self._validation([{"resource": "IssueComment", "field": "body", "code": "missing_field"}])
            comment = {"id": self._new_id(), "body": body["body"], "created": self._now()}
            pr.comments.append(comment)
            pr.updated = comment["created"]
            return 201, self._comment_json(pr, comment), {}
        return self._not_found()

    def _issue_labels(self, pr: FakePR, method: str, body: Any) -> Reply:
        if method in ("PUT", "POST"):
            names = body.get("labels") if isinstance(body, dict) else body
            if not isinstance(names, list) or not all(isinstance(n, (str, dict)) for n in names):
                return self._validation([{"resource": "Label", "field": "labels", "code": "invalid"}])
            names = [n["name"] if isinstance(n, dict) else n for n in names]
            if method == "PUT":
                pr.labels = []
            for name in names:
                self._label(name)
                if name not in pr.labels:
                    pr.labels.append(name)
            pr.updated = self._now()
        elif method == "DELETE":
            pr.labels = []
            pr.updated = self._now()
            return 204, None, {}
        elif method != "GET":
            return self._not_found()
        return 200, [self._label_json(n) for n in pr.labels], {}

    # JSON shapes (see components/schemas in github-rest-pulls.json)
    def _user_json(self, login: str = "syncer-bot", uid: int = 7) -> dict[str, Any]:
        api = self.api_url
        return {
            "login": login, "id": uid, "node_id": f"U_{uid}", "avatar_url": f"{self.url}/avatars/{uid}",
            "gravatar_id": "", "url": f"{api}/users/{login}", "html_url": f"{self.url}/{login}",
            "followers_url": f"{api}/users/{login}/followers",
            "following_url": f"{api}/users/{login}/following{{/other_user}}",
            "gists_url": f"{api}/users/{login}/gists{{/gist_id}}",
            "starred_url": f"{api}/users/{login}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/users/{login}/subscriptions",
            "organizations_url": f"{api}/users/{login}/orgs", "repos_url": f"{api}/users/{login}/repos",
            "events_url": f"{api}/users/{login}/events{{/privacy}}",
            "received_events_url": f"{api}/users/{login}/received_events",
            "type": "User", "site_admin": False,
        }

    def _repo_json(self) -> dict[str, Any]:
        api = f"{self.api_url}/repos/{self.repo}"
        templated = {
            "archive_url": "/{archive_format}{/ref}", "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}", "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}", "comments_url": "/comments{/number}",
            "commits_url": "/commits{/sha}", "compare_url": "/compare/{base}...{head}",
            "contents_url": "/contents/{+path}", "git_commits_url": "/git/commits{/sha}",
            "git_refs_url": "/git/refs{/sha}", "git_tags_url": "/git/tags{/sha}",
            "issue_comment_url": "/issues/comments{/number}", "issue_events_url": "/issues/events{/number}",
            "issues_url": "/issues{/number}", "keys_url": "/keys{/key_id}", "labels_url": "/labels{/name}",
            "milestones_url": "/milestones{/number}", "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}", "releases_url": "/releases{/id}", "statuses_url": "/statuses/{sha}",
            "trees_url": "/git/trees{/sha}",
        }
        plain = ["contributors", "deployments", "downloads", "events", "forks", "hooks", "languages",
                 "merges", "stargazers", "subscribers", "subscription", "tags", "teams"]
        repo: dict[str, Any] = {k: api + v for k, v in templated.items()}
        repo.update({f"{k}_url": f"{api}/{k}" for k in plain})
        repo.update({
            "id": 42, "node_id": "R_42", "name": self.name, "full_name": self.repo,
            "owner": self._user_json(self.owner, 3), "private": True, "html_url": f"{self.url}/{self.repo}",
            "description": None, "fork": False, "url": api, "clone_url": f"{self.url}/{self.repo}.git",
            "git_url": f"git://127.0.0.1/{self.repo}.git", "ssh_url": f"git@127.0.0.1:{self.repo}.git",
            "svn_url": f"{self.url}/{self.repo}", "mirror_url": None, "homepage": None, "language": None,
            "forks": 0, "forks_count": 0, "stargazers_count": 0, "watchers": 0, "watchers_count": 0,
            "size": 1, "default_branch": "main", "open_issues": len(self.open_prs()),
            "open_issues_count": len(self.open_prs()), "has_issues": True, "has_projects": False,
            "has_wiki": False, "has_pages": False, "has_downloads": False, "archived": False,
            "disabled": False, "license": None, "pushed_at": iso(self._tick or 1),
            "created_at": iso(0), "updated_at": iso(self._tick or 1),
        })
        return repo

    def _label_json(self, name: str) -> dict[str, Any]:
        label = self._label(name)
        return {"id": label["id"], "node_id": f"LA_{label['id']}",
                "url": f"{self.api_url}/repos/{self.repo}/labels/{quote(name, safe='')}",
                "name": name, "description": label["description"], "color": label["color"], "default": False}

    def _comment_json(self, pr: FakePR, c: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.api_url}/repos/{self.repo}"
        return {
            "id": c["id"], "node_id": f"IC_{c['id']}", "url": f"{api}/issues/comments/{c['id']}",
            "html_url": f"{self.url}/{self.repo}/pull/{pr.number}#issuecomment-{c['id']}",
            "body": c["body"], "user": self._user_json(), "created_at": iso(c["created"]),
            "updated_at": iso(c["created"]), "issue_url": f"{api}/issues/{pr.number}",
            "author_association": "CONTRIBUTOR",
        }

    def _pull_json(self, pr: FakePR, *, full: bool) -> dict[str, Any]:
        api = f"{self.api_url}/repos/{self.repo}"
        html = f"{self.url}/{self.repo}/pull/{pr.number}"
        repo = self._repo_json()
        shas = {pr.head: self.sha(pr.head), pr.base: self.sha(pr.base)}

        def ref(branch: str) -> dict[str, Any]:
            return {"label": f"{self.owner}:{branch}", "ref": branch, "sha": shas[branch],
                    "repo": repo, "user": self._user_json(self.owner, 3)}

        merged_at = iso(pr.closed) if pr.merged else None
        labels = [self._label_json(n) for n in pr.labels]
        if not full:  # pull-request-simple: a label's description is a string, never null
            labels = [{**label, "description": label["description"] or ""} for label in labels]
        data: dict[str, Any] = {
            "url": f"{api}/pulls/{pr.number}", "id": 5000 + pr.number, "node_id": f"PR_{pr.number}",
            "html_url": html, "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
            "issue_url": f"{api}/issues/{pr.number}", "commits_url": f"{api}/pulls/{pr.number}/commits",
            "review_comments_url": f"{api}/pulls/{pr.number}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{pr.number}/comments",
            "statuses_url": f"{api}/statuses/{shas[pr.head]}",
            "number": pr.number, "state": pr.state, "locked": False, "title": pr.title,
            "user": self._user_json(), "body": pr.body or None,
            "labels": labels, "milestone": None, "active_lock_reason": None, "created_at": iso(pr.created), "updated_at": iso(pr.updated),
            "closed_at": iso(pr.closed), "merged_at": merged_at,
            "merge_commit_sha": shas[pr.base] if pr.merged else None,
            "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
            "head": ref(pr.head), "base": ref(pr.base),
            "_links": {k: {"href": v} for k, v in {
                "self": f"{api}/pulls/{pr.number}", "html": html, "issue": f"{api}/issues/{pr.number}",
                "comments": f"{api}/issues/{pr.number}/comments",
                "review_comments": f"{api}/pulls/{pr.number}/comments",
                "review_comment": f"{api}/pulls/comments{{/number}}",
                "commits": f"{api}/pulls/{pr.number}/commits",
                "statuses": f"{api}/statuses/{shas[pr.head]}",
            }.items()},
            "author_association": "CONTRIBUTOR", "auto_merge": None, "draft": False,
        }
        if full:
            data.update({
                "merged": pr.merged, "mergeable": None if pr.merged else True, "rebaseable": True,
                "mergeable_state": "clean", "merged_by": self._user_json() if pr.merged else None,
                "comments": len(pr.comments), "review_comments": 0, "maintainer_can_modify": False,
                "commits": 1, "additions": 1, "deletions": 1, "changed_files": 1,
            })
        return data


# -- Gitea -----------------------------------------------------------------------------------


class FakeGitea(FakeForgeServer):
    """Gitea/Forgejo ``/api/v1``."""

    kind = "gitea"
    prefix = "/api/v1"

    def _auth_ok(self, authorization: str | None, private_token: str | None) -> bool:
        return _bearer(authorization) == self.token

    def _unauthorized(self) -> Reply:
        return 401, {"message": "user does not exist [uid: 0, name: ]", "url": f"{self.api_url}/swagger"}, {}

    def _not_found(self) -> Reply:
        return 404, {"errors": None, "message": "The target couldn't be found.", "url": f"{self.api_url}/swagger"}, {}

    def _bad_json(self) -> Reply:
        return 422, {"message": "invalid character in JSON body", "url": f"{self.api_url}/swagger"}, {}

    def _fault_reply(self, fault: _Fault) -> Reply:
        # Gitea has no rate limiter of its own; a reverse proxy in front of it may send 429.
        headers = {"Retry-After": str(int(fault.retry_after))} if fault.retry_after is not None else {}
        if fault.status == 429:
            return 429, "Too Many Requests\n", headers
        if fault.status == 401:
            return self._unauthorized()
        if fault.status == 403:
            return 403, {"message": "token does not have at least one of required scope(s): [write:repository]",
                         "url": f"{self.api_url}/swagger"}, {}
        if fault.status == 404:
            return self._not_found()
        if fault.status >= 500:
            return fault.status, f"{fault.status} Internal Server Error\n", headers
        return fault.status, {"message": "fault", "url": f"{self.api_url}/swagger"}, headers

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        if not m or (unquote(m[1]), unquote(m[2])) != (self.owner, self.name):
            return self._not_found()
        rest = m[3] or ""
        if rest == "/pulls":
            if method == "GET":
                return self._list_pulls(path, query)
            if method == "POST":
                return self._create_pull(body)
        if n := re.fullmatch(r"/pulls/(\d+)", rest):
            pr = next((p for p in self.prs if p.number == int(n[1])), None)
            if pr is None:
                return self._not_found()
            if method == "GET":
                return 200, self._pull_json(pr), {}
            if method == "PATCH":
                return self._patch_pull(pr, body)
        if n := re.fullmatch(r"/issues/(\d+)/(comments|labels)", rest):
            pr = next((p for p in self.prs if p.number == int(n[1])), None)
            if pr is None:
                return self._not_found()
            if n[2] == "comments":
                return self._comments(pr, method, body)
            return self._issue_labels(pr, method, body)
        if rest == "/labels":
            if method == "GET":
                items = sorted(self.labels.values(), key=lambda l: l["name"])
                page, number, pages = self._page(items, query, "limit", 50)
                return 200, [self._label_json(l["name"]) for l in page], self._page_headers(path, query, number, pages, len(items))
            if method == "POST":
                return self._create_label(body)
        return self._not_found()

    def _page_headers(self, path: str, query: dict[str, str], page: int, pages: int, total: int) -> dict[str, str]:
        headers = {"X-Total-Count": str(total)}
        if link := self._link(path, query, page, pages):
            headers["Link"] = link
        return headers

    def _list_pulls(self, path: str, query: dict[str, str]) -> Reply:
        state = query.get("state", "open")
        items = [p for p in self.prs if state == "all" or p.state == state]
        sort = query.get("sort", "")
        if sort == "recentupdate":
            items.sort(key=lambda p: p.updated, reverse=True)
        elif sort == "leastupdate":
            items.sort(key=lambda p: p.updated)
        elif sort == "oldest":
            items.sort(key=lambda p: p.created)
        else:
            items.sort(key=lambda p: p.created, reverse=True)
        page, number, pages = self._page(items, query, "limit", 50)
        return 200, [self._pull_json(p) for p in page], self._page_headers(path, query, number, pages, len(items))

    def _create_pull(self, body: Any) -> Reply:
        if not isinstance(body, dict):
            return self._bad_json()
        if not body.get("title"):
            return 422, {"message": "[Title]: Required", "url": f"{self.api_url}/swagger"}, {}
        head, base = str(body.get("head") or ""), str(body.get("base") or "")
        if not (head and base and self.branch_exists(head) and self.branch_exists(base)):
            return self._not_found()
        dup = next((p for p in self.open_prs() if p.head == head and p.base == base), None)
        if dup is not None:
            return 409, {"message": (
                f"pull request already exists for these targets [id: {dup.number}, issue_id: {dup.number}, "
                f"head_repo: 42, base_repo: 42, head_branch: {head}, base_branch: {base}]"),
                "url": f"{self.api_url}/swagger"}, {}
        names = self._names(body.get("labels") or [])
        if names is None:
            return 422, {"message": "label does not exist", "url": f"{self.api_url}/swagger"}, {}
        now = self._now()
        pr = FakePR(number=self._next_number(), title=str(body["title"]), body=str(body.get("body") or ""),
                    head=head, base=base, labels=names, created=now, updated=now)
        self.prs.append(pr)
        return 201, self._pull_json(pr), {}

    def _names(self, refs: list[Any]) -> list[str] | None:
        by_id = {l["id"]: name for name, l in self.labels.items()}
        names = []
        for ref in refs:
            name = by_id.get(ref) if isinstance(ref, int) else (ref if ref in self.labels else None)
            if name is None:
                return None
            names.append(name)
        return names

    def _patch_pull(self, pr: FakePR, body: Any) -> Reply:
        if not isinstance(body, dict):
            return self._bad_json()
        if "title" in body:
            pr.title = str(body["title"])
        if "body" in body:
            pr.body = str(body["body"] or "")
        state = body.get("state")
        if state is not None and state not in ("open", "closed"):
            return 422, {"message": "invalid state", "url": f"{self.api_url}/swagger"}, {}
        now = self._now()
        if state == "closed" and pr.state == "open":
            pr.state, pr.closed = "closed", now
        elif state == "open" and pr.state == "closed" and not pr.merged:
            pr.state, pr.closed = "open", None
        pr.updated = now
        return 201, self._pull_json(pr), {}  # Gitea answers 201 Created to an edit

    def _comments(self, pr: FakePR, method: str, body: Any) -> Reply:
        if method == "GET":
            return 200, [self._comment_json(pr, c) for c in pr.comments], {}
        if method == "POST":
            if not isinstance(body, dict) or not body.get("body"):
                return 422, {"message": "[Body]: Required", "url": f"{self.api_url}/swagger"}, {}
            comment: dict[str, Any] = {"id": self._new_id(), "body": str(body["body"]), "created": self._now()}
            pr.comments.append(comment)
            pr.updated = comment["created"]
            return 201, self._comment_json(pr, comment), {}
        return self._not_found()

    def _issue_labels(self, pr: FakePR, method: str, body: Any) -> Reply:
        if method in ("PUT", "POST"):
            refs = body.get("labels") if isinstance(body, dict) else None
            names = self._names(refs) if isinstance(refs, list) else None
            if names is None:
                return 422, {"message": "invalid labels", "url": f"{self.api_url}/swagger"}, {}
            if method == "PUT":
                pr.labels = []
            pr.labels += [n for n in names if n not in pr.labels]
            pr.updated = self._now()
        elif method == "DELETE":
            pr.labels = []
            return 204, None, {}
        elif method != "GET":
            return self._not_found()
        return 200, [self._label_json(n) for n in pr.labels], {}

    def _create_label(self, body: Any) -> Reply:
        if not isinstance(body, dict) or not body.get("name"):
            return 422, {"message": "[Name]: Required", "url": f"{self.api_url}/swagger"}, {}
        color = str(body.get("color") or "")
        if not re.fullmatch(r"#?[0-9a-fA-F]{6}", color):
            return 422, {"message": "Color: invalid color", "url": f"{self.api_url}/swagger"}, {}
        self._label(str(body["name"]), color.lstrip("#"), body.get("description"))
        return 201, self._label_json(str(body["name"])), {}

    def _label_json(self, name: str) -> dict[str, Any]:
        label = self._label(name)
        return {"id": label["id"], "name": name, "exclusive": False, "is_archived": False,
                "color": label["color"], "description": label["description"] or "",
                "url": f"{self.api_url}/repos/{self.repo}/labels/{label['id']}"}

    def _user_json(self) -> dict[str, Any]:
        return {"id": 7, "login": "syncer-bot", "full_name": "", "email": "bot@example.invalid"}

    def _comment_json(self, pr: FakePR, c: dict[str, Any]) -> dict[str, Any]:
        return {"id": c["id"], "html_url": f"{self.url}/{self.repo}/pulls/{pr.number}#issuecomment-{c['id']}",
                "pull_request_url": f"{self.url}/{self.repo}/pulls/{pr.number}", "issue_url": "",
                "user": self._user_json(), "body": c["body"], "created_at": iso(c["created"]),
                "updated_at": iso(c["created"])}

    def _pull_json(self, pr: FakePR) -> dict[str, Any]:
        html = f"{self.url}/{self.repo}/pulls/{pr.number}"
        repo = {"id": 42, "name": self.name, "full_name": self.repo, "owner": self._user_json()}

        def ref(branch: str) -> dict[str, Any]:
            return {"label": branch, "ref": branch, "sha": self.sha(branch), "repo_id": 42, "repo": repo}

        return {
            "id": 5000 + pr.number, "url": html, "number": pr.number, "user": self._user_json(),
            "title": pr.title, "body": pr.body, "labels": [self._label_json(n) for n in pr.labels],
            "milestone": None, "assignee": None, "assignees": None, "state": pr.state,
            "is_locked": False, "comments": len(pr.comments), "html_url": html,
            "diff_url": f"{html}.diff", "patch_url": f"{html}.patch", "mergeable": not pr.merged,
            "merged": pr.merged, "merged_at": iso(pr.closed) if pr.merged else None,
            "merge_commit_sha": self.sha(pr.base) if pr.merged else None,
            "merged_by": self._user_json() if pr.merged else None,
            "base": ref(pr.base), "head": ref(pr.head), "merge_base": self.sha(pr.base),
            "due_date": None, "created_at": iso(pr.created), "updated_at": iso(pr.updated),
            "closed_at": iso(pr.closed),
        }


# -- GitLab ----------------------------------------------------------------------------------


class FakeGitLab(FakeForgeServer):
    """GitLab ``/api/v4`` merge requests; the project is ``42`` or its encoded path."""

    kind = "gitlab"
    prefix = "/api/v4"
    PROJECT_ID = 42

    def _auth_ok(self, authorization: str | None, private_token: str | None) -> bool:
        return private_token == self.token or _bearer(authorization) == self.token

    def _unauthorized(self) -> Reply:
        return 401, {"message": "401 Unauthorized"}, {}

    def _not_found(self) -> Reply:
        return 404, {"message": "404 Project Not Found"}, {}

    def _bad_json(self) -> Reply:
        return 400, {"error": "The provided content-type 'application/json' is not supported."}, {}

    def _common_headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": "2000", "RateLimit-Observed": str(2000 - min(self.rate_remaining, 2000)),
            "RateLimit-Remaining": str(min(self.rate_remaining, 2000)),
            "RateLimit-Reset": str(int(time.time()) + 60),
        }

    def _fault_reply(self, fault: _Fault) -> Reply:
        headers: dict[str, str] = {}
        if fault.status == 429:
            reset = fault.ratelimit_reset if fault.ratelimit_reset is not None else time.time() + 60
            headers = {"RateLimit-Remaining": "0", "RateLimit-Reset": str(int(reset)),
                       "RateLimit-ResetTime": datetime.fromtimestamp(reset, timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")}
            if fault.retry_after is not None:
                headers["Retry-After"] = str(int(fault.retry_after))
            return 429, "Retry later\n", headers
        if fault.status == 401:
            return self._unauthorized()
        if fault.status == 403:
            return 403, {"message": "403 Forbidden"}, {}
        if fault.status == 404:
            return self._not_found()
        if fault.status >= 500:
            return fault.status, {"message": f"{fault.status} Internal Server Error"}, {}
        return fault.status, {"message": "fault"}, {}

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        m = re.fullmatch(r"/projects/([^/]+)(/.*)?", path)
        if not m or unquote(m[1]) not in (self.repo, str(self.PROJECT_ID)):
            return self._not_found()
        rest = m[2] or ""
        if rest == "" and method == "GET":
            return 200, {"id": self.PROJECT_ID, "path_with_namespace": self.repo,
                         "web_url": f"{self.url}/{self.repo}", "default_branch": "main"}, {}
        if rest == "/merge_requests":
            if method == "GET":
                return self._list(path, query)
            if method == "POST":
                return self._create(body)
        if n := re.fullmatch(r"/merge_requests/(\d+)(/notes)?", rest):
            pr = next((p for p in self.prs if p.number == int(n[1])), None)
            if pr is None:
                return 404, {"message": "404 Not found"}, {}
            if n[2]:
                return self._notes(pr, method, path, query, body)
            if method == "GET":
                return 200, self._mr_json(pr), {}
            if method == "PUT":
                return self._update(pr, body)
        return 404, {"error": "404 Not Found"}, {}

    def _state(self, pr: FakePR) -> str:
        return "merged" if pr.merged else ("opened" if pr.state == "open" else "closed")

    def _paged(self, path: str, query: dict[str, str], items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        page, number, pages = self._page(items, query, "per_page", 20)
        headers = {
            "x-page": str(number), "x-per-page": str(len(page)), "x-total": str(len(items)),
            "x-total-pages": str(pages), "x-next-page": str(number + 1) if number < pages else "",
            "x-prev-page": str(number - 1) if number > 1 else "",
        }
        if link := self._link(path, query, number, pages):
            headers["Link"] = link
        return page, headers

    def _list(self, path: str, query: dict[str, str]) -> Reply:
        state = query.get("state", "all")
        items = [p for p in self.prs if state == "all" or self._state(p) == state]
        if query.get("source_branch"):
            items = [p for p in items if p.head == query["source_branch"]]
        if query.get("target_branch"):
            items = [p for p in items if p.base == query["target_branch"]]
        key = (lambda p: p.updated) if query.get("order_by") == "updated_at" else (lambda p: p.created)
        items.sort(key=key, reverse=query.get("sort", "desc") == "desc")
        page, headers = self._paged(path, query, items)
        return 200, [self._mr_json(p) for p in page], headers

    @staticmethod
    def _labels_of(value: Any) -> list[str]:
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
        return [v.strip() for v in str(value or "").split(",") if v.strip()]

    def _create(self, body: Any) -> Reply:
        if not isinstance(body, dict):
            return self._bad_json()
        missing = [k for k in ("source_branch", "target_branch", "title") if not body.get(k)]
        if missing:
            return 400, {"error": f"{', '.join(missing)} is missing"}, {}
        head, base = str(body["source_branch"]), str(body["target_branch"])
        for key, branch in (("source_branch", head), ("target_branch", base)):
            if not self.branch_exists(branch):
                return 400, {"message": {key: ["does not exist"]}}, {}
        dup = next((p for p in self.open_prs() if p.head == head and p.base == base), None)
        if dup is not None:
            return 409, {"message": [f"Another open merge request already exists for this source branch: !{dup.number}"]}, {}
        now = self._now()
        pr = FakePR(number=self._next_number(), title=str(body["title"]),
                    body=str(body.get("description") or ""), head=head, base=base,
                    labels=sorted(set(self._labels_of(body.get("labels")))), created=now, updated=now)
        for name in pr.labels:
            self._label(name)
        self.prs.append(pr)
        return 201, self._mr_json(pr), {}

    def _system_note(self, pr: FakePR, text: str) -> None:
        pr.comments.append({"id": self._new_id(), "body": text, "created": self._now(), "system": True})

    def _update(self, pr: FakePR, body: Any) -> Reply:
        if not isinstance(body, dict):
            return self._bad_json()
        known = ("title", "description", "labels", "add_labels", "remove_labels", "state_event", "target_branch")
        if not any(k in body for k in known):
            return 400, {"error": f"{', '.join(known)} are missing, at least one parameter must be provided"}, {}
        if "title" in body:
            pr.title = str(body["title"])
        if "description" in body:
            pr.body = str(body["description"] or "")
        labels = set(pr.labels)
        if "labels" in body:
            labels = set(self._labels_of(body["labels"]))
        labels |= set(self._labels_of(body.get("add_labels")))
        labels -= set(self._labels_of(body.get("remove_labels")))
        if sorted(labels) != pr.labels:
            pr.labels = sorted(labels)
            for name in pr.labels:
                self._label(name)
            self._system_note(pr, "changed labels")
        event = body.get("state_event")
        if event == "close" and pr.state == "open":
            pr.state, pr.closed = "closed", self._now()
            self._system_note(pr, "closed")
        elif event == "reopen" and pr.state == "closed" and not pr.merged:
            pr.state, pr.closed = "open", None
            self._system_note(pr, "reopened")
        pr.updated = self._now()
        return 200, self._mr_json(pr), {}

    def _notes(self, pr: FakePR, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        if method == "GET":
            notes = sorted(pr.comments, key=lambda c: c["created"], reverse=query.get("sort", "desc") == "desc")
            page, headers = self._paged(path, query, notes)
            return 200, [self._note_json(pr, c) for c in page], headers
        if method == "POST":
            if not isinstance(body, dict) or not body.get("body"):
                return 400, {"error": "body is missing"}, {}
            note: dict[str, Any] = {"id": self._new_id(), "body": str(body["body"]), "created": self._now()}
            pr.comments.append(note)
            pr.updated = note["created"]
            return 201, self._note_json(pr, note), {}
        return 404, {"error": "404 Not Found"}, {}

    def _author(self) -> dict[str, Any]:
        return {"id": 7, "username": "syncer-bot", "name": "syncer", "state": "active",
                "web_url": f"{self.url}/syncer-bot"}

    def _note_json(self, pr: FakePR, c: dict[str, Any]) -> dict[str, Any]:
        return {"id": c["id"], "type": None, "body": c["body"], "author": self._author(),
                "created_at": iso(c["created"]), "updated_at": iso(c["created"]),
                "system": bool(c.get("system")), "noteable_id": 5000 + pr.number,
                "noteable_type": "MergeRequest", "noteable_iid": pr.number, "resolvable": False}

    def _mr_json(self, pr: FakePR) -> dict[str, Any]:
        return {
            "id": 5000 + pr.number, "iid": pr.number, "project_id": self.PROJECT_ID,
            "title": pr.title, "description": pr.body, "state": self._state(pr),
            "created_at": iso(pr.created), "updated_at": iso(pr.updated),
            "merged_at": iso(pr.closed) if pr.merged else None,
            "closed_at": None if pr.merged else iso(pr.closed),
            "target_branch": pr.base, "source_branch": pr.head, "author": self._author(),
            "source_project_id": self.PROJECT_ID, "target_project_id": self.PROJECT_ID,
            "labels": list(pr.labels), "draft": False, "work_in_progress": False,
            "merge_status": "can_be_merged", "detailed_merge_status": "mergeable",
            "sha": self.sha(pr.head), "user_notes_count": len([c for c in pr.comments if not c.get("system")]),
            "references": {"short": f"!{pr.number}", "relative": f"!{pr.number}", "full": f"{self.repo}!{pr.number}"},
            "web_url": f"{self.url}/{self.repo}/-/merge_requests/{pr.number}",
        }


FAKES: dict[str, type[FakeForgeServer]] = {"github": FakeGitHub, "gitea": FakeGitea, "gitlab": FakeGitLab}
