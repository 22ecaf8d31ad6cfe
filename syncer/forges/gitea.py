"""Gitea and Forgejo (``/api/v1``): pull requests, labels, comments.

Issue labels are set by id, so names are resolved against the repository's labels and
missing ones are created first. Lists are paged with ``page``/``limit``; the open-PR list
cannot be filtered by head server-side, so that filter runs here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, TypedDict, cast
from urllib.parse import quote

import httpx

from syncer.forges._client import ForgeClient
from syncer.forges._http import TokenSource
from syncer.errors import PullRequestExists
from syncer.forges.base import PrState, PullRequest

PAGE_LIMIT = 50  # Gitea's default maximum page size
MAX_PAGES = 100
LABEL_COLOR = "#c5def5"  # labels syncer has to create get a quiet colour


class _Repo(TypedDict):
    id: int
    full_name: str


class _Ref(TypedDict):
    ref: str
    sha: str
    repo_id: int
    repo: _Repo | None  # None when the fork it came from was deleted


class _User(TypedDict):
    login: str


class _Label(TypedDict):
    id: int
    name: str


class _Pull(TypedDict):
    number: int
    html_url: str
    state: str
    title: str
    body: str | None
    labels: list[_Label] | None
    head: _Ref
    base: _Ref
    merged: bool
    user: _User | None  # the poster


class _Comment(TypedDict):
    body: str


class GiteaForge(ForgeClient):
    kind = "gitea"
    max_body = 65_536

    auth_header = "Authorization"
    auth_scheme = "token"

    def __init__(self, client: httpx.Client, api_url: str, repo: str, token: str | TokenSource,
                 **options: Any) -> None:
        super().__init__(client, api_url, repo, token, **options)
        owner, _, name = repo.partition("/")
        self._repo = f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"

    # -- queries -------------------------------------------------------------------

    def find_open(self, head: str, base: str) -> PullRequest | None:
        return self._first(head, base, {"state": "open"})

    def find_latest_closed(self, head: str, base: str) -> PullRequest | None:
        return self._first(head, base, {"state": "closed", "sort": "recentupdate"})

    def list_comments(self, pr: PullRequest) -> list[str]:
        response = self._http.request("GET", f"{self._repo}/issues/{pr.number}/comments")
        return [cast(_Comment, c)["body"] for c in self._http.json_list(response)]

    # -- changes -------------------------------------------------------------------

    def create(
        self, head: str, base: str, title: str, body: str, labels: Sequence[str]
    ) -> PullRequest:
        payload: dict[str, Any] = {"head": head, "base": base, "title": title, "body": body}
        if labels:
            payload["labels"] = self._label_ids(labels)
        response = self._http.request(
            "POST", f"{self._repo}/pulls", json=payload, expect=(404, 409, 422),
            permission="write access to pull requests",
        )
        if response.status_code == 409:  # "pull request already exists for these targets"
            raise PullRequestExists(
                f"gitea says a pull request from {head} into {base} already exists on "
                f"{self._http.repo}", head=head, base=base,
            )
        if response.status_code in (404, 422):  # Gitea answers 404 for a missing branch
            raise self._http.error(
                f"gitea refused to open a pull request from {head} into {base} on "
                f"{self._http.repo} (do both branches exist, and can the token see the "
                f"repository?): HTTP {response.status_code}: {self._http.excerpt(response.text)}",
                transient=False,
            )
        return _to_pr(cast(_Pull, self._http.json(response)))

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
            ids = self._label_ids(labels)
            response = self._http.request(
                "PUT", f"{self._repo}/issues/{pr.number}/labels", json={"labels": ids},
                permission="write access to issues",
            )
            names = tuple(cast(_Label, item)["name"] for item in self._http.json_list(response))
            pr = dataclasses.replace(pr, labels=names)
        return pr

    def comment(self, pr: PullRequest, text: str) -> None:
        self._http.request(
            "POST", f"{self._repo}/issues/{pr.number}/comments", json={"body": text},
            permission="write access to issues",
        )

    def close(self, pr: PullRequest) -> PullRequest:
        return self._patch(pr, {"state": "closed"})

    # -- helpers -------------------------------------------------------------------

    def _patch(self, pr: PullRequest, fields: dict[str, str]) -> PullRequest:
        response = self._http.request(
            "PATCH", f"{self._repo}/pulls/{pr.number}", json=fields,
            permission="write access to pull requests",
        )
        return _to_pr(cast(_Pull, self._http.json(response)))

    def _first(self, head: str, base: str, params: dict[str, str]) -> PullRequest | None:
        for item in self._pages(f"{self._repo}/pulls", params):
            pr = _to_pr(cast(_Pull, item))
            if self._own(pr, head, base):
                return pr
        return None

    def _label_ids(self, names: Sequence[str]) -> list[int]:
        """Ids of the labels ``names``, creating the ones the repository lacks."""
        known = {
            cast(_Label, item)["name"]: cast(_Label, item)["id"]
            for item in self._pages(f"{self._repo}/labels", {})
        }
        ids: list[int] = []
        for name in dict.fromkeys(names):
            if name not in known:
                response = self._http.request(
                    "POST", f"{self._repo}/labels",
                    json={"name": name, "color": LABEL_COLOR, "description": "set by syncer"},
                    permission="write access to issues",
                )
                known[name] = cast(_Label, self._http.json(response))["id"]
            ids.append(known[name])
        return ids

    def _pages(self, path: str, params: dict[str, str]) -> Iterator[Any]:
        """Items of a list endpoint, page by page, until a page has no successor."""
        for page in range(1, MAX_PAGES + 1):
            response = self._http.request(
                "GET", path, params={**params, "page": page, "limit": PAGE_LIMIT}
            )
            items = self._http.json_list(response)
            if not items:
                return
            yield from items
            if "link" in response.headers:
                if "next" not in response.links:
                    return
            elif len(items) < PAGE_LIMIT:
                return


def _to_pr(pull: _Pull) -> PullRequest:
    state: PrState = "merged" if pull["merged"] else ("open" if pull["state"] == "open" else "closed")
    head_repo, base_repo = pull["head"].get("repo"), pull["base"].get("repo")
    same_repo = bool(head_repo and base_repo and head_repo.get("full_name") == base_repo.get("full_name")
                     and pull["head"].get("repo_id") == pull["base"].get("repo_id"))
    return PullRequest(
        number=pull["number"],
        url=pull["html_url"],
        state=state,
        title=pull["title"],
        body=pull["body"] or "",
        labels=tuple(label["name"] for label in pull["labels"] or ()),
        head=pull["head"]["ref"],
        base=pull["base"]["ref"],
        head_sha=pull["head"].get("sha") or "",
        author=(pull.get("user") or {"login": ""})["login"] or "",
        same_repo=same_repo,
    )
