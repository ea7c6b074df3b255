"""Young-generation garbage collection between the event loop's callbacks.

CPython collects generation 0 inside whichever allocation crosses its threshold: in the
daemon that is often the Interrupt handler or a stream writer, so a trip now and then
waits for a pass over every young object. The pacer collects from a loop timer instead,
when the young generation has reached its size, so passes land between callbacks — and
on a daemon that is quiet between interrupts, during the quiet. Automatic collection
stays on at four times that size, as a safety net for bursts the timer does not keep up
with. After a second with little allocation the pacer checks once a second and hands
generation 0 back to the automatic collector at its normal size, so an idle daemon is
not woken a hundred times a second.
"""

from __future__ import annotations

import asyncio
import gc

#: Check this often while the daemon allocates.
ACTIVE_CHECK_S = 0.01
#: Check this often once quiet (automatic collection is back at ``gen0``).
QUIET_CHECK_S = 1.0
#: Quiet: fewer new objects than this between two checks, for ``QUIET_AFTER_S``.
QUIET_GROWTH = 200
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
        quiet_check_s: float = QUIET_CHECK_S,
        quiet_after_s: float = QUIET_AFTER_S,
    ) -> None:
        self._loop = loop
        self._gen0, self._gen1, self._gen2 = thresholds
        self._active_check_s = active_check_s
        self._quiet_check_s = quiet_check_s
        self._quiet_ticks_needed = max(1, round(quiet_after_s / active_check_s))
        self._quiet_ticks = 0
        self._last_count = 0
        self._active = False
        self._timer: asyncio.TimerHandle | None = None
        #: Collections the pacer ran, by generation (for tests and curiosity).
        self.collections = [0, 0, 0]

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        self._activate()
        self._schedule()

    def stop(self) -> None:
        """Cancel the timer and give collection back to CPython at the normal sizes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._active = False
        gc.set_threshold(self._gen0, self._gen1, self._gen2)

    def _activate(self) -> None:
        self._active = True
        self._quiet_ticks = 0
        gc.set_threshold(self._gen0 * SAFETY_NET_FACTOR, self._gen1, self._gen2)

    def _schedule(self) -> None:
        delay = self._active_check_s if self._active else self._quiet_check_s
        self._timer = self._loop.call_later(delay, self._tick)

    def _tick(self) -> None:
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
        if not self._active:
            if grown >= QUIET_GROWTH:
                self._activate()
        elif grown < QUIET_GROWTH:
            self._quiet_ticks += 1
            if self._quiet_ticks >= self._quiet_ticks_needed:
                self._active = False
                gc.set_threshold(self._gen0, self._gen1, self._gen2)
        else:
            self._quiet_ticks = 0
        self._schedule()
