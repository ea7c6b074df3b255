"""The RPC that trips an execution answers after the tools' cancels are written, but never
waits long for a stream that cannot take them (``TripPath.let_writers_start``).

In-process: the real trip path, coordinator and ``AttachSession``; only the grpc servicer
context is stood in for, because what is under test is how long the answer waits on the
transport, and a real transport cannot be told to take exactly this long or never."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec
from interrupt_sidecar.domain.execution import Execution
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason, SystemClock
from interrupt_sidecar.osedge.process_groups import ProcessGroups
from interrupt_sidecar.runtime import trip_path as trip_path_module
from interrupt_sidecar.runtime.trip_path import TripPath
from interrupt_sidecar.runtime.watch import WatchHub
from interrupt_sidecar.services.status import Context
from interrupt_sidecar.services.tool_channel import AttachSession
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

pytestmark = pytest.mark.timeout(10)


class Transport:
    """Stands in for the Attach stream's servicer context: each write takes ``write_s``
    (None: never completes, like a stream whose peer stopped reading)."""

    def __init__(self, write_s: float | None) -> None:
        self.write_s = write_s
        self.written: list[pb.SidecarMessage] = []

    async def write(self, message: pb.SidecarMessage) -> None:
        if self.write_s is None:
            await asyncio.Event().wait()
        else:
            await asyncio.sleep(self.write_s)
        self.written.append(message)


def _runtime() -> tuple[TripPath, Coordinator]:
    clock = SystemClock()
    trip_path = TripPath(clock, ProcessGroups(), WatchHub(clock))
    return trip_path, Coordinator(trip_path, clock, default_grace_ns=1_000_000_000)


def _execution_with_one_tool(coordinator: Coordinator, transport: Transport) -> tuple[Execution, asyncio.Task[None]]:
    execution, _ = coordinator.begin(ExecutionSpec())
    session = AttachSession()
    session.tool = execution.attach(
        tool_id=f"tool-of-{execution.execution_id}",
        tool_name="t",
        tool_call_id="",
        behavior=InterruptBehavior.COOPERATIVE,
        pid=0,
        sink=session,
    )
    writer = asyncio.create_task(session.drain(cast(Context, cast(Any, transport))))
    return execution, writer


async def _tripped_with_one_tool(transport: Transport) -> tuple[TripPath, asyncio.Task[None]]:
    trip_path, coordinator = _runtime()
    execution, writer = _execution_with_one_tool(coordinator, transport)
    execution.trip(InterruptReason.USER_SIGINT, "")
    return trip_path, writer


async def test_the_answer_waits_until_the_cancel_is_written() -> None:
    # A write that takes 0.5 ms: a single yield to the loop (what the answer used to
    # wait for) would return before it completes.
    transport = Transport(write_s=0.0005)
    trip_path, writer = await _tripped_with_one_tool(transport)
    await trip_path.let_writers_start()
    assert [m.WhichOneof("message") for m in transport.written] == ["cancel"]
    writer.cancel()


# How long the answer waits is measured by ``python -m bench --parts fanout``
# (rpc_answered); these tests check whether it waits, and for what. A bound of an hour
# turns "waited for the bound" into a hang the test's timeout reports, never a timing.
_NEVER = 3600.0


async def test_the_answer_does_not_wait_long_for_a_stream_that_takes_nothing() -> None:
    transport = Transport(write_s=None)
    trip_path, writer = await _tripped_with_one_tool(transport)
    await trip_path.let_writers_start()  # returns: the wait is bounded
    assert transport.written == []
    writer.cancel()


async def test_a_stream_that_ended_before_its_cancel_was_written_releases_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The writer stops (the stream ended) with the cancel still unwritten: nobody waits
    # for a write that will never come (with an hour's bound, waiting would hang).
    monkeypatch.setattr(trip_path_module, "_ANSWER_AFTER_CANCELS_S", _NEVER)
    transport = Transport(write_s=None)
    trip_path, writer = await _tripped_with_one_tool(transport)
    await asyncio.sleep(0)  # the writer is now inside its never-ending write
    writer.cancel()
    await trip_path.let_writers_start()
    assert transport.written == []


async def test_a_trip_no_rpc_answered_for_leaves_nothing_for_the_next_interrupt_to_wait_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trip_path_module, "_ANSWER_AFTER_CANCELS_S", _NEVER)
    # A budget or lease timer trips an execution whose tool's stream takes nothing; the
    # next Interrupt, of an execution without tools, must not wait on that stream.
    trip_path, coordinator = _runtime()
    timed_out, writer = _execution_with_one_tool(coordinator, Transport(write_s=None))
    timed_out.trip(InterruptReason.BUDGET_EXCEEDED, "")
    await asyncio.sleep(0)  # a turn of the loop passes before the next RPC arrives
    interrupted, _ = coordinator.begin(ExecutionSpec())
    coordinator.interrupt_execution(interrupted.execution_id, InterruptReason.USER_SIGINT, "")
    await trip_path.let_writers_start()  # with an hour's bound, waiting on the other trip's stream would hang
    writer.cancel()
