"""The garbage-collection pacer (interrupt_sidecar.gc_pacer): young collections from a loop timer,
with automatic collection as a safety net, and handed back to CPython when quiet."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest
from interrupt_sidecar.gc_pacer import SAFETY_NET_FACTOR, GcPacer

from tests.client.support import aeventually
from tests.polling import eventually_async

pytestmark = pytest.mark.timeout(20)

THRESHOLDS = (1_000, 10, 10)


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


async def test_young_objects_are_collected_by_the_pacer_not_by_an_allocation() -> None:
    pacer = GcPacer(asyncio.get_running_loop(), THRESHOLDS, active_check_s=0.005)
    pacer.start()
    try:
        assert gc.get_threshold()[0] == THRESHOLDS[0] * SAFETY_NET_FACTOR
        gc.collect()
        kept: list[list[int]] = [[] for _ in range(THRESHOLDS[0] + 500)]  # tracked objects: the young count grows
        assert gc.get_count()[0] >= THRESHOLDS[0]
        await aeventually(lambda: sum(pacer.collections) > 0, timeout=5, what="a collection by the pacer")
        assert gc.get_count()[0] < THRESHOLDS[0]
        del kept
    finally:
        pacer.stop()
    assert gc.get_threshold() == THRESHOLDS


async def test_a_quiet_daemon_hands_collection_back_and_wakes_on_allocation() -> None:
    pacer = GcPacer(asyncio.get_running_loop(), THRESHOLDS, active_check_s=0.005, quiet_after_s=0.05)
    pacer.start()
    try:
        await aeventually(lambda: not pacer.active, timeout=5, what="the pacer to go quiet")
        assert gc.get_threshold() == THRESHOLDS, "quiet: automatic collection at the normal size"
        assert not pacer.timer_armed, "quiet: no timer left to wake the loop"
        # A young generation's worth of allocation: CPython's own collection wakes the pacer.
        kept: list[list[int]] = [[] for _ in range(THRESHOLDS[0] + 500)]
        await aeventually(lambda: pacer.active, timeout=5, what="allocation to wake the pacer")
        assert gc.get_threshold()[0] == THRESHOLDS[0] * SAFETY_NET_FACTOR
        del kept
    finally:
        pacer.stop()


async def test_under_steady_allocation_the_timer_wakes_about_once_a_young_generation() -> None:
    # 1,000 new tracked objects every 10 ms fill a 10,000-object young generation in about
    # 100 ms: the pacer looks when it should be full (at most every 50 ms, more often as it
    # nears full), not every 5 ms.
    pacer = GcPacer(asyncio.get_running_loop(), (10_000, 10, 10), active_check_s=0.005, max_check_s=0.05)
    pacer.start()
    kept: list[list[int]] = []
    try:
        loop = asyncio.get_running_loop()
        began = loop.time()
        ticks_before = pacer.ticks
        while loop.time() - began < 0.5:
            kept += [[] for _ in range(1_000)]
            await asyncio.sleep(0.01)
        elapsed = loop.time() - began
        assert pacer.active, "allocating: the pacer stays on"
        assert sum(pacer.collections) > 0, "the young generation filled and the pacer collected it"
        # A fixed 5 ms timer would have woken elapsed / 0.005 (≥ 100) times.
        assert pacer.ticks - ticks_before <= elapsed / 0.02, f"{pacer.ticks - ticks_before} wake-ups in {elapsed:.2f} s"
    finally:
        pacer.stop()
        del kept


async def test_going_quiet_runs_on_quiet_once_per_quiet_spell() -> None:
    quiet: list[bool] = []
    pacer = GcPacer(
        asyncio.get_running_loop(),
        THRESHOLDS,
        active_check_s=0.005,
        quiet_after_s=0.05,
        on_quiet=lambda: quiet.append(pacer.active),
    )
    pacer.start()
    try:
        await eventually_async(lambda: not pacer.active, timeout=5, what="the pacer to go quiet")
        assert quiet == [False], "on_quiet runs once, after the pacer stood down"
        kept: list[list[int]] = [[] for _ in range(THRESHOLDS[0] + 500)]
        await eventually_async(lambda: pacer.active, timeout=5, what="allocation to wake the pacer")
        del kept
        await eventually_async(lambda: len(quiet) == 2, timeout=5, what="the second quiet spell")
    finally:
        pacer.stop()
