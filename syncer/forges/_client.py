"""What every forge module shares on top of ``ForgeHttp``: ``ForgeClient``.

One ``ForgeHttp`` built from the forge's auth style (header, scheme, Accept, User-Agent); the
token's own account, looked up once; and which pull request is syncer's own (``base.is_own``),
a look-alike logged once and never touched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

import httpx

from syncer import USER_AGENT
from syncer.forges._http import ForgeHttp
from syncer.forges.tokens import TokenSource
from syncer.forges.base import PullRequest, is_own

log = logging.getLogger("syncer.forges")


class ForgeClient:
    """What every forge module shares: one ``ForgeHttp`` built from the forge's auth style.

    Subclasses set ``kind``, ``max_body``, ``auth_header`` and ``auth_scheme``; each call
    then goes through ``self._http`` (time-bounded, retried within a budget, token hidden).
    """

    kind = ""
    max_body = 65_536
    auth_header = "Authorization"
    auth_scheme = "Bearer"
    headers: Mapping[str, str] = {"Accept": "application/json"}
    #: Who the token is: ``GET`` this path (relative to the API) and read this field.
    account_path = "/user"
    account_field = "login"

    def __init__(
        self,
        client: httpx.Client,
        api_url: str,
        repo: str,
        token: str | TokenSource,
        *,
        timeout: float = 10.0,
        budget: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        account: str = "",
    ) -> None:
        self._account = account  # "" until looked up (or given: a GitHub App's "<slug>[bot]")
        self._ignored: set[int] = set()  # look-alike PRs already logged
        self._http = ForgeHttp(
            client, forge=self.kind, api_url=api_url, repo=repo, token=token,
            auth_header=self.auth_header, auth_scheme=self.auth_scheme,
            extra_headers={**self.headers, "User-Agent": USER_AGENT},
            timeout=timeout, budget=budget, sleep=sleep, clock=clock,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(api_url={self._http.shown_url!r}, repo={self._http.repo!r})"

    def account(self) -> str:
        """The token's own user (login / username): looked up once, then remembered."""
        if not self._account:
            response = self._http.request("GET", self.account_path, permission="read the token's own user")
            data = self._http.json(response)
            name = data.get(self.account_field) if isinstance(data, dict) else None
            if not isinstance(name, str) or not name:
                raise self._http.error(
                    f"{self.kind} at {self._http.shown_url} answered GET {self.account_path} without the "
                    f"token's {self.account_field}: {self._http.excerpt(response.text)}", transient=True,
                )
            self._account = name
        return self._account

    def _own(self, pr: PullRequest, head: str, base: str) -> bool:
        """Is ``pr`` syncer's own PR from ``head`` into ``base`` (``is_own``)? A look-alike
        with syncer's branch name (a fork's, someone else's) is logged and never touched."""
        if pr.head != head or pr.base != base:
            return False
        why = is_own(pr, head, base, self.account())
        if why and pr.number not in self._ignored:  # once per PR: the sidecar looks every pass
            self._ignored.add(pr.number)
            log.warning("%s: ignoring pull request #%d on %s from a branch named %r: %s",
                        self.kind, pr.number, self._http.repo, head, why)
        return not why
