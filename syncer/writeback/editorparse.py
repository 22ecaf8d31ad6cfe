"""The parse of a file being edited: remembered between passes (``Caches.parsed``), and the
read-back of the edited text, which parses again only the documents an edit touched.
``plan`` plans every file's edits with them.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, NamedTuple

from syncer.cache import Caches
from syncer.errors import ConfigError
from syncer.yamledit import Doc, YamlFile, split
from syncer.yamlread import parse_documents

__all__ = ["EditorParse", "parsed_for_edit", "read_back"]


class EditorParse(NamedTuple):
    """The parses of a file planned before (``Caches.parsed``, by file and hash of its text):
    the editor's documents (as text: see ``YamlFile.parse``; parsed, for a document over
    ``_COPY_OVER`` characters) and the plain data of every document (what the file must read
    back as, before the edits).

    The sidecar plans a file again whenever a live value in it changes. Edits change what they
    touch in place, so each plan parses the documents it edits afresh (a few milliseconds for a
    document of a few hundred bytes) or, for a big one, copies the remembered parse (faster
    than the pure-Python parser); an edit never touches another document, and the
    verification compares the whole file anyway. The cache is bounded by the text held
    (``chars``: a parse takes ~80 bytes of memory per byte of its text), so the sidecar stays
    small; a bigger file is parsed every time (holding its parse would cost more than parsing)."""

    docs: list[Doc | str]
    data: list[Any]
    chars: int


_COPY_OVER = 8 * 1024


def _text(docs: list[Doc | str]) -> str:
    return "".join(d if isinstance(d, str) else d.text for d in docs)


def parsed_for_edit(file: str, old: str, touched: set[int], caches: Caches) -> tuple[YamlFile, list[Any]]:
    """``YamlFile.parse(old, file)`` and ``parse_documents(old, file)``, from the remembered
    parses when there are some. The editor parses only the *touched* documents."""
    key = (file, hashlib.sha256(old.encode()).hexdigest())
    found: EditorParse | None = caches.parsed.get_fresh(key, lambda p: _text(p.docs) == old)
    if found is None:
        try:
            # the documents as the manifests' load read them (the same text: one parse per command)
            data = parse_documents(old, file) if caches.stored is None else caches.stored.documents(
                old, file, parse_documents)
        except ConfigError:
            YamlFile.parse(old, file, lazy=False)  # the editor's own parse names the line at fault
            raise
        found = EditorParse(YamlFile.parse(old, file, count=len(data)).pieces(), data, len(old))
    docs, data = found.docs, found.data
    edited = YamlFile(old, file, [copy.deepcopy(d) if i in touched and not isinstance(d, str) else d
                                  for i, d in enumerate(docs)])
    now = edited.pieces(touched)  # the touched documents parsed, owned by this plan
    big = {i for i in touched if 0 <= i < len(docs) and len(_text(docs[i:i + 1])) > _COPY_OVER and isinstance(docs[i], str)}
    if big:
        docs = [copy.deepcopy(now[i]) if i in big else d for i, d in enumerate(docs)]
    caches.parsed.put(key, EditorParse(docs, data, len(old)))  # not kept when bigger than the whole cache
    return edited, [copy.deepcopy(d) if i in touched else d for i, d in enumerate(data)]


def read_back(new: str, file: str, pieces: list[Doc | str], want: list[Any], touched: set[int]) -> list[Any]:
    """The documents of ``new`` as ``parse_documents`` reads them, parsing again only the
    ``touched`` ones: when the ``---``/``...`` markers of ``new`` cut it into exactly the
    documents the editor holds, each untouched one is the very text read before (its data
    is in ``want`` unchanged: documents of a stream without directives are read each on its
    own) and each touched one must read alone as one document. Anything else (a marker the
    edit made or removed, a piece that is not one document, an error): the whole text is
    read, which is always right, only slower."""
    texts = [p if isinstance(p, str) else p.text for p in pieces]
    if len(texts) == len(want) and split(new, len(texts)) == texts:
        got = list(want)
        try:
            for i in sorted(touched):
                one = parse_documents(texts[i], file) if 0 <= i < len(texts) else []
                if len(one) != 1:
                    break
                got[i] = one[0]
            else:
                return got
        except ConfigError:
            pass
    return parse_documents(new, file)
