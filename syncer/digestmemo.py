"""A remembered answer per text that keeps no text: keys are SHA-256 digests. Thread-safe.

``functools.lru_cache`` keyed by a live value holds the value itself: 4,096 remembered
judgements of 1 MiB values are 4 GiB (issue #21, third round: 300 distinct 1 MB values took
the sidecar from 17 to 318 MiB). ``DigestMemo`` keys each answer by the digest of the texts it
was asked about, so an entry costs ~200 bytes whatever the text, and bounds itself both by
entries and by the bytes its answers hold (an answer is a short reason string or a bool).
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


def digest(*texts: str | None) -> bytes:
    """One SHA-256 over ``texts`` (None and "" differ; the parts cannot run together)."""
    h = hashlib.sha256()
    for text in texts:
        if text is None:
            h.update(b"\x00N")
            continue
        raw = text.encode("utf-8", "surrogatepass")
        h.update(b"\x00S%d:" % len(raw))
        h.update(raw)
    return h.digest()


#: Texts up to this many characters are their own key (hashing them would cost more than it saves).
SHORT = 256


def text_key(text: str) -> str | bytes:
    """``text`` itself when short, else its digest: what a memo key holds of a text."""
    return text if len(text) <= SHORT else digest(text)


def _key_size(key: Hashable) -> int:
    parts = key if isinstance(key, tuple) else (key,)
    return sum(sys.getsizeof(part) for part in parts if isinstance(part, (str, bytes)))


class DigestMemo(Generic[T]):
    """Least recently used answers keyed by ``(text_key(text), other hashable parts)``."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[T, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held_bytes(self) -> int:
        """Bytes the remembered answers hold (estimated, keys included)."""
        return self._bytes

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The answer for ``key``, computed (outside the lock) when not remembered."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[0]
        answer = compute()
        size = 64 + sys.getsizeof(answer) + _key_size(key)
        if size > self.max_bytes:
            return answer
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (answer, size)
            self._bytes += size
            while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return answer

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
