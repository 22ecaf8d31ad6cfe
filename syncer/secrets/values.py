"""Is there a secret *inside* a value? The value half of syncer's secret policy. Pure.

``redact`` judges key names (``DB_PASSWORD``) and a few value shapes; this module looks
further into the values a difference carries:

- ``binaryData`` is judged decoded (base64), not as its base64 text: a PEM key there is a key;
- a value that is a file is read as the file it is: JSON (a docker ``config.json``), YAML (an
  ``app.yaml``, a kubeconfig), or lines of ``key=value`` / ``key: value`` (``.properties``,
  INI, ``.env``); each inner key is judged by the same key rules as a ConfigMap key (with the
  configured ``secretKeys``) and each inner value as a value, down to ``MAX_DEPTH`` files in
  files; connection strings' ``key=value`` pairs too (``?password=``, ``;Pwd=``, ``--token=``);
- credential shapes beyond ``redact``'s: Slack and Discord webhook URLs, Stripe, Google,
  AWS (``AKIA``/``ASIA``...), OpenAI/Anthropic, npm, PyPI and SendGrid keys, an
  ``Authorization`` header value (``Bearer <token>``, ``Basic <base64>``).

``judge(value, patterns, binary=...)`` says why (``"key 'spring.datasource.password' inside
the value (properties lines)"``) or None; it never says the secret. Work is bounded: at most
``MAX_TEXT`` characters are parsed (a ConfigMap holds 1 MiB in all), JSON through
``bounds.load_json``, parsed YAML walked for at most ``MAX_WALK`` values, every pattern
linear. Inner values that are references, not secrets (``${DB_PASSWORD}``, ``{{ .pw }}``,
``$(PW)``, empty, ``true``, a number under six digits such as ``tokens: 3``), are no hit.

Why not Yelp's ``detect-secrets`` (1.5.0, its latest release): its plugins are fast called
directly, but importing them adds a large share to every start of syncer (they import
``requests`` for verification, which syncer does not otherwise load); its settings are one
process-wide object (``scan_line`` reconfigures it: not safe with the sidecar's threads); and
of this review's six shapes it
knew three (Slack, Stripe, AWS ``ASIA``; not ``AIza``, ``sk-proj-`` without its ``T3BlbkFJ``
marker, ``Bearer``); its keyword plugin reads source code, not configuration files. The
shapes (``syncer/secrets/shapes.py``) follow its and gitleaks' rule families.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from syncer.secrets import lookalike
from syncer.bounds import InputRejected, load_json
from syncer.secrets.shapes import DOCKER_LOGIN, MAX_TEXT, binary_text, decoded_credentials, shape, utf8_base64
from syncer.cache import Caches, text_key
from syncer.secrets.redact import DEFAULT_SECRET_PATTERNS, REDACTED, is_secret_key, key_words

#: Files inside files (a properties line holding a DSN, a YAML block holding a ``.env``).
MAX_DEPTH = 3
#: Characters of a value parsed as YAML (its Python constructor is slow on large texts); a larger
#: value is read line by line (``key: value`` lines still count, ``- name:``/``value:`` items not).
MAX_YAML = 16 * 1024
#: What only a YAML parser reads right: ``- name: X`` items (their ``value:`` on the next line), flow collections.
_YAML_ONLY = re.compile(r"^[ \t]*-[ \t]+name[ \t]*:|[{\[]", re.MULTILINE)
#: Values of one parsed JSON or YAML value looked at, at most.
MAX_WALK = 100_000
#: Characters of inner strings parsed as files across all depths of one value's judgement: YAML aliases
#: (``*a`` a thousand times) name one inner file many times; each is judged once, and all
#: inner files together are parsed up to this budget (the value's own size, so an alias bomb
#: costs no more than a value that size).
MAX_PARSED = 1024 * 1024

#: ``<password>x</password>`` and ``password="x"`` of an XML file.
_XML = re.compile(r"<(?P<key>[A-Za-z_][\w.:-]{0,127})>(?P<value>[^<]{1,4096})</(?P=key)>"
                  r"|\s(?P<akey>[A-Za-z_][\w.:-]{0,127})=\"(?P<avalue>[^\"]{1,4096})\"")

#: One line of a properties, INI, ``.env`` or YAML file: ``key=value``, ``key: value``.
_LINE = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?[\"']?(?P<key>[^\s=:#;!\"'\[][^\s=:\"']{0,255})[\"']?[ \t]*[=:][ \t]*(?P<value>.*)$")
#: A ``key=value`` pair of a connection string or command line: ``?password=x``, ``;Pwd=x``, ``--token=x``.
_PAIR = re.compile(r"(?:^|[\s?&;,:])-{0,2}(?P<key>[^\W\d][^\s=?&;,]{0,127})=(?P<value>[^\s&;,]{1,4096})")
_COMMENT = ("#", ";", "!", "//")
#: Inner values that stand for a secret kept elsewhere, or say nothing.
_REFERENCE = re.compile(r"^(?:\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\}|%[A-Za-z_][A-Za-z0-9_]*%"
                        r"|<[^<>]*>|\*+|[.]{3}|…)$", re.DOTALL)
_NOTHING = frozenset({"", "true", "false", "yes", "no", "on", "off", "null", "none", "nil", "~", "''", '""'})
#: Inner keys that are secrets only inside a file or connection string (``_inner_key``): a docker
#: config's ``auth`` (base64 of ``user:password``), npm's ``_auth``, ODBC's ``Pwd``; Azure's storage
#: ``AccountKey`` and a SAS URL's ``sig`` (with a value of 16 characters or more).
_AZURE_WORDS = (["account", "key"], ["sig"])
#: A value that is base64 text (a whole file encoded: a service-account JSON), decoded and judged.
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]{60,}={0,2}")
#: Whitespace-separated words of one value looked at for ``--opt value`` / ``password x`` pairs.
MAX_WORDS = 4096


def _real(value: Any) -> bool:
    """Does an inner value say something (not empty, a boolean or a reference)?"""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):  # a count (``tokens: 3``) is no secret; a long number may be one
        return len(str(value)) >= 6
    if not isinstance(value, str):
        return False
    text = value.strip()
    if text.endswith(";"):  # the end of an nginx/Apache directive (``server_tokens off;``), not part of its value
        text = text[:-1].rstrip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    if text.isdigit() and len(text) < 6:  # a count, a port, a timeout
        return False
    return text.lower() not in _NOTHING and not _REFERENCE.match(text)


#: What an nginx-style ``*_pass`` directive takes: where to pass the request (``proxy_pass
#: http://backend:8080;``, ``fastcgi_pass unix:/run/php.sock;``, ``uwsgi_pass app;``), no password.
_UPSTREAM = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]{0,15}://[^\s:@/;]{1,253}(?::[0-9]{1,5})?(?:/[^\s;@]*)?"
                       r"|unix:[^\s;]{1,4096}|[A-Za-z0-9_.-]{1,253}:[0-9]{1,5}|[A-Za-z0-9_.$-]{1,253}(?=[ \t]*;))[ \t]*;?")


def _names_an_upstream(key: str, value: Any) -> bool:
    """``proxy_pass http://backend:8080;``: a ``*_pass`` key whose value is an address."""
    return key.lower().endswith("_pass") and isinstance(value, str) and bool(_UPSTREAM.fullmatch(value.strip()))


