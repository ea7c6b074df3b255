"""Tool runs without a daemon: no-op mode outside an agent, and THREAD_INTERRUPT against a local source."""

from __future__ import annotations

import asyncio
import signal as signal_module
import threading
import time
from collections.abc import Iterator

import pytest
from interrupt_sidecar_client import (
    NOOP_SIGNAL,
    CancellationSource,
    CancelledExecution,
    InterruptBehavior,
    InterruptReason,
    ThreadInterrupted,
    ToolOutcome,
    aio,
    attach,
)
from interrupt_sidecar_client._tool import outcome_for

from tests.client.support import WAIT_S

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def sigint_left_as_found() -> Iterator[None]:
    """Every test leaves the main thread's SIGINT handler and signal mask as it found them.

    A THREAD_INTERRUPT block installs its own SIGINT handler and some tests block SIGINT;
    a leak of either would make a later test's Ctrl+C vanish. Checked here, the test that
    leaks fails, by name, instead of a later one hanging.
    """
    on_main = threading.current_thread() is threading.main_thread()
    handler = signal_module.getsignal(signal_module.SIGINT) if on_main else None
    yield
    if on_main:
        assert signal_module.getsignal(signal_module.SIGINT) is handler, "the SIGINT handler was left replaced"
        blocked = signal_module.pthread_sigmask(signal_module.SIG_BLOCK, [])
        assert signal_module.SIGINT not in blocked, "SIGINT was left blocked on the main thread"


def cancel_soon(source: CancellationSource, started: threading.Event, reason: InterruptReason) -> threading.Thread:
    """Trip ``source`` from another thread once the tool says it has started."""

    def trip() -> None:
        if started.wait(WAIT_S):
            source.cancel(reason, "from the test")

    thread = threading.Thread(target=trip)
    thread.start()
    return thread


# -- no-op mode ---------------------------------------------------------------------


def test_a_tool_runs_unchanged_outside_an_agent() -> None:
    with attach(behavior=InterruptBehavior.COOPERATIVE, tool_name="grep") as run:
        assert run.signal is NOOP_SIGNAL
        assert not run.attached and run.execution_id is None and run.tool_id is None
        run.signal.checkpoint()
        assert not run.signal.event.wait(0.01)
    assert run.unwound


async def test_an_async_tool_runs_unchanged_outside_an_agent() -> None:
    async with aio.attach(behavior=InterruptBehavior.THREAD_INTERRUPT) as run:
        assert run.signal is NOOP_SIGNAL
        await run.registrar.register(lambda: None)
        await asyncio.sleep(0.01)  # not interrupted: nothing can trip
    assert run.unwound and run.registrar.closed


def test_an_address_without_a_token_is_still_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERRUPT_SIDECAR_ADDRESS", "unix:///nonexistent/sidecar.sock")
    with attach(behavior=InterruptBehavior.COOPERATIVE) as run:
        assert run.signal is NOOP_SIGNAL


def test_source_and_sidecar_arguments_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="source"):
        attach(source=CancellationSource(), token="ist1.x.y")


# -- outcomes -----------------------------------------------------------------------


def test_the_outcome_follows_how_the_block_ended() -> None:
    fresh = CancellationSource().signal
    tripped = CancellationSource()
    tripped.cancel(InterruptReason.USER_SIGINT)
    cooperative = InterruptBehavior.COOPERATIVE
    assert outcome_for(None, fresh, cooperative) == (ToolOutcome.COMPLETED, "")
    assert outcome_for(None, tripped.signal, cooperative) == (ToolOutcome.INTERRUPTED, "")
    assert outcome_for(None, tripped.signal, InterruptBehavior.NON_INTERRUPTIBLE) == (ToolOutcome.COMPLETED, "")
    assert outcome_for(CancelledExecution(), fresh, cooperative)[0] is ToolOutcome.INTERRUPTED
    assert outcome_for(ValueError("bad input"), fresh, cooperative) == (ToolOutcome.FAILED, "ValueError: bad input")


# -- THREAD_INTERRUPT, async: the task is cancelled ---------------------------------------


