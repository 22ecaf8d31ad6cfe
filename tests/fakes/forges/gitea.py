"""The fake Gitea / Forgejo API: its paths, payloads, status codes and pagination."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from .base import FakeForgeServer, FakePR, Reply, _Fault, _bearer, iso


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
        if path == "/user" and method == "GET":  # the authenticated user
            return 200, self._user_json(), {}
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
        dup = self.duplicate(head, base)  # head "branch": in this repository (a fork's: "owner:branch")
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

    def _user_json(self, login: str = "") -> dict[str, Any]:
        login = login or self.account
        uid = {self.account: 7, self.owner: 3}.get(login, 100 + sum(map(ord, login)))
        return {"id": uid, "login": login, "full_name": "", "email": f"{login}@example.invalid"}

    def _repo_json(self, full_name: str) -> dict[str, Any]:
        """The repository, or a fork of it (an id of its own, ``fork: true``)."""
        owner, _, name = full_name.partition("/")
        fork = full_name != self.repo
        return {"id": 4200 + sum(map(ord, full_name)) if fork else 42, "name": name, "full_name": full_name,
                "owner": self._user_json(owner), "fork": fork,
                "parent": {"id": 42, "full_name": self.repo} if fork else None}

    def _comment_json(self, pr: FakePR, c: dict[str, Any]) -> dict[str, Any]:
        return {"id": c["id"], "html_url": f"{self.url}/{self.repo}/pulls/{pr.number}#issuecomment-{c['id']}",
                "pull_request_url": f"{self.url}/{self.repo}/pulls/{pr.number}", "issue_url": "",
                "user": self._user_json(), "body": c["body"], "created_at": iso(c["created"]),
                "updated_at": iso(c["created"])}

    def _pull_json(self, pr: FakePR) -> dict[str, Any]:
        html = f"{self.url}/{self.repo}/pulls/{pr.number}"
        def ref(branch: str, sha: str, full_name: str) -> dict[str, Any]:
            repo = self._repo_json(full_name)
            return {"label": branch, "ref": branch, "sha": sha, "repo_id": repo["id"], "repo": repo}

        return {
            "id": 5000 + pr.number, "url": html, "number": pr.number, "user": self._user_json(self.author_of(pr)),
            "title": pr.title, "body": pr.body, "labels": [self._label_json(n) for n in pr.labels],
            "milestone": None, "assignee": None, "assignees": None, "state": pr.state,
            "is_locked": False, "comments": len(pr.comments), "html_url": html,
            "diff_url": f"{html}.diff", "patch_url": f"{html}.patch", "mergeable": not pr.merged,
            "merged": pr.merged, "merged_at": iso(pr.closed) if pr.merged else None,
            "merge_commit_sha": self.sha(pr.base) if pr.merged else None,
            "merged_by": self._user_json() if pr.merged else None,
            "base": ref(pr.base, self.sha(pr.base), self.repo),
            "head": ref(pr.head, self.head_sha_of(pr), pr.head_repo or self.repo), "merge_base": self.sha(pr.base),
            "due_date": None, "created_at": iso(pr.created), "updated_at": iso(pr.updated),
            "closed_at": iso(pr.closed),
        }


# -- GitLab ----------------------------------------------------------------------------------
