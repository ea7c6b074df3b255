"""CoordinatorService against a real daemon: semantics and every bad input."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from grpc_health.v1 import health_pb2, health_pb2_grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from tests.daemon.wire import RawTool, eventually, watch

if TYPE_CHECKING:
    from interrupt_sidecar_client._proto.interrupt.v1.interrupt_pb2_grpc import CoordinatorServiceAsyncStub as Stub

SIGINT = pb.INTERRUPT_REASON_USER_SIGINT


async def test_first_reason_wins_and_later_interrupts_change_nothing(stub: Stub) -> None:
    begun = await stub.BeginExecution(pb.BeginExecutionRequest())
    assert begun.execution_id.startswith("exec-")
    first = await stub.Interrupt(pb.InterruptRequest(execution_id=begun.execution_id, reason=SIGINT, detail="ctrl-c"))
    again = await stub.Interrupt(
        pb.InterruptRequest(execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_BUDGET_EXCEEDED)
    )
    assert [(o.execution_id, o.tripped, o.reason) for o in first.outcomes] == [(begun.execution_id, True, SIGINT)]
    assert [(o.tripped, o.reason) for o in again.outcomes] == [(False, SIGINT)]
    got = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=begun.execution_id))).execution
    assert got.cancelled
    assert got.reason == SIGINT
    assert got.detail == "ctrl-c"
    assert got.tripped_at.ToNanoseconds() > 0
    assert not got.ended


async def test_a_stale_cancel_never_leaks_into_the_next_turn(stub: Stub) -> None:
    turn1 = await stub.BeginExecution(pb.BeginExecutionRequest(context_id="main"))
    await stub.Interrupt(pb.InterruptRequest(execution_id=turn1.execution_id, reason=SIGINT))
    await stub.EndExecution(pb.EndExecutionRequest(execution_id=turn1.execution_id))
    turn2 = await stub.BeginExecution(pb.BeginExecutionRequest(context_id="main"))
    got = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=turn2.execution_id))).execution
    assert not got.cancelled
    assert turn2.attach_token != turn1.attach_token


async def test_now_input_to_one_context_leaves_the_others_untouched(channel: grpc.aio.Channel, stub: Stub) -> None:
    main = await stub.BeginExecution(pb.BeginExecutionRequest(context_id="main-agent"))
    sub = await stub.BeginExecution(pb.BeginExecutionRequest(context_id="sub-agent"))
    main_tool, sub_tool = RawTool(channel), RawTool(channel)
    await main_tool.hello(main.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
    await sub_tool.hello(sub.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
    response = await stub.Interrupt(
        pb.InterruptRequest(context_id="sub-agent", reason=pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT)
    )
    assert [(o.execution_id, o.tripped) for o in response.outcomes] == [(sub.execution_id, True)]
    assert (await sub_tool.recv()).cancel.reason == pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT
    got = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=main.execution_id))).execution
    assert not got.cancelled
    await main_tool.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED))
    assert await main_tool.close() == [], "the main agent's tool was not sent anything"
    empty = await stub.Interrupt(pb.InterruptRequest(context_id="nobody", reason=SIGINT))
    assert list(empty.outcomes) == []


async def test_budget_trips_budget_exceeded(stub: Stub) -> None:
    begun = await stub.BeginExecution(pb.BeginExecutionRequest(budget=Duration(nanos=150_000_000)))
    watcher = await watch(stub, begun.execution_id)
    events = await watcher.until(lambda e: e.HasField("tripped"))
    assert events[-1].tripped.reason == pb.INTERRUPT_REASON_BUDGET_EXCEEDED
    elapsed = events[-1].tripped.tripped_at.ToNanoseconds() - events[0].snapshot.begun_at.ToNanoseconds()
    assert elapsed >= 150_000_000 - 2_000_000


async def test_lease_not_renewed_trips_lease_lost_and_keepalive_renews(stub: Stub) -> None:
    kept = await stub.BeginExecution(pb.BeginExecutionRequest(lease_ttl=Duration(nanos=300_000_000)))
    lost = await stub.BeginExecution(pb.BeginExecutionRequest(lease_ttl=Duration(nanos=300_000_000)))
    lost_watch = await watch(stub, lost.execution_id)
    renewed = 0

    async def keep_and_check() -> bool:
        nonlocal renewed
        response = await stub.KeepAlive(pb.KeepAliveRequest(execution_id=kept.execution_id))
        assert response.lease_expires_at.ToNanoseconds() > 0
        renewed += 1
        got = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=lost.execution_id))).execution
        return got.cancelled

    await eventually(keep_and_check, interval=0.05)
    events = await lost_watch.until(lambda e: e.HasField("tripped"))
    assert events[-1].tripped.reason == pb.INTERRUPT_REASON_LEASE_LOST
    got = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=kept.execution_id))).execution
    assert not got.cancelled, f"renewed {renewed} times, yet it tripped"


async def test_list_get_end_and_watch_end(stub: Stub) -> None:
    a = await stub.BeginExecution(pb.BeginExecutionRequest(execution_id="turn-a", context_id="c", labels={"k": "v"}))
    await stub.BeginExecution(pb.BeginExecutionRequest(execution_id="turn-b"))
    listed = await stub.ListExecutions(pb.ListExecutionsRequest(context_id="c"))
    assert [(e.execution_id, dict(e.labels)) for e in listed.executions] == [("turn-a", {"k": "v"})]
    watcher = await watch(stub, a.execution_id)
    ended = await stub.EndExecution(pb.EndExecutionRequest(execution_id="turn-a"))
    assert ended.execution.ended
    await watcher.until(lambda e: e.HasField("ended"))
    assert await watcher.next() is None, "the watch ends after the execution has"
    again = await stub.EndExecution(pb.EndExecutionRequest(execution_id="turn-a"))
    assert again.execution.ended, "EndExecution is idempotent"
    live = await stub.ListExecutions(pb.ListExecutionsRequest())
    assert [e.execution_id for e in live.executions] == ["turn-b"]
    everything = await stub.ListExecutions(pb.ListExecutionsRequest(include_ended=True))
    assert sorted(e.execution_id for e in everything.executions) == ["turn-a", "turn-b"]


async def test_get_list_and_the_watch_snapshot_name_the_attached_tools(channel: grpc.aio.Channel, stub: Stub) -> None:
    """Tools attached before anyone looked are on the wire: GetExecution, the snapshot that
    starts a watch, and ListExecutions with include_tools (not without: it stays light)."""
    begun = await stub.BeginExecution(pb.BeginExecutionRequest(execution_id="with-tools"))
    first, second, gone = RawTool(channel), RawTool(channel), RawTool(channel)
    await first.hello(begun.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE, name="first", pid=4242)
    await second.hello(begun.attach_token, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED, name="second")
    await gone.hello(begun.attach_token, name="gone")
    await gone.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED))
    await gone.close()
    await first.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_FAILED))

    def summary(execution: pb.Execution) -> list[tuple[str, int, int, bool, int]]:
        return [(t.tool_name, t.behavior, t.pid, t.unwound, t.outcome) for t in execution.tools]

    expected = [
        ("first", pb.INTERRUPT_BEHAVIOR_COOPERATIVE, 4242, True, pb.TOOL_OUTCOME_FAILED),
        ("second", pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED, 0, False, pb.TOOL_OUTCOME_UNSPECIFIED),
    ]

    async def got() -> pb.Execution:
        return (await stub.GetExecution(pb.GetExecutionRequest(execution_id="with-tools"))).execution

    execution = await eventually(lambda: _if(got(), lambda e: summary(e) == expected))
    assert execution.attached_tools == len(execution.tools) == 2
    assert len({t.tool_id for t in execution.tools}) == 2
    assert all(t.attached_at.ToNanoseconds() > 0 for t in execution.tools)
    watcher = await watch(stub, "with-tools")
    assert summary(watcher.seen[0].snapshot) == expected
    watcher.close()
    listed = await stub.ListExecutions(pb.ListExecutionsRequest(include_tools=True))
    assert [summary(e) for e in listed.executions] == [expected]
    light = await stub.ListExecutions(pb.ListExecutionsRequest())
    assert [(e.attached_tools, len(e.tools)) for e in light.executions] == [(2, 0)]
    await second.close()
    await stub.EndExecution(pb.EndExecutionRequest(execution_id="with-tools"))


async def _if(value: Awaitable[pb.Execution], check: Callable[[pb.Execution], bool]) -> pb.Execution | None:
    result = await value
    return result if check(result) else None


BAD_REQUESTS: list[tuple[str, str, object, grpc.StatusCode]] = [
    ("interrupt without reason", "Interrupt", pb.InterruptRequest(execution_id="x"), grpc.StatusCode.INVALID_ARGUMENT),
    (
        "interrupt with reason out of range",
        "Interrupt",
        pb.InterruptRequest(execution_id="x", reason=42),  # type: ignore[arg-type]
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    ("interrupt without target", "Interrupt", pb.InterruptRequest(reason=SIGINT), grpc.StatusCode.INVALID_ARGUMENT),
    (
        "interrupt of unknown id",
        "Interrupt",
        pb.InterruptRequest(execution_id="nope", reason=SIGINT),
        grpc.StatusCode.NOT_FOUND,
    ),
    (
        "interrupt with oversized detail",
        "Interrupt",
        pb.InterruptRequest(execution_id="x", reason=SIGINT, detail="d" * 2000),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "interrupt with empty context",
        "Interrupt",
        pb.InterruptRequest(context_id="", reason=SIGINT),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "negative grace",
        "BeginExecution",
        pb.BeginExecutionRequest(grace=Duration(seconds=-1)),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "zero grace",
        "BeginExecution",
        pb.BeginExecutionRequest(grace=Duration()),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "absurd grace",
        "BeginExecution",
        pb.BeginExecutionRequest(grace=Duration(seconds=10**9)),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "invalid duration",
        "BeginExecution",
        pb.BeginExecutionRequest(budget=Duration(seconds=1, nanos=-5)),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "negative budget",
        "BeginExecution",
        pb.BeginExecutionRequest(budget=Duration(nanos=-1)),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "tiny lease",
        "BeginExecution",
        pb.BeginExecutionRequest(lease_ttl=Duration(nanos=1)),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "id with spaces",
        "BeginExecution",
        pb.BeginExecutionRequest(execution_id="has space"),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "oversized id",
        "BeginExecution",
        pb.BeginExecutionRequest(execution_id="x" * 200),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "too many labels",
        "BeginExecution",
        pb.BeginExecutionRequest(labels={f"k{i}": "v" for i in range(65)}),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "bad label key",
        "BeginExecution",
        pb.BeginExecutionRequest(labels={"": "v"}),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "oversized label value",
        "BeginExecution",
        pb.BeginExecutionRequest(labels={"k": "v" * 300}),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
    (
        "unknown parent",
        "BeginExecution",
        pb.BeginExecutionRequest(parent_execution_id="nope"),
        grpc.StatusCode.NOT_FOUND,
    ),
    (
        "message over the size limit",
        "BeginExecution",
        pb.BeginExecutionRequest(labels={f"k{i}": "v" * 256 for i in range(400)}),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    ),
    ("end without id", "EndExecution", pb.EndExecutionRequest(), grpc.StatusCode.INVALID_ARGUMENT),
    ("end unknown", "EndExecution", pb.EndExecutionRequest(execution_id="nope"), grpc.StatusCode.NOT_FOUND),
    ("get unknown", "GetExecution", pb.GetExecutionRequest(execution_id="nope"), grpc.StatusCode.NOT_FOUND),
    ("keepalive unknown", "KeepAlive", pb.KeepAliveRequest(execution_id="nope"), grpc.StatusCode.NOT_FOUND),
    (
        "list with bad context",
        "ListExecutions",
        pb.ListExecutionsRequest(context_id="a b"),
        grpc.StatusCode.INVALID_ARGUMENT,
    ),
]


@pytest.mark.parametrize(
    ("method", "request_message", "code"),
    [case[1:] for case in BAD_REQUESTS],
    ids=[case[0] for case in BAD_REQUESTS],
)
async def test_bad_input_gets_its_status_and_the_daemon_keeps_serving(
    channel: grpc.aio.Channel, stub: Stub, method: str, request_message: object, code: grpc.StatusCode
) -> None:
    # "x" exists so that only the field under test is wrong.
    await stub.BeginExecution(pb.BeginExecutionRequest(execution_id="x"))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await getattr(stub, method)(request_message)
    assert caught.value.code() == code, caught.value.details()
    assert caught.value.details(), "every refusal says why"
    health = health_pb2_grpc.HealthStub(channel)
    status = await health.Check(health_pb2.HealthCheckRequest(service="interrupt.v1.CoordinatorService"))
    assert status.status == health_pb2.HealthCheckResponse.SERVING


async def test_duplicate_ids_and_ended_executions(stub: Stub) -> None:
    await stub.BeginExecution(pb.BeginExecutionRequest(execution_id="dup"))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.BeginExecution(pb.BeginExecutionRequest(execution_id="dup"))
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    await stub.EndExecution(pb.EndExecutionRequest(execution_id="dup"))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Interrupt(pb.InterruptRequest(execution_id="dup", reason=SIGINT))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.KeepAlive(pb.KeepAliveRequest(execution_id="dup"))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_watch_of_unknown_execution_is_not_found(stub: Stub) -> None:
    call = stub.WatchExecution(pb.WatchExecutionRequest(execution_id="nope"))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call.read()
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
