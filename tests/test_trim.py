"""``trim`` (syncer/sidecar/trim.py) gives freed heap memory back: what a watch thread decoded and
dropped no longer counts in the process's RSS."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from syncer.sidecar.trim import trim


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux /proc only")
def test_memory_a_thread_freed_leaves_the_rss() -> None:
    if not trim():
        pytest.skip("no malloc_trim here (not glibc)")

    kept: list[bytes] = []

    def churn() -> None:  # 80 MB of mid-sized blocks (the C allocator's, not pymalloc's), 1 in 64 kept:
        held = [bytes(2000) + str(i).encode() for i in range(40_000)]  # the heap cannot shrink from its top
        kept.extend(held[::64])
        del held

    start = _rss_kib()
    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    before = _rss_kib()
    assert trim()
    after = _rss_kib()
    print(f"RSS {start // 1024} -> {before // 1024} (freed, held) -> {after // 1024} MiB (trimmed)")
    assert before - start > 40 * 1024  # glibc held the freed pages ...
    assert before - after > 30 * 1024  # ... and gave them back
