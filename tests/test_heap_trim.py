"""Returning freed heap to the kernel (interrupt_sidecar.osedge.heap), on this glibc for real."""

from __future__ import annotations

import pytest
from interrupt_sidecar.osedge.heap import HeapTrimmer, rss_bytes

pytestmark = pytest.mark.timeout(60)

#: Enough small allocations that glibc serves them from its arena (not mmap) and keeps
#: them there once freed: bytes objects of 512 bytes, 200,000 of them (~100 MiB).
COUNT, SIZE = 200_000, 512


def test_a_grown_heap_is_trimmed_once_and_a_small_growth_is_left_alone() -> None:
    trimmer = HeapTrimmer(growth=32 * 2**20)
    if not trimmer.available:
        pytest.skip("not glibc: no malloc_trim")
    assert not trimmer.maybe_trim(), "nothing grew: no walk"
    held = [bytes(SIZE) + bytes([i % 256]) for i in range(COUNT)]
    # Keep every 1,000th object: freed, the rest stays in glibc's arena (its top cannot
    # shrink past what is kept); only trim's madvise of the free pages gives them back.
    held = held[::1000]
    freed = rss_bytes()
    assert trimmer.maybe_trim(), "RSS grew past the threshold: trimmed"
    assert trimmer.trims == 1
    assert rss_bytes() < freed - 32 * 2**20, "trim returned the freed pages to the kernel"
    assert trimmer.returned > 0
    assert not trimmer.maybe_trim(), "no growth since the last trim: no second walk"
    del held
