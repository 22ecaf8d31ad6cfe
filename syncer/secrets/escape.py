"""Make live-sourced strings safe for each place syncer writes them. Pure.

Values, key names, manager names and details come from the cluster, where anyone with edit
rights on a ConfigMap chooses them. Each output has its own dangers:

- ``line(text)``: commit messages and terminals. Control characters (NUL, ESC, CR, the
  Unicode line/paragraph separators and bidi overrides) are escaped as ``\\xNN``/``\\uNNNN``
  and a newline shows as ``⏎``, so a value can neither start a paragraph or a trailer in a
  commit message, nor reach git as a NUL, nor move the cursor or recolor a terminal.
  Invisible characters (zero-width, format characters, spaces other than U+0020) are
  escaped the same way (``fast\\u200b``): a change by one of them shows.
- ``terminal(text)``: like ``line`` but keeps newlines (multi-line output such as file diffs).
- ``markdown(text)``: a pull request body. On top of ``line``, the characters Markdown or
  HTML give a meaning inside a line (backticks, pipes, backslashes, brackets, ``*``, ``~``,
  ``<``, ``>``, ``&``) become numeric character references, and mentions (``@team``), issue references (``#12``) and links
  (``https://``, ``www.``) are broken with an invisible word joiner: a value cannot close a
  code span, split a table cell, ping people or plant a link.
- ``slack(text)``: Slack mrkdwn (a chat webhook). On top of ``line``: ``&``, ``<``, ``>``
  escaped as Slack asks (no ``<url|link>``, no ``<!here>``); a backtick becomes ``ˋ``
  (U+02CB, Slack has no escape for it), so a value cannot leave its code span; and a word
  joiner goes after ``@``/``#``, inside ``://`` and ``www.`` and before a domain-like ending
  (``evil.com``), so Slack forms neither mentions nor links from it.
"""

from __future__ import annotations

import re

from syncer.secrets.lookalike import INVISIBLE

#: What a newline looks like on one line.
NEWLINE = "⏎"
#: Invisible, zero-width: breaks @mentions, #references and autolinks without changing the text read.
_JOINER = "\u2060"

#: Control characters, the line and paragraph separators, and everything invisible
#: (``lookalike.INVISIBLE``: format characters such as U+200B and the bidi controls, odd spaces
#: such as U+00A0): a value changed by one shows the change.
#: Lone UTF-16 surrogates (U+D800-U+DFFF, from a JSON or YAML ``\ud800`` escape) too: no output
#: encoding can write one (UnicodeEncodeError).
_CONTROL = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff{INVISIBLE}]")
_MD_CHARS = {c: f"&#{ord(c)};" for c in "&<>`\\|*[]~"}
_MD_LINKS = re.compile(r"(?i)(?<=[@#])(?=\w)|(?<=:)(?=//)|(?<=www)(?=\.)")
#: Slack also links bare domains (``evil.com``, ``evil.com.au/x``): break the dot before a
#: last label of letters. ``data.MAC_ADDRS`` (a label that goes on with ``_``) stays whole.
_SLACK_LINKS = re.compile(r"(?i)(?<=[@#])(?=\w)|(?<=:)(?=//)|(?<=www)(?=\.)|(?<=\w\.)(?=[a-z]{2,63}(?![\w-]))")
_SLACK_CHARS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "`": "\u02cb"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch == "\t":
        return "\\t"
    if ch == "\r":
        return "\\r"
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """``text`` with every control character but the newline escaped."""
    return _CONTROL.sub(_escape, text)


def line(text: str, limit: int | None = None) -> str:
    """``text`` as one safe line (newlines as ``⏎``), cut to ``limit`` characters."""
    out = terminal(text).replace("\n", NEWLINE)
    if limit is not None and len(out) > limit:
        out = out[: max(limit - 1, 0)] + "…"
    return out


def markdown(text: str, limit: int | None = None) -> str:
    """``text`` as inert Markdown/HTML on one line: shows as written, does nothing."""
    flat = _MD_LINKS.sub(_JOINER, line(text, limit))
    return "".join(_MD_CHARS.get(ch, ch) for ch in flat)


def slack(text: str, limit: int | None = None) -> str:
    """``text`` as inert Slack mrkdwn on one line: no code span closed, no link, no mention."""
    flat = _SLACK_LINKS.sub(_JOINER, line(text, limit))
    return "".join(_SLACK_CHARS.get(ch, ch) for ch in flat)
