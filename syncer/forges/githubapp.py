"""GitHub App credentials: an app id and its private key instead of a personal token.

Organisations that forbid personal access tokens install a GitHub App on the repository; each
installation has its own rate limit instead of one person's 5,000 calls an hour. What syncer does
with the app's key (GitHub's documented flow):

1. a JWT signed with the key (RS256): ``iat`` 60 s in the past (clock drift), ``exp`` 9 minutes
   ahead (GitHub refuses more than 10), ``iss`` the app id;
2. the installation: ``--github-app-installation-id``, or ``GET /repos/{owner}/{repo}/installation``
   with the JWT;
3. ``POST /app/installations/{id}/access_tokens`` with the JWT: an installation token
   (``ghs_...``) and its ``expires_at`` (one hour).

The installation token is the credential of every API call and of git over HTTPS
(``x-access-token:<token>``). It is kept until ``REFRESH_BEFORE`` seconds before it expires, then
minted again; a token the API refuses with 401 anyway is dropped and minted again once. Tokens
never appear in messages (``known()`` lists them for masking); the key stays in this process.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from syncer import USER_AGENT, bounds
from syncer.bounds import InputRejected
from syncer.errors import ConfigError, ForgeError
from syncer.forges._http import ForgeHttp
from syncer.model import JSON

log = logging.getLogger("syncer.forges")

#: A new installation token this long before the current one expires.
REFRESH_BEFORE = 300.0
#: JWT validity: GitHub accepts at most 10 minutes; ``iat`` is set back for clock drift.
JWT_LIFETIME = 540
JWT_BACKDATE = 60
#: Tokens remembered for masking (a long-running sidecar mints one an hour).
KNOWN_TOKENS = 8
#: A token answer is a few hundred bytes (a stateless ``ghs_`` token is some 520 characters).
MAX_TOKEN_ANSWER = 64 * 1024
#: An ``expires_at`` further from this machine's clock is refused (GitHub's tokens last an hour).
MAX_EXPIRY_SKEW = 24 * 3600.0
#: An installation token as GitHub writes it: ``ghs_`` + 36 characters, or the stateless
#: ``ghs_<app id>_<JWT>`` (letters, digits, ``_`` and ``.``); other token types are accepted too.
_TOKEN = re.compile(r"[A-Za-z0-9_.\-]{16,4096}")
_ISO_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?"
                       r"(?:[Zz]|[+-][0-9]{2}:?[0-9]{2})?")
_YEAR_9999 = 253402300799

HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28", "User-Agent": USER_AGENT}
KEY_FLAG = "--github-app-key-file"


def load_private_key(path: str | Path) -> rsa.RSAPrivateKey:
    """The app's private key from a PEM file (GitHub hands out PKCS#1; PKCS#8 works too)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{KEY_FLAG} {path}: {exc.strerror or exc}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise ConfigError(f"{KEY_FLAG} {path}: the key is encrypted; GitHub App keys are used unencrypted") from None
    except (ValueError, UnsupportedAlgorithm):
        raise ConfigError(f"{KEY_FLAG} {path}: not a PEM private key (expected the .pem file GitHub "
                          "generated for the app)") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ConfigError(f"{KEY_FLAG} {path}: a {type(key).__name__.removeprefix('_')}, not an RSA key "
                          "(GitHub App keys are RSA)")
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def app_jwt(app_id: str, key: rsa.RSAPrivateKey, now: float) -> str:
    """The JWT that authenticates as the app itself (RS256)."""
    header = {"alg": "RS256", "typ": "JWT"}
    claims = {"iat": int(now) - JWT_BACKDATE, "exp": int(now) + JWT_LIFETIME, "iss": app_id}
    signing_input = ".".join(_b64(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims))
    signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64(signature)}"


