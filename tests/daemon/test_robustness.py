"""Nothing a client sends may crash the daemon or leak state.

Many streams send seeded random sequences of well-formed and malformed
messages (including garbage bytes in string fields, huge and negative numbers,
enum values out of range, messages before hello, second hellos) while
executions are tripped and ended under them. Afterwards the daemon must still
serve, and no stream may still count as attached.
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

import grpc
from google.protobuf.duration_pb2 import Duration
from grpc_health.v1 import health_pb2, health_pb2_grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from tests.conftest import DaemonProcess
from tests.daemon.wire import RawTool, eventually

if TYPE_CHECKING:
    from interrupt_sidecar_client._proto.interrupt.v1.interrupt_pb2_grpc import CoordinatorServiceAsyncStub as Stub

STREAMS = 40
MESSAGES_PER_STREAM = 25


def random_text(rng: random.Random) -> str:
    return rng.choice(["", "t", "x" * rng.randint(1, 300), "\x00\x01\ud7ff", "a b", "é" * 10])


def random_message(rng: random.Random, tokens: list[str]) -> pb.ToolMessage:
    kind = rng.choice(["hello", "register_cb", "register_pg", "unregister", "unwound", "result", "empty"])
    if kind == "hello":
        return pb.ToolMessage(
            hello=pb.Hello(
                attach_token=rng.choice([*tokens, "", "ist1.x.y", random_text(rng)]),
                tool_name=random_text(rng),
                behavior=rng.randint(-2, 6),  # type: ignore[arg-type]
                pid=rng.choice([0, -5, 2**31 - 1, 1234]),
            )
        )
    if kind == "register_cb":
        return pb.ToolMessage(
            register_terminator=pb.RegisterTerminator(terminator_id=random_text(rng), callback=pb.CallbackTerminator())
        )
    if kind == "register_pg":
        return pb.ToolMessage(
            register_terminator=pb.RegisterTerminator(
                terminator_id=random_text(rng),
                process_group=pb.ProcessGroupTerminator(
                    pgid=rng.choice([-1, 0, 1, 2**31 - 1, 999_999]),
                    signal=rng.randint(-1, 80),
                    kill_after=Duration(seconds=rng.randint(-5, 10**7), nanos=rng.randint(-(10**9), 10**9 - 1)),
                ),
            )
        )
    if kind == "unregister":
        return pb.ToolMessage(unregister_terminator=pb.UnregisterTerminator(terminator_id=random_text(rng)))
    if kind == "unwound":
        return pb.ToolMessage(unwound=pb.Unwound(outcome=rng.randint(-1, 9), detail=random_text(rng)))  # type: ignore[arg-type]
    if kind == "result":
        return pb.ToolMessage(
            terminator_result=pb.TerminatorResult(terminator_id=random_text(rng), error=random_text(rng))
        )
    return pb.ToolMessage()


async def drive(channel: grpc.aio.Channel, rng: random.Random, tokens: list[str]) -> None:
    tool = RawTool(channel)
    # Most streams start with a valid hello so the later messages reach the handlers.
    if rng.random() < 0.8:
        await tool.put(pb.ToolMessage(hello=pb.Hello(attach_token=rng.choice(tokens), behavior=rng.randint(0, 4))))  # type: ignore[arg-type]
    for _ in range(MESSAGES_PER_STREAM):
        await tool.put(random_message(rng, tokens))
    # Read until the daemon ends the stream or has nothing more to say. (A write that
    # races the daemon's abort may surface client-side as INTERNAL: grpc#36066.)
    try:
        if rng.random() < 0.5:
            await tool.close()
        else:
            tool.call.cancel()
    except (grpc.aio.AioRpcError, asyncio.CancelledError, AssertionError):
        pass


async def test_random_streams_do_not_crash_or_leak(
    daemon: DaemonProcess, channel: grpc.aio.Channel, stub: Stub
) -> None:
    rng = random.Random(20261130)
    begun = [await stub.BeginExecution(pb.BeginExecutionRequest()) for _ in range(5)]
    tokens = [b.attach_token for b in begun]

    async def disrupt() -> None:
        for execution in begun[:3]:
            await asyncio.sleep(0)
            await stub.Interrupt(pb.InterruptRequest(execution_id=execution.execution_id, reason=rng.randint(1, 9)))  # type: ignore[arg-type]
        await stub.EndExecution(pb.EndExecutionRequest(execution_id=begun[0].execution_id))

    await asyncio.gather(disrupt(), *(drive(channel, random.Random(rng.random()), tokens) for _ in range(STREAMS)))

    health = health_pb2_grpc.HealthStub(channel)
    assert (await health.Check(health_pb2.HealthCheckRequest())).status == health_pb2.HealthCheckResponse.SERVING

    async def nothing_attached() -> bool:
        listed = await stub.ListExecutions(pb.ListExecutionsRequest(include_ended=True))
        return all(e.attached_tools == 0 for e in listed.executions)

    await eventually(nothing_attached)
    # And it still does its job.
    fresh = await stub.BeginExecution(pb.BeginExecutionRequest())
    tool = RawTool(channel)
    await tool.hello(fresh.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
    await stub.Interrupt(pb.InterruptRequest(execution_id=fresh.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT))
    assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_USER_SIGINT
    assert "Traceback" not in daemon.stderr, daemon.stderr
