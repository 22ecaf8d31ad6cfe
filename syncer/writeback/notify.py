"""Optional webhooks: tell a chat or any HTTP receiver what syncer just did.

The pull request itself is the main notification; webhooks are a nudge. So they are
best-effort: ``Notifier.notify`` never raises, posts to all URLs in parallel, waits at most
``timeout`` seconds in total, and returns one message per failed URL.

Payloads, per URL:

- Slack incoming webhooks (host ``hooks.slack.com``, or any URL written with a
  ``slack+https://`` prefix for Slack-compatible receivers such as Mattermost):
  ``{"text": "..."}``;
- everything else: ``{"event", "installation", "summary", "pr": {...}, "drifts": [...]}``.

``payload`` holds ``installation``, ``summary``, ``pr`` (a ``PullRequest`` or a dict) and
``drifts`` (``Drift`` objects or their ``to_json()`` dicts); extra keys are passed along.

Values whose key looks secret, and every value of a ``Secret``, are redacted; known
secret strings (``secrets=``) are masked anywhere in the payload.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from syncer import USER_AGENT
from syncer import httpbound
from syncer.secrets import escape, lookalike, masking
from syncer.forges.base import PullRequest
from syncer.kinds import NEVER_WRITTEN
from syncer.model import JSON, Drift
from syncer.secrets.redact import REDACTED, redact_text, secret_field

log = logging.getLogger("syncer.notify")

EVENTS = ("pr.opened", "pr.updated", "pr.closed", "drift.undeclared", "drift.cleared")
SLACK_PREFIX = "slack+"
SLACK_MAX_DRIFTS = 10  # lines in a chat message before "... and N more"
SLACK_MAX_VALUE = 200  # characters of a value shown in a chat message
#: A webhook's answer matters only for its status: more than this is refused.
MAX_ANSWER_BYTES = 64 * 1024

_TITLES = {
    "pr.opened": "pull request opened",
    "pr.updated": "pull request updated",
    "pr.closed": "pull request closed",
    "drift.undeclared": "Endpoints point at an undeclared address",
    "drift.cleared": "Endpoints cleared: backend absent",
}


class Notifier:
    def __init__(
        self,
        urls: Sequence[str],
        client: httpx.Client,
        timeout: float = 5.0,  # a webhook must never hold up a sync for long
        *,
        secrets: Sequence[str] = (),
    ) -> None:
        self._urls = [u.strip() for u in urls if u.strip()]
        self._client = client
        self._timeout = timeout
        self._secrets = list(secrets)

    def __repr__(self) -> str:
        return f"Notifier({[shown_url(u) for u in self._urls]!r})"

    def notify(self, event: str, payload: Mapping[str, Any]) -> list[str]:
        """Post ``event`` to every URL; return one message per URL that failed."""
        if event not in EVENTS:
            return [f"unknown notification event {event!r} (known: {', '.join(EVENTS)})"]
        if not self._urls:
            return []
        try:
            generic = self._generic(event, payload)
            slack = {"text": slack_text(event, generic)}
            bodies = [
                self._encode(slack if is_slack(url) else generic) for url in self._urls
            ]
        except (TypeError, ValueError) as exc:  # a payload that is not JSON material
            return [f"webhook payload for {event} could not be encoded: {exc}"]
        failures: list[str | None] = [f"{shown_url(u)}: timed out after {self._timeout:g}s" for u in self._urls]
        threads = [
            threading.Thread(
                target=self._post, args=(i, url, body, failures), daemon=True, name="syncer-webhook"
            )
            for i, (url, body) in enumerate(zip(self._urls, bodies))
        ]
        deadline = time.monotonic() + self._timeout
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        messages = [m for m in failures if m is not None]
        for message in messages:
            log.warning("webhook failed: %s", message)
        return messages

    def _post(self, index: int, url: str, body: bytes, failures: list[str | None]) -> None:
        target = url.removeprefix(SLACK_PREFIX)
        shown = shown_url(url)
        try:
            # The whole exchange within the timeout, and only a small answer read: a
            # receiver that trickles or streams forever costs nothing after the deadline.
            response = httpbound.send(
                self._client,
                "POST",
                target,
                content=body,
                headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
                timeout=self._timeout,
                max_bytes=MAX_ANSWER_BYTES,
            )
        except httpx.HTTPError as exc:
            failures[index] = redact_text(f"{shown}: {type(exc).__name__}: {exc}", [target, *self._secrets])
            return
        except Exception as exc:  # never let a webhook take the sync down
            failures[index] = f"{shown}: {type(exc).__name__}"
            return
        if response.is_success:
            failures[index] = None
        else:
            text = masking.excerpt(response.text, self._secrets, 300)  # masked before it is cut
            failures[index] = redact_text(f"{shown}: HTTP {response.status_code}: {text}", self._secrets)

    def _encode(self, data: Mapping[str, Any]) -> bytes:
        return redact_text(json.dumps(data, ensure_ascii=False, default=str), self._secrets).encode()

    def _generic(self, event: str, payload: Mapping[str, Any]) -> JSON:
        pr = payload.get("pr")
        if isinstance(pr, PullRequest):
            # what a receiver reads about the PR; not its body, nor syncer's ownership checks
            pr = {k: v for k, v in dataclasses.asdict(pr).items() if k not in ("body", "head_sha", "author", "same_repo")}
        drifts = [self._redact_drift(d) for d in payload.get("drifts") or ()]
        extra = {k: v for k, v in payload.items() if k not in ("pr", "drifts", "event")}
        return {
            **extra,
            "event": event,
            "installation": payload.get("installation", ""),
            "summary": payload.get("summary", ""),
            "pr": pr,
            "drifts": drifts,
        }

    def _redact_drift(self, drift: Any) -> Any:
        if isinstance(drift, Drift):
            drift = drift.to_json()
        if not isinstance(drift, Mapping):
            return drift
        # Detection redacted secret-looking values in the drift itself; this second look (for
        # drifts made elsewhere) is the report's: kinds never written, secret-looking keys.
        kind = str(drift.get("kind", ""))
        if kind not in NEVER_WRITTEN and not secret_field(kind, str(drift.get("path", ""))):
            return dict(drift)
        return {
            k: (REDACTED if k in ("git", "live", "detail") and v not in (None, "") else v)
            for k, v in drift.items()
        }


def is_slack(url: str) -> bool:
    """Slack (or Slack-compatible, by ``slack+`` prefix) webhook URL?"""
    if url.startswith(SLACK_PREFIX):
        return True
    host = (urlsplit(url).hostname or "").lower()
    return host == "hooks.slack.com" or host.endswith(".hooks.slack.com")


def shown_url(url: str) -> str:
    """Scheme and host only: webhook paths (Slack's especially) are secrets."""
    parts = urlsplit(url.removeprefix(SLACK_PREFIX))
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}/…"


