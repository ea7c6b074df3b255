"""A trip's bookkeeping (timers, the Tripped event, the journal, metrics) runs after the
writers it woke have submitted their cancels, and nothing that follows the trip can be
seen before that bookkeeping.

In-process: the real trip path, coordinator, watch hub and Attach session; only the
stream's grpc context is a stand-in that notes what the hub had numbered when the
cancel was handed to it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec
from interrupt_sidecar.domain.execution import Execution
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason, SystemClock, ToolOutcome
from interrupt_sidecar.osedge.journal import Journal
from interrupt_sidecar.osedge.process_groups import ProcessGroups
from interrupt_sidecar.runtime import events
from interrupt_sidecar.runtime.trip_path import TripPath
from interrupt_sidecar.runtime.watch import Subscription, WatchHub
from interrupt_sidecar.services.tool_channel import AttachSession
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

pytestmark = pytest.mark.timeout(10)


class _Daemon:
    def __init__(self) -> None:
        clock = SystemClock()
        self.hub = WatchHub(clock)
        self.trip_path = TripPath(clock, ProcessGroups(), self.hub)
        self.coordinator = Coordinator(self.trip_path, clock, default_grace_ns=60_000_000_000)

    def begin(self) -> Execution:
        execution, _ = self.coordinator.begin(ExecutionSpec())
        return execution


class _StreamContext:
    """Where an Attach session writes: notes the hub's count of the execution's events
    at each write."""

    def __init__(self, hub: WatchHub, execution_id: str) -> None:
        self._hub, self._execution_id = hub, execution_id
        self.written: list[tuple[str, int]] = []

    async def write(self, message: pb.SidecarMessage) -> None:
        self.written.append((message.WhichOneof("message") or "", self._hub.last_sequence(self._execution_id)))


async def _payloads(subscription: Subscription) -> list[type]:
    kinds: list[type] = []
    while (event := await subscription.next()) is not None:
        kinds.append(type(event.payload))
    return kinds


async def test_the_cancel_is_written_before_the_trip_is_numbered() -> None:
    daemon = _Daemon()
    execution = daemon.begin()
    session = AttachSession()
    session.tool = execution.attach(
        tool_id="t", tool_name="t", tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0, sink=session
    )
    assert daemon.hub.last_sequence(execution.execution_id) == 1  # ToolAttached
    context = _StreamContext(daemon.hub, execution.execution_id)
    writer = asyncio.create_task(session.drain(context))  # type: ignore[arg-type]
    await asyncio.sleep(0)  # the writer waits for its outbox

    execution.trip(InterruptReason.USER_SIGINT, "")
    # What the tripping RPC does before it answers.
    await daemon.trip_path.let_writers_start()

    assert context.written == [("cancel", 1)], "the cancel waited for the trip's bookkeeping"
    assert daemon.hub.last_sequence(execution.execution_id) == 2, "the trip settled before the answer"
    session.finish_reading()
    await writer


async def test_what_follows_a_trip_at_once_is_seen_after_it() -> None:
    daemon = _Daemon()
    execution = daemon.begin()
    tool = execution.attach(tool_id="t", tool_name="t", tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0)
    watcher = daemon.hub.subscribe(execution.execution_id, done=False)

    # No loop turn between these: each entry point settles the trip first.
    execution.trip(InterruptReason.USER_SIGINT, "")
    execution.unwound(tool, ToolOutcome.INTERRUPTED)
    daemon.coordinator.end(execution.execution_id)

    assert await _payloads(watcher) == [events.Tripped, events.ToolUnwound, events.Ended]
    await asyncio.sleep(0)  # the queued settling finds nothing left to do
    assert daemon.trip_path.done(execution)
    assert daemon.hub.last_sequence(execution.execution_id) == 0, "a done execution was numbered again"


async def test_a_snapshot_taken_before_the_trip_settles_counts_it() -> None:
    daemon = _Daemon()
    execution = daemon.begin()
    execution_id = execution.execution_id

    execution.trip(InterruptReason.USER_SIGINT, "")
    # What WatchExecution does, in one loop turn: subscribe and read the sequence its
    # snapshot stands for (the snapshot itself says cancelled).
    watcher = daemon.hub.subscribe(execution_id, done=daemon.trip_path.done(execution))
    assert daemon.hub.last_sequence(execution_id) == 1, "the snapshot missed the trip's number"
    await asyncio.sleep(0)
    daemon.coordinator.end(execution_id)
    assert await _payloads(watcher) == [events.Ended], "the watcher got the trip twice: snapshot and event"


@pytest.mark.parametrize("attached", [False, True], ids=["no tool", "one tool"])
async def test_an_answered_trip_is_in_the_journal(tmp_path: Path, attached: bool) -> None:
    # A trip the Interrupt RPC has answered for must survive a kill -9 that follows the
    # answer at once: with no writer to wait for, the answer used to go out before the
    # queued bookkeeping wrote the journal.
    daemon = _Daemon()
    daemon.trip_path.journal = Journal(tmp_path / "journal.sqlite3")
    execution = daemon.begin()
    if attached:
        session = AttachSession()
        session.tool = execution.attach(
            tool_id="t", tool_name="t", tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0, sink=session
        )
        writer = asyncio.create_task(session.drain(_StreamContext(daemon.hub, execution.execution_id)))  # type: ignore[arg-type]
        await asyncio.sleep(0)

    execution.trip(InterruptReason.TASK_CANCELLED, "why")
    await daemon.trip_path.let_writers_start()  # then the RPC answers, with no loop turn between

    # Read as a restarted daemon would: its own connection to the file.
    restarted = Journal(tmp_path / "journal.sqlite3")
    (found,) = restarted.load()
    assert (found.trip_reason, found.trip_detail) == (int(InterruptReason.TASK_CANCELLED), "why")
    restarted.close()
    if attached:
        session.finish_reading()
        await writer
    daemon.trip_path.journal.close()
