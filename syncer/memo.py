"""Results of pure functions of (read-only) objects, remembered by the objects' identity.

The sidecar compares the same git objects with the same live objects pass after pass: the
manifests come from the parse cache (syncer/manifests.py) and the live objects from the
watch cache, both unchanged until a file or the object changes, so the same Python objects
come back. ``IdentityMemo`` keys a result on the identity of its input objects (held, so an
id cannot be reused while its entry lives) plus a hashable ``extra``; a changed object is a
new object, hence a miss. Least recently used entries go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Hashable, ...], tuple[tuple[object, ...], T]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0
        self.generation = 0  # bumps on clear(): whatever was derived from the entries is stale

    def get(self, objects: tuple[object, ...], extra: Hashable, compute: Callable[[], T]) -> T:
        key = (*map(id, objects), extra)
        with self._lock:
            found = self._entries.get(key)
            if found is not None and all(a is b for a, b in zip(found[0], objects)):
                self._entries.move_to_end(key)
                self.hits += 1
                return found[1]
            self.misses += 1
        value = compute()
        self.put(objects, extra, value)
        return value

    def served(self, n: int) -> None:
        """Count ``n`` results known without asking (a caller remembering them another way)."""
        with self._lock:
            self.hits += n

    def put(self, objects: tuple[object, ...], extra: Hashable, value: T) -> None:
        key = (*map(id, objects), extra)
        with self._lock:
            self._entries[key] = (objects, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.generation += 1