async def test_async_thread_interrupt_cancels_the_task_and_raises_cancelled_execution() -> None:
    source = CancellationSource()
    started = threading.Event()
    trip = cancel_soon(source, started, InterruptReason.USER_SIGINT)

    async def tool() -> None:
        async with aio.attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
            started.set()
            await asyncio.sleep(60)

    with pytest.raises(CancelledExecution) as raised:
        await tool()
    trip.join(WAIT_S)
    assert raised.value.reason is InterruptReason.USER_SIGINT
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # our cancel was balanced
    await asyncio.sleep(0)  # and the task is usable afterwards


async def test_async_thread_interrupt_leaves_a_foreign_cancellation_alone() -> None:
    source = CancellationSource()
    entered = asyncio.Event()

    async def tool() -> None:
        async with aio.attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
            entered.set()
            await asyncio.sleep(60)

    task = asyncio.ensure_future(tool())
    await asyncio.wait_for(entered.wait(), WAIT_S)
    task.cancel()  # someone else (say, a timeout) cancels first
    source.cancel(InterruptReason.USER_SIGINT)
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_entering_a_thread_interrupt_block_after_the_trip_raises_at_once() -> None:
    source = CancellationSource()
    source.cancel(InterruptReason.PARENT_CANCELLED)
    body_ran = False
    with pytest.raises(CancelledExecution):
        async with aio.attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
            body_ran = True
    assert not body_ran


async def test_async_interrupt_can_be_turned_off() -> None:
    source = CancellationSource()
    async with aio.attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source, interrupt_worker=False) as run:
        source.cancel(InterruptReason.USER_SIGINT)
        await asyncio.sleep(0.01)
        assert run.signal.is_cancelled


# -- THREAD_INTERRUPT, sync: the worker thread is interrupted ---------------------------------


def test_sync_thread_interrupt_breaks_a_blocking_call_on_the_main_thread() -> None:
    assert threading.current_thread() is threading.main_thread()
    handler_before = signal_module.getsignal(signal_module.SIGINT)
    source = CancellationSource()
    started = threading.Event()
    trip = cancel_soon(source, started, InterruptReason.NOW_PRIORITY_INPUT)
    began = time.monotonic()

    def tool() -> None:
        with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
            started.set()
            time.sleep(60)  # one blocking C call: the SIGINT makes it return

    with pytest.raises(CancelledExecution) as raised:
        tool()
    trip.join(WAIT_S)
    assert time.monotonic() - began < WAIT_S
    assert raised.value.reason is InterruptReason.NOW_PRIORITY_INPUT
    assert signal_module.getsignal(signal_module.SIGINT) is handler_before


def test_the_main_thread_is_interrupted_even_when_the_signal_races_the_blocking_call() -> None:
    # A SIGINT that lands just before the worker enters time.sleep does not make the
    # sleep return; the interrupter must send it again. Trip at varying moments.
    for attempt in range(100):
        source = CancellationSource()
        started = threading.Event()
        trip = cancel_soon(source, started, InterruptReason.USER_SIGINT)
        began = time.monotonic()

        def tool() -> None:
            with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
                started.set()
                for _ in range(attempt * 10):
                    pass
                time.sleep(WAIT_S)

        with pytest.raises(CancelledExecution):
            tool()
        trip.join(WAIT_S)
        assert time.monotonic() - began < WAIT_S / 2, f"attempt {attempt} was not interrupted in time"


def test_the_sigint_is_sent_again_until_the_main_thread_handles_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # While the handler cannot run (SIGINT blocked here, standing in for a signal that
    # landed just before a blocking call began), the interrupter keeps sending it.
    sent: list[int] = []
    real_pthread_kill = signal_module.pthread_kill

    def counting_pthread_kill(thread_id: int, signum: int) -> None:
        sent.append(signum)
        real_pthread_kill(thread_id, signum)

    monkeypatch.setattr(signal_module, "pthread_kill", counting_pthread_kill)
    source = CancellationSource()

    def tool() -> None:
        with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
            signal_module.pthread_sigmask(signal_module.SIG_BLOCK, {signal_module.SIGINT})
            try:
                threading.Thread(target=source.cancel, args=(InterruptReason.USER_SIGINT,)).start()
                deadline = time.monotonic() + WAIT_S
                while len(sent) < 3 and time.monotonic() < deadline:
                    time.sleep(0.005)
            finally:
                signal_module.pthread_sigmask(signal_module.SIG_UNBLOCK, {signal_module.SIGINT})
            time.sleep(WAIT_S)

    with pytest.raises(CancelledExecution):
        tool()
    assert len(sent) >= 3, "the SIGINT was not sent again"
    assert set(sent) == {signal_module.SIGINT}


