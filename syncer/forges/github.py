"""GitHub and GitHub Enterprise Server (REST v3): pull requests, labels, comments.

Labels and comments of a PR live on the issue with the same number. GitHub creates a
label implicitly the first time it is set on an issue.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, TypedDict, cast
from urllib.parse import quote

import httpx

from syncer.forges._client import ForgeClient
from syncer.forges._http import Params, TokenSource
from syncer.errors import PullRequestExists
from syncer.forges.base import PrState, PullRequest

MAX_PAGES = 50  # 100 per page: far more PRs per branch than any repository has


class _Repo(TypedDict):
    id: int
    full_name: str


class _Ref(TypedDict):
    ref: str
    sha: str
    repo: _Repo | None  # None when the fork it came from was deleted


class _User(TypedDict):
    login: str


class _Label(TypedDict):
    name: str


class _Pull(TypedDict):
    number: int
    html_url: str
    state: str
    title: str
    body: str | None
    labels: list[_Label]
    head: _Ref
    base: _Ref
    merged_at: str | None
    user: _User | None


class _Comment(TypedDict):
    body: str | None


class GitHubForge(ForgeClient):
    kind = "github"
    max_body = 65_536

    auth_header = "Authorization"
    auth_scheme = "Bearer"
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}

    def __init__(self, client: httpx.Client, api_url: str, repo: str, token: str | TokenSource,
                 **options: Any) -> None:
        super().__init__(client, api_url, repo, token, **options)
        self._owner, _, name = repo.partition("/")
        self._repo = f"/repos/{quote(self._owner, safe='')}/{quote(name, safe='')}"

    # -- queries -------------------------------------------------------------------

    def find_open(self, head: str, base: str) -> PullRequest | None:
        params: Params = {"state": "open", "head": f"{self._owner}:{head}", "base": base, "per_page": 100}
        for item in self._pages(f"{self._repo}/pulls", params, "pull requests: read"):
            pr = _to_pr(cast(_Pull, item))
            if self._own(pr, head, base):
                return pr
        return None

    def find_latest_closed(self, head: str, base: str) -> PullRequest | None:
        params: Params = {
            "state": "closed",
            "head": f"{self._owner}:{head}",
            "base": base,
            "sort": "updated",
            "direction": "desc",
            "per_page": 100,
        }
        for item in self._pages(f"{self._repo}/pulls", params, "pull requests: read"):
            pr = _to_pr(cast(_Pull, item))
            if self._own(pr, head, base):
                return pr
        return None

    def list_comments(self, pr: PullRequest) -> list[str]:
        path = f"{self._repo}/issues/{pr.number}/comments"
        return [
            cast(_Comment, c)["body"] or ""
            for c in self._pages(path, {"per_page": 100}, "pull requests: read")
        ]

    # -- changes -------------------------------------------------------------------

    def create(
        self, head: str, base: str, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        response = self._http.request(
            "POST",
            f"{self._repo}/pulls",
            json={"title": title, "body": body, "head": head, "base": base},
            expect=(422,),
            permission="pull requests: write",
        )
        if response.status_code == 422:
            if "a pull request already exists" in response.text.lower():
                raise PullRequestExists(
                    f"github says a pull request from {head} into {base} already exists "
                    f"on {self._http.repo}", head=head, base=base,
                )
            raise self._http.error(
                f"github refused to open a pull request from {head} into {base} on "
                f"{self._http.repo} (do both branches exist?): HTTP 422: "
                f"{self._http.excerpt(response.text)}", transient=False,
            )
        pr = _to_pr(cast(_Pull, self._http.json(response)))
        return self._set_labels(pr, labels) if labels else pr

    def update(
        self,
        pr: PullRequest,
        *,
        title: str | None = None,
        body: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> PullRequest:
        fields = {k: v for k, v in (("title", title), ("body", body)) if v is not None}
        if fields:
            pr = self._patch(pr, fields)
        if labels is not None:
            pr = self._set_labels(pr, labels)
        return pr

    def comment(self, pr: PullRequest, text: str) -> None:
        self._http.request(
            "POST",
            f"{self._repo}/issues/{pr.number}/comments",
            json={"body": text},
            permission="pull requests: write",
        )

    def close(self, pr: PullRequest) -> PullRequest:
        return self._patch(pr, {"state": "closed"})

    # -- helpers -------------------------------------------------------------------

    def _patch(self, pr: PullRequest, fields: dict[str, str]) -> PullRequest:
        response = self._http.request(
            "PATCH", f"{self._repo}/pulls/{pr.number}", json=fields,
            permission="pull requests: write",
        )
        return _to_pr(cast(_Pull, self._http.json(response)))

    def _set_labels(self, pr: PullRequest, labels: Sequence[str]) -> PullRequest:
        path = f"{self._repo}/issues/{pr.number}/labels"
        if not labels:  # PUT needs at least one label; DELETE removes them all
            self._http.request("DELETE", path, permission="pull requests: write")
            return dataclasses.replace(pr, labels=())
        response = self._http.request(
            "PUT", path, json={"labels": list(labels)}, permission="pull requests: write"
        )
        names = tuple(cast(_Label, item)["name"] for item in self._http.json_list(response))
        return dataclasses.replace(pr, labels=names)

    def _pages(self, path: str, params: Params, permission: str) -> Iterator[Any]:
        """Items of a list endpoint, following ``Link: rel="next"``."""
        url: str | None = path
        query: Params | None = params
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self._http.request("GET", url, params=query, permission=permission)
            yield from self._http.json_list(response)
            url = response.links.get("next", {}).get("url")
            query = None  # the next link carries the query


def _to_pr(pull: _Pull) -> PullRequest:
    state: PrState = "merged" if pull["merged_at"] else ("open" if pull["state"] == "open" else "closed")
    head_repo, base_repo = pull["head"].get("repo"), pull["base"].get("repo")
    same_repo = bool(head_repo and base_repo and head_repo.get("id") == base_repo.get("id")
                     and head_repo.get("full_name") == base_repo.get("full_name"))
    return PullRequest(
        number=pull["number"],
        url=pull["html_url"],
        state=state,
        title=pull["title"],
        body=pull["body"] or "",
        labels=tuple(label["name"] for label in pull["labels"]),
        head=pull["head"]["ref"],
        base=pull["base"]["ref"],
        head_sha=pull["head"].get("sha") or "",
        author=(pull.get("user") or {"login": ""})["login"] or "",
        same_repo=same_repo,
    )