def slack_text(event: str, payload: Mapping[str, Any]) -> str:
    """A short chat message from the generic payload (Slack mrkdwn). Every string that may
    come from the cluster (values, key names, managers, the summary) is inert
    (``escape.slack``): it stays on its line and in its code span, and forms no link."""
    lines = [f"*syncer* {_esc(str(payload.get('installation') or '?'))}: {_TITLES.get(event, event)}"]
    pr = payload.get("pr")
    if isinstance(pr, Mapping) and pr.get("url"):
        lines.append(f"<{_esc_url(str(pr['url']))}|#{_esc(str(pr.get('number', '')))} {_esc(str(pr.get('title', '')))}>")
    if payload.get("summary"):
        lines.append(_esc(str(payload["summary"])))
    drifts = [d for d in payload.get("drifts") or () if isinstance(d, Mapping)]
    for d in drifts[:SLACK_MAX_DRIFTS]:
        where = _esc("/".join(str(d[k]) for k in ("kind", "namespace", "name") if d.get(k)))
        git, live = (_esc(str(d.get(k)), SLACK_MAX_VALUE) for k in ("git", "live"))
        note = lookalike.change_note(d.get("git"), d.get("live"))  # a change no one could see otherwise
        told = f" ⚠️ {_esc(note)}" if note else ""
        lines.append(f"• {where} {_esc(str(d.get('path', '')))}: `{git}` → `{live}` ({_esc(str(d.get('class', '?')))})"
                     f"{told}")
    if len(drifts) > SLACK_MAX_DRIFTS:
        lines.append(f"… and {len(drifts) - SLACK_MAX_DRIFTS} more")
    return "\n".join(lines)


def _esc(text: str, limit: int | None = None) -> str:
    return escape.slack(text, limit)


def _esc_url(url: str) -> str:
    """The forge's PR address inside ``<url|text>``: on one line, without ``|`` or ``>``."""
    return escape.line(url).replace("|", "%7C").replace(">", "%3E").replace("<", "%3C")
