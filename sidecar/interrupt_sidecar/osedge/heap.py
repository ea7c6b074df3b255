"""Give the C heap's free memory back to the kernel (glibc's ``malloc_trim``).

After a burst of streams the daemon frees what they held, but glibc keeps freed memory
in its arenas for reuse: measured after the hostile-peers bench part, RSS stayed at
137–164 MiB once every peer had left (43 MiB before), did not grow over three rounds
(retention, not a leak), and ``malloc_trim(0)`` gave back 61–65 MiB of it. The heap is
returned here only when it is worth the walk (``HeapTrimmer``), and only on glibc: other
C libraries (musl) have no ``malloc_trim`` and return memory on their own terms.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: Trim only once RSS has grown this much since the last trim (or since the start).
TRIM_GROWTH_BYTES = 16 * 2**20
_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    """This process's resident set (one read of ``/proc/self/statm``)."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * _PAGE


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrimmer:
    """Returns freed heap to the kernel when the daemon goes quiet after growing.

    ``maybe_trim`` is meant for the moment work stops (the GC pacer going quiet): it reads
    RSS and trims only when RSS is ``growth`` bytes above where the last trim left it, so a
    daemon that handles an interrupt now and then never pays the walk. Runs on the event
    loop's thread; other threads that allocate wait on glibc's arena locks while it runs.
    """

    def __init__(self, growth: int = TRIM_GROWTH_BYTES) -> None:
        self._trim = _malloc_trim()
        self._growth = growth
        self._baseline = rss_bytes()
        #: Trims run, and bytes of RSS they returned in all (for tests and curiosity).
        self.trims = 0
        self.returned = 0

    @property
    def available(self) -> bool:
        return self._trim is not None

    def maybe_trim(self) -> bool:
        """Trim if RSS grew past the threshold since the last trim; True if it trimmed."""
        if self._trim is None:
            return False
        before = rss_bytes()
        if before - self._baseline < self._growth:
            return False
        t0 = time.perf_counter()
        self._trim(0)
        after = rss_bytes()
        self._baseline = after
        self.trims += 1
        self.returned += max(0, before - after)
        log.info(
            "quiet after growing: returned %.1f MiB of freed heap to the kernel in %.1f ms (RSS %.1f MiB)",
            (before - after) / 2**20,
            (time.perf_counter() - t0) * 1e3,
            after / 2**20,
        )
        return True
