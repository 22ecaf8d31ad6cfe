"""The fake GitLab API: its paths, payloads, status codes and pagination."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote

from .base import FakeForgeServer, FakePR, Reply, _Fault, _bearer, iso


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
        if path == "/user" and method == "GET":  # the current user
            return 200, {**self._author(), "email": f"{self.account}@example.invalid", "bot": False}, {}
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
        if query.get("source_branch"):  # the name only: a fork's MR from a same-named branch is listed too
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
        dup = self.duplicate(head, base)  # per source project: a fork's MR does not count
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

    def _author(self, username: str = "") -> dict[str, Any]:
        username = username or self.account
        uid = {self.account: 7}.get(username, 100 + sum(map(ord, username)))
        return {"id": uid, "username": username, "name": username, "state": "active",
                "avatar_url": None, "web_url": f"{self.url}/{username}"}

    def _project_id(self, full_path: str) -> int:
        """This project's id, or a fork's (an id of its own)."""
        return 4200 + sum(map(ord, full_path)) if full_path and full_path != self.repo else self.PROJECT_ID

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
            "target_branch": pr.base, "source_branch": pr.head, "author": self._author(self.author_of(pr)),
            "source_project_id": self._project_id(pr.head_repo), "target_project_id": self.PROJECT_ID,
            "labels": list(pr.labels), "draft": False, "work_in_progress": False,
            "merge_status": "can_be_merged", "detailed_merge_status": "mergeable",
            "sha": self.head_sha_of(pr), "user_notes_count": len([c for c in pr.comments if not c.get("system")]),
            "references": {"short": f"!{pr.number}", "relative": f"!{pr.number}", "full": f"{self.repo}!{pr.number}"},
            "web_url": f"{self.url}/{self.repo}/-/merge_requests/{pr.number}",
        }
