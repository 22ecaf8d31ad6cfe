"""GitLab (``/api/v4``): merge requests, their labels and notes.

The project is addressed by its URL-encoded path (``group%2Fsub%2Fproject``). Labels are
a comma-joined string and are created implicitly; one ``PUT`` changes title, description
and labels together. Lists are paged with ``page``/``per_page`` and ``x-next-page``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypedDict, cast
from urllib.parse import quote

import httpx

from syncer.forges._client import ForgeClient
from syncer.forges._http import Params
from syncer.forges.tokens import TokenSource
from syncer.errors import PullRequestExists
from syncer.forges.base import PrState, PullRequest

MAX_PAGES = 50  # 100 per page
_STATES: dict[str, PrState] = {"opened": "open", "locked": "open", "closed": "closed", "merged": "merged"}


class _User(TypedDict):
    username: str


class _MergeRequest(TypedDict):
    iid: int
    web_url: str
    state: str
    title: str
    description: str | None
    labels: list[str]
    source_branch: str
    target_branch: str
    source_project_id: int
    target_project_id: int
    sha: str | None
    author: _User | None


class _Note(TypedDict):
    body: str
    system: bool


class GitLabForge(ForgeClient):
    kind = "gitlab"
    max_body = 1_000_000

    auth_header = "PRIVATE-TOKEN"
    auth_scheme = ""
    account_field = "username"

    def __init__(self, client: httpx.Client, api_url: str, repo: str, token: str | TokenSource,
                 **options: Any) -> None:
        super().__init__(client, api_url, repo, token, **options)
        self._project = f"/projects/{quote(repo, safe='')}"

    # -- queries -------------------------------------------------------------------

    def find_open(self, head: str, base: str) -> PullRequest | None:
        params = {"state": "opened", "source_branch": head, "target_branch": base}
        # The list holds MRs from forks too (source_branch filters the name only), so each
        # one's source project is checked (``_own``).
        for item in self._pages(f"{self._project}/merge_requests", params):
            pr = _to_pr(cast(_MergeRequest, item))
            if self._own(pr, head, base):
                return pr
        return None

    def find_latest_closed(self, head: str, base: str) -> PullRequest | None:
        # One query for both "closed" and "merged": all states, newest update first.
        params = {
            "state": "all",
            "source_branch": head,
            "target_branch": base,
            "order_by": "updated_at",
            "sort": "desc",
        }
        for item in self._pages(f"{self._project}/merge_requests", params):
            pr = _to_pr(cast(_MergeRequest, item))
            if pr.state != "open" and self._own(pr, head, base):
                return pr
        return None

    def list_comments(self, pr: PullRequest) -> list[str]:
        path = f"{self._project}/merge_requests/{pr.number}/notes"
        notes = (cast(_Note, n) for n in self._pages(path, {"sort": "asc", "order_by": "created_at"}))
        return [n["body"] for n in notes if not n.get("system")]

    # -- changes -------------------------------------------------------------------

    def create(
        self, head: str, base: str, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        response = self._http.request(
            "POST",
            f"{self._project}/merge_requests",
            json={
                "source_branch": head,
                "target_branch": base,
                "title": title,
                "description": body,
                "labels": ",".join(labels),
            },
            expect=(400, 409, 422),
            permission="api scope and Developer role",
        )
        if response.status_code == 409:  # "Another open merge request already exists ..."
            raise PullRequestExists(
                f"gitlab says a merge request from {head} into {base} already exists on "
                f"{self._http.repo}", head=head, base=base,
            )
        if response.status_code != 201:
            raise self._http.error(
                f"gitlab refused to open a merge request from {head} into {base} on "
                f"{self._http.repo} (do both branches exist?): HTTP {response.status_code}: "
                f"{self._http.excerpt(response.text)}", transient=False,
            )
        return _to_pr(cast(_MergeRequest, self._http.json(response)))

    def update(
        self,
        pr: PullRequest,
        *,
        title: str | None = None,
        body: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> PullRequest:
        fields: dict[str, str] = {}
        if title is not None:
            fields["title"] = title
        if body is not None:
            fields["description"] = body
        if labels is not None:
            fields["labels"] = ",".join(labels)  # replaces the set; "" clears it
        return self._put(pr, fields) if fields else pr

    def comment(self, pr: PullRequest, text: str) -> None:
        self._http.request(
            "POST", f"{self._project}/merge_requests/{pr.number}/notes", json={"body": text},
            permission="api scope and Reporter role",
        )

    def close(self, pr: PullRequest) -> PullRequest:
        return self._put(pr, {"state_event": "close"})

    # -- helpers -------------------------------------------------------------------

    def _put(self, pr: PullRequest, fields: dict[str, str]) -> PullRequest:
        response = self._http.request(
            "PUT", f"{self._project}/merge_requests/{pr.number}", json=fields,
            permission="api scope and Developer role",
        )
        return _to_pr(cast(_MergeRequest, self._http.json(response)))

    def _pages(self, path: str, params: dict[str, str]) -> Iterator[Any]:
        """Items of a list endpoint, following ``x-next-page`` (empty on the last page)."""
        page = "1"
        for _ in range(MAX_PAGES):
            query: Params = {**params, "per_page": 100, "page": page}
            response = self._http.request("GET", path, params=query)
            yield from self._http.json_list(response)
            page = response.headers.get("x-next-page", "").strip()
            if not page:
                return


def _to_pr(mr: _MergeRequest) -> PullRequest:
    return PullRequest(
        number=mr["iid"],
        url=mr["web_url"],
        state=_STATES.get(mr["state"], "closed"),
        title=mr["title"],
        body=mr["description"] or "",
        labels=tuple(mr["labels"]),
        head=mr["source_branch"],
        base=mr["target_branch"],
        head_sha=mr.get("sha") or "",
        author=(mr.get("author") or {"username": ""})["username"] or "",
        # from a fork, the source project is the fork's
        same_repo=mr.get("source_project_id") is not None and mr.get("source_project_id") == mr.get("target_project_id"),
    )