def _inner_key(key: str, value: Any, patterns: Sequence[str]) -> bool:
    """Is ``key: value`` inside a file a secret by its key?"""
    if _names_an_upstream(key, value):
        return False
    secret = is_secret_key(key, patterns)  # remembered per key: cheap for the thousandth line
    lower = key.lower().lstrip("_")
    if not secret and lower not in ("auth", "pwd", "accountkey", "sig"):
        return False
    if not _real(value):
        return False
    if secret:
        return True
    words = key_words(key)
    if words in _AZURE_WORDS:
        return isinstance(value, str) and len(value.strip()) >= 16
    if words == ["auth"]:
        return isinstance(value, str) and decoded_credentials(value.strip().strip("\"'"))
    return words == ["pwd"] and isinstance(value, str) and not value.strip().startswith(("/", "~"))


#: What logs a docker client in to a registry, in a ``config.json`` (``auths``) or ``.dockercfg``
#: entry: present and not empty, it is a credential however it is encoded (``auth`` is base64 of
#: ``user:password``, also of non-ASCII text or URL-safe; ``identitytoken`` an OAuth refresh token).
_DOCKER_LOGIN_KEYS = ("auth", "identitytoken", "registrytoken", "password")


def _registry(key: str) -> bool:
    """Does a top-level ``.dockercfg`` key name a registry (``https://index.docker.io/v1/``, ``reg.io:5000``)?"""
    return "." in key or "://" in key or key.startswith("localhost")


