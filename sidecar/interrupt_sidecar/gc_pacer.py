"""Young-generation garbage collection between the event loop's callbacks.

CPython collects generation 0 inside whichever allocation crosses its threshold: in the
daemon that is often the Interrupt handler or a stream writer, so a trip now and then
waits for a pass over every young object. The pacer collects from a loop timer instead,
when the young generation has reached its size, so passes land between callbacks — and
on a daemon that is quiet between interrupts, during the quiet. The timer is set for when
the young generation should be full at the rate it has been growing (between 10 and 50
ms): under steady load that is one check per collection, not a wake-up every 10 ms. Automatic collection
stays on at four times that size, as a safety net for bursts the timer does not keep up
with. After a second with little allocation the pacer hands generation 0 back to the
automatic collector at its normal size and stops its timer: an idle daemon is not woken
at all. The first automatic collection after that (a full young generation allocated:
the daemon is working again) wakes the pacer, through ``gc.callbacks``. Going quiet is
also when ``on_quiet`` runs (the daemon returns freed heap to the kernel then).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

#: Check at most this often while the daemon allocates...
ACTIVE_CHECK_S = 0.01
#: ... and at least this often (a burst after a slow spell is seen within this time).
MAX_CHECK_S = 0.05
#: Quiet: objects growing slower than 200 every 10 ms, for ``QUIET_AFTER_S``.
QUIET_RATE_PER_S = 200 / 0.01
QUIET_AFTER_S = 1.0
#: The automatic collector's generation-0 size while the pacer is active, as a multiple.
SAFETY_NET_FACTOR = 4


class GcPacer:
    """Runs generation-0 (and, on their schedule, older) collections from a loop timer."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        thresholds: tuple[int, int, int],
        *,
        active_check_s: float = ACTIVE_CHECK_S,
        max_check_s: float = MAX_CHECK_S,
        quiet_after_s: float = QUIET_AFTER_S,
        on_quiet: Callable[[], object] | None = None,
    ) -> None:
        self._loop = loop
        self._gen0, self._gen1, self._gen2 = thresholds
        self._active_check_s = active_check_s
        self._max_check_s = max(active_check_s, max_check_s)
        self._quiet_after_s = quiet_after_s
        self._quiet_s = 0.0
        self._last_count = 0
        self._last_tick = 0.0
        self._active = False
        self._timer: asyncio.TimerHandle | None = None
        self._wake_pending = False
        self._on_quiet = on_quiet
        #: Collections the pacer ran, by generation, and its timer's wake-ups (for tests and curiosity).
        self.collections = [0, 0, 0]
        self.ticks = 0

    @property
    def active(self) -> bool:
        return self._active

    @property
    def timer_armed(self) -> bool:
        """Whether a timer will wake the loop (never while quiet)."""
        return self._timer is not None

    def start(self) -> None:
        gc.callbacks.append(self._on_collection)
        self._activate()

    def stop(self) -> None:
        """Cancel the timer and give collection back to CPython at the normal sizes."""
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._active = False
        gc.set_threshold(self._gen0, self._gen1, self._gen2)

    def _activate(self) -> None:
        self._wake_pending = False
        self._active = True
        self._quiet_s = 0.0
        self._last_count = gc.get_count()[0]
        self._last_tick = self._loop.time()
        gc.set_threshold(self._gen0 * SAFETY_NET_FACTOR, self._gen1, self._gen2)
        self._schedule(self._active_check_s)

    def _schedule(self, delay_s: float) -> None:
        self._timer = self._loop.call_later(delay_s, self._tick)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        # Called by CPython around every collection, in whichever thread allocated. While
        # quiet, an automatic collection means a young generation's worth of allocation:
        # the daemon is working, so the timer takes over again. Only a flag and a
        # thread-safe wake-up here: the collector is running.
        if phase == "start" and not self._active and not self._wake_pending:
            self._wake_pending = True
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if not self._active and self._wake_pending:
            self._activate()

    def _tick(self) -> None:
        self.ticks += 1
        now = self._loop.time()
        elapsed, self._last_tick = max(now - self._last_tick, 1e-6), now
        young, older, oldest = gc.get_count()
        grown = young - self._last_count if young >= self._last_count else young
        if young >= self._gen0:
            # The generation CPython itself would pick: the oldest whose count is due.
            generation = 0
            if older >= self._gen1:
                generation = 2 if oldest >= self._gen2 else 1
            gc.collect(generation)
            self.collections[generation] += 1
        self._last_count = gc.get_count()[0]
        rate = grown / elapsed
        if rate < QUIET_RATE_PER_S:
            self._quiet_s += elapsed
            if self._quiet_s >= self._quiet_after_s:
                # Quiet: CPython collects at the normal size again and no timer runs
                # until a collection says there is work (see _on_collection).
                self._active = False
                self._timer = None
                gc.set_threshold(self._gen0, self._gen1, self._gen2)
                if self._on_quiet is not None:
                    self._on_quiet()  # after a second of little allocation: off the trip path
                return
        else:
            self._quiet_s = 0.0
        # Next look when the young generation should be full at this rate: each wake-up
        # of the loop costs a few context switches, and most would find nothing to do.
        left = max(0, self._gen0 - self._last_count)
        due = left / rate if rate > 0 else self._max_check_s
        self._schedule(min(max(due, self._active_check_s), self._max_check_s))
