"""The fake GitHub (and GitHub Enterprise) API: its paths, payloads, status codes and pagination."""

from __future__ import annotations

import re
import time
from dataclasses import field
from typing import Any
from urllib.parse import quote, unquote

from .base import FakeForgeServer, FakePR, Reply, _Fault, _bearer, iso
from .github_app import UNDECODABLE, FakeApp, looks_like_jwt


class FakeGitHub(FakeForgeServer):
    """GitHub REST v3; serves both ``/repos/...`` and the Enterprise ``/api/v3/repos/...``."""

    kind = "github"
    prefix = "/api/v3"
    DOCS = "https://docs.github.com/rest"

    #: A GitHub App installed on the repository (``install_app``): JWTs for its endpoints, its
    #: installation tokens for all others (the personal ``token`` still works too).
    app: FakeApp | None = None
    _credential = ""

    def install_app(self, app: FakeApp) -> FakeApp:
        self.app = app
        return app

    def _auth_ok(self, authorization: str | None, private_token: str | None) -> bool:
        credential = _bearer(authorization) or ""
        self._credential = credential  # read by _route, under the same lock
        if credential == self.token:
            return True
        return self.app is not None and (self.app.token_ok(credential) or looks_like_jwt(credential))

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
        if self.app is not None:
            answer = self.app.route(method, path, self._credential, self.owner, self.name, self.api_url)
            if answer is not None:
                return answer
            if looks_like_jwt(self._credential) and self._credential != self.token:
                return 401, {"message": UNDECODABLE, "documentation_url": self.DOCS}, {}
        if path == "/user" and method == "GET":  # the authenticated user: who the token is
            return 200, self._private_user_json(), {}
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
            # "user or organization:branch": the owner of the repository the head is in
            owner, _, branch = head.partition(":")
            items = [p for p in items if owner == (p.head_repo or self.repo).partition("/")[0] and p.head == branch]
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
        if self.duplicate(head, base) is not None:
            return self._validation([{"resource": "PullRequest", "code": "custom",
                                      "message": f"A pull request already exists for {self.owner}:{head}."}], doc)
        now = self._now()
        app_made = self.app is not None and self.app.token_ok(self._credential)
        pr = FakePR(number=self._next_number(), title=str(body["title"]), body=str(body.get("body") or ""),
                    head=head, base=base, created=now, updated=now, author=self.app.bot if app_made and self.app else "")
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
    def _uid(self, login: str) -> int:
        return {self.account: 7, self.owner: 3}.get(login, 100 + sum(map(ord, login)))

    def _private_user_json(self) -> dict[str, Any]:
        """``GET /user`` (schema private-user): a user's public fields and a few private ones."""
        return {**self._user_json(), "name": None, "company": None, "blog": "", "location": None,
                "email": None, "hireable": None, "bio": None, "twitter_username": None,
                "public_repos": 0, "public_gists": 0, "followers": 0, "following": 0,
                "created_at": iso(0), "updated_at": iso(0), "private_gists": 0,
                "total_private_repos": 0, "owned_private_repos": 0, "disk_usage": 0,
                "collaborators": 0, "two_factor_authentication": True}

    def _user_json(self, login: str | None = None, uid: int | None = None) -> dict[str, Any]:
        login = login or self.account
        uid = uid if uid is not None else self._uid(login)
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

    def _repo_json(self, full_name: str = "") -> dict[str, Any]:
        """The repository, or (``full_name``) a fork of it, which has an id of its own."""
        full_name = full_name or self.repo
        owner, _, name = full_name.partition("/")
        api = f"{self.api_url}/repos/{full_name}"
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
        fork = full_name != self.repo
        rid = 4200 + sum(map(ord, full_name)) if fork else 42
        repo: dict[str, Any] = {k: api + v for k, v in templated.items()}
        repo.update({f"{k}_url": f"{api}/{k}" for k in plain})
        repo.update({
            "id": rid, "node_id": f"R_{rid}", "name": name, "full_name": full_name,
            "owner": self._user_json(owner), "private": True, "html_url": f"{self.url}/{full_name}",
            "description": None, "fork": fork, "url": api, "clone_url": f"{self.url}/{full_name}.git",
            "git_url": f"git://127.0.0.1/{full_name}.git", "ssh_url": f"git@127.0.0.1:{full_name}.git",
            "svn_url": f"{self.url}/{full_name}", "mirror_url": None, "homepage": None, "language": None,
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
        head_sha, base_sha = self.head_sha_of(pr), self.sha(pr.base)

        def ref(branch: str, sha: str, full_name: str) -> dict[str, Any]:
            owner = full_name.partition("/")[0]  # a fork's head is labelled with its owner
            return {"label": f"{owner}:{branch}", "ref": branch, "sha": sha,
                    "repo": self._repo_json(full_name), "user": self._user_json(owner)}

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
            "statuses_url": f"{api}/statuses/{head_sha}",
            "number": pr.number, "state": pr.state, "locked": False, "title": pr.title,
            "user": self._user_json(self.author_of(pr)), "body": pr.body or None,
            "labels": labels, "milestone": None, "active_lock_reason": None, "created_at": iso(pr.created), "updated_at": iso(pr.updated),
            "closed_at": iso(pr.closed), "merged_at": merged_at,
            "merge_commit_sha": base_sha if pr.merged else None,
            "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
            "head": ref(pr.head, head_sha, pr.head_repo or self.repo), "base": ref(pr.base, base_sha, self.repo),
            "_links": {k: {"href": v} for k, v in {
                "self": f"{api}/pulls/{pr.number}", "html": html, "issue": f"{api}/issues/{pr.number}",
                "comments": f"{api}/issues/{pr.number}/comments",
                "review_comments": f"{api}/pulls/{pr.number}/comments",
                "review_comment": f"{api}/pulls/comments{{/number}}",
                "commits": f"{api}/pulls/{pr.number}/commits",
                "statuses": f"{api}/statuses/{head_sha}",
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
