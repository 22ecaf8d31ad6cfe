"""The documents of an installation's files as the last command parsed them, kept on disk
between commands (``--cache-dir``; kubectl keeps its discovery cache the same way).

Parsing the YAML is most of a one-shot ``syncer diff``'s own work on a large installation
(5,000 objects: about a second), and between two commands almost every file is the same. So
each file's documents are remembered by a digest of its text, in one file per installation;
the next command parses only the files whose text changed.

Nothing here can change what syncer decides:
* the key is the digest of the text itself (not a path, not a time): the same text gave these
  documents, and a changed text is a miss;
* the store is tagged with what the parse depends on (the reader's source, ruamel's version,
  the Python that wrote it): any change there and the whole store is a miss;
* only successful parses are kept, as ``parse_documents`` returned them (plain data: dicts,
  lists, strings, numbers, booleans, None; interned strings stay interned);
* a store that cannot be read, is too large, is not ours or is damaged is ignored, and one
  that cannot be written is not written: the command parses as if there were none.

The store's directory is the user's own (created 0700): what reads it trusts it as it trusts
its own files.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = ["ParseStore", "cache_dir", "store_for"]

#: A store larger than this is not read (nor written): no installation's parses come near it.
MAX_STORE_BYTES = 512 * 1024 * 1024
#: Stores kept in a directory (one per repository and installation): the least recently
#: written beyond this are removed when a store is written.
MAX_STORES = 128

_SUFFIX = ".parsed"


def cache_dir(chosen: str | None) -> Path | None:
    """The directory of ``--cache-dir`` (``chosen``; its twin ``SYNCER_CACHE_DIR`` when not
    given), else ``$XDG_CACHE_HOME/syncer``, else ``~/.cache/syncer``; None for ``none`` (keep
    nothing) or without a home."""
    if chosen is None:
        chosen = os.environ.get("SYNCER_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "none") else Path(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "syncer"
    try:
        return Path.home() / ".cache" / "syncer"
    except RuntimeError:  # no HOME and no passwd entry
        return None


def _tag() -> str:
    """What a parse depends on besides the text: the reader's own source, ruamel's version, the
    Python (marshal's format); any change is a new tag, and every stored parse a miss."""
    from ruamel.yaml import __version__ as ruamel_version

    from syncer import goyaml, yamlread

    h = hashlib.sha256()
    for module in (yamlread, goyaml):
        h.update(Path(module.__file__ or "").read_bytes())
    h.update(f"{ruamel_version}|{sys.version}|{yamlread.C_PARSER}".encode())
    return h.hexdigest()


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


class ParseStore:
    """One installation's parses (``documents``), read from ``path`` when made and written back
    by ``save`` when this command parsed something new (only the texts it used are kept)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._tag = ""
        self._held: dict[bytes, list[Any]] = {}
        self._used: dict[bytes, list[Any]] = {}
        self._new = 0
        self.hits = 0
        self.misses = 0
        if path is not None:
            self._held = self._read(path)

    def _read(self, path: Path) -> dict[bytes, list[Any]]:
        try:
            self._tag = _tag()
            with open(path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size > MAX_STORE_BYTES:
                    return {}
                raw = fh.read()  # whole: marshal.load reads a file a few bytes at a time (4x slower)
            stored = marshal.loads(raw)
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        if (not isinstance(stored, tuple) or len(stored) != 2 or stored[0] != self._tag
                or not isinstance(stored[1], dict)):
            return {}
        return {k: v for k, v in stored[1].items() if isinstance(k, bytes) and isinstance(v, list)}

    def documents(self, text: str, display: str, parse: Callable[[str, str], list[Any]]) -> list[Any]:
        """The documents of ``text``: remembered, or ``parse(text, display)`` (whose errors
        propagate, and are not remembered)."""
        key = _key(text)
        docs = self._held.get(key)
        if docs is None:
            self.misses += 1
            docs = parse(text, display)
            self._new += 1
        else:
            self.hits += 1
        self._used[key] = docs
        return docs

    def save(self) -> None:
        """Write the parses this command used, when it parsed something new or stopped using a
        stored one; a store that cannot be written is left as it was."""
        if self.path is None or (not self._new and self._used.keys() == self._held.keys()):
            return
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # first: a read-only home costs nothing more
            data = marshal.dumps((self._tag or _tag(), self._used))
            if len(data) > MAX_STORE_BYTES:
                return
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-", suffix=_SUFFIX)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
            _prune(self.path.parent)
        except (OSError, ValueError):
            return
        self._held, self._new = dict(self._used), 0


def _prune(directory: Path) -> None:
    """Remove the least recently written stores beyond ``MAX_STORES``."""
    stores = []
    for entry in os.scandir(directory):
        if entry.name.endswith(_SUFFIX) and not entry.name.startswith("."):  # not a writer's temporary file
            try:
                stores.append((entry.stat().st_mtime_ns, entry.path))
            except OSError:
                continue  # removed meanwhile
    for _, old in sorted(stores, reverse=True)[MAX_STORES:]:
        Path(old).unlink(missing_ok=True)


def store_for(cache_dir: Path | None, repository: str, installation: str) -> ParseStore:
    """The store of ``installation`` of ``repository`` (a checkout's path, or the remote a
    fresh clone is made from) under ``cache_dir`` (None: nothing stored). The file's name is a
    digest: no path or URL shows in it."""
    if cache_dir is None:
        return ParseStore(None)
    name = hashlib.sha256(f"{repository}\0{installation}".encode()).hexdigest()[:32]
    return ParseStore(cache_dir / "parsed" / (name + _SUFFIX))