@pytest.fixture
def sigint_handled_by(request: pytest.FixtureRequest) -> Iterator[None]:
    """The process's SIGINT disposition before the block, for one test (restored after).

    Not left to how pytest was started: a process that a non-interactive shell starts in
    the background inherits SIGINT ignored, and Python then installs no handler of its own.
    """
    previous = signal_module.signal(signal_module.SIGINT, request.param)
    yield
    signal_module.signal(signal_module.SIGINT, previous)


@pytest.mark.parametrize("sigint_handled_by", [signal_module.default_int_handler], indirect=True)
def test_a_real_ctrl_c_during_a_thread_interrupt_block_still_raises_keyboard_interrupt(
    sigint_handled_by: None,
) -> None:
    source = CancellationSource()

    def tool() -> None:
        with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
            signal_module.raise_signal(signal_module.SIGINT)  # the user's Ctrl+C
            time.sleep(60)

    with pytest.raises(KeyboardInterrupt):
        tool()
    assert not source.signal.is_cancelled


@pytest.mark.parametrize("sigint_handled_by", [signal_module.SIG_IGN], indirect=True)
def test_a_ctrl_c_the_process_ignores_stays_ignored_in_a_thread_interrupt_block(sigint_handled_by: None) -> None:
    source = CancellationSource()

    with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source) as run:
        # A Ctrl+C the process ignores. raise_signal runs the Python-level handler before
        # it returns, so a handler that raised would have raised right here.
        signal_module.raise_signal(signal_module.SIGINT)
    assert not run.signal.is_cancelled
    assert signal_module.getsignal(signal_module.SIGINT) is signal_module.SIG_IGN


def test_sync_thread_interrupt_raises_in_a_worker_thread() -> None:
    source = CancellationSource()
    started = threading.Event()
    outcome: list[BaseException] = []

    def worker() -> None:
        try:
            with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
                started.set()
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:  # Python-level work: interruptible
                    time.sleep(0.001)
        except CancelledExecution as error:
            outcome.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    assert started.wait(WAIT_S)
    source.cancel(InterruptReason.TASK_CANCELLED)
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert len(outcome) == 1
    error = outcome[0]
    assert type(error) is CancelledExecution and error.reason is InterruptReason.TASK_CANCELLED
    assert isinstance(error.__cause__, ThreadInterrupted)


def test_no_interrupt_lands_after_the_block() -> None:
    # Trip right as the block ends, many times: the interrupt must never escape the block.
    for _ in range(50):
        source = CancellationSource()
        trip = threading.Thread(target=source.cancel, args=(InterruptReason.USER_SIGINT,))
        try:
            with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
                trip.start()
        except CancelledExecution:
            pass
        trip.join(WAIT_S)
        for _ in range(100):
            sum(range(10))  # bytecode on which a stray interrupt would land


def test_entering_a_sync_thread_interrupt_block_after_the_trip_raises_at_once() -> None:
    source = CancellationSource()
    source.cancel(InterruptReason.SYSTEM_SHUTDOWN)
    body_ran = False

    def tool() -> None:
        nonlocal body_ran
        with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source):
            body_ran = True

    with pytest.raises(CancelledExecution) as raised:
        tool()
    assert not body_ran
    assert raised.value.reason is InterruptReason.SYSTEM_SHUTDOWN


def test_cooperative_tools_are_never_interrupted() -> None:
    source = CancellationSource()
    with attach(behavior=InterruptBehavior.COOPERATIVE, source=source) as run:
        threading.Thread(target=source.cancel, args=(InterruptReason.USER_SIGINT,)).start()
        assert run.signal.event.wait(WAIT_S)
        time.sleep(0.01)  # would raise here if the library interrupted the thread
        with pytest.raises(CancelledExecution):
            run.signal.checkpoint()
