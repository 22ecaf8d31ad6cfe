"""Give the memory a pass freed back to the operating system.

A pass allocates and frees far more than it keeps: the text of a state record, the answers of
a re-list, the normalized copies of a first comparison. CPython hands freed blocks larger than
512 bytes to the C allocator, and glibc's keeps them in its heaps (one per thread that
allocated) instead of unmapping them, so the process's RSS stays at its highest point ever:
at 50,000 objects that was a hundred MiB above what the objects held. ``malloc_trim(0)``
returns the free pages of every heap; it takes about a millisecond and runs once per pass.
Elsewhere than glibc (musl, macOS) there is no such call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

__all__ = ["trim"]


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        call = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_size_t]
    call.restype = ctypes.c_int
    return call


_TRIM = _malloc_trim()


def trim() -> bool:
    """Return the C allocator's free pages to the system; False where it cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True
