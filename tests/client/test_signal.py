"""CancellationSignal and CancellationSource: pure client-side logic, no daemon."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from interrupt_sidecar_client import (
    NOOP_SIGNAL,
    Cancellation,
    CancellationSignal,
    CancellationSource,
    CancelledExecution,
    InterruptReason,
)

from tests.client.support import WAIT_S

pytestmark = pytest.mark.timeout(30)


def test_a_fresh_signal_is_not_cancelled() -> None:
    signal = CancellationSource().signal
    assert not signal.is_cancelled
    assert signal.reason is None
    assert signal.detail == ""
    assert signal.cancellation is None
    assert not signal.event.is_set()
    signal.checkpoint()  # does nothing


def test_cancel_is_single_shot_and_the_first_reason_wins() -> None:
    source = CancellationSource()
    assert source.cancel(InterruptReason.NOW_PRIORITY_INPUT, "do url2 instead")
    assert not source.cancel(InterruptReason.USER_SIGINT, "later")
    signal = source.signal
    assert signal.is_cancelled
    assert signal.reason is InterruptReason.NOW_PRIORITY_INPUT
    assert signal.detail == "do url2 instead"
    assert signal.event.is_set()
    cancellation = signal.cancellation
    assert cancellation is not None and cancellation.tripped_at is not None
    assert cancellation.grace_deadline is not None and cancellation.grace_deadline > cancellation.tripped_at


def test_checkpoint_raises_cancelled_execution_with_the_reason() -> None:
    source = CancellationSource()
    source.cancel(InterruptReason.BUDGET_EXCEEDED, "out of tokens")
    with pytest.raises(CancelledExecution) as raised:
        source.signal.checkpoint()
    assert raised.value.reason is InterruptReason.BUDGET_EXCEEDED
    assert raised.value.detail == "out of tokens"
    assert "BUDGET_EXCEEDED" in str(raised.value)


def test_listeners_run_once_in_registration_order_at_the_trip() -> None:
    source = CancellationSource()
    calls: list[str] = []
    for name in ("first", "second", "third"):
        source.signal.on_cancel(lambda name=name: calls.append(name))  # type: ignore[misc]
    assert calls == []
    source.cancel(InterruptReason.USER_SIGINT)
    source.cancel(InterruptReason.USER_SIGINT)
    assert calls == ["first", "second", "third"]


def test_a_listener_added_after_the_trip_runs_at_once_on_the_calling_thread() -> None:
    source = CancellationSource()
    source.cancel(InterruptReason.TASK_CANCELLED)
    ran_on: list[int] = []
    source.signal.on_cancel(lambda: ran_on.append(threading.get_ident()))
    assert ran_on == [threading.get_ident()]


def test_a_failing_listener_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    source = CancellationSource()
    calls: list[str] = []

    def boom() -> None:
        raise RuntimeError("listener bug")

    source.signal.on_cancel(lambda: calls.append("before"))
    source.signal.on_cancel(boom)
    source.signal.on_cancel(lambda: calls.append("after"))
    with caplog.at_level(logging.ERROR):
        source.cancel(InterruptReason.USER_SIGINT)
    assert calls == ["before", "after"]
    assert "listener bug" in caplog.text


def test_listeners_see_the_tripped_state() -> None:
    source = CancellationSource()
    seen: list[tuple[bool, bool, InterruptReason | None]] = []
    signal = source.signal
    signal.on_cancel(lambda: seen.append((signal.is_cancelled, signal.event.is_set(), signal.reason)))
    source.cancel(InterruptReason.HOLDER_LOST)
    assert seen == [(True, True, InterruptReason.HOLDER_LOST)]


def test_the_event_is_read_only() -> None:
    signal = CancellationSource().signal
    with pytest.raises(TypeError):
        signal.event.set()
    with pytest.raises(TypeError):
        signal.event.clear()
    assert not signal.is_cancelled


def test_the_event_wakes_a_waiting_thread() -> None:
    source = CancellationSource()
    woke = threading.Event()

    def waiter() -> None:
        if source.signal.event.wait(WAIT_S):
            woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    source.cancel(InterruptReason.SYSTEM_SHUTDOWN)
    thread.join(WAIT_S)
    assert woke.is_set()


def test_concurrent_cancels_trip_exactly_once() -> None:
    source = CancellationSource()
    calls: list[int] = []
    source.signal.on_cancel(lambda: calls.append(1))
    barrier = threading.Barrier(8)
    results: list[bool] = []
    lock = threading.Lock()

    def cancel(reason: InterruptReason) -> None:
        barrier.wait(WAIT_S)
        tripped = source.cancel(reason)
        with lock:
            results.append(tripped)

    threads = [threading.Thread(target=cancel, args=(InterruptReason(1 + i % 9),)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(results) == [False] * 7 + [True]
    assert calls == [1]


async def test_await_wait_returns_the_cancellation_when_tripped_from_another_thread() -> None:
    source = CancellationSource()
    waiter = asyncio.ensure_future(source.signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    threading.Thread(target=source.cancel, args=(InterruptReason.LEASE_LOST, "renewal missed")).start()
    cancellation = await asyncio.wait_for(waiter, WAIT_S)
    assert cancellation.reason is InterruptReason.LEASE_LOST
    assert cancellation.detail == "renewal missed"


async def test_the_signal_itself_is_awaitable_and_returns_at_once_when_tripped() -> None:
    source = CancellationSource()
    source.cancel(InterruptReason.SESSION_RELEASED)
    cancellation = await asyncio.wait_for(source.signal, WAIT_S)
    assert cancellation == source.signal.cancellation


async def test_a_cancelled_wait_leaves_no_listener_behind() -> None:
    signal = CancellationSource().signal
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(signal.wait(), 0.01)
    assert signal._listeners == {}
    assert signal._waiters == {}


def test_waiters_wake_only_after_the_listeners_registered_before_the_trip() -> None:
    # The single_shot race (issue 27): a waiter woken before the listeners could report
    # before one registered before the trip had run, the tripping thread descheduled in
    # between. The listener holds the trip there while the test looks at the event.
    source = CancellationSource()
    signal = source.signal
    order: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def slow_listener() -> None:
        order.append("listener")
        entered.set()
        release.wait(WAIT_S)
        order.append("listener done")

    signal.on_cancel(slow_listener)
    waiter_saw: list[str] = []

    def waiter() -> None:
        if signal.event.wait(WAIT_S):
            waiter_saw.extend(order)

    waiting = threading.Thread(target=waiter)
    waiting.start()
    tripper = threading.Thread(target=source.cancel, args=(InterruptReason.USER_SIGINT,))
    tripper.start()
    try:
        assert entered.wait(WAIT_S)
        assert signal.is_cancelled  # the state shows the trip from its first moment
        assert not signal.event.is_set(), "the event was set before the listener had run"
        assert not signal.event.wait(0)
        assert waiting.is_alive()
    finally:
        release.set()
        tripper.join(WAIT_S)
        waiting.join(WAIT_S)
    assert signal.event.is_set()
    assert waiter_saw == ["listener", "listener done"]


async def test_async_waits_return_only_after_the_listeners_registered_before_the_trip() -> None:
    source = CancellationSource()
    signal = source.signal
    order: list[str] = []
    entered, release = threading.Event(), threading.Event()

    async def wait_and_look() -> list[str]:
        await signal.wait()
        return list(order)

    # Waiting since before the listener was registered: still woken after it.
    early = asyncio.ensure_future(wait_and_look())
    await asyncio.sleep(0)

    def slow_listener() -> None:
        order.append("listener")
        entered.set()
        release.wait(WAIT_S)
        order.append("listener done")

    signal.on_cancel(slow_listener)
    tripper = threading.Thread(target=source.cancel, args=(InterruptReason.USER_SIGINT,))
    tripper.start()
    try:
        assert await asyncio.to_thread(entered.wait, WAIT_S)
        late = asyncio.ensure_future(wait_and_look())  # begun while the listener runs
        for _ in range(3):
            await asyncio.sleep(0)
        assert not late.done(), "a wait begun during the trip returned before the listener had run"
        assert not early.done(), "a wait returned before the listener had run"
    finally:
        release.set()
    seen = await asyncio.wait_for(asyncio.gather(early, late), WAIT_S)
    assert list(seen) == [["listener", "listener done"]] * 2
    await asyncio.to_thread(tripper.join, WAIT_S)
    assert signal._waiters == {}


def test_a_listener_that_waits_on_its_own_signal_does_not_deadlock() -> None:
    source = CancellationSource()
    signal = source.signal
    ran: list[object] = []

    def waits_on_its_signal() -> None:
        # On the tripping thread: waiting for the listeners would be waiting for itself.
        ran.append(signal.event.wait(WAIT_S))
        ran.append(signal.event.is_set())
        ran.append(asyncio.run(asyncio.wait_for(signal.wait(), WAIT_S)).reason)
        signal.on_cancel(lambda: ran.append("nested"))  # tripped: runs at once, here
        ran.append(source.cancel(InterruptReason.NOW_PRIORITY_INPUT))

    signal.on_cancel(waits_on_its_signal)
    signal.on_cancel(lambda: ran.append("second"))
    assert source.cancel(InterruptReason.TASK_CANCELLED)
    assert ran == [True, True, InterruptReason.TASK_CANCELLED, "nested", False, "second"]


def test_a_listener_added_while_the_trip_runs_runs_once_on_its_own_thread() -> None:
    source = CancellationSource()
    signal = source.signal
    entered, release = threading.Event(), threading.Event()
    first_done = threading.Event()

    def slow_listener() -> None:
        entered.set()
        release.wait(WAIT_S)
        first_done.set()

    signal.on_cancel(slow_listener)
    tripper = threading.Thread(target=source.cancel, args=(InterruptReason.USER_SIGINT,))
    tripper.start()
    late: list[int] = []
    try:
        assert entered.wait(WAIT_S)
        # The trip took its listeners already: this one runs at once, here, while the
        # trip's own listener still runs.
        signal.on_cancel(lambda: late.append(threading.get_ident()))
        assert late == [threading.get_ident()]
        assert not first_done.is_set()
    finally:
        release.set()
        tripper.join(WAIT_S)
    assert signal.event.wait(WAIT_S)
    assert first_done.is_set()
    assert late == [threading.get_ident()]


def test_the_noop_signal_never_trips_and_drops_listeners() -> None:
    calls: list[int] = []
    NOOP_SIGNAL.on_cancel(lambda: calls.append(1))
    assert not NOOP_SIGNAL._trip(Cancellation(InterruptReason.USER_SIGINT))
    assert not NOOP_SIGNAL.is_cancelled
    assert NOOP_SIGNAL.reason is None
    NOOP_SIGNAL.checkpoint()
    assert calls == []
    assert NOOP_SIGNAL._listeners == {}


async def test_waiting_on_the_noop_signal_never_returns() -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(NOOP_SIGNAL.wait(), 0.05)


def test_cancelled_execution_is_not_a_sidecar_error() -> None:
    from interrupt_sidecar_client import SidecarError

    assert not issubclass(CancelledExecution, SidecarError)
    assert issubclass(CancelledExecution, Exception)


def test_signal_repr_names_the_state() -> None:
    source = CancellationSource()
    assert "not cancelled" in repr(source.signal)
    source.cancel(InterruptReason.PARENT_CANCELLED)
    assert "PARENT_CANCELLED" in repr(source.signal)
    assert isinstance(source.signal, CancellationSignal)
