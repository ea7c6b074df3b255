"""Executions: terminators FIFO across tools, run-if-late, error-after-close, behaviour rules."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Awaitable, Generator, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from interrupt_sidecar.domain.coordinator import Coordinator, CoordinatorLimits, ExecutionSpec
from interrupt_sidecar.domain.execution import CallbackSpec, Execution, ProcessGroupSpec, ToolRun
from interrupt_sidecar.domain.types import Instant, InterruptBehavior, InterruptReason, ToolOutcome, Trip
from interrupt_sidecar.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)

from tests.domain.fakes import ManualClock, RecordingEffects

GRACE = 500_000_000


@pytest.fixture
def effects() -> RecordingEffects:
    return RecordingEffects()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def coordinator(effects: RecordingEffects, clock: ManualClock) -> Coordinator:
    return Coordinator(effects, clock, default_grace_ns=GRACE)


def attach(execution: Execution, name: str, behavior: InterruptBehavior) -> ToolRun:
    return execution.attach(tool_id=name, tool_name=name, tool_call_id="", behavior=behavior, pid=0)


def test_terminators_run_once_in_registration_order_across_tools(
    coordinator: Coordinator, effects: RecordingEffects
) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    a = attach(execution, "a", InterruptBehavior.THREAD_INTERRUPT)
    b = attach(execution, "b", InterruptBehavior.EXTERNALLY_TERMINATED)
    execution.register(a, "a1", CallbackSpec())
    execution.register(b, "b1", CallbackSpec())
    execution.register(a, "a2", CallbackSpec())
    execution.register(b, "b2", CallbackSpec())
    execution.unregister(b, "b1")
    execution.trip(InterruptReason.USER_SIGINT, "")
    execution.trip(InterruptReason.USER_SIGINT, "again")
    assert effects.of("run") == ["a1", "a2", "b2"]
    # The cancel fan-out (tripped) comes before the terminators.
    kinds = [k for k, _ in effects.log if k in ("tripped", "run")]
    assert kinds == ["tripped", "run", "run", "run"]


def test_registration_after_the_trip_runs_at_once(coordinator: Coordinator, effects: RecordingEffects) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    tool = attach(execution, "t", InterruptBehavior.THREAD_INTERRUPT)
    execution.trip(InterruptReason.NOW_PRIORITY_INPUT, "")
    assert effects.of("run") == []
    execution.register(tool, "late", CallbackSpec())
    assert effects.of("run") == ["late"]


def test_registration_after_the_run_closed_is_refused(coordinator: Coordinator) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    tool = attach(execution, "t", InterruptBehavior.THREAD_INTERRUPT)
    execution.unwound(tool, ToolOutcome.COMPLETED)
    with pytest.raises(FailedPrecondition, match="closed its run"):
        execution.register(tool, "x", CallbackSpec())
    other = attach(execution, "u", InterruptBehavior.THREAD_INTERRUPT)
    coordinator.end(execution.execution_id)
    with pytest.raises(FailedPrecondition):
        execution.register(other, "x", CallbackSpec())


def test_unregister_is_idempotent(coordinator: Coordinator, effects: RecordingEffects) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    tool = attach(execution, "t", InterruptBehavior.THREAD_INTERRUPT)
    execution.register(tool, "x", CallbackSpec())
    assert execution.unregister(tool, "x") is True
    assert execution.unregister(tool, "x") is False
    assert execution.unregister(tool, "never") is False
    execution.trip(InterruptReason.USER_SIGINT, "")
    assert effects.of("run") == []


def test_duplicate_terminator_id_is_refused(coordinator: Coordinator) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    tool = attach(execution, "t", InterruptBehavior.THREAD_INTERRUPT)
    execution.register(tool, "x", CallbackSpec())
    with pytest.raises(AlreadyExists):
        execution.register(tool, "x", CallbackSpec())


@pytest.mark.parametrize(
    ("behavior", "callback_ok", "group_ok"),
    [
        (InterruptBehavior.NON_INTERRUPTIBLE, False, False),
        (InterruptBehavior.COOPERATIVE, False, False),
        (InterruptBehavior.THREAD_INTERRUPT, True, False),
        (InterruptBehavior.EXTERNALLY_TERMINATED, True, True),
    ],
)
def test_behaviours_decide_what_may_be_registered(
    coordinator: Coordinator, behavior: InterruptBehavior, callback_ok: bool, group_ok: bool
) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    tool = attach(execution, "t", behavior)
    for terminator_id, spec, allowed in (
        ("cb", CallbackSpec(), callback_ok),
        ("pg", ProcessGroupSpec(12345, 15, None), group_ok),
    ):
        if allowed:
            execution.register(tool, terminator_id, spec)
        else:
            with pytest.raises(FailedPrecondition, match=behavior.name):
                execution.register(tool, terminator_id, spec)


def test_concurrent_registration_and_trip_run_each_terminator_exactly_once(
    clock: ManualClock,
) -> None:
    for _ in range(30):
        effects = RecordingEffects()
        coordinator = Coordinator(effects, clock, default_grace_ns=GRACE)
        execution, _ = coordinator.begin(ExecutionSpec())
        tool = attach(execution, "t", InterruptBehavior.THREAD_INTERRUPT)
        barrier = threading.Barrier(9)

        def register(i: int) -> None:
            barrier.wait()
            execution.register(tool, f"t{i}", CallbackSpec())

        def trip() -> None:
            barrier.wait()
            execution.trip(InterruptReason.USER_SIGINT, "")

        with ThreadPoolExecutor(9) as pool:
            futures = [pool.submit(register, i) for i in range(8)] + [pool.submit(trip)]
            for f in futures:
                f.result()
        ran = [str(item) for item in effects.of("run")]
        assert sorted(ran) == sorted(f"t{i}" for i in range(8)), ran


def test_unwind_latency_is_measured_from_the_trip(coordinator: Coordinator, clock: ManualClock) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    tool = attach(execution, "t", InterruptBehavior.COOPERATIVE)
    execution.trip(InterruptReason.USER_SIGINT, "")
    clock.advance(7_000_000)
    assert execution.unwound(tool, ToolOutcome.INTERRUPTED) == 7_000_000
    with pytest.raises(FailedPrecondition):
        execution.unwound(tool, ToolOutcome.INTERRUPTED)


def test_grace_overruns_are_the_interruptible_tools_that_did_not_unwind(
    coordinator: Coordinator, clock: ManualClock
) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    quick = attach(execution, "quick", InterruptBehavior.COOPERATIVE)
    slow = attach(execution, "slow", InterruptBehavior.THREAD_INTERRUPT)
    attach(execution, "stat", InterruptBehavior.NON_INTERRUPTIBLE)
    execution.trip(InterruptReason.USER_SIGINT, "")
    execution.unwound(quick, ToolOutcome.INTERRUPTED)
    clock.advance(GRACE - 1)
    assert execution.overrun_tools(clock.now()) == []
    clock.advance(1)
    assert execution.overrun_tools(clock.now()) == [slow]
    assert execution.overrun_tools(clock.now()) == [], "reported once"
    # A tool attaching after the trip gets its own grace from its attach.
    late = attach(execution, "late", InterruptBehavior.COOPERATIVE)
    assert execution.overrun_tools(clock.now()) == []
    clock.advance(GRACE)
    assert execution.overrun_tools(clock.now()) == [late]
    assert execution.grace_overruns == 2


def test_a_new_execution_after_a_tripped_one_is_not_cancelled(coordinator: Coordinator) -> None:
    first, _ = coordinator.begin(ExecutionSpec(context_id="main"))
    coordinator.interrupt_execution(first.execution_id, InterruptReason.USER_SIGINT, "")
    coordinator.end(first.execution_id)
    second, _ = coordinator.begin(ExecutionSpec(context_id="main"))
    assert first.signal.cancelled
    assert not second.signal.cancelled


def test_context_interrupt_touches_only_that_context(coordinator: Coordinator) -> None:
    main, _ = coordinator.begin(ExecutionSpec(context_id="main"))
    sub1, _ = coordinator.begin(ExecutionSpec(context_id="sub"))
    sub2, _ = coordinator.begin(ExecutionSpec(context_id="sub"))
    outcomes = coordinator.interrupt_context("sub", InterruptReason.NOW_PRIORITY_INPUT, "")
    assert sorted(o.execution_id for o in outcomes) == sorted([sub1.execution_id, sub2.execution_id])
    assert all(o.tripped for o in outcomes)
    assert not main.signal.cancelled
    assert coordinator.interrupt_context("nobody", InterruptReason.NOW_PRIORITY_INPUT, "") == []


def test_children_trip_with_parent_cancelled(coordinator: Coordinator) -> None:
    parent, _ = coordinator.begin(ExecutionSpec())
    child, _ = coordinator.begin(ExecutionSpec(parent_execution_id=parent.execution_id))
    grandchild, _ = coordinator.begin(ExecutionSpec(parent_execution_id=child.execution_id))
    coordinator.interrupt_execution(child.execution_id, InterruptReason.USER_SIGINT, "")
    assert not parent.signal.cancelled
    trip = grandchild.trip_info
    assert trip is not None and trip.reason is InterruptReason.PARENT_CANCELLED


def test_tokens_resolve_only_with_the_right_secret(coordinator: Coordinator) -> None:
    execution, token = coordinator.begin(ExecutionSpec())
    assert coordinator.resolve_token(token) is execution
    prefix, token_id, secret = token.split(".")
    with pytest.raises(Unauthenticated):
        coordinator.resolve_token("")
    with pytest.raises(InvalidArgument):
        coordinator.resolve_token("not-a-token")
    with pytest.raises(PermissionDenied):
        coordinator.resolve_token(f"{prefix}.0000000000000000.{secret}")
    with pytest.raises(PermissionDenied):
        coordinator.resolve_token(f"{prefix}.{token_id}.{secret[:-1]}x")
    coordinator.end(execution.execution_id)
    with pytest.raises(PermissionDenied):
        coordinator.resolve_token(token)


def test_end_is_idempotent_and_ids_are_never_reused(coordinator: Coordinator, effects: RecordingEffects) -> None:
    coordinator.begin(ExecutionSpec(execution_id="turn-1"))
    coordinator.end("turn-1")
    coordinator.end("turn-1")
    assert effects.of("ended") == ["turn-1"]
    with pytest.raises(AlreadyExists):
        coordinator.begin(ExecutionSpec(execution_id="turn-1"))
    with pytest.raises(FailedPrecondition, match="has ended"):
        coordinator.interrupt_execution("turn-1", InterruptReason.USER_SIGINT, "")
    with pytest.raises(NotFound):
        coordinator.end("never-begun")


# -- memory: what the daemon lets go of is freed by reference counting ---------------------
#
# The daemon collects the oldest generation rarely (a full pass over a large heap is a long
# pause), so a reference cycle that lives long enough to get there stays until then: an
# execution kept after it ends, and its tools, piled up at about 3 KB each. These tests
# run with the cycle collector off, so only reference counting can free anything.


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _AlreadyWritten:
    """What a stream that writes at once answers: an awaitable that is already done."""

    def __await__(self) -> Generator[None, None, None]:
        yield from ()


class StreamSink:
    """A tool's stream as the transport's is: it knows its tool, as the tool knows it."""

    def __init__(self) -> None:
        self.tool: ToolRun | None = None

    def send_cancel(self, trip: Trip, grace_deadline: Instant) -> None:
        pass

    def cancel_written(self) -> Awaitable[None]:
        return _AlreadyWritten()

    def send_run_terminator(self, terminator_id: str) -> None:
        pass


def attach_stream(execution: Execution, name: str) -> tuple[ToolRun, StreamSink]:
    sink = StreamSink()
    tool = execution.attach(
        tool_id=name, tool_name=name, tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0, sink=sink
    )
    sink.tool = tool
    return tool, sink


@pytest.mark.usefixtures("no_cycle_collector")
def test_a_detached_tool_lets_go_of_its_stream(coordinator: Coordinator) -> None:
    execution, _ = coordinator.begin(ExecutionSpec())
    tool, sink = attach_stream(execution, "t")
    execution.detach(tool)
    assert tool.sink is None
    stream = weakref.ref(sink)
    del sink
    assert stream() is None, "the stream outlived its detach: a tool <-> stream cycle"


@pytest.mark.usefixtures("no_cycle_collector")
def test_an_execution_past_the_ended_retention_is_freed_with_its_tools(
    effects: RecordingEffects, clock: ManualClock
) -> None:
    coordinator = Coordinator(effects, clock, default_grace_ns=GRACE, limits=CoordinatorLimits(ended_retention=1))
    first, _ = coordinator.begin(ExecutionSpec())
    tool, sink = attach_stream(first, "t")
    first.trip(InterruptReason.USER_SIGINT, "")
    first.unwound(tool, ToolOutcome.INTERRUPTED)
    first.detach(tool)
    coordinator.end(first.execution_id)
    kept, stream = weakref.ref(first), weakref.ref(sink)
    del first, tool, sink
    assert kept() is not None, "an ended execution is kept for look-ups within the retention"
    second, _ = coordinator.begin(ExecutionSpec())
    coordinator.end(second.execution_id)
    assert kept() is None, "the execution pushed out of the retention is still alive: an execution <-> tool cycle"
    assert stream() is None
    assert coordinator.get(second.execution_id) is second
