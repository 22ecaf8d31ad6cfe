"""Tokens never reach an error message: a GitHub App's token answer is never quoted, and every
excerpt of a body is masked *before* it is cut (issue #33).

The GitHub side runs against the fake GitHub (``tests/fakes/forges``), which verifies the app's
JWT and mints installation tokens in both of GitHub's formats; a hostile (or broken) GitHub or a
proxy in front of it rewrites the token answer with ``FakeApp.mangle``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.forges import FakeGitHub, FakeTime
from tests.fakes.forges.github_app import FakeApp

from syncer.errors import ForgeError
from syncer.forges import api_url, make_forge
from syncer.forges._http import ForgeHttp
from syncer.forges.githubapp import InstallationToken, expiry
from syncer.kube.errors import api_error
from syncer.secrets.masking import FRAGMENT, excerpt, mask_fragments

APP_ID = "123456"


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def github(key: rsa.RSAPrivateKey, clock: FakeTime) -> Iterator[FakeGitHub]:
    with FakeGitHub(token="personal-token-never-used") as fake:
        fake.install_app(FakeApp(APP_ID, key.public_key(), clock=clock.clock))
        yield fake


def tokens(fake: FakeGitHub, key: rsa.RSAPrivateKey, clock: FakeTime) -> InstallationToken:
    return InstallationToken(httpx.Client(), api_url("github", fake.url), APP_ID, key, repo=fake.repo,
                             installation_id=4242, sleep=clock.sleep, clock=clock.clock)


def pieces(token: str, text: str) -> list[str]:
    """Every run of ``FRAGMENT`` characters of ``token`` that ``text`` shows."""
    return sorted({token[i:i + FRAGMENT] for i in range(len(token) - FRAGMENT + 1) if token[i:i + FRAGMENT] in text})


def minted_token_answer(app: FakeApp, change: Any) -> list[str]:
    """Make the fake answer every mint with ``change(doc)``; the tokens it minted are returned."""
    minted: list[str] = []

    def mangle(doc: dict[str, Any]) -> Any:
        minted.append(doc["token"])
        return change(doc)
    app.mangle = mangle
    return minted


HOSTILE_ANSWERS = {
    "numeric expires_at as a string of digits": (lambda d: {**d, "expires_at": "1790000000"}, "expires_at"),
    "expires_at an object": (lambda d: {**d, "expires_at": {"when": d["token"]}}, "expires_at"),
    "expires_at the token": (lambda d: {**d, "expires_at": d["token"]}, "expires_at"),
    "expires_at missing": (lambda d: {k: v for k, v in d.items() if k != "expires_at"}, "expires_at"),
    "expires_at true": (lambda d: {**d, "expires_at": True}, "expires_at"),
    "expires_at 5,000 digits": (lambda d: json.dumps(d).replace(json.dumps(d["expires_at"]), "9" * 5000), "JSON"),
    "expires_at in year 9999": (lambda d: {**d, "expires_at": "9999-12-31T23:59:59Z"}, "expires_at"),
    "token a number": (lambda d: {**d, "token": 12345678901234567890}, "field token"),
    "token with spaces": (lambda d: {**d, "token": d["token"][:20] + " " + d["token"][20:]}, "field token"),
    "a list": (lambda d: [d], "not an object"),
    "no JSON: cut off after the token": (lambda d: json.dumps(d)[:-30], "no JSON"),
    "no JSON: HTML around it": (lambda d: f"<html><pre>{json.dumps(d)}</pre></html>", "no JSON"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ANSWERS))
def test_a_token_answer_is_never_quoted_and_a_bad_expires_at_fails_closed(
        github: FakeGitHub, key: rsa.RSAPrivateKey, clock: FakeTime, name: str) -> None:
    change, field_named = HOSTILE_ANSWERS[name]
    assert github.app is not None
    minted = minted_token_answer(github.app, change)
    source = tokens(github, key, clock)
    with pytest.raises(ForgeError) as caught:
        source.token()
    message = str(caught.value)
    assert minted and all(pieces(t, message) == [] for t in minted), message
    assert "ghs_" not in message and "permissions" not in message and "repository_selection" not in message
    assert field_named in message and "\n" not in message
    assert "/app/installations/4242/access_tokens" in message


@pytest.mark.parametrize("shape", [
    "2016-07-11T22:14:10Z", "2016-07-11T22:14:10.250Z", "2016-07-11T22:14:10+00:00", "2016-07-11T23:14:10+01:00",
    "2016-07-11 22:14:10Z", "2016-07-11T22:14:10", 1468275250, 1468275250.0,
])
def test_expires_at_in_every_shape_is_read(shape: object) -> None:
    at = expiry(shape)
    assert at is not None and int(at) == 1468275250


@pytest.mark.parametrize("shape", ["", "tomorrow", "1468275250", "2016-07-11", "2016-13-11T22:14:10Z", True, None,
                                   [1468275250], {"at": 1}, float("inf"), float("nan"), -5, 10 ** 20])
def test_expires_at_that_is_no_time_is_none(shape: object) -> None:
    assert expiry(shape) is None


def test_a_numeric_expires_at_is_read_and_the_token_works(github: FakeGitHub, key: rsa.RSAPrivateKey,
                                                          clock: FakeTime) -> None:
    """The round's attack: a numeric ``expires_at`` made the error quote the body, token and all."""
    assert github.app is not None
    minted_token_answer(github.app, lambda d: {**d, "expires_at": int(clock.clock()) + 3600})
    source = tokens(github, key, clock)
    assert source.token().startswith("ghs_")
    assert abs(source.expires_at - (clock.clock() + 3600)) < 2


