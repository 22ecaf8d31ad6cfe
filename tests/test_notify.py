"""Webhooks against a loopback receiver, and the redaction helpers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.webhook import Receiver
from syncer.forges.base import PullRequest
from syncer.model import Action, Direction, Drift, DriftClass, ObjectRef
from syncer.writeback.notify import Notifier, is_slack, shown_url
from syncer.secrets.redact import REDACTED, redact_text, redact_url, redact_value


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client() as c:
        yield c


PR = PullRequest(
    number=3, url="https://git.example/acme/infra/pull/3", state="open", title="syncer: asgard drift",
    body="long body", labels=("syncer",), head="syncer/asgard", base="main",
)
DRIFTS = [
    {"kind": "ConfigMap", "namespace": "ai", "name": "ollama-endpoint-manager", "path": "data.MAC_ADDRS",
     "git": "192.168.68.58", "live": "192.168.68.75 100.115.97.90", "class": "value"},
    {"kind": "ConfigMap", "namespace": "ai", "name": "litellm", "path": "data.API_TOKEN",
     "git": "old-secret", "live": "new-secret", "class": "value", "detail": "old-secret -> new-secret"},
    {"kind": "Secret", "namespace": "ai", "name": "creds", "path": "data.url",
     "git": "aHR0cA==", "live": "aHR0cHM=", "class": "value"},
]


def payload() -> dict[str, Any]:
    return {"installation": "asgard", "summary": "3 drifted fields", "pr": PR, "drifts": DRIFTS}


def test_generic_payload(receiver: Receiver, client: httpx.Client) -> None:
    notifier = Notifier([f"{receiver.url}/hook"], client)
    assert notifier.notify("pr.opened", payload()) == []
    [(path, data)] = receiver.posts
    assert path == "/hook"
    assert data["event"] == "pr.opened" and data["installation"] == "asgard"
    assert data["summary"] == "3 drifted fields"
    assert data["pr"]["number"] == 3 and data["pr"]["url"] == PR.url and "body" not in data["pr"]
    plain, token, secret = data["drifts"]
    assert plain["live"] == "192.168.68.75 100.115.97.90"
    assert token["git"] == token["live"] == token["detail"] == REDACTED
    assert secret["git"] == secret["live"] == REDACTED
    assert "new-secret" not in json.dumps(data)


def test_drift_objects_are_accepted(receiver: Receiver, client: httpx.Client) -> None:
    drift = Drift(
        ref=ObjectRef("v1", "ConfigMap", "ai", "litellm"), file="hosts/asgard/litellm.yaml",
        path=("data", "MASTER_KEY"), git="sk-old", live="sk-new", direction=Direction.CLUSTER,
        cls=DriftClass.VALUE, action=Action.WRITE, manager="kubectl-edit",
    )
    assert Notifier([f"{receiver.url}/hook"], client).notify("pr.updated", {"installation": "asgard", "drifts": [drift]}) == []
    [(_, data)] = receiver.posts
    [sent] = data["drifts"]
    assert sent["path"] == "data.MASTER_KEY" and sent["live"] == REDACTED and sent["manager"] == "kubectl-edit"


def test_slack_payload(receiver: Receiver, client: httpx.Client) -> None:
    notifier = Notifier([f"slack+{receiver.url}/services/T0/B0/xyz"], client)
    assert notifier.notify("pr.updated", payload()) == []
    [(path, data)] = receiver.posts
    assert path == "/services/T0/B0/xyz"
    assert set(data) == {"text"}
    text = data["text"]
    assert "asgard" in text and "pull request updated" in text
    assert f"<{PR.url}|#3 syncer: asgard drift>" in text
    assert "data.MAC_ADDRS" in text and "new-secret" not in text
    assert is_slack("https://hooks.slack.com/services/T0/B0/xyz")
    assert not is_slack("https://example.com/hooks.slack.com")


def test_hanging_receiver_is_bounded(receiver: Receiver, client: httpx.Client) -> None:
    notifier = Notifier([f"{receiver.url}/hang/secret-path", f"{receiver.url}/ok"], client, timeout=0.5)
    started = time.monotonic()
    failures = notifier.notify("drift.cleared", payload())
    # the receiver holds the request 10 s: well under that proves the 0.5 s bound cut it (the margin
    # is for a loaded machine: 1.5 s failed once at load 40)
    assert time.monotonic() - started < 5.0
    assert len(failures) == 1
    assert "timed out" in failures[0] or "Timeout" in failures[0]
    assert "secret-path" not in failures[0]
    assert any(path == "/ok" for path, _ in receiver.posts)  # the other URL still got it


def test_failing_receivers_report_and_never_raise(receiver: Receiver, client: httpx.Client) -> None:
    unreachable = "http://127.0.0.1:9/nothing-listens"
    notifier = Notifier([f"{receiver.url}/fail/T0/B0/abc", unreachable], client, timeout=2, secrets=["abc"])
    failures = notifier.notify("drift.undeclared", payload())
    assert len(failures) == 2
    assert "HTTP 500" in failures[0] and "internal trouble" in failures[0]
    assert "/fail/T0" not in failures[0]  # webhook paths are secrets
    assert "127.0.0.1:9" in failures[1]
    assert notifier.notify("no.such.event", payload())[0].startswith("unknown notification event")
    assert Notifier([], client).notify("pr.closed", payload()) == []


def test_known_secrets_are_masked_in_payloads(receiver: Receiver, client: httpx.Client) -> None:
    notifier = Notifier([f"{receiver.url}/hook"], client, secrets=["tok-123456"])
    notifier.notify("pr.closed", {"installation": "asgard", "summary": "token tok-123456 leaked?"})
    [(_, data)] = receiver.posts
    assert data["summary"] == "token *** leaked?"
    assert "tok-123456" not in repr(notifier)


@pytest.mark.parametrize(
    "key", ["API_TOKEN", "db_password", "Passwd", "clientSecret", "SSH_KEY", "aws_credentials", "PRIVATE_KEY", "data.apiKey"]
)
def test_redact_value_hides_secret_keys(key: str) -> None:
    assert redact_value(key, "hunter2") == REDACTED


@pytest.mark.parametrize("key", ["MAC_ADDRS", "data.M1_ADDRS", "replicas"])
def test_redact_value_keeps_plain_keys(key: str) -> None:
    assert redact_value(key, "192.168.68.75") == "192.168.68.75"
    assert redact_value("endpoint", "x", patterns=["ENDPOINT"]) == REDACTED


def test_redact_text_and_url() -> None:
    assert redact_text("Bearer s3cr/t! and s3cr%2Ft%21", ["s3cr/t!"]) == "Bearer *** and ***"
    assert redact_text("nothing", ["", "x" * 3]) == "nothing"
    assert redact_url("https://oauth2:glpat-abc@gitlab.example/g/p.git") == "https://oauth2:***@gitlab.example/g/p.git"
    assert redact_url("https://ghp_0123456789abcdefghij@github.com/a/b") == "https://***@github.com/a/b"
    assert redact_url("https://alice@git.example/a/b") == "https://alice@git.example/a/b"
    assert redact_url("git@github.com:a/b.git") == "git@github.com:a/b.git"
    assert shown_url("slack+https://hooks.slack.com/services/T/B/X") == "https://hooks.slack.com/…"


def test_one_redact_url_for_free_text_and_bare_urls() -> None:
    # git's stderr and exception messages hold URLs among other words: each one is redacted
    # by the same rule as a bare URL.
    text = "fatal: unable to access 'https://oauth2:glpat-abc@gitlab.example/g/p.git/': 403; also https://bob@host/x"
    assert redact_url(text) == (
        "fatal: unable to access 'https://oauth2:***@gitlab.example/g/p.git/': 403; also https://bob@host/x"
    )
    assert redact_url("x https://ghp_0123456789abcdefghij@github.com/a y") == "x https://***@github.com/a y"