class _AppJwt:
    """The JWT as a ``TokenSource`` for ``ForgeHttp``: a fresh one per request."""

    def __init__(self, app_id: str, key: rsa.RSAPrivateKey, clock: Callable[[], float]) -> None:
        self.hint = f"--github-app-id {app_id} and {KEY_FLAG} (is the key this app's, and current?)"
        self._app_id, self._key, self._clock = app_id, key, clock
        self._last = ""

    def __repr__(self) -> str:
        return f"_AppJwt(app_id={self._app_id!r})"

    def token(self) -> str:
        self._last = app_jwt(self._app_id, self._key, self._clock())
        return self._last

    def known(self) -> list[str]:
        return [self._last] if self._last else []

    def expire(self) -> bool:
        return False  # a refused JWT is a wrong app id or key: another one would be refused too


class InstallationToken:
    """A GitHub App installation token, minted on first use and renewed before it expires.

    A ``TokenSource`` for the forge client; its ``token`` is also git's HTTPS credential.
    Thread-safe: the sidecar's passes and its forge calls share one instance. ``on_token`` is
    called with every new token (the CLI adds it to what the log masks)."""

    def __init__(self, client: httpx.Client, api_url: str, app_id: str, key: rsa.RSAPrivateKey, *,
                 repo: str = "", installation_id: int | None = None, timeout: float = 10.0, budget: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time,
                 on_token: Callable[[str], None] | None = None) -> None:
        if installation_id is None and not repo:
            raise ConfigError("--github-app-id without --github-app-installation-id needs --forge-repo OWNER/NAME "
                              "(the installation is looked up from the repository)")
        self.app_id = app_id
        self.hint = (f"--github-app-id {app_id}, {KEY_FLAG} and --github-app-installation-id "
                     "(the app's installation token)")
        self._jwt = _AppJwt(app_id, key, clock)
        self._http = ForgeHttp(client, forge="github", api_url=api_url, repo=repo, token=self._jwt,
                               extra_headers=HEADERS, timeout=timeout, budget=budget, sleep=sleep, clock=clock)
        self._repo = repo
        self._installation = installation_id
        self._clock = clock
        self._lock = threading.Lock()
        self._current = ""
        self._expires_at = 0.0
        self._known: list[str] = []
        self._account = ""
        self.on_token = on_token

    def __repr__(self) -> str:
        return f"InstallationToken(app_id={self.app_id!r}, installation={self._installation!r})"

    @property
    def expires_at(self) -> float:
        """When the current token expires (epoch seconds; 0 before the first one)."""
        return self._expires_at

    def token(self) -> str:
        with self._lock:
            if not self._current or self._clock() >= self._expires_at - REFRESH_BEFORE:
                self._mint()
            return self._current

    def known(self) -> list[str]:
        with self._lock:
            return [*self._known, *self._jwt.known()]

    def expire(self) -> bool:
        with self._lock:
            self._current, self._expires_at = "", 0.0
        return True

    def account(self) -> str:
        """The login the app's PRs are opened by, ``<slug>[bot]`` (``GET /app``, with the JWT): an
        installation token cannot ask ``GET /user`` who it is."""
        with self._lock:
            if not self._account:
                response = self._http.request("GET", "/app", permission="the app's own metadata")
                slug = self._json(response).get("slug")
                if not isinstance(slug, str) or not slug:
                    raise self._http.error(f"github at {self._http.shown_url} answered GET /app without its slug: "
                                           f"{self._http.excerpt(response.text)}", transient=True)
                self._account = f"{slug}[bot]"
            return self._account

    def _installation_id(self) -> int:
        if self._installation is None:
            owner, _, name = self._repo.partition("/")
            path = f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}/installation"
            response = self._http.request("GET", path, expect=(404,), permission="the app's own metadata")
            if response.status_code == 404:
                raise ForgeError(f"the GitHub App {self.app_id} is not installed on {self._repo} at "
                                 f"{self._http.shown_url} (install it there, or give --github-app-installation-id)",
                                 transient=False)
            self._installation = _integer(self._json(response).get("id"), "installation id", response, self._http)
        return self._installation

    def _mint(self) -> None:
        installation = self._installation_id()
        path = f"/app/installations/{installation}/access_tokens"
        response = self._http.request("POST", path, permission="the app's installation")
        token, expires_at = token_answer(response.text, f"github at {self._http.shown_url}: POST {path}",
                                         self._clock(), remember=self._remember)
        self._current, self._expires_at = token, expires_at
        when = datetime.fromtimestamp(expires_at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        log.info("github app %s: installation token for installation %s, valid until %s", self.app_id,
                 installation, when)
        if self.on_token is not None:
            self.on_token(token)

    def _remember(self, token: str) -> None:
        """Mask ``token`` from now on, before anything about its answer can be said."""
        self._known = [*self._known[-(KNOWN_TOKENS - 1):], token]

    def _json(self, response: httpx.Response) -> JSON:
        doc = self._http.json(response)
        if not isinstance(doc, dict):
            raise self._http.error(f"github at {self._http.shown_url} answered {response.request.url.path} with "
                                   f"something other than an object: {self._http.excerpt(response.text)}",
                                   transient=True)
        return doc


def _integer(value: Any, what: str, response: httpx.Response, http: ForgeHttp) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise http.error(f"github answered {response.request.url.path} without a numeric {what}: "
                     f"{http.excerpt(response.text)}", transient=True)


def token_answer(body: str, where: str, now: float, remember: Callable[[str], None] = lambda _: None
                 ) -> tuple[str, float]:
    """The installation token and when it expires (epoch seconds) from the answer ``body`` to
    ``POST /app/installations/{id}/access_tokens``. That answer is never quoted, whatever is
    wrong with it: it may hold a token. The token is handed to ``remember`` (the mask) before
    ``expires_at`` is judged. A field that is missing or not what GitHub documents fails closed:
    an error naming the field, and the token is not used."""
    try:
        doc = bounds.load_json(body, where, max_bytes=MAX_TOKEN_ANSWER)
    except (ValueError, InputRejected):
        raise ForgeError(f"{where}: the answer is no JSON of at most {MAX_TOKEN_ANSWER} bytes (a token answer, not "
                         "quoted)", transient=True) from None
    if not isinstance(doc, dict):
        raise ForgeError(f"{where}: the answer is {_what(doc)}, not an object (a token answer, not quoted)",
                         transient=True)
    token = doc.get("token")
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ForgeError(f"{where}: field token is {_what(token)}, not a token (the answer is not quoted)",
                         transient=True)
    remember(token)
    expires = expiry(doc.get("expires_at"))
    if expires is None:
        raise ForgeError(f"{where}: field expires_at is {_what(doc.get('expires_at'))}, not a time GitHub writes "
                         "(RFC 3339 such as 2016-07-11T22:14:10Z, or epoch seconds); the token is not used",
                         transient=True)
    if not now - MAX_EXPIRY_SKEW <= expires <= now + MAX_EXPIRY_SKEW:
        raise ForgeError(f"{where}: field expires_at is more than {MAX_EXPIRY_SKEW / 3600:.0f} hours from now by "
                         "this machine's clock (GitHub's tokens last one hour: is the clock right?); the token is "
                         "not used", transient=True)
    return token, expires


def expiry(value: object) -> float | None:
    """``expires_at`` as epoch seconds, or None when it is none of the shapes GitHub writes: an
    RFC 3339 / ISO 8601 time (``2016-07-11T22:14:10Z``, fractions of a second, an offset, a space
    for the ``T``; no offset is UTC), or a number of epoch seconds (as in a JWT's ``exp``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if 0 < value < _YEAR_9999 else None
    if not isinstance(value, str) or not _ISO_TIME.fullmatch(value.strip()):
        return None
    try:
        when = datetime.fromisoformat(value.strip().upper().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _what(value: object) -> str:
    """A value described without quoting it: its JSON type, and a string's length."""
    if value is None:
        return "missing (or null)"
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    kinds = {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}
    return kinds.get(type(value), type(value).__name__)
