"""Failing sequences the model-based test (test_model.py) found, shrunk, kept as tests."""

from __future__ import annotations

from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from tests.daemon.test_crash_safety import Daemon, running, state_dir

__all__ = ["running", "state_dir"]  # the fixtures, used by name


async def test_a_cascaded_trip_keeps_its_time_and_detail_across_a_restart(running: Daemon) -> None:
    # Found by the model: begin(parent), begin(child of it), interrupt(parent), kill -9,
    # restart. The restored parent was tripped again before the child was restored, so the
    # child's restore cascaded a fresh PARENT_CANCELLED into it, stamped at the restart: its
    # journaled trip time (and detail) was lost.
    parent = await running.begin()
    child = await running.begin(parent_execution_id=parent.execution_id)
    await running.interrupt(parent.execution_id, pb.INTERRUPT_REASON_USER_SIGINT)
    before = await running.get(child.execution_id)
    assert before.cancelled and before.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED

    await running.crash_and_restart()

    after = await running.get(child.execution_id)
    assert after.cancelled and after.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED
    assert after.tripped_at == before.tripped_at
    assert after.detail == before.detail
    restored_parent = await running.get(parent.execution_id)
    assert restored_parent.reason == pb.INTERRUPT_REASON_USER_SIGINT
    # The link is back: ending the parent still ends its child.
    await running.stub.EndExecution(pb.EndExecutionRequest(execution_id=parent.execution_id))
    assert (await running.get(child.execution_id)).ended
