"""GitHub's REST shape, shared by GitHub and Gitea (Forgejo): ``GitHubLike``.

Both address a repository as ``/repos/{owner}/{name}``, open a pull request with ``POST
.../pulls`` (title, body, head, base), change and close it with ``PATCH .../pulls/{n}``, and keep
its comments and labels on the issue of the same number. A PR is the same JSON object on both:
``number``, ``html_url``, ``state``, ``head``/``base`` refs with their repository, ``user``.

What differs is a hook each subclass fills: how a list is paged (``_pages``) and filtered by
head (``_query``), how labels are set (GitHub by name, Gitea by id), how "already open" is said
(``_exists``), and where a PR says it is merged (``_merged``) and which repository its head is in
(``_same_repo``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypedDict, cast
from urllib.parse import quote

import httpx

from syncer.errors import PullRequestExists
from syncer.forges._client import ForgeClient
from syncer.forges._http import Params
from syncer.forges.tokens import TokenSource
from syncer.forges.base import PrState, PullRequest


class Repo(TypedDict):
    id: int
    full_name: str


class Ref(TypedDict, total=False):
    ref: str
    sha: str
    repo_id: int  # Gitea only
    repo: Repo | None  # None when the fork it came from was deleted


class User(TypedDict):
    login: str


class Label(TypedDict, total=False):
    id: int  # Gitea only: labels are set by id there
    name: str


class Pull(TypedDict, total=False):
    number: int
    html_url: str
    state: str
    title: str
    body: str | None
    labels: list[Label] | None
    head: Ref
    base: Ref
    merged_at: str | None  # GitHub
    merged: bool  # Gitea
    user: User | None  # who opened it


class Comment(TypedDict):
    body: str | None


class GitHubLike(ForgeClient):
    """A forge speaking GitHub's pull-request REST shape; a subclass fills the hooks."""

    #: What the token needs, as the forge words it, named in a 403's error ("": "read"/"write").
    read_permission = ""
    pulls_permission = ""
    issues_permission = ""
    #: The statuses of a create this class answers itself: "already open" (``_exists``), or
    #: refused (a branch missing, say), an error naming both branches and ``refused_hint``.
    create_statuses: tuple[int, ...] = (422,)
    refused_hint = ""
    #: Labels go in the create itself (``_create_fields``) rather than set after it.
    labels_on_create = False

    def __init__(self, client: httpx.Client, api_url: str, repo: str, token: str | TokenSource,
                 **options: Any) -> None:
        super().__init__(client, api_url, repo, token, **options)
        self._owner, _, name = repo.partition("/")
        self._repo = f"/repos/{quote(self._owner, safe='')}/{quote(name, safe='')}"

    # -- the hooks -------------------------------------------------------------------

    def _pages(self, path: str, params: Params, permission: str) -> Iterator[Any]:
        """The items of a list endpoint, every page."""
        raise NotImplementedError

    def _query(self, state: str, head: str, base: str) -> Params:
        """The query of the PR list that finds syncer's PR from ``head`` into ``base``."""
        raise NotImplementedError

    def _exists(self, response: httpx.Response) -> bool:
        """Does this answer to a create say a PR from that head into that base is open already?"""
        raise NotImplementedError

    def _create_fields(self, labels: Sequence[str]) -> dict[str, Any]:
        """What a create sends besides title, body, head and base (``labels_on_create``)."""
        return {}

    def _set_labels(self, pr: PullRequest, labels: Sequence[str]) -> PullRequest:
        raise NotImplementedError

    def _merged(self, pull: Pull) -> bool:
        raise NotImplementedError

    def _same_repo(self, pull: Pull) -> bool:
        """Is the PR's head branch in the base repository itself (not in a fork)?"""
        raise NotImplementedError

    # -- queries -------------------------------------------------------------------

    def find_open(self, head: str, base: str) -> PullRequest | None:
        return self._first(head, base, self._query("open", head, base))

    def find_latest_closed(self, head: str, base: str) -> PullRequest | None:
        return self._first(head, base, self._query("closed", head, base))

    def list_comments(self, pr: PullRequest) -> list[str]:
        path = f"{self._repo}/issues/{pr.number}/comments"
        return [cast(Comment, c)["body"] or "" for c in self._comments(path)]

    def _comments(self, path: str) -> Iterator[Any]:
        return self._pages(path, {}, self.read_permission)

    def _first(self, head: str, base: str, params: Params) -> PullRequest | None:
        for item in self._pages(f"{self._repo}/pulls", params, self.read_permission):
            pr = self._to_pr(cast(Pull, item))
            if self._own(pr, head, base):
                return pr
        return None

    # -- changes -------------------------------------------------------------------

    def create(self, head: str, base: str, title: str, body: str, labels: Sequence[str]) -> PullRequest:
        payload = {"title": title, "body": body, "head": head, "base": base, **self._create_fields(labels)}
        response = self._http.request("POST", f"{self._repo}/pulls", json=payload, expect=self.create_statuses,
                                      permission=self.pulls_permission)
        if response.status_code in self.create_statuses:
            if self._exists(response):
                raise PullRequestExists(f"{self.kind} says a pull request from {head} into {base} already "
                                        f"exists on {self._http.repo}", head=head, base=base)
            raise self._http.error(
                f"{self.kind} refused to open a pull request from {head} into {base} on {self._http.repo} "
                f"(do both branches exist{self.refused_hint}?): HTTP {response.status_code}: "
                f"{self._http.excerpt(response.text)}", transient=False)
        pr = self._to_pr(cast(Pull, self._http.json(response)))
        return self._set_labels(pr, labels) if labels and not self.labels_on_create else pr

    def update(self, pr: PullRequest, *, title: str | None = None, body: str | None = None,
               labels: Sequence[str] | None = None) -> PullRequest:
        fields = {k: v for k, v in (("title", title), ("body", body)) if v is not None}
        if fields:
            pr = self._patch(pr, fields)
        if labels is not None:
            pr = self._set_labels(pr, labels)
        return pr

    def comment(self, pr: PullRequest, text: str) -> None:
        self._http.request("POST", f"{self._repo}/issues/{pr.number}/comments", json={"body": text},
                           permission=self.issues_permission)

    def close(self, pr: PullRequest) -> PullRequest:
        return self._patch(pr, {"state": "closed"})

    def _patch(self, pr: PullRequest, fields: dict[str, str]) -> PullRequest:
        response = self._http.request("PATCH", f"{self._repo}/pulls/{pr.number}", json=fields,
                                      permission=self.pulls_permission)
        return self._to_pr(cast(Pull, self._http.json(response)))

    def _to_pr(self, pull: Pull) -> PullRequest:
        state: PrState = "merged" if self._merged(pull) else ("open" if pull["state"] == "open" else "closed")
        return PullRequest(
            number=pull["number"],
            url=pull["html_url"],
            state=state,
            title=pull["title"],
            body=pull.get("body") or "",
            labels=tuple(label["name"] for label in pull.get("labels") or ()),
            head=pull["head"]["ref"],
            base=pull["base"]["ref"],
            head_sha=pull["head"].get("sha") or "",
            author=(pull.get("user") or {"login": ""})["login"] or "",
            same_repo=self._same_repo(pull),
        )
