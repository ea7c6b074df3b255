"""The load part's wire floor sends and answers what the daemon does, size for size.

``bench.floor.WIRE`` holds the serialized sizes of the daemon's messages in the load part's
exchange (begin, hello/attached, interrupt, unwound, end); the wire floor pays those bytes
with no logic. This test runs the same exchange against a real daemon with the raw stubs the
bench's workers use and checks the sizes still match, so the floor cannot drift from the
protocol it stands in for."""

from __future__ import annotations

import grpc
import pytest
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench.clients import _Outgoing, channel
from bench.floor import KEY_BYTES, WIRE
from bench.procs import start_daemon

# Timestamps and ids are varints and decimal numbers: a few bytes either way.
SLACK = 4


@pytest.mark.timeout(60)
async def test_the_wire_floor_pays_the_daemons_message_sizes() -> None:
    daemon = start_daemon("asyncio", tcp=False)
    try:
        ch = channel(daemon.address("unix"))
        coordinator = pb_grpc.CoordinatorServiceStub(ch)
        measured: dict[str, int] = {"begin_request": pb.BeginExecutionRequest().ByteSize()}
        begun = await coordinator.BeginExecution(pb.BeginExecutionRequest())
        measured["begin_response"] = begun.ByteSize()
        assert len(begun.execution_id) == KEY_BYTES

        out = _Outgoing()
        call = pb_grpc.ToolChannelServiceStub(ch).Attach(out.messages())
        hello = pb.ToolMessage(
            hello=pb.Hello(
                attach_token=begun.attach_token, tool_name="bench", behavior=pb.INTERRUPT_BEHAVIOR_COOPERATIVE
            )
        )
        out.queue.put_nowait(hello)
        measured["hello"] = hello.ByteSize()
        attached = await call.read()
        assert isinstance(attached, pb.SidecarMessage) and attached.HasField("attached")
        measured["attached"] = attached.ByteSize()

        request = pb.InterruptRequest(execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT)
        measured["interrupt_request"] = request.ByteSize()
        measured["interrupt_response"] = (await coordinator.Interrupt(request)).ByteSize()
        cancel = await call.read()
        assert isinstance(cancel, pb.SidecarMessage) and cancel.HasField("cancel")

        unwound = pb.ToolMessage(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED))
        measured["unwound"] = unwound.ByteSize()
        out.queue.put_nowait(unwound)
        out.queue.put_nowait(None)
        while await call.read() is not grpc.aio.EOF:
            pass

        end = pb.EndExecutionRequest(execution_id=begun.execution_id)
        measured["end_request"] = end.ByteSize()
        measured["end_response"] = (await coordinator.EndExecution(end)).ByteSize()
        await ch.close()
    finally:
        daemon.stop()

    assert set(measured) == set(WIRE)
    off = {k: (measured[k], WIRE[k]) for k in WIRE if abs(measured[k] - WIRE[k]) > SLACK}
    assert not off, f"bench.floor.WIRE no longer matches the daemon's messages (measured, WIRE): {off}"
