"""The one HTTP request helper every forge module uses (``ForgeHttp``).

It owns the rules that must not differ between forges:

- every call is time-bounded (``timeout`` per attempt, for the whole exchange: see
  ``httpbound``; bodies over 16 MiB are refused) and all retries of one call share
  one budget (``budget`` seconds), measured with the injected ``clock`` and ``sleep``;
- connect errors, timeouts and 500/502/503/504 are retried with capped exponential
  backoff and jitter;
- rate limits (any 429, or a 403 with ``x-ratelimit-remaining: 0`` or ``retry-after``)
  wait for ``Retry-After`` seconds, else until ``x-ratelimit-reset``/``RateLimit-Reset``;
  a wait longer than the remaining budget raises ``ForgeRateLimited`` (transient) saying
  when to retry;
- 401 is ``ForgeAuthFailed`` (the token itself; a token file is read again first, and a minted
  token minted again), 403 a missing permission, 404 a repository not found or not visible:
  permanent ``ForgeError``s that say what is wrong;
- the token lives only in the per-request header; every message is passed through
  ``redact_text``, and an error body is quoted only as ``ForgeHttp.excerpt``: masked (the
  tokens, credential shapes) *before* it is cut to 300 characters, then checked again.

What the forge modules build on it (their account, their own PR) is ``_client.ForgeClient``.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import httpx

from syncer import httpbound
from syncer.errors import ForgeAuthFailed, ForgeError
from syncer.forges.tokens import StaticToken, TokenSource
from syncer.secrets import masking
from syncer.secrets.redact import redact_text, redact_url

log = logging.getLogger("syncer.forges")

#: Answers worth the same call again after a pause.
RETRY_STATUSES = frozenset({500, 502, 503, 504})

# Backoff: 0.5 s, 1 s, 2 s, ... capped at 8 s, each scaled by a random factor in
# [0.5, 1) so replicas retrying together spread out.
BACKOFF_FIRST = 0.5
BACKOFF_CAP = 8.0

#: How much of an error body goes into a message.
BODY_EXCERPT = 300

Params = Mapping[str, str | int]


class ForgeRateLimited(ForgeError):
    """The forge asked us to wait longer than the retry budget allows."""

    transient = True

    def __init__(self, message: str, *, retry_at: float) -> None:
        super().__init__(message, transient=True)
        self.retry_at = retry_at  # epoch seconds (per the injected clock)




class ForgeHttp:
    """Sends requests to one forge API for one repository, with one token."""

    def __init__(
        self,
        client: httpx.Client,
        *,
        forge: str,
        api_url: str,
        repo: str,
        token: str | TokenSource,
        auth_header: str = "Authorization",
        auth_scheme: str = "Bearer",
        extra_headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,  # per attempt: a healthy forge answers in well under 1 s
        budget: float = 60.0,  # all attempts of one call: one sync must not stall
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._client = client
        self.forge = forge
        self.api_url = api_url.rstrip("/")
        self.repo = repo
        self._token: TokenSource = StaticToken(token) if isinstance(token, str) else token
        self._auth_header = auth_header
        self._auth_scheme = auth_scheme
        self._headers = dict(extra_headers or {})
        self.timeout = timeout
        self.budget = budget
        self.max_response = httpbound.MAX_RESPONSE_BYTES
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter

    def __repr__(self) -> str:
        return f"ForgeHttp(forge={self.forge!r}, api_url={self.shown_url!r}, repo={self.repo!r})"

    @property
    def shown_url(self) -> str:
        return redact_url(self.api_url)

    def redact(self, text: str) -> str:
        return redact_text(text, self._token.known())

    def excerpt(self, text: str) -> str:
        """What a message may quote of an answer's body: this client's tokens and every
        credential shape masked before it is cut to ``BODY_EXCERPT`` characters."""
        return masking.excerpt(text, self._token.known(), BODY_EXCERPT)

    def error(self, message: str, *, transient: bool) -> ForgeError:
        """A ForgeError whose message is guaranteed free of the token."""
        return ForgeError(self.redact(message), transient=transient)

    # -- the request loop ------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json: Any = None,
        expect: Collection[int] = (),
        permission: str = "",
    ) -> httpx.Response:
        """Send one call, retrying within the budget; return a 2xx or expected answer.

        ``path`` is relative to the API URL (``/repos/o/r/pulls``) or an absolute URL
        under it (a pagination link). ``expect`` lists non-2xx statuses the caller
        handles itself (e.g. 422 "already exists"). ``permission`` names what a 403
        means the token lacks.
        """
        url = self._url(path)
        shown = f"{method} {urlsplit(url).path}"
        started = self._clock()
        slept = 0.0
        attempt = 0
        renewed = False
        while True:
            remaining = self.budget - max(self._clock() - started, slept)
            problem: str
            credential = self._token.token()  # per attempt: a minted token may have been renewed meanwhile
            if self._auth_scheme:
                credential = f"{self._auth_scheme} {credential}"
            headers = {**self._headers, self._auth_header: credential}
            try:
                response = httpbound.send(
                    self._client,
                    method,
                    url,
                    params=params,
                    json=json,
                    headers=headers,
                    # the whole exchange, not each socket read: a trickling server cannot
                    # hold a call past its share of the budget
                    timeout=max(min(self.timeout, remaining), 0.05),
                    max_bytes=self.max_response,
                )
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
                problem = f"{kind} ({type(exc).__name__}: {exc})"
                wait = self._backoff(attempt)
                rate_limited = False
            except httpbound.ResponseTooLarge as exc:
                raise self.error(f"{self.forge} at {self.shown_url}: {exc}", transient=True) from exc
            except httpx.HTTPError as exc:
                raise self.error(
                    f"{self.forge} at {self.shown_url}: {shown} failed: {type(exc).__name__}: {exc}",
                    transient=False,
                ) from exc
            else:
                status = response.status_code
                if 200 <= status < 300 or status in expect:
                    return response
                limit_wait = self._rate_limit_wait(response)
                rate_limited = limit_wait is not None
                if limit_wait is not None:
                    problem = f"rate limited (HTTP {status})"
                    wait = limit_wait
                elif status in RETRY_STATUSES:
                    problem = f"HTTP {status}: {self.excerpt(response.text)}"
                    wait = self._backoff(attempt)
                elif status == 401 and not renewed and self._token.expire():
                    # A minted token the forge no longer takes (revoked, or expired early): one
                    # more attempt with a new one; a second 401 is the credential itself.
                    renewed = True
                    log.warning("%s: %s -> 401; minting a new token", self.forge, shown)
                    continue
                else:
                    raise self._permanent(response, shown, permission)
            attempt += 1
            remaining = self.budget - max(self._clock() - started, slept)
            if wait > remaining:
                raise self._give_up(shown, attempt, problem, wait, rate_limited)
            log.warning(
                "%s: %s %s; retrying in %.1fs (%.0fs of retry budget left)",
                self.forge, shown, self.redact(problem), wait, remaining,
            )
            self._sleep(wait)
            slept += wait

    def _url(self, path: str) -> str:
        if "://" not in path:
            return self.api_url + path
        if path == self.api_url or path.startswith(self.api_url + "/"):
            return path
        raise self.error(
            f"{self.forge} at {self.shown_url} sent a link outside its API "
            f"({redact_url(path)}): refusing to send the token there",
            transient=False,
        )

    def _backoff(self, attempt: int) -> float:
        ceiling = min(BACKOFF_CAP, BACKOFF_FIRST * 2.0**attempt)
        return ceiling * (0.5 + 0.5 * self._jitter())

    def _rate_limit_wait(self, response: httpx.Response) -> float | None:
        """Seconds to wait when ``response`` is a rate-limit answer, else None."""
        h = response.headers
        status = response.status_code
        exhausted = h.get("x-ratelimit-remaining") == "0" or h.get("ratelimit-remaining") == "0"
        if status != 429 and not (status == 403 and (exhausted or "retry-after" in h)):
            return None
        now = self._clock()
        retry_after = h.get("retry-after")
        if retry_after:
            seconds = _parse_retry_after(retry_after, now)
            if seconds is not None:
                return max(seconds, BACKOFF_FIRST)
        reset = h.get("x-ratelimit-reset") or h.get("ratelimit-reset")
        if reset:
            try:
                value = float(reset)
            except ValueError:
                value = -1.0
            if value >= 0:
                # Epoch seconds (GitHub, GitLab); small numbers are a delta (IETF draft).
                seconds = value - now if value > 1e9 else value
                return max(seconds, BACKOFF_FIRST)
        return BACKOFF_CAP

    def _give_up(
        self, shown: str, attempts: int, problem: str, wait: float, rate_limited: bool
    ) -> ForgeError:
        if rate_limited:
            retry_at = self._clock() + wait
            when = datetime.fromtimestamp(retry_at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            return ForgeRateLimited(
                self.redact(
                    f"{self.forge} at {self.shown_url} rate-limited {shown}: retry after "
                    f"{when} (in {wait:.0f}s, more than the {self.budget:.0f}s retry budget)"
                ),
                retry_at=retry_at,
            )
        return self.error(
            f"{self.forge} at {self.shown_url} did not answer {shown} within the "
            f"{self.budget:.0f}s retry budget ({attempts} attempts, last: {problem}); "
            "will retry on the next sync",
            transient=True,
        )

    def _permanent(self, response: httpx.Response, shown: str, permission: str) -> ForgeError:
        status = response.status_code
        body = self.excerpt(response.text)
        if status == 401:
            return ForgeAuthFailed(self.redact(
                f"{self.forge} at {self.shown_url} rejected syncer's token (expired or revoked?): check "
                f"{self._token.hint} ({shown} -> 401: {body})"), transient=False)
        elif status == 403:
            needed = permission or ("read" if shown.startswith("GET ") else "write")
            message = (
                f"token lacks permission {needed} on {self.repo} at {self.forge} "
                f"{self.shown_url} ({shown} -> 403: {body})"
            )
        elif status == 404:
            message = (
                f"repository {self.repo} not found on {self.forge} at {self.shown_url} "
                f"(or the token cannot see it): {shown} -> 404: {body}"
            )
        else:
            message = f"{self.forge} at {self.shown_url} refused {shown}: HTTP {status}: {body}"
        # Other 5xx (501, 505, ...) will not heal by retrying now, but may later.
        return self.error(message, transient=status >= 500)

    # -- small conveniences ----------------------------------------------------------

    def json(self, response: httpx.Response) -> Any:
        """The decoded body; a clear error when a proxy answered with HTML."""
        try:
            return response.json()
        except ValueError as exc:
            raise self._unexpected(response, "non-JSON") from exc

    def json_list(self, response: httpx.Response) -> list[Any]:
        """The decoded body of a list endpoint."""
        items = self.json(response)
        if not isinstance(items, list):
            raise self._unexpected(response, "something other than a list")
        return items

    def _unexpected(self, response: httpx.Response, what: str) -> ForgeError:
        return self.error(
            f"{self.forge} at {self.shown_url} answered {response.request.method} "
            f"{response.request.url.path} with {what}: {self.excerpt(response.text)}",
            transient=True,
        )


def _parse_retry_after(value: str, now: float) -> float | None:
    """``Retry-After`` is delta seconds or an HTTP date."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - now
