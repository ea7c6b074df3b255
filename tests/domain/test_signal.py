"""The single-shot signal: first reason wins, listeners exactly once, in order."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from interrupt_sidecar.domain.signal import CancellationSignal
from interrupt_sidecar.domain.types import Instant, InterruptReason, Trip

AT = Instant(1, 1)


def test_first_reason_wins_and_later_trips_change_nothing() -> None:
    signal = CancellationSignal()
    assert signal.trip(InterruptReason.USER_SIGINT, "first", AT) == (
        True,
        Trip(InterruptReason.USER_SIGINT, "first", AT),
    )
    won, trip = signal.trip(InterruptReason.BUDGET_EXCEEDED, "second", Instant(2, 2))
    assert not won
    assert trip == Trip(InterruptReason.USER_SIGINT, "first", AT)
    assert signal.cancelled


def test_listeners_run_in_registration_order_and_late_ones_at_once() -> None:
    signal = CancellationSignal()
    seen: list[str] = []
    signal.on_cancel(lambda t: seen.append("a"))
    signal.on_cancel(lambda t: seen.append("b"))
    assert seen == []
    signal.trip(InterruptReason.USER_SIGINT, "", AT)
    assert seen == ["a", "b"]
    signal.on_cancel(lambda t: seen.append(f"late:{t.reason.name}"))
    assert seen == ["a", "b", "late:USER_SIGINT"]


def test_a_failing_listener_does_not_stop_the_others() -> None:
    signal = CancellationSignal()
    seen: list[int] = []

    def boom(_: Trip) -> None:
        raise RuntimeError("listener bug")

    signal.on_cancel(boom)
    signal.on_cancel(lambda t: seen.append(1))
    signal.trip(InterruptReason.TASK_CANCELLED, "", AT)
    assert seen == [1]


def test_concurrent_trips_from_many_threads_have_exactly_one_winner() -> None:
    for _ in range(50):
        signal = CancellationSignal()
        calls: list[InterruptReason] = []
        lock = threading.Lock()

        def listener(trip: Trip) -> None:
            with lock:
                calls.append(trip.reason)

        for _ in range(10):
            signal.on_cancel(listener)
        barrier = threading.Barrier(16)
        reasons = [InterruptReason((i % 9) + 1) for i in range(16)]

        def trip(reason: InterruptReason) -> tuple[bool, Trip]:
            barrier.wait()
            # Half register a listener while the others trip: each must still run once.
            signal.on_cancel(listener)
            return signal.trip(reason, reason.name, AT)

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(trip, reasons))
        winners = [r for r in results if r[0]]
        assert len(winners) == 1
        first = winners[0][1].reason
        assert all(t.reason is first for _, t in results), "every caller sees the first reason"
        assert calls == [first] * (10 + 16), "each listener ran exactly once"
