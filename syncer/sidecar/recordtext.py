"""The state record's text, written without ever holding all of it.

A record holds one entry per tracked object (some 350 bytes of JSON each): at 50,000 objects
its JSON is some 20 MB, and ``json.dumps`` of it, then its ``encode``, then its gzip, held at
once, raised the sidecar's RSS by tens of MiB at every write (the allocator keeps what a peak
took). ``encode`` makes the same bytes entry by entry: the JSON of each, joined as
``json.dumps(doc, sort_keys=True, separators=(",", ":"))`` joins them, fed to one deflate
stream in slices, framed as ``gzip.compress(..., compresslevel=6, mtime=0)`` frames it (the
same text gives the same bytes: what the store compares to skip a parse).
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["encode"]

#: ``gzip.compress``'s header for level 6 and mtime 0.
_HEADER = gzip.compress(b"", compresslevel=6, mtime=0)[:10]
#: Text handed to the compressor at once.
_SLICE = 256 * 1024


def _pieces(doc: Mapping[str, Any]) -> Iterator[str]:
    yield "{"
    for i, key in enumerate(sorted(doc)):
        yield ("," if i else "") + json.dumps(key) + ":" + json.dumps(doc[key], sort_keys=True, separators=(",", ":"))
    yield "}"


def encode(doc: Mapping[str, Any], compress_over: int) -> tuple[str, bool]:
    """``doc``'s JSON (keys sorted, no spaces), and False; or, when longer than
    ``compress_over`` characters, that JSON gzip-compressed in base64, and True."""
    pieces = _pieces(doc)
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
