"""Secrets masked out of free text (error bodies, git's stderr) *before* any of it is cut.

A message quotes at most a short excerpt of what a server answered. Cutting first and masking
after leaves the part of a token that straddles the cut in the message: the mask no longer
matches a token it sees only half of. So ``excerpt`` masks first, then cuts, then masks again
what may still be left of a known secret:

1. the known secrets (the forge token, a GitHub App's installation tokens, git's Basic value),
   whole and URL-encoded (``redact.redact_text``);
2. every credential *shape* the secret check knows (``shapes.MASKABLE``: prefixed tokens of
   GitHub in both of its formats, GitLab, Slack; JWTs such as a service-account token;
   ``Bearer``/``Basic``/``token`` header values; and every finding of the maintained rules,
   ``rules``), whether or not syncer knows the value;
3. URL user info (``redact.redact_url``);
4. after the cut, any run of token characters that shares ``FRAGMENT`` characters in a row with
   a known secret: what is left of one that was split across two lines or cut.

Work is bounded: only the first ``limit + WINDOW`` characters are looked at, and when the text
was longer the last ``TAIL`` characters of that window (where a token cut by the window may
lie) are never shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from syncer.secrets.rules import catalogue
from syncer.secrets.shapes import MASKABLE
from syncer.secrets.redact import MASK, redact_text, redact_url

#: Characters of text looked at beyond the excerpt's own length.
WINDOW = 16384
#: Characters at the end of a cut window never shown: longer than any token or JWT syncer holds.
TAIL = 8192
#: A run this long that a known secret also holds is a piece of it.
FRAGMENT = 8
#: Characters a token, a JWT or a base64 value is made of.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9._~+/=-]{%d,}" % FRAGMENT)


def mask(text: str, known: Sequence[str] = ()) -> str:
    """``text`` with known secrets, credential shapes and URL passwords replaced by ``***``."""
    text = redact_text(text, known)
    for pattern in MASKABLE:
        text = pattern.sub(_keep_scheme, text)
    merged: list[list[int]] = []
    for start, end in sorted((a, b) for _, a, b in catalogue().findings(text)):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):  # the maintained rules' findings, from the end: offsets stay true
        text = text[:start] + MASK + text[end:]
    return redact_url(text)


def _keep_scheme(match: re.Match[str]) -> str:
    """``Bearer ***`` rather than ``***``: the scheme says what was there."""
    scheme = match.groupdict().get("scheme")
    return f"{scheme}{MASK}" if scheme else MASK


def mask_fragments(text: str, known: Iterable[str]) -> str:
    """Runs of token characters holding ``FRAGMENT`` characters of a known secret, masked."""
    grams = {s[i:i + FRAGMENT] for s in known if len(s) >= FRAGMENT for i in range(len(s) - FRAGMENT + 1)}
    if not grams:
        return text

    def piece(match: re.Match[str]) -> str:
        run = match.group()
        hit = any(run[i:i + FRAGMENT] in grams for i in range(len(run) - FRAGMENT + 1))
        return MASK if hit else run
    return _TOKEN_RUN.sub(piece, text)


def excerpt(text: str, known: Sequence[str] = (), limit: int = 300) -> str:
    """One line of at most ``limit`` characters (an ellipsis when cut) of ``text``, masked before
    it is cut and checked again after."""
    window = text[:limit + WINDOW]
    flat = mask(" ".join(window.split()), known)
    cut = len(text) > len(window)
    if cut:
        flat = flat[:max(len(flat) - TAIL, 0)]
    if cut or len(flat) > limit:
        flat = flat[:limit - 1] + "…"
    return mask_fragments(flat, known)
