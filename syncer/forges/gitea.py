"""Gitea and Forgejo (``/api/v1``): the hooks of ``GitHubLike``.

Issue labels are set by id, so names are resolved against the repository's labels and missing
ones are created first; a new PR gets its labels in the create itself. Lists are paged with
``page``/``limit``; the PR list cannot be filtered by head server-side, so ``GitHubLike._own``
does it. "Already open" is a 409; a missing branch a 404.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, cast

import httpx

from syncer.forges._http import Params
from syncer.forges.base import PullRequest
from syncer.forges.githublike import GitHubLike, Label, Pull

PAGE_LIMIT = 50  # Gitea's default maximum page size
MAX_PAGES = 100
LABEL_COLOR = "#c5def5"  # labels syncer has to create get a quiet colour


class GiteaForge(GitHubLike):
    kind = "gitea"
    max_body = 65_536

    auth_header = "Authorization"
    auth_scheme = "token"

    pulls_permission = "write access to pull requests"
    issues_permission = "write access to issues"
    create_statuses = (404, 409, 422)  # 404: Gitea's answer for a missing branch
    refused_hint = ", and can the token see the repository"
    labels_on_create = True

    def _query(self, state: str, head: str, base: str) -> Params:
        return {"state": "open"} if state == "open" else {"state": state, "sort": "recentupdate"}

    def _exists(self, response: httpx.Response) -> bool:
        return response.status_code == 409  # "pull request already exists for these targets"

    def _create_fields(self, labels: Sequence[str]) -> dict[str, Any]:
        return {"labels": self._label_ids(labels)} if labels else {}

    def _merged(self, pull: Pull) -> bool:
        return bool(pull.get("merged"))

    def _same_repo(self, pull: Pull) -> bool:
        head, base = pull["head"].get("repo"), pull["base"].get("repo")
        return bool(head and base and head.get("full_name") == base.get("full_name")
                    and pull["head"].get("repo_id") == pull["base"].get("repo_id"))

    def _comments(self, path: str) -> Iterator[Any]:
        return iter(self._http.json_list(self._http.request("GET", path)))  # one answer, not paged

    def _set_labels(self, pr: PullRequest, labels: Sequence[str]) -> PullRequest:
        response = self._http.request("PUT", f"{self._repo}/issues/{pr.number}/labels",
                                      json={"labels": self._label_ids(labels)}, permission=self.issues_permission)
        names = tuple(cast(Label, item)["name"] for item in self._http.json_list(response))
        return dataclasses.replace(pr, labels=names)

    def _label_ids(self, names: Sequence[str]) -> list[int]:
        """Ids of the labels ``names``, creating the ones the repository lacks."""
        known = {cast(Label, item)["name"]: cast(Label, item)["id"]
                 for item in self._pages(f"{self._repo}/labels", {}, self.read_permission)}
        ids: list[int] = []
        for name in dict.fromkeys(names):
            if name not in known:
                response = self._http.request(
                    "POST", f"{self._repo}/labels",
                    json={"name": name, "color": LABEL_COLOR, "description": "set by syncer"},
                    permission=self.issues_permission,
                )
                known[name] = cast(Label, self._http.json(response))["id"]
            ids.append(known[name])
        return ids

    def _pages(self, path: str, params: Params, permission: str) -> Iterator[Any]:
        """Items of a list endpoint, page by page, until a page has no successor."""
        for page in range(1, MAX_PAGES + 1):
            response = self._http.request("GET", path, params={**params, "page": page, "limit": PAGE_LIMIT},
                                          permission=permission)
            items = self._http.json_list(response)
            if not items:
                return
            yield from items
            if "link" in response.headers:
                if "next" not in response.links:
                    return
            elif len(items) < PAGE_LIMIT:
                return