def test_the_stateless_token_format_works_and_is_masked(github: FakeGitHub, key: rsa.RSAPrivateKey,
                                                        clock: FakeTime) -> None:
    assert github.app is not None
    github.app.stateless = True
    source = tokens(github, key, clock)
    forge = make_forge("github", github.url, github.repo, source, clock=clock.clock, sleep=clock.sleep)
    assert forge.find_open("syncer/asgard", "main") is None
    token = source.token()
    assert token.startswith(f"ghs_{APP_ID}_eyJ") and token.count(".") == 2 and len(token) > 500
    http = ForgeHttp(httpx.Client(transport=httpx.MockTransport(
        lambda r: httpx.Response(403, text=f"denied for {token} and {token[:250]}\n{token[250:]}"))),
        forge="github", api_url="https://api.example", repo="o/r", token=source, sleep=lambda _: None)
    with pytest.raises(ForgeError) as caught:
        http.request("GET", "/repos/o/r")
    assert pieces(token, str(caught.value)) == []


def _refusing(body: str, token: str) -> ForgeHttp:
    transport = httpx.MockTransport(lambda request: httpx.Response(403, text=body))
    return ForgeHttp(httpx.Client(transport=transport), forge="github", api_url="https://api.example",
                     repo="o/r", token=token, sleep=lambda _: None)


CLASSIC = "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.mark.parametrize("at", range(280, 305, 3))
def test_a_token_straddling_the_cut_shows_no_piece_of_itself(at: int) -> None:
    """Cut first, masked after, the 300-character cut showed the first 29 of 39 characters."""
    body = "x" * at + CLASSIC + " and more text after it " * 20
    with pytest.raises(ForgeError) as caught:
        _refusing(body, CLASSIC).request("GET", "/repos/o/r")
    assert pieces(CLASSIC, str(caught.value)) == [], str(caught.value)
    # ...nor when the token is one the client does not know (a shape)
    assert pieces(CLASSIC, excerpt(body)) == []


def test_a_token_split_across_two_lines_or_inside_a_url_is_masked() -> None:
    for body in (f"error: {CLASSIC[:20]}\n{CLASSIC[20:]} refused", f"error: {CLASSIC[:4]}\r\n{CLASSIC[4:]}",
                 f"clone https://x-access-token:{CLASSIC}@github.com/o/r.git failed",
                 f"see https://api.example/?access_token={CLASSIC}&x=1", f"Authorization: token {CLASSIC}",
                 f"{json.dumps({'token': CLASSIC})}"):
        with pytest.raises(ForgeError) as caught:
            _refusing(body, CLASSIC).request("GET", "/repos/o/r")
        assert pieces(CLASSIC, str(caught.value)) == [], (body, str(caught.value))


def test_unknown_tokens_are_masked_by_shape_in_any_excerpt() -> None:
    jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlLXNpZw"
    for secret in ("ghp_" + "x" * 36, "glpat-" + "y1" * 10, jwt, "xoxb-123456789012-abcdefghijkl",
                   f"ghs_{APP_ID}_{jwt}", "AKIA" + "A" * 16):
        for at in (0, 150, 290):
            text = "." * at + " " + secret + " tail " * 80
            shown = excerpt(text)
            assert pieces(secret, shown) == [], (secret, at, shown)
    assert excerpt("Bearer abcdefgh12345678 denied") == "Bearer *** denied"
    assert excerpt("token rejected by github: Bad credentials") == "token rejected by github: Bad credentials"


def test_the_excerpt_is_bounded_and_never_shows_what_a_window_cut() -> None:
    huge = "word " * 2_000_000 + CLASSIC
    assert len(excerpt(huge)) == 300
    # a token the look-ahead window cut is never shown, however much masking shortened the rest
    text = (CLASSIC + " ") * 600 + "q" * 100 + "ghs_" + "Z9" * 500
    shown = excerpt(text, [CLASSIC])
    assert "Z9Z9Z9Z9" not in shown and pieces(CLASSIC, shown) == []


def test_fragments_of_a_known_secret_are_masked_and_others_kept() -> None:
    assert mask_fragments(f"a {CLASSIC[5:20]} b", [CLASSIC]) == "a *** b"
    assert mask_fragments(f"a {CLASSIC[5:12]} b", [CLASSIC]) == f"a {CLASSIC[5:12]} b"  # 7: too short to tell
    assert mask_fragments("nothing here 0123456789", [CLASSIC]) == "nothing here 0123456789"


def test_kube_api_errors_mask_before_the_cut() -> None:
    sa_token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6YWk6c3luY2VyIn0." + "s" * 300
    static = "k8s-static-token-0123456789abcdef"
    for at in (250, 280, 295):
        body = {"kind": "Status", "message": "x" * at + f" Authorization: Bearer {sa_token}", "reason": "Forbidden"}
        err = api_error(403, body, "get configmaps/ai/x")
        assert pieces(sa_token, str(err)) == [], str(err)
        raw = ("y" * at + static).encode()
        err = api_error(500, raw, "get configmaps/ai/x", known=[static])
        assert pieces(static, str(err)) == [], str(err)


def test_a_kube_connection_knows_what_it_sends(tmp_path: Any) -> None:
    from syncer.kube.config import Connection

    conn = Connection(server="https://k", token_file=tmp_path / "t")
    (tmp_path / "t").write_text("rotated-token-0123456789\n")
    assert conn.authorization() == "Bearer rotated-token-0123456789"
    assert "rotated-token-0123456789" in conn.known()
    basic = Connection(server="https://k", basic=("admin", "hunter2-hunter2"))
    assert basic.authorization() and "hunter2-hunter2" in basic.known()
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", basic.known()[0])
