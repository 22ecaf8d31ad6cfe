"""The state record's text, written without ever holding all of it.

A record holds one entry per tracked object (some 350 bytes of JSON each): at 50,000 objects
its JSON is some 20 MB, and ``json.dumps`` of it, then its ``encode``, then its gzip, held at
once, raised the sidecar's RSS by tens of MiB at every write (the allocator keeps what a peak
took). ``encode`` makes the same bytes entry by entry: the JSON of each, joined as
``json.dumps(doc, sort_keys=True, separators=(",", ":"))`` joins them, fed to one deflate
stream in slices, framed as ``gzip.compress(..., compresslevel=6, mtime=0)`` frames it (the
same text gives the same bytes: what the store compares to skip a parse).

What the store holds of each entry between writes is that entry's JSON text, compressed
against a dictionary of its kind (``Texts``: a ConfigMap of 300 bytes of JSON takes some 40),
never the parsed object; a record read back is parsed entry by entry (``members``), so the
whole record is never held parsed either.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["Texts", "canonical", "encode", "encode_texts", "members"]

#: ``gzip.compress``'s header for level 6 and mtime 0.
_HEADER = gzip.compress(b"", compresslevel=6, mtime=0)[:10]
#: Text handed to the compressor at once.
_SLICE = 256 * 1024


def canonical(value: Any) -> str:
    """The JSON of ``value`` as the record writes it (keys sorted, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _pieces(texts: Iterable[tuple[str, str]]) -> Iterator[str]:
    yield "{"
    for i, (key, text) in enumerate(texts):
        yield ("," if i else "") + json.dumps(key) + ":" + text
    yield "}"


def encode(doc: Mapping[str, Any], compress_over: int) -> tuple[str, bool]:
    """``doc``'s JSON (keys sorted, no spaces), and False; or, when longer than
    ``compress_over`` characters, that JSON gzip-compressed in base64, and True."""
    return encode_texts(((key, canonical(doc[key])) for key in sorted(doc)), compress_over)


def encode_texts(texts: Iterable[tuple[str, str]], compress_over: int) -> tuple[str, bool]:
    """``encode`` of the map whose keys, in sorted order, have these ``canonical`` texts."""
    pieces = _pieces(texts)
    head: list[str] = []
    size = 0
    for piece in pieces:
        head.append(piece)
        size += len(piece)
        if size > compress_over:
            break
    else:
        return "".join(head), False
    deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    out = [_HEADER]
    crc, length = 0, 0

    def feed(text: str) -> None:
        nonlocal crc, length
        data = text.encode()
        crc = zlib.crc32(data, crc)
        length += len(data)
        out.append(deflate.compress(data))

    feed("".join(head))
    batch: list[str] = []
    held = 0
    for piece in pieces:
        batch.append(piece)
        held += len(piece)
        if held >= _SLICE:
            feed("".join(batch))
            batch, held = [], 0
    feed("".join(batch))
    out.append(deflate.flush())
    out.append(struct.pack("<LL", crc, length & 0xFFFFFFFF))
    return base64.b64encode(b"".join(out)).decode(), True


#: JSON's whitespace, as the decoder skips it.
_SPACE = re.compile(r"[ \t\n\r]*")


def members(text: str) -> Iterator[tuple[str, Any]]:
    """The keys and parsed values of the JSON map ``text``, one member at a time (what
    ``json.loads(text).items()`` gives, a repeated key included, without ever holding the
    whole map parsed). ``ValueError`` for a text that is not one JSON map, raised where the
    text stops being one (members before it were given already)."""
    decoder = json.JSONDecoder()
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]  # matches the empty string
    if text[at:at + 1] != "{":
        raise ValueError("not a JSON map")
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    if text[at:at + 1] == "}":
        at += 1
    else:
        while True:
            if text[at:at + 1] != '"':
                raise ValueError(f"a key expected at {at}")
            key, at = decoder.raw_decode(text, at)  # a JSON string: the key
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            if text[at:at + 1] != ":":
                raise ValueError(f"':' expected at {at}")
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
            value, at = decoder.raw_decode(text, at)
            yield key, value
            at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
            if text[at:at + 1] == ",":
                at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                continue
            if text[at:at + 1] != "}":
                raise ValueError(f"',' or '}}' expected at {at}")
            at += 1
            break
    if _SPACE.match(text, at).end() != len(text):  # type: ignore[union-attr]
        raise ValueError(f"extra data at {at}")


#: zlib's settings for one entry: raw deflate (no header), the full window.
_LEVEL, _WBITS = 6, -zlib.MAX_WBITS


class Texts:
    """Entry texts held compressed, each against a dictionary of its kind.

    An entry of a record is one object's JSON, and objects of one kind share most of their
    text (``{"apiVersion":"v1","data":{...},"kind":"ConfigMap","metadata":{"labels":...``):
    compressed on its own a ConfigMap of 300 bytes takes 230; against another ConfigMap's text
    about 40. A kind's dictionary is the first text of that kind this holder saw, and never
    changes while the holder lives (every text of the kind is read back with it). The same
    text packs to the same bytes, so packed texts compare as the texts do."""

    def __init__(self) -> None:
        self._dicts: dict[str, bytes] = {}

    def _dict(self, kind: str, raw: bytes) -> bytes:
        found = self._dicts.get(kind)
        if found is None:
            self._dicts[kind] = found = raw[-32 * 1024:]  # deflate's window: no more is used
        return found

    def pack(self, kind: str, text: str) -> bytes:
        """``text`` (one entry of ``kind``, any string naming a kind) compressed."""
        raw = text.encode()
        deflate = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, 8, zlib.Z_DEFAULT_STRATEGY,
                                   self._dict(kind, raw))
        return deflate.compress(raw) + deflate.flush()

    def unpack(self, kind: str, packed: bytes) -> str:
        """The text ``pack(kind, text)`` packed."""
        inflate = zlib.decompressobj(_WBITS, self._dicts[kind])
        return (inflate.decompress(packed) + inflate.flush()).decode()
