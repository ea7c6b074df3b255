"""ToolChannelService.Attach against a real daemon process on a real unix socket."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.daemon.wire import RawTool, eventually, watch

COOP = pb.INTERRUPT_BEHAVIOR_COOPERATIVE
THREAD = pb.INTERRUPT_BEHAVIOR_THREAD_INTERRUPT
EXTERNAL = pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED
NON = pb.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE
SIGINT_REASON = pb.INTERRUPT_REASON_USER_SIGINT


async def begin(stub: pb_grpc.CoordinatorServiceAsyncStub, **fields: object) -> pb.BeginExecutionResponse:
    return await stub.BeginExecution(pb.BeginExecutionRequest(**fields))  # type: ignore[arg-type]


async def interrupt(stub: pb_grpc.CoordinatorServiceAsyncStub, execution_id: str, reason: int = SIGINT_REASON) -> None:
    await stub.Interrupt(pb.InterruptRequest(execution_id=execution_id, reason=reason))  # type: ignore[arg-type]


async def test_interruptible_tool_gets_cancel_with_reason(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    attached = await tool.hello(begun.attach_token, COOP)
    assert attached.attached.execution_id == begun.execution_id
    assert not attached.attached.cancelled
    await stub.Interrupt(
        pb.InterruptRequest(
            execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT, detail="do url2"
        )
    )
    cancel = (await tool.recv()).cancel
    assert cancel.reason == pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT
    assert cancel.detail == "do url2"
    assert cancel.grace_deadline.ToNanoseconds() - cancel.tripped_at.ToNanoseconds() == 500_000_000
    await tool.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED))
    assert await tool.close() == []


async def test_non_interruptible_tool_is_never_sent_the_cancel(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    quiet, loud = RawTool(channel), RawTool(channel)
    await quiet.hello(begun.attach_token, 0)  # unset behaviour: NON_INTERRUPTIBLE
    await loud.hello(begun.attach_token, COOP)
    await interrupt(stub, begun.execution_id)
    assert (await loud.recv()).HasField("cancel")
    await quiet.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED))
    assert await quiet.close() == [], "a NON_INTERRUPTIBLE tool receives nothing after attached"


@pytest.mark.parametrize("behavior", [0, NON, COOP])
async def test_tools_that_may_not_register_are_refused(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, behavior: int
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    await tool.hello(begun.attach_token, behavior)
    await tool.send(register_terminator=pb.RegisterTerminator(terminator_id="t", callback=pb.CallbackTerminator()))
    error = (await tool.recv()).error
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert error.terminator_id == "t"
    assert "may register" in error.message


async def test_callback_terminators_run_in_order_and_late_ones_at_once(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    await tool.hello(begun.attach_token, THREAD)
    for name in ("first", "second", "third"):
        await tool.send(register_terminator=pb.RegisterTerminator(terminator_id=name, callback=pb.CallbackTerminator()))
        assert (await tool.recv()).terminator_registered.terminator_id == name
    await tool.send(unregister_terminator=pb.UnregisterTerminator(terminator_id="second"))
    assert (await tool.recv()).terminator_unregistered.terminator_id == "second"
    await interrupt(stub, begun.execution_id)
    assert (await tool.recv()).HasField("cancel")
    assert [(await tool.recv()).run_terminator.terminator_id for _ in range(2)] == ["first", "third"]
    await tool.send(register_terminator=pb.RegisterTerminator(terminator_id="late", callback=pb.CallbackTerminator()))
    assert (await tool.recv()).terminator_registered.terminator_id == "late"
    assert (await tool.recv()).run_terminator.terminator_id == "late"
    await tool.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED))
    await tool.send(register_terminator=pb.RegisterTerminator(terminator_id="after", callback=pb.CallbackTerminator()))
    error = (await tool.recv()).error
    assert error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert "closed its run" in error.message


async def test_tool_attaching_after_the_trip_is_told_at_once(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    await interrupt(stub, begun.execution_id, pb.INTERRUPT_REASON_BUDGET_EXCEEDED)
    tool = RawTool(channel)
    attached = (await tool.hello(begun.attach_token, COOP)).attached
    assert attached.cancelled
    assert attached.reason == pb.INTERRUPT_REASON_BUDGET_EXCEEDED
    assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_BUDGET_EXCEEDED


async def test_unwind_latency_and_grace_overrun_are_reported_on_watch(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub, grace=Duration(nanos=200_000_000))
    quick, stuck = RawTool(channel), RawTool(channel)
    await quick.hello(begun.attach_token, COOP, name="quick")
    await stuck.hello(begun.attach_token, THREAD, name="stuck")
    watcher = await watch(stub, begun.execution_id)
    await interrupt(stub, begun.execution_id)
    assert (await quick.recv()).HasField("cancel")
    await quick.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED))
    await watcher.until(lambda e: e.HasField("grace_overrun"))
    unwound = watcher.of("tool_unwound")
    overrun = watcher.of("grace_overrun")
    assert [u.tool_name for u in unwound] == ["quick"]
    assert 0 < unwound[0].latency.ToNanoseconds() < 200_000_000
    assert [o.tool_name for o in overrun] == ["stuck"]
    got = await stub.GetExecution(pb.GetExecutionRequest(execution_id=begun.execution_id))
    assert got.execution.grace_overruns == 1


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("", grpc.StatusCode.UNAUTHENTICATED),
        ("garbage", grpc.StatusCode.INVALID_ARGUMENT),
        ("ist1.0000000000000000.secret", grpc.StatusCode.PERMISSION_DENIED),
    ],
)
async def test_bad_tokens_end_the_stream_with_their_code(
    channel: grpc.aio.Channel, token: str, code: grpc.StatusCode
) -> None:
    tool = RawTool(channel)
    await tool.send(hello=pb.Hello(attach_token=token))
    assert await tool.status() == code


async def test_unknown_wrong_and_ended_tokens_are_refused_alike(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    # One code and one message for every token that grants nothing: a caller without the
    # right token cannot learn whether an execution (or a token id) exists.
    begun = await begin(stub)
    prefix = begun.attach_token.split(".")[0]
    answers = set()
    for token in (begun.attach_token[:-2] + "xx", f"{prefix}.ffffffffffffffff.secret"):
        tool = RawTool(channel)
        await tool.send(hello=pb.Hello(attach_token=token))
        answers.add((await tool.status(), await tool.call.details()))
    await stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))
    tool = RawTool(channel)
    await tool.send(hello=pb.Hello(attach_token=begun.attach_token))
    answers.add((await tool.status(), await tool.call.details()))
    assert len(answers) == 1
    assert next(iter(answers))[0] == grpc.StatusCode.PERMISSION_DENIED


async def test_protocol_violations_end_the_stream(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    tool = RawTool(channel)
    await tool.send(unwound=pb.Unwound())
    assert await tool.status() == grpc.StatusCode.FAILED_PRECONDITION
    assert "first message" in (await tool.call.details())

    begun = await begin(stub)
    tool = RawTool(channel)
    await tool.hello(begun.attach_token, COOP)
    await tool.send(hello=pb.Hello(attach_token=begun.attach_token))
    assert await tool.status() == grpc.StatusCode.FAILED_PRECONDITION
    assert "already received" in (await tool.call.details())

    tool = RawTool(channel)
    await tool.send(hello=pb.Hello(attach_token=begun.attach_token, behavior=99))  # type: ignore[arg-type]
    assert await tool.status() == grpc.StatusCode.INVALID_ARGUMENT


async def test_bad_requests_on_a_stream_are_errors_and_the_stream_stays(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    await tool.hello(begun.attach_token, EXTERNAL)
    cases: list[tuple[pb.ToolMessage, grpc.StatusCode]] = [
        (pb.ToolMessage(), grpc.StatusCode.INVALID_ARGUMENT),
        (
            pb.ToolMessage(register_terminator=pb.RegisterTerminator(terminator_id="x")),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            pb.ToolMessage(register_terminator=pb.RegisterTerminator(callback=pb.CallbackTerminator())),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(
                    terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=1)
                )
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(
                    terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=os.getpgid(0))
                )
            ),
            grpc.StatusCode.PERMISSION_DENIED,
        ),
        (
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(
                    terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=4_000_000)
                )
            ),
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(
                    terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=4_000_000, signal=999)
                )
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(
                    terminator_id="pg",
                    process_group=pb.ProcessGroupTerminator(pgid=4_000_000, kill_after=Duration(seconds=-1)),
                )
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (pb.ToolMessage(unwound=pb.Unwound(outcome=42)), grpc.StatusCode.INVALID_ARGUMENT),  # type: ignore[arg-type]
        (
            pb.ToolMessage(unregister_terminator=pb.UnregisterTerminator(terminator_id="")),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ]
    for message, code in cases:
        await tool.put(message)
        reply = await tool.recv()
        assert reply.HasField("error"), (message, reply)
        assert reply.error.code == code.value[0], (message, reply.error)
        assert reply.error.message
    # The stream still works.
    await tool.send(register_terminator=pb.RegisterTerminator(terminator_id="ok", callback=pb.CallbackTerminator()))
    assert (await tool.recv()).terminator_registered.terminator_id == "ok"


def spawn_group(*argv: str) -> subprocess.Popen[bytes]:
    """A child in a new session (its own process group), as a tool would start one."""
    return subprocess.Popen([sys.executable, "-c", *argv], start_new_session=True)


async def test_process_group_is_terminated_at_the_trip(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    child = spawn_group("import time; time.sleep(120)")
    try:
        begun = await begin(stub)
        tool = RawTool(channel)
        await tool.hello(begun.attach_token, EXTERNAL)
        await tool.send(
            register_terminator=pb.RegisterTerminator(
                terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=child.pid)
            )
        )
        assert (await tool.recv()).terminator_registered.terminator_id == "pg"
        watcher = await watch(stub, begun.execution_id)
        await interrupt(stub, begun.execution_id)
        await eventually(lambda: child.poll() is not None)
        assert child.returncode == -signal.SIGTERM
        await watcher.until(lambda e: e.HasField("process_group_gone"))
        signalled = watcher.of("process_group_signalled")
        assert [(s.pgid, s.signal, s.escalation) for s in signalled] == [(child.pid, signal.SIGTERM, False)]
    finally:
        child.kill()
        child.wait()


async def test_a_group_ignoring_sigterm_is_killed_when_the_grace_runs_out(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    child = spawn_group(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)"
    )
    try:
        begun = await begin(stub, grace=Duration(nanos=300_000_000))
        tool = RawTool(channel)
        await tool.hello(begun.attach_token, EXTERNAL)
        # Wait until the child has installed its handler (it is then sleeping).
        await eventually(lambda: Path(f"/proc/{child.pid}/stat").read_text().split()[2] == "S")
        await tool.send(
            register_terminator=pb.RegisterTerminator(
                terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=child.pid)
            )
        )
        assert (await tool.recv()).HasField("terminator_registered")
        watcher = await watch(stub, begun.execution_id)
        await interrupt(stub, begun.execution_id)
        await eventually(lambda: child.poll() is not None)
        assert child.returncode == -signal.SIGKILL
        events = await watcher.until(lambda e: e.HasField("process_group_gone"))
        signalled = watcher.of("process_group_signalled")
        assert [(s.signal, s.escalation) for s in signalled] == [(signal.SIGTERM, False), (signal.SIGKILL, True)]
        tripped = next(e for e in events if e.HasField("tripped"))
        escalated = next(
            e for e in events if e.HasField("process_group_signalled") and e.process_group_signalled.escalation
        )
        waited = escalated.occurred_at.ToNanoseconds() - tripped.tripped.tripped_at.ToNanoseconds()
        assert waited >= 300_000_000 - 2_000_000, "SIGKILL only after the grace"
    finally:
        child.kill()
        child.wait()


async def test_end_execution_closes_every_registrar(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    await tool.hello(begun.attach_token, THREAD)
    await stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))
    await tool.send(register_terminator=pb.RegisterTerminator(terminator_id="t", callback=pb.CallbackTerminator()))
    assert (await tool.recv()).error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
