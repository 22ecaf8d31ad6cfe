"""The GitHub App side of the fake GitHub: JWT checks, installations and installation tokens.

As GitHub documents and answers them:

- ``GET /repos/{owner}/{repo}/installation`` and ``POST /app/installations/{id}/access_tokens``
  take only a JWT (``Authorization: Bearer <jwt>``), RS256, signed with the app's private key:
  the signature is verified with the app's public key; ``iss`` must be the app id, ``iat`` not in
  the future, ``exp`` in the future and at most 10 minutes ahead. Any failure is 401 with GitHub's
  message for it. A JWT on any other endpoint is 401 (it is no installation token).
- An installation token (``ghs_`` + 36 characters) lasts ``token_lifetime`` (GitHub: one hour,
  ``expires_at`` in the answer); past that, every call with it is 401 "Bad credentials", as is a
  revoked one. It is also the git password over HTTPS, user ``x-access-token``.

Time is the injected ``clock`` (the test's ``FakeTime``), so expiry is tested without waiting.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

DOCS = "https://docs.github.com/rest"
#: The app's slug: its PRs are opened by "<slug>[bot]".
SLUG = "syncer-test"
Reply = tuple[int, Any, dict[str, str]]

UNDECODABLE = "A JSON web token could not be decoded"
EXP_TOO_FAR = "'Expiration time' claim ('exp') is too far in the future"
EXPIRED = "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
IAT_FUTURE = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
MAX_JWT_LIFETIME = 600


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def looks_like_jwt(credential: str) -> bool:
    return credential.count(".") == 2 and credential.startswith("eyJ")


class FakeApp:
    """One GitHub App with one installation (on the fake's repository unless ``installed`` is off)."""

    def __init__(self, app_id: str, public_key: rsa.RSAPublicKey, *, installation_id: int = 4242,
                 token_lifetime: float = 3600.0, clock: Callable[[], float] = time.time) -> None:
        self.app_id = app_id
        self.public_key = public_key
        self.installation_id = installation_id
        self.token_lifetime = token_lifetime
        self.clock = clock
        self.installed = True
        self.tokens: dict[str, float] = {}  # installation token -> expires at (clock seconds)
        self.minted: list[str] = []
        self.jwt_refusals: list[str] = []  # GitHub's message for every JWT refused
        #: Mint GitHub's stateless format (``ghs_<app id>_<JWT>``, some 520 characters) instead
        #: of the classic ``ghs_`` + 36 characters (both are rolled out since April 2026).
        self.stateless = False
        #: A hostile or broken GitHub (or a proxy in front of it): rewrites the token answer's
        #: JSON document, or returns the raw body to send (a string).
        self.mangle: Callable[[dict[str, Any]], Any] | None = None

    # -- credentials ----------------------------------------------------------------------------
    @property
    def bot(self) -> str:
        """The login of PRs opened with the app's installation tokens."""
        return f"{SLUG}[bot]"

    def token_ok(self, token: str) -> bool:
        expires = self.tokens.get(token)
        return expires is not None and self.clock() < expires

    def revoke(self) -> None:
        """What ``DELETE /installation/token`` or an admin does: every token stops working."""
        self.tokens.clear()

    def git_authorization_ok(self, header: str | None) -> bool:
        """git over HTTPS: ``Authorization: Basic base64(x-access-token:<installation token>)``."""
        scheme, _, value = (header or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(value).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        return user == "x-access-token" and self.token_ok(password)

    def jwt_problem(self, credential: str) -> str:
        """GitHub's 401 message for this JWT, or "" when it is good."""
        problem = self._check(credential)
        if problem:
            self.jwt_refusals.append(problem)
        return problem

    def _check(self, credential: str) -> str:
        try:
            header_part, claims_part, signature_part = credential.split(".")
            header = json.loads(_unb64(header_part))
            claims = json.loads(_unb64(claims_part))
            signature = _unb64(signature_part)
        except (ValueError, binascii.Error):
            return UNDECODABLE
        if not isinstance(header, dict) or header.get("alg") != "RS256" or not isinstance(claims, dict):
            return UNDECODABLE
        try:
            self.public_key.verify(signature, f"{header_part}.{claims_part}".encode(), padding.PKCS1v15(),
                                   hashes.SHA256())
        except InvalidSignature:
            return UNDECODABLE
        if str(claims.get("iss")) != self.app_id:
            return UNDECODABLE
        now = self.clock()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or iat > now:
            return IAT_FUTURE
        if not isinstance(exp, int) or exp <= now:
            return EXPIRED
        if exp - now > MAX_JWT_LIFETIME:
            return EXP_TOO_FAR
        return ""

    # -- endpoints ------------------------------------------------------------------------------
    def route(self, method: str, path: str, credential: str, owner: str, repo: str, api_url: str) -> Reply | None:
        """The answer for an app endpoint, None for any other path."""
        installation_path = f"/repos/{owner}/{repo}/installation"
        mint_prefix = "/app/installations/"
        if path == "/user" and method == "GET" and self.token_ok(credential):
            # GitHub: an installation token is no user ("Resource not accessible by integration").
            return 403, {"message": "Resource not accessible by integration", "documentation_url": DOCS,
                         "status": "403"}, {}
        if path != installation_path and not path.startswith(mint_prefix) and path != "/app":
            return None
        problem = self.jwt_problem(credential) if looks_like_jwt(credential) else UNDECODABLE
        if problem:
            return 401, {"message": problem, "documentation_url": DOCS}, {}
        if path == "/app" and method == "GET":  # the authenticated app (JWT)
            return 200, {"id": int(self.app_id) if self.app_id.isdigit() else 0, "slug": SLUG,
                         "name": "syncer test", "owner": {"login": owner, "type": "Organization"}}, {}
        if path == installation_path and method == "GET":
            if not self.installed:
                return 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}, {}
            return 200, self._installation_json(owner, api_url), {}
        if path == f"{mint_prefix}{self.installation_id}/access_tokens" and method == "POST" and self.installed:
            doc = self._mint()
            return 201, (self.mangle(doc) if self.mangle else doc), {}
        return 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}, {}

    def _mint(self) -> dict[str, Any]:
        token = "ghs_" + "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                                 for _ in range(36))
        if self.stateless:  # a JWT after the app id: base64url parts, two dots
            part = lambda n: secrets.token_urlsafe(n).rstrip("=")  # noqa: E731
            token = f"ghs_{self.app_id}_eyJ{part(30)}.eyJ{part(200)}.{part(170)}"
        expires = self.clock() + self.token_lifetime
        self.tokens[token] = expires
        self.minted.append(token)
        return {"token": token,
                "expires_at": datetime.fromtimestamp(int(expires), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": {"contents": "write", "pull_requests": "write", "metadata": "read"},
                "repository_selection": "selected"}

    def _installation_json(self, owner: str, api_url: str) -> dict[str, Any]:
        return {"id": self.installation_id, "app_id": int(self.app_id) if self.app_id.isdigit() else 0,
                "app_slug": SLUG, "target_type": "Organization", "target_id": 1,
                "account": {"login": owner, "id": 1, "type": "Organization"},
                "access_tokens_url": f"{api_url}/app/installations/{self.installation_id}/access_tokens",
                "repositories_url": f"{api_url}/installation/repositories",
                "repository_selection": "selected",
                "permissions": {"contents": "write", "pull_requests": "write", "metadata": "read"},
                "events": [], "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                "single_file_name": None}
