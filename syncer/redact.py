"""Keep secrets out of everything syncer prints, logs, posts or raises.

Three tools, all pure:

- ``redact_value(key, value)``: hide a value whose *key name* looks secret
  (``API_TOKEN``, ``db.password``, ...), for drift tables, PR bodies and webhooks.
- ``redact_text(text, secrets)``: replace known secret strings (the forge token) wherever
  they occur, also in their URL-encoded form; for log lines and exception messages.
- ``redact_url(text)``: drop the password (or a token used as user name) from every URL's
  userinfo, e.g. a git remote ``https://oauth2:TOKEN@gitlab.example/x.git``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote

#: What a hidden value is replaced with.
REDACTED = "‹redacted›"

#: What a known secret string is replaced with inside free text.
MASK = "***"

#: Key names (regular expressions, matched case-insensitively anywhere in the key) whose
#: values are never shown.
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "KEY",
    "CREDENTIAL",
    "PRIVATE",
)

# A user name that is really a token: well-known token prefixes, or a long opaque string.
_TOKEN_LIKE_USER = re.compile(
    r"^(?:ghp_|gho_|ghs_|ghu_|github_pat_|glpat-)|^[A-Za-z0-9_\-]{20,}$"
)


def is_secret_key(key: str, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> bool:
    """True when ``key`` (e.g. ``data.API_TOKEN``) matches one of ``patterns``."""
    return any(re.search(p, key, re.IGNORECASE) for p in patterns)


def redact_value(
    key: str, value: str, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS
) -> str:
    """``value``, or ``‹redacted›`` when ``key`` names something secret."""
    return REDACTED if is_secret_key(key, patterns) else value


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """Replace every occurrence of each non-empty secret in ``text`` with ``***``.

    The URL-encoded form is replaced too, since a token may end up in a query string.
    Longer secrets go first so a secret containing another is masked whole.
    """
    forms: set[str] = set()
    for secret in secrets:
        if secret:
            forms.add(secret)
            forms.add(quote(secret, safe=""))
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return text


#: ``scheme://userinfo@`` anywhere in a text; userinfo stops at the first "/", "@" or space.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/@]+)@")


def _mask_userinfo(match: re.Match[str]) -> str:
    user, has_password, _ = match["userinfo"].partition(":")
    if has_password:
        return f"{match['scheme']}{user}:{MASK}@"
    if _TOKEN_LIKE_USER.search(user):
        return f"{match['scheme']}{MASK}@"
    return match.group(0)


def redact_url(text: str) -> str:
    """``text`` with the password of every URL's userinfo masked (``user:***@host``).

    Works on a bare URL and on free text holding URLs (git's stderr, an exception message).
    A user name that looks like a token (``https://ghp_xxx@github.com/...``) is masked as
    well; a plain user name is kept. ``git@host:path`` has no scheme and is left alone.
    This is syncer's one URL redaction: the forge, git and kubeconfig paths all use it.
    """
    return _URL_USERINFO.sub(_mask_userinfo, text)