def docker_login(doc: Any) -> bool:
    """Is ``doc`` (parsed JSON or YAML) a docker client config holding a registry login?"""
    if not isinstance(doc, dict):
        return False
    auths = doc.get("auths")
    entries = list(auths.values()) if isinstance(auths, dict) else \
        [v for k, v in doc.items() if isinstance(k, str) and _registry(k)]
    return any(isinstance(e, dict) and any(_real(e.get(k)) for k in _DOCKER_LOGIN_KEYS
                                            if isinstance(e.get(k), str)) for e in entries)


def _quoted(key: str) -> str:
    """An inner key's name for the reason: quoted, unless long or itself secret-shaped."""
    return repr(key) if len(key) <= 64 and not shape(key) else "(name not shown)"


class _Judge:
    """One value's inner judgement: the patterns, and the budget of values walked."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = patterns
        self.walked = 0
        self.parsed = 0
        self.judged: dict[str, int] = {}  # inner strings already judged, at what depth (an alias names one many times)

    def text(self, text: str, depth: int) -> str | None:
        """Why the text ``text`` (a value, or a value inside a file) holds a secret."""
        if depth == 0:
            found = shape(text)
            if found:
                return f"value shaped like {found}"
        if depth >= MAX_DEPTH or len(text) > MAX_TEXT:
            return None
        if depth > 0:
            if self.judged.get(text, MAX_DEPTH) <= depth:
                return None
            self.judged[text] = depth
            self.parsed += len(text)
            if self.parsed > MAX_PARSED:
                return None
        if "\n" in text.strip() or text.lstrip().startswith(("{", "[")):
            return self.file(text, depth)
        if "=" in text and (why := self.pairs(text)):
            return why
        return self.one_line(text, depth)

    def one_line(self, text: str, depth: int) -> str | None:
        """A value of one line: ``password: x`` (a YAML or properties line, ``x: {"password": ..}``
        too), ``--password x`` (a command line), ``password x`` (two words, a ``.netrc``)."""
        match = _LINE.match(text)
        if match is not None and ":" in text[match.end("key"):match.start("value")]:
            value = match["value"].strip()
            if _inner_key(match["key"], value, self.patterns):
                return f"key {_quoted(match['key'])} inside the value (a YAML or properties line)"
            if value[:1] in "{[" and (why := self.text(value, depth + 1)):
                return why
        return self.words(text)

    def words(self, text: str) -> str | None:
        """``--password x``, ``-u user:pw``, ``password x`` (two words), ``machine h login u password x``."""
        words = text.split(None, MAX_WORDS)[:MAX_WORDS]
        bare = len(words) == 2 or (bool(words) and words[0] in ("machine", "default"))
        for name, value in zip(words, words[1:]):
            if value.startswith("-") or not (bare or name.startswith("-")):
                continue
            if _inner_key(name.lstrip("-"), value, self.patterns):
                return f"key {_quoted(name)} inside the value (a command line or .netrc)"
            user, colon, password = value.strip("'\"").partition(":")
            if name in ("-u", "--user") and user and colon and _real(password):
                return f"option {name!r} with user:password inside the value (a command line)"
        return None

    def pairs(self, text: str) -> str | None:
        for match in _PAIR.finditer(text):
            if _inner_key(match["key"], match["value"], self.patterns):
                return f"key {_quoted(match['key'])} inside the value (a connection string or option)"
        return None

    def file(self, text: str, depth: int) -> str | None:
        stripped = text.strip()
        if stripped[:1] in "{[":
            try:
                doc = load_json(stripped, "value", max_values=MAX_WALK)
            except (InputRejected, ValueError):
                doc = None
            if docker_login(doc):
                return "a docker registry login inside the value (config.json)"
            if isinstance(doc, (dict, list)):
                return self.walk(doc, depth, "JSON")
            if DOCKER_LOGIN.search(stripped):  # a config.json no JSON parser reads (comments, trailing text)
                return "a docker registry login inside the value (a config.json that is not quite JSON)"
        if "auths" in stripped and len(stripped) <= MAX_YAML and docker_login(_yaml(stripped)):
            return "a docker registry login inside the value (YAML)"
        why = self.lines(text, depth)  # linear, and enough for most files (YAML's block mappings too)
        if why or len(stripped) > MAX_YAML or not _YAML_ONLY.search(stripped):
            return why
        doc = _yaml(stripped)  # what lines cannot say: list items with a name, flow collections
        if docker_login(doc):
            return "a docker registry login inside the value (YAML)"
        return self.walk(doc, depth, "YAML") if isinstance(doc, (dict, list)) else None

    def lines(self, text: str, depth: int) -> str | None:
        """``key=value`` / ``key: value`` lines: properties, INI (sections skipped), ``.env``, YAML;
        the elements and attributes of an XML file."""
        if "</" in text or '="' in text:
            for element in _XML.finditer(text):
                key, value = (element["key"], element["value"]) if element["key"] else (element["akey"], element["avalue"])
                if _inner_key(key, value, self.patterns):
                    return f"key {_quoted(key)} inside the value (XML)"
        for line in text.splitlines():
            head = line.lstrip()
            if not head or head.startswith(_COMMENT) or head.startswith("["):
                continue
            match = _LINE.match(line)
            if match is None:
                if "=" in line and (why := self.pairs(line)):  # a command line: ``--token=x``
                    return why
                if " " in head and (why := self.words(line)):  # ``db.password x``, a .netrc line
                    return why
                continue
            key, value = match["key"], match["value"].strip()
            if _inner_key(key, value, self.patterns):
                return f"key {_quoted(key)} inside the value (a properties, INI, .env or YAML line)"
            if "=" in value and (why := self.pairs(value)):
                return why
            if value[:1] in "{[" and value[-1:] in "}]" and (why := self.text(value, depth + 1)):
                return why
        return None

    def walk(self, doc: Any, depth: int, kind: str) -> str | None:
        """Every key and value of a parsed JSON or YAML document, without recursion."""
        stack: list[Any] = [doc]
        while stack:
            node = stack.pop()
            self.walked += 1
            if self.walked > MAX_WALK:
                return None
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                name = node.get("name")
                if isinstance(name, str) and _inner_key(name, node.get("value"), self.patterns):
                    return f"item named {_quoted(name)} inside the value ({kind})"
                for key, value in node.items():
                    if isinstance(key, str) and not isinstance(value, (dict, list)) \
                            and _inner_key(key, value, self.patterns):
                        return f"key {_quoted(key)} inside the value ({kind})"
                    stack.append(value)
            elif isinstance(node, str) and (why := self.text(node, depth + 1)):
                return why
        return None


def _yaml(text: str) -> Any:
    """``text`` as YAML (the C parser when there), or None when it is no YAML."""
    from ruamel.yaml import YAML

    try:
        return YAML(typ="safe").load(text)
    except Exception:  # noqa: BLE001 -- hostile text: any parser failure means "not a YAML file"
        return None


#: What a line judged alone says when its own ``key = value`` is the secret (not a shape spanning lines).
_LINE_REASONS = ("(a properties, INI, .env or YAML line)", "(a YAML or properties line)")


def shown_line(line: str, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> str:
    """``line`` of a file as an output may show it: a ``key=value`` / ``key: value`` line that is
    a secret by its key keeps its key and loses its value (``DB_PASSWORD=‹redacted›``)."""
    body = line.rstrip("\r\n")
    match = _LINE.match(body)
    if match is None or not match["value"].strip():
        return line
    why = _Judge(patterns).lines(body, 1)
    return body[:match.start("value")] + REDACTED + line[len(body):] if why and why.endswith(_LINE_REASONS) else line


def only_unchanged_secret_lines(git: str, live: str, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> bool:
    """Is every secret-looking part of the config-file value ``live`` a ``key=value`` / ``key:
    value`` line that ``git`` holds verbatim, and the same of ``git`` towards ``live``? Then
    writing ``live`` copies no secret that git does not hold already: its other lines may be
    written. A line counts only when it is a secret on its own by its key (``DB_PASSWORD=x``,
    ``spring.datasource.password=x``); anything that needs its context (a PEM block, a YAML
    item ``- name: DB_PASSWORD`` with its ``value:``, JSON, a changed line) keeps the whole value
    back, as before."""
    if not isinstance(git, str) or not isinstance(live, str) or "\n" not in live.strip():
        return False

    def without_kept(text: str, other: str) -> str:
        kept = set(other.splitlines())
        out = []
        for line in text.splitlines():
            alone = _Judge(patterns).lines(line, 1) if line in kept and _LINE.match(line) else None
            out.append("" if alone and alone.endswith(_LINE_REASONS) else line)
        return "\n".join(out)
    return judge(without_kept(live, git), patterns) is None and judge(without_kept(git, live), patterns) is None


def option_value(items: Sequence[Any], index: int, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS) -> str | None:
    """Why ``items[index]`` of an argument list is secret: the item before it is a secret-named
    option (``args: ["--db-password", "x"]``)."""
    if not 0 < index < len(items):
        return None
    name, value = items[index - 1], items[index]
    if isinstance(name, str) and isinstance(value, str) and name.startswith("-") and "=" not in name \
            and not value.startswith("-") and _inner_key(name.lstrip("-"), value, patterns):
        return f"the value of option {_quoted(name)} (a command line)"
    return None


def _judge_text(text: str, patterns: tuple[str, ...], binary: bool, caches: Caches | None) -> str | None:
    """One string's judgement, remembered in ``caches.judged`` when given (a difference is judged
    again every pass while it stands) by the digest of a long text, never the value: 4,096 values
    of 1 MiB would be 4 GiB."""
    if caches is None:
        return _judge_fresh(text, patterns, binary)
    return caches.judged.get_or((text_key(text), patterns, binary), lambda: _judge_fresh(text, patterns, binary))


def _judge_fresh(text: str, patterns: tuple[str, ...], binary: bool) -> str | None:
    decoded = binary_text(text) if binary else text
    if decoded is None:
        return None
    why = _Judge(patterns).text(decoded, 0)
    if why is None and not decoded.isascii() and (plain := lookalike.skeleton(decoded)) != decoded:
        why = _Judge(patterns).text(plain, 0)  # a token with a zero-width space or a look-alike letter in it
    if why and binary:
        return f"{why}, once its base64 is decoded"
    if why is None and not binary and len(text) <= MAX_TEXT and _BASE64_TEXT.fullmatch(text):
        inner = utf8_base64(text)  # a whole file base64-encoded under ``data`` (a service-account JSON)
        if inner is not None and (why := _Judge(patterns).text(inner, 0)):
            return f"{why}, once its base64 is decoded"
    return why


def judge(value: object, patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS, *, binary: bool = False,
          caches: Caches | None = None) -> str | None:
    """Why ``value`` (a string, or strings inside lists and maps of an API object) holds a
    secret, or None. ``binary``: it is ``binaryData``, judged decoded. The keys of an API
    object's maps are fields, not names people chose: only strings are judged. ``caches``:
    where judgements are remembered (detection passes its own; None: nothing remembered)."""
    keys = tuple(patterns)
    stack = [value]
    seen = 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_WALK:
            return None
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            for index in range(1, min(len(node), MAX_WALK)):
                if why := option_value(node, index, keys):
                    return why
            stack.extend(node)
        elif isinstance(node, str) and (why := _judge_text(node, keys, binary, caches)):
            return why
    return None
