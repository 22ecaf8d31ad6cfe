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
from syncer.secrets.rules import rule_hit

#: Characters of one value read as a file (a ConfigMap holds 1 MiB in all).
MAX_TEXT = 1024 * 1024

#: Shapes of credentials the maintained rules (``syncer.secrets.rules``: Slack, Stripe, Google,
#: AWS, npm, PyPI, Slack apps and some 350 more providers) have no rule of, or none that finds
#: them as they appear in a ConfigMap: (what, literals one of which the text must hold,
#: pattern). Each pattern starts with a literal (a fast scan) and is no hit right after a letter
#: or digit.
_SHAPES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    # the rule wants the 24 characters Slack writes; a shorter secret is one too
    ("a Slack webhook URL", ("hooks.slack",),
     re.compile(r"hooks\.slack(?:-gov)?\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{8,256}")),
    ("a Discord webhook URL", ("/api/webhooks/",),
     re.compile(r"/api/webhooks/[0-9]{5,30}/[A-Za-z0-9_-]{20,256}")),
    ("an OpenAI or Anthropic key", ("sk-",),
     re.compile(r"sk-(?:(?:proj|svcacct|admin|ant)-[A-Za-z0-9_-]{20,512}"
                r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48}(?![A-Za-z0-9]))")),
    ("a SendGrid key", ("SG.",), re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}")),
    ("a Vault token", ("hvs.", "hvb.", "hvr."), re.compile(r"hv[sbr]\.[A-Za-z0-9_-]{24,1024}")),
    ("an htpasswd hash", (":$", ":{SHA}"),  # user:$apr1$salt$hash, bcrypt, {SHA}, crypt $1$/$5$/$6$
     re.compile(r"(?m)^[^:\s]{1,255}:(?:\$apr1\$[./0-9A-Za-z]{1,8}\$[./0-9A-Za-z]{22}"
                r"|\$2[abxy]?\$[0-9]{2}\$[./0-9A-Za-z]{53}|\{SHA\}[A-Za-z0-9+/]{27}="
                r"|\$[156]\$[^$\s]{1,16}\$[./0-9A-Za-z]{22,86})")),
)
#: Where a match must not start right after a letter or digit.
_WORD_START = frozenset({"an OpenAI or Anthropic key", "a SendGrid key", "a Vault token"})
#: A docker config.json's registry login, in a text no JSON parser reads (``values`` reads the rest).
DOCKER_LOGIN = re.compile(r'"(?:auth|identitytoken|registrytoken)"\s{0,8}:\s{0,8}"[A-Za-z0-9+/=_.\\-]{8,16384}"')
#: ``Authorization`` header values: a bearer token (with a digit: ``Bearer realm`` is none) or basic credentials.
_BEARER = re.compile(r"(?i:b)earer[ \t]{1,8}([A-Za-z0-9._~+/-]{16,4096}=*)", re.IGNORECASE)
_BASIC = re.compile(r"(?i:b)asic[ \t]{1,8}([A-Za-z0-9+/]{8,4096}={0,2})", re.IGNORECASE)
#: A PEM block base64-encoded once more (``LS0tLS1CRUdJTi`` is ``-----BEGIN``), outside ``binaryData`` too.
_PEM64 = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{8,16384}={0,2}")

#: Patterns that find credentials in free text for masking (``syncer.secrets.masking``), where masking a
#: little too much costs nothing: GitHub's tokens in both formats (the stateless installation
#: token is ``ghs_`` + digits + ``_`` + a JWT, hundreds of characters with ``_`` and ``.``), a
#: JWT anywhere (a service-account token), a PEM private key with the base64 after it, every
#: shape above, and the value after an authorisation scheme (``Bearer``, ``Basic``, ``token``)
#: that holds a digit. A group named ``scheme`` is kept. Prefixes match inside a word too: text
#: glued to a token must not hide it.
MASKABLE: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?:gh[pousr]_[A-Za-z0-9._]{16,4096}|github_pat_[A-Za-z0-9_]{20,255})"),
    re.compile(r"(?:glpat-|glptt-|gldt-|glrt-|xox[abprs]-)[A-Za-z0-9_.-]{10,255}"),
    re.compile(r"eyJ[A-Za-z0-9_-]{4,8192}\.[A-Za-z0-9_-]{4,65536}(?:\.[A-Za-z0-9_-]{0,8192})?"),
    re.compile(r"-----BEGIN [A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s:,-]{0,65536}"
               r"(?:-----END [A-Z0-9 ]{0,64}PRIVATE KEY(?: BLOCK)?-----)?"),
    *(pattern for _, _, pattern in _SHAPES),
    re.compile(r"(?P<scheme>(?<![A-Za-z0-9])(?i:bearer|basic|token)[ \t:=]{1,8})"
               r"(?=[A-Za-z._~+/-]{0,4096}[0-9])[A-Za-z0-9._~+/-]{8,4096}={0,2}"),
)


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
    return rule_hit(text)


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
