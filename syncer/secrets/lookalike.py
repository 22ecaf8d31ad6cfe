"""Characters a person cannot see or cannot tell apart, in values and key names. Pure.

A live value changed by a zero-width space (``fast`` + U+200B) or by a Cyrillic letter that
looks Latin (``db.іnternal``) reads the same as git's in every output: a reviewer approves a
change they cannot see. Tools:

- ``INVISIBLE``: a character class of what shows as nothing or as a plain space: every format
  character (Unicode category Cf: U+200B-U+200F, U+2060-U+2064, bidi controls, U+FEFF, the
  tag characters, ...), every space but U+0020 (U+00A0, U+2000-U+200A, U+202F, U+3000, ...),
  and the invisible letters and marks (Hangul fillers, U+034F, variation selectors, U+2800).
  ``escape`` shows each as ``\\uNNNN``.
- ``plain_key(key)``: a key name as the secret rules read it: NFKC (full-width letters),
  invisible characters dropped, look-alike Cyrillic/Greek/Armenian letters mapped to the
  Latin letter they imitate (``DB_PASSWОRD`` with a Cyrillic О is ``DB_PASSWORD``).
- ``change_note(old, new)``: what a person must be told about a change of text: "differs only
  by U+200B ZERO WIDTH SPACE", "differs only by look-alike characters: ...", or a word mixing
  scripts ("Latin and Cyrillic letters in one word: ...").

The look-alike table is the small set of letters that pass for Latin ones in the fonts of
terminals and forges (the Cyrillic and Greek letters of Unicode's confusables data that map to
one ASCII letter), not all of ``confusables.txt``: a key or value in Cyrillic or Greek alone is
a real word, only a mix within one word is flagged.
"""

from __future__ import annotations

from collections import Counter
import re
import unicodedata

from syncer.cache import Caches, text_key

#: Format characters (Cf, Unicode 15), spaces other than U+0020 (Zs), and invisible letters/marks.
INVISIBLE = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
             "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
             "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
             "\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
             "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\u2800\ufe00-\ufe0f\U000e0100-\U000e01ef")
_INVISIBLE = re.compile(f"[{INVISIBLE}]")

#: Letters of other scripts that pass for a Latin letter.
_LOOKALIKES = str.maketrans({
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i",
    "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "ү": "y", "ց": "g", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "Х": "X", "У": "Y", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y", "Һ": "H", "Ӏ": "I",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "υ": "u", "ι": "i", "κ": "k", "χ": "x", "ε": "e",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Armenian, and Latin letters that look like other Latin ones
    "օ": "o", "ս": "u", "ո": "n", "հ": "h", "ı": "i", "ɑ": "a",
})
#: A word: letters only (digits and ``_`` separate words, as ``.`` and ``-`` do).
_WORD = re.compile(r"[^\W\d_]+")
#: Characters named in a note, at most.
_NAMED = 3


def invisible(text: str) -> list[str]:
    """The invisible characters of ``text``, each once, in order."""
    if text.isascii():
        return []
    return list(dict.fromkeys(_INVISIBLE.findall(text)))


def _strip(text: str) -> str:
    return _INVISIBLE.sub("", text)


def skeleton(text: str) -> str:
    """``text`` as it reads: NFKC, invisible characters dropped, look-alike letters as Latin."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _strip(text)).translate(_LOOKALIKES)


def plain_key(key: str) -> str:
    """A key name as the secret rules read it (``skeleton``)."""
    return skeleton(key)


def _script(ch: str) -> str:
    if ch.isascii():
        return "Latin"
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0].title() if name else "Unknown"


def mixed_words(text: str) -> list[tuple[str, list[str]]]:
    """Words of ``text`` mixing scripts (``іnternal``: Latin and Cyrillic), with their scripts."""
    if text.isascii():
        return []
    out: list[tuple[str, list[str]]] = []
    for match in _WORD.finditer(text):
        word = match.group()
        # Latin with another script: a word of Cyrillic or Greek alone is a real word (and
        # a Cyrillic+Greek mix without a Latin letter, rarer, is not looked for)
        if word.isascii() or not any(ch.isascii() for ch in word):
            continue
        scripts = sorted(set(map(_script, word)), key=lambda s: (s != "Latin", s))
        if len(scripts) > 1:
            out.append((word, scripts))
            if len(out) >= _NAMED:
                break
    return out


def _named(chars: list[str]) -> str:
    shown = [f"U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')}" for ch in chars[:_NAMED]]
    more = f" and {len(chars) - _NAMED} more" if len(chars) > _NAMED else ""
    return ", ".join(shown) + more


def _foreign(word: str) -> list[str]:
    """The letters of a mixed word that are not Latin (or, without Latin ones, not of its first script)."""
    main = "Latin" if any(ch.isascii() for ch in word) else _script(word[0])
    return list(dict.fromkeys(ch for ch in word if _script(ch) != main))


def mixed_note(text: str) -> str | None:
    """"Latin and Cyrillic letters in one word: U+0456 ..." for a text with such a word."""
    words = mixed_words(text)
    if not words:
        return None
    word, scripts = words[0]
    return f"{' and '.join(scripts)} letters in one word: {_named(_foreign(word))}"


def change_note(old: object, new: object, caches: Caches | None = None) -> str | None:
    """What a person must be told about ``old`` becoming ``new`` that the text cannot show.
    Remembered in ``caches.notes`` when given (a standing difference is described every pass),
    keyed by the digests of long texts, never the texts: 1,024 pairs of 1 MiB values would be 2 GiB."""
    if not isinstance(new, str) or (new.isascii() and (not isinstance(old, str) or old.isascii())):
        return None
    was = old if isinstance(old, str) else None
    if caches is None:
        return _note(was, new)
    key = (None if was is None else text_key(was), text_key(new))
    return caches.notes.get_or(key, lambda: _note(was, new))


def _note(old: str | None, new: str) -> str | None:
    """``change_note`` of two strings."""
    if isinstance(old, str) and old != new:
        if _strip(old) == _strip(new) or skeleton(old) == skeleton(new):
            counts = Counter(new)
            counts.subtract(Counter(old))  # one pass each: no count() per distinct character
            changed = [ch for ch, n in counts.items() if n and not ch.isascii()]
            if _strip(old) == _strip(new):
                return f"differs only by {_named(changed)}"
            return f"differs only by look-alike characters: {_named(changed)}"
    note = mixed_note(new)
    if note is not None and not (isinstance(old, str) and mixed_note(old) == note):
        return note
    hidden = [ch for ch in invisible(new) if not isinstance(old, str) or ch not in old]
    return f"holds invisible characters: {_named(hidden)}" if hidden else None
