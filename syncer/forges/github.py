"""GitHub and GitHub Enterprise Server (REST v3): the hooks of ``GitHubLike``.

Lists are filtered by head server-side (``head=OWNER:BRANCH``) and paged by ``Link:
rel="next"``. Labels are set by name on the issue of the PR's number (GitHub creates a label
the first time it is set), after the PR is opened; "already open" is a 422 saying so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, cast

import httpx

from syncer.forges._http import Params
from syncer.forges.base import PullRequest
from syncer.forges.githublike import GitHubLike, Label, Pull

MAX_PAGES = 50  # 100 per page: far more PRs per branch than any repository has


class GitHubForge(GitHubLike):
    kind = "github"
    max_body = 65_536

    auth_header = "Authorization"
    auth_scheme = "Bearer"
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}

    read_permission = "pull requests: read"
    pulls_permission = issues_permission = "pull requests: write"

    def _query(self, state: str, head: str, base: str) -> Params:
        if state == "open":
            return {"state": "open", "head": f"{self._owner}:{head}", "base": base}
        return {"state": state, "head": f"{self._owner}:{head}", "base": base, "sort": "updated",
                "direction": "desc"}

    def _exists(self, response: httpx.Response) -> bool:
        return "a pull request already exists" in response.text.lower()

    def _merged(self, pull: Pull) -> bool:
        return bool(pull.get("merged_at"))

    def _same_repo(self, pull: Pull) -> bool:
        head, base = pull["head"].get("repo"), pull["base"].get("repo")
        return bool(head and base and head.get("id") == base.get("id") and head.get("full_name") == base.get("full_name"))

    def _set_labels(self, pr: PullRequest, labels: Sequence[str]) -> PullRequest:
        path = f"{self._repo}/issues/{pr.number}/labels"
        if not labels:  # PUT needs at least one label; DELETE removes them all
            self._http.request("DELETE", path, permission=self.issues_permission)
            return dataclasses.replace(pr, labels=())
        response = self._http.request("PUT", path, json={"labels": list(labels)}, permission=self.issues_permission)
        names = tuple(cast(Label, item)["name"] for item in self._http.json_list(response))
        return dataclasses.replace(pr, labels=names)

    def _pages(self, path: str, params: Params, permission: str) -> Iterator[Any]:
        """Items of a list endpoint, 100 a page, following ``Link: rel="next"``."""
        url: str | None = path
        query: Params | None = {**params, "per_page": 100}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self._http.request("GET", url, params=query, permission=permission)
            yield from self._http.json_list(response)
            url = response.links.get("next", {}).get("url")
            query = None  # the next link carries the query
