"""Shapes of credentials inside a text, and base64 read as text. Pure (``syncer.secrets.values`` uses them).

``shape(text)`` names the credential a text holds the shape of (``"a Stripe key"``): ``redact``'s
value shapes, then webhook URLs and API keys by their prefixes (patterns in the rule families of
Yelp's ``detect-secrets`` and gitleaks), Vault tokens, htpasswd lines, a PEM private key
base64-encoded once more, ``Authorization`` header values. Every pattern is linear.
"""

from __future__ import annotations

import base64
import binascii
import re

from syncer.secrets.redact import secret_value

#: Characters of one value read as a file (a ConfigMap holds 1 MiB in all).
MAX_TEXT = 1024 * 1024

#: Shapes of credentials: (what, literals one of which the text must hold, pattern). Each
#: pattern starts with a literal (a fast scan) and is no hit right after a letter or digit.
_SHAPES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    ("a Slack webhook URL", ("hooks.slack",),
     re.compile(r"hooks\.slack(?:-gov)?\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{8,256}")),
    ("a Discord webhook URL", ("/api/webhooks/",),
     re.compile(r"/api/webhooks/[0-9]{5,30}/[A-Za-z0-9_-]{20,256}")),
    ("a Stripe key", ("k_live_", "k_test_"), re.compile(r"k_(?:live|test)_[0-9A-Za-z]{10,247}")),
    ("a Google API key", ("AIza",), re.compile(r"AIza[0-9A-Za-z_-]{35}")),
    ("an AWS access key", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
     re.compile(r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("an OpenAI or Anthropic key", ("sk-",),
     re.compile(r"sk-(?:(?:proj|svcacct|admin|ant)-[A-Za-z0-9_-]{20,512}"
                r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48}(?![A-Za-z0-9]))")),
    ("an npm token", ("npm_",), re.compile(r"npm_[A-Za-z0-9]{36}")),
    ("a PyPI token", ("pypi-",), re.compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1024}")),
    ("a SendGrid key", ("SG.",), re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}")),
    ("a Slack app token", ("xapp-",), re.compile(r"xapp-[0-9]-[A-Za-z0-9-]{10,255}")),
    ("a Vault token", ("hvs.", "hvb.", "hvr."), re.compile(r"hv[sbr]\.[A-Za-z0-9_-]{24,1024}")),
    ("an htpasswd hash", (":$", ":{SHA}"),  # user:$apr1$salt$hash, bcrypt, {SHA}, crypt $1$/$5$/$6$
     re.compile(r"(?m)^[^:\s]{1,255}:(?:\$apr1\$[./0-9A-Za-z]{1,8}\$[./0-9A-Za-z]{22}"
                r"|\$2[abxy]?\$[0-9]{2}\$[./0-9A-Za-z]{53}|\{SHA\}[A-Za-z0-9+/]{27}="
                r"|\$[156]\$[^$\s]{1,16}\$[./0-9A-Za-z]{22,86})")),
)
#: Where a match must not start right after a letter or digit (``tasks_live_...`` is no Stripe key).
_WORD_START = frozenset({"a Stripe key", "a Google API key", "an AWS access key", "an OpenAI or Anthropic key",
                         "an npm token", "a PyPI token", "a SendGrid key", "a Slack app token", "a Vault token"})
#: ``Authorization`` header values: a bearer token (with a digit: ``Bearer realm`` is none) or basic credentials.
_BEARER = re.compile(r"(?i:b)earer[ \t]{1,8}([A-Za-z0-9._~+/-]{16,4096}=*)", re.IGNORECASE)
_BASIC = re.compile(r"(?i:b)asic[ \t]{1,8}([A-Za-z0-9+/]{8,4096}={0,2})", re.IGNORECASE)
#: A PEM block base64-encoded once more (``LS0tLS1CRUdJTi`` is ``-----BEGIN``), outside ``binaryData`` too.
_PEM64 = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{8,16384}={0,2}")


def decoded_credentials(text: str) -> bool:
    """Is ``text`` base64 of ``user:password``?"""
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    if not raw.isascii():
        return False
    user, colon, password = raw.decode("ascii").partition(":")
    return bool(colon and password) and password.isprintable()


def _starts_word(text: str, match: re.Match[str]) -> bool:
    at = match.start()
    if text[at] == "k":  # a Stripe key's ``sk_``/``rk_``: the pattern starts after its first letter
        at -= 1
        if at < 0 or text[at] not in "sr":
            return False
    return at == 0 or not text[at - 1].isalnum()


def shape(text: str) -> str | None:
    """What credential ``text`` holds the shape of (``"a Stripe key"``), or None."""
    found = secret_value(text)
    if found:
        return found
    for what, literals, pattern in _SHAPES:
        if any(lit in text for lit in literals):
            for match in pattern.finditer(text):
                if what not in _WORD_START or _starts_word(text, match):
                    return what
    if "LS0tLS1CRUdJTi" in text:
        for match in _PEM64.finditer(text):
            decoded = binary_text(match.group())
            if decoded is not None and secret_value(decoded) == "a PEM private key":
                return "a base64-encoded PEM private key"
    if "earer" in text or "EARER" in text:
        for match in _BEARER.finditer(text):
            if _starts_word(text, match) and any(ch.isdigit() for ch in match[1]):
                return "a bearer token"
    if "asic" in text or "ASIC" in text:
        for match in _BASIC.finditer(text):
            if _starts_word(text, match) and decoded_credentials(match[1]):
                return "basic auth credentials"
    return None


def binary_text(value: str) -> str | None:
    """``binaryData``'s base64 decoded, as text (Latin-1 for bytes that are no UTF-8), or None."""
    if len(value) > MAX_TEXT * 4 // 3 + 4:
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def utf8_base64(value: str) -> str | None:
    """Base64 ``value`` decoded when it is UTF-8 text, else None."""
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
