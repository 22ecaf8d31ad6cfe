"""Keep secrets out of everything syncer prints, logs, posts or raises.

Tools, all pure:

- ``is_secret_key(key)`` / ``secret_value(value)``: does a ConfigMap key name look secret
  (whole words: ``DB_PASSWORD``, ``apiKey``; not ``key3`` or ``CACHE_KEY_PREFIX``), does a
  value have a secret's shape (a PEM private key, a JWT, a known token, a URL with a
  password)? The engine never copies such values into git and shows them nowhere.
- ``redact_value(key, value)``: the value, or ``‹redacted›`` when either says secret.
- ``redact_text(text, secrets)``: replace known secret strings (the forge token) wherever
  they occur, also in their URL-encoded form; for log lines and exception messages.
- ``redact_url(text)``: drop the password (or a token used as user name) from every URL's
  userinfo, e.g. a git remote ``https://oauth2:TOKEN@gitlab.example/x.git``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from urllib.parse import quote

from syncer.secrets import userpattern
from syncer.secrets.lookalike import plain_key

#: What a hidden value is replaced with.
REDACTED = "‹redacted›"

#: What a known secret string is replaced with inside free text.
MASK = "***"

#: Key names whose values are never shown, and never copied into git: each is a sequence
#: of whole words. A key is split into words at ``_ . - /``, spaces and camelCase humps
#: (``dbPassword`` -> db, password), and matches when the words of a pattern appear
#: consecutively in it: ``API_KEY`` matches ``apiKey`` and ``STRIPE_API_KEY``, not
#: ``CACHE_KEY_PREFIX``, ``key3`` or ``MONKEY``.
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    "PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "SECRETS", "TOKEN", "TOKENS",
    "CREDENTIAL", "CREDENTIALS", "API_KEY", "APIKEY", "PRIVATE_KEY", "PRIVATEKEY", "ACCESS_KEY", "SECRET_KEY",
    "SSH_KEY", "SIGNING_KEY", "ENCRYPTION_KEY", "MASTER_KEY", "AUTH_KEY", "SESSION_KEY", "CLIENT_KEY",
)
#: A key ending in one of these words is *about* a secret (where it is, how long it lives),
#: not the secret itself: ``PASSWORD_FILE``, ``TOKEN_URL``, ``SECRET_NAME`` stay visible.
_ABOUT_WORDS = frozenset({
    "file", "path", "dir", "url", "uri", "endpoint", "host", "ttl", "expiry", "expiration", "lifetime",
    "timeout", "length", "header", "name", "ref", "type", "enabled", "policy", "prefix", "mount", "env",
})
#: Secrets written as one word (``PGPASSWORD``, ``HTPASSWD``, ``apitoken``, ``secretkey``): a
#: word *ending* in one of these is a hit when the default patterns are in force. Not a word
#: starting with one: ``TOKENIZER``, ``SECRETARY``, ``PASSTHROUGH`` stay visible.
_JOINED_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "secretkey", "privatekey",
                   "accesskey")
#: ``DB_PASS``, ``DBPASS``, ``SMTP_PASS``: ``pass`` ending the key's last word, but not these
#: English words (``BYPASS_CACHE`` is a near miss anyway: ``bypass`` is not its last word).
_NOT_A_PASS = frozenset({"bypass", "compass", "overpass", "underpass", "trespass", "surpass", "encompass"})
#: Words that make ``tokens`` a count, not a credential: a language model's ``MAX_TOKENS``,
#: ``MAX_NEW_TOKENS``, ``TOKENS_PER_MINUTE``, ``NUM_CTX_TOKENS``, ``TOKEN_LIMIT`` are settings to sync.
_COUNT_WORDS = frozenset({"max", "min", "num", "count", "limit", "limits", "budget", "total", "quota"})
#: Words that make the token next to them a credential whatever else the key says.
_CREDENTIAL_WORDS = frozenset({"api", "access", "auth", "bearer", "bot", "refresh", "session", "id", "oauth",
                               "client", "service", "personal", "admin", "app", "user", "github", "gitlab", "slack"})
#: ...and these too, next to the plural (``TOKENS_PER_MINUTE``) but not the singular (``PER_USER_TOKEN``).
_PLURAL_COUNT_WORDS = _COUNT_WORDS | {"per", "new", "context", "ctx", "rate", "bucket"}
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PLAIN_PATTERN = re.compile(r"^[A-Za-z0-9_.\-]+$")

#: Value shapes that are secrets whatever the key is called.
_SECRET_VALUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----")),
    ("a JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,512}\.eyJ[A-Za-z0-9_-]{8,65536}\.")),
    # GitHub's stateless installation token is ``ghs_<app id>_<JWT>``: ``_`` and ``.`` inside it
    ("an access token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9._]{20,4096}|github_pat_[A-Za-z0-9_]{20,255}|glpat-[A-Za-z0-9_-]{20,255}"
                                   r"|xox[abprs]-[A-Za-z0-9-]{10,255}|AKIA[0-9A-Z]{16})")),
    # bounded repeats: a megabyte of letters must not cost a quadratic scan
    # the user may be empty (``redis://:pw@redis``) and the password may hold a ``/``
    # (``postgres://app:p/w@db``) unless it is a port (``https://host:8080/x@y`` is no password)
    ("a URL with a password", re.compile(r"://[^/\s:@]{0,256}:(?![0-9]{1,5}(?:/|$))[^\s@]{1,256}@")),
)

# A user name that is really a token: well-known token prefixes, or a long opaque string.
_TOKEN_LIKE_USER = re.compile(
    r"^(?:ghp_|gho_|ghs_|ghu_|github_pat_|glpat-)|^[A-Za-z0-9_\-]{20,}$"
)


def _counts(word: str, words: list[str]) -> bool:
    """Is ``word`` a token *count* in a key of ``words`` (``MAX_TOKENS``), no secret's name?
    Never after a word that names a credential (``API_TOKENS``, ``TOTAL_ACCESS_TOKEN``); a
    singular ``token`` only right after ``max``/``min``/``num`` or right before a count word
    (``MAX_TOKEN``, ``TOKEN_LIMIT``; not ``RATE_LIMIT_TOKEN``)."""
    i = words.index(word)
    before = words[i - 1] if i > 0 else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    if before in _CREDENTIAL_WORDS or word in ("apitoken", "accesstoken", "authtoken", "bottoken"):
        return False
    if word.endswith("tokens"):
        return any(w in _PLURAL_COUNT_WORDS for w in words)
    return word.endswith("token") and (before in ("max", "min", "num") or after in _COUNT_WORDS)


def key_words(key: str) -> list[str]:
    """``"data.dbPassword"`` -> ``["data", "db", "password"]`` (lower case)."""
    return [w.lower() for w in _WORD.findall(key)]


def _matches(words: list[str], pattern: str) -> bool:
    """The words of ``pattern`` appear consecutively in ``words``; when the key's last word
    only says what the key is about (``PASSWORD_FILE``), the match must include it."""
    want = key_words(pattern)
    n = len(want)
    if n == 0 or not words:  # a whole object (empty path) has no key to look secret
        return False
    starts = range(len(words) - n + 1)
    if words[-1] in _ABOUT_WORDS:
        starts = range(len(words) - n, len(words) - n + 1) if len(words) >= n else range(0)
    return any(words[i:i + n] == want for i in starts)


def is_secret_key(key: str, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> bool:
    """True when the key name ``key`` (e.g. ``DB_PASSWORD``, ``data.apiKey``) looks secret.

    ``patterns`` are whole-word sequences (see ``DEFAULT_SECRET_PATTERNS``); a pattern with
    characters other than letters, digits, ``_ . -`` is a regular expression that must match
    the whole key (case-insensitively), e.g. ``stripe_.*`` from ``secretKeys``.
    The key is read as it looks (``lookalike.plain_key``): ``DB_PASSWОRD`` with a Cyrillic О,
    a full-width or a zero-width character in it, is ``DB_PASSWORD``.
    """
    plain = plain_key(key)
    if len(plain) > _REMEMBERED_KEY:  # a JSON key inside a value can be a megabyte: never hold many
        return _secret_key.__wrapped__(plain, tuple(patterns))
    return _secret_key(plain, tuple(patterns))


#: Key names up to this many characters are remembered (a Kubernetes key is at most 253).
_REMEMBERED_KEY = 256


def _joined_secret(words: list[str]) -> bool:
    """A secret's name written as one word: ``PGPASSWORD``, ``MYSQL_PWD``, ``DBPASS``,
    ``HTPASSWD``, ``secretkey``, ``apitoken``. ``pwd`` counts as a whole word in a key of
    several (``PWD`` and ``OLDPWD`` alone are a shell's working directory). A key whose last
    word only says what it is about (``PGPASSWORD_FILE``) is no hit, as with the patterns."""
    if not words or words[-1] in _ABOUT_WORDS:
        return False
    last = words[-1]
    if last.endswith("pass") and last not in _NOT_A_PASS:
        return True
    return (len(words) > 1 and "pwd" in words) or any(w.endswith(_JOINED_ENDINGS) for w in words)


@functools.lru_cache(maxsize=8192)
def _secret_key(key: str, patterns: tuple[str, ...]) -> bool:
    """``is_secret_key``, remembered: PR text and reports ask about the same keys pass after pass."""
    words = key_words(key)
    if any(w.endswith(("token", "tokens")) for w in words):
        words = [w for w in words if not _counts(w, words)]
    if patterns[:len(DEFAULT_SECRET_PATTERNS)] == DEFAULT_SECRET_PATTERNS and _joined_secret(words):
        return True
    regexes = []
    for pattern in patterns:
        if _PLAIN_PATTERN.match(pattern):
            if _matches(words, pattern):
                return True
        else:
            regexes.append(pattern)
    return userpattern.any_fullmatch(tuple(regexes), key)  # users' regexes: one RE2 program, linear time


#: Maps whose keys people name freely, so a key's name can say "secret": a ConfigMap's
#: ``data`` and ``binaryData``, and ``annotations`` and ``labels`` of any kind (``vault-token``).
CONFIGMAP_KEYED = (("data",), ("binaryData",))
NAMED_MAPS = ("annotations", "labels")
_NAMED_KEY = re.compile(r"^(?:.*?\.)?(?:annotations|labels)\.(?P<key>.+)$", re.DOTALL)


def keyed_map(kind: str, path: Sequence[str | int]) -> bool:
    """Is ``path`` (in ``kind``) a map whose keys are judged one by one for secret-looking names?"""
    return (kind == "ConfigMap" and tuple(path) in CONFIGMAP_KEYED) or (bool(path) and path[-1] in NAMED_MAPS)


def secret_field(kind: str, path_text: str, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> bool:
    """Does the dotted path of a difference (``data.API_TOKEN``,
    ``metadata.annotations.vault.io/token``) name a secret-looking key of such a map?
    The same rule as detection's, read from the text form a JSON drift carries; a field of
    the API (``spec.automountServiceAccountToken``) is never one."""
    key = None
    if kind == "ConfigMap" and path_text.startswith(("data.", "binaryData.")):
        key = path_text.partition(".")[2]
    elif match := _NAMED_KEY.match(path_text):
        key = match["key"]
    return key is not None and is_secret_key(key, patterns)


def secret_value(value: object) -> str | None:
    """What secret ``value`` looks like (``"a JWT"``), or None. Strings inside lists and maps count."""
    if isinstance(value, dict):
        return next((w for w in map(secret_value, value.values()) if w), None)
    if isinstance(value, list):
        return next((w for w in map(secret_value, value) if w), None)
    if not isinstance(value, str):
        return None
    for what, shape in _SECRET_VALUES:
        if shape.search(value):
            return what
    return None


def redact_value(
    key: str, value: str, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS
) -> str:
    """``value``, or ``‹redacted›`` when ``key`` names something secret or ``value`` looks like one."""
    return REDACTED if is_secret_key(key, patterns) or secret_value(value) else value


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
