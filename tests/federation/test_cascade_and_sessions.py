"""Cascades inside one daemon, sessions and tasks: a trip reaches exactly what it should."""

from __future__ import annotations

import grpc
import pytest
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.daemon.wire import RawTool

DEPTH = 10
FAN_OUT = 100


async def build_tree(stub: pb_grpc.CoordinatorServiceAsyncStub, tag: str) -> dict[str, str]:
    """A chain of DEPTH executions below a root, with FAN_OUT children at the middle of it.

    Returns child id -> parent id ("" for the root).
    """
    parents = {f"{tag}-root": ""}
    await stub.BeginExecution(pb.BeginExecutionRequest(execution_id=f"{tag}-root"))
    above = f"{tag}-root"
    for level in range(1, DEPTH + 1):
        name = f"{tag}-n{level}"
        await stub.BeginExecution(pb.BeginExecutionRequest(execution_id=name, parent_execution_id=above))
        parents[name] = above
        above = name
    middle = f"{tag}-n{DEPTH // 2}"
    for index in range(FAN_OUT):
        name = f"{tag}-leaf{index}"
        await stub.BeginExecution(pb.BeginExecutionRequest(execution_id=name, parent_execution_id=middle))
        parents[name] = middle
    return parents


def subtree(parents: dict[str, str], top: str) -> set[str]:
    found = {top}
    grew = True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in found and child not in found:
                found.add(child)
                grew = True
    return found


@pytest.mark.timeout(120)
@pytest.mark.parametrize("node", ["root", "n1", "n5", "n10", "leaf42"])
async def test_a_trip_reaches_exactly_its_subtree_with_parent_cancelled(
    stub: pb_grpc.CoordinatorServiceAsyncStub, node: str
) -> None:
    parents = await build_tree(stub, node)
    target = f"{node}-{node}" if node != "root" else f"{node}-root"
    await stub.Interrupt(pb.InterruptRequest(execution_id=target, reason=pb.INTERRUPT_REASON_USER_SIGINT))
    expected = subtree(parents, target)
    listed = (await stub.ListExecutions(pb.ListExecutionsRequest())).executions
    mine = {e.execution_id: e for e in listed if e.execution_id in parents}
    assert len(mine) == len(parents)
    tripped = {eid for eid, e in mine.items() if e.cancelled}
    assert tripped == expected, f"tripped {len(tripped)}, expected the {len(expected)} of {target}'s subtree"
    assert mine[target].reason == pb.INTERRUPT_REASON_USER_SIGINT
    for eid in expected - {target}:
        assert mine[eid].reason == pb.INTERRUPT_REASON_PARENT_CANCELLED, eid


async def test_ending_a_parent_cancels_and_ends_its_children(
    stub: pb_grpc.CoordinatorServiceAsyncStub, channel: grpc.aio.Channel
) -> None:
    parent = await stub.BeginExecution(pb.BeginExecutionRequest())
    child = await stub.BeginExecution(pb.BeginExecutionRequest(parent_execution_id=parent.execution_id))
    grandchild = await stub.BeginExecution(pb.BeginExecutionRequest(parent_execution_id=child.execution_id))
    tool = RawTool(channel)
    await tool.hello(grandchild.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
    ended = await stub.EndExecution(pb.EndExecutionRequest(execution_id=parent.execution_id))
    assert ended.execution.ended and not ended.execution.cancelled  # the parent itself just ended
    cancel = (await tool.recv()).cancel
    assert cancel.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED
    for begun in (child, grandchild):
        execution = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=begun.execution_id))).execution
        assert execution.ended and execution.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED


async def test_a_childs_trip_never_reaches_its_parent_or_siblings(stub: pb_grpc.CoordinatorServiceAsyncStub) -> None:
    parent = await stub.BeginExecution(pb.BeginExecutionRequest())
    first, second = [
        await stub.BeginExecution(pb.BeginExecutionRequest(parent_execution_id=parent.execution_id)) for _ in range(2)
    ]
    await stub.Interrupt(pb.InterruptRequest(execution_id=first.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT))
    for begun, cancelled in ((parent, False), (first, True), (second, False)):
        execution = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=begun.execution_id))).execution
        assert execution.cancelled is cancelled


async def test_releasing_a_session_trips_its_executions_only(stub: pb_grpc.CoordinatorServiceAsyncStub) -> None:
    mine = [await stub.BeginExecution(pb.BeginExecutionRequest(session_id="s-1")) for _ in range(3)]
    other = await stub.BeginExecution(pb.BeginExecutionRequest(session_id="s-2"))
    answer = await stub.Interrupt(pb.InterruptRequest(session_id="s-1"))  # reason defaults for a session
    assert sorted(o.execution_id for o in answer.outcomes) == sorted(b.execution_id for b in mine)
    assert all(o.tripped and o.reason == pb.INTERRUPT_REASON_SESSION_RELEASED for o in answer.outcomes)
    untouched = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=other.execution_id))).execution
    assert not untouched.cancelled and untouched.session_id == "s-2"


async def test_cancelling_a_task_trips_its_executions_with_task_cancelled(
    stub: pb_grpc.CoordinatorServiceAsyncStub,
) -> None:
    runs = [await stub.BeginExecution(pb.BeginExecutionRequest(task_id="nightly-report")) for _ in range(2)]
    unrelated = await stub.BeginExecution(pb.BeginExecutionRequest(task_id="hourly"))
    answer = await stub.Interrupt(pb.InterruptRequest(task_id="nightly-report", detail="cancelled by cron"))
    assert {o.execution_id for o in answer.outcomes} == {r.execution_id for r in runs}
    assert all(o.reason == pb.INTERRUPT_REASON_TASK_CANCELLED for o in answer.outcomes)
    untouched = await stub.GetExecution(pb.GetExecutionRequest(execution_id=unrelated.execution_id))
    assert not untouched.execution.cancelled


async def test_an_explicit_reason_beats_the_session_default(stub: pb_grpc.CoordinatorServiceAsyncStub) -> None:
    begun = await stub.BeginExecution(pb.BeginExecutionRequest(session_id="s-3"))
    answer = await stub.Interrupt(pb.InterruptRequest(session_id="s-3", reason=pb.INTERRUPT_REASON_USER_SIGINT))
    assert answer.outcomes[0].execution_id == begun.execution_id
    assert answer.outcomes[0].reason == pb.INTERRUPT_REASON_USER_SIGINT


async def test_an_execution_id_target_still_needs_a_reason(stub: pb_grpc.CoordinatorServiceAsyncStub) -> None:
    begun = await stub.BeginExecution(pb.BeginExecutionRequest())
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.Interrupt(pb.InterruptRequest(execution_id=begun.execution_id))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
