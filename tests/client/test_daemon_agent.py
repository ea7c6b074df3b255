"""The agent side against the real daemon: begin / interrupt / end / watch, and the
interrupt-controller adapter of the cooperative-cancellation seed."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest
from interrupt_sidecar_client import (
    AlreadyExists,
    Coordinator,
    EventKind,
    FailedPrecondition,
    InterruptBehavior,
    InterruptReason,
    NotFound,
    SidecarInterruptController,
    aio,
    attach,
)

from tests.client.support import WAIT_S, Watcher, eventually
from tests.conftest import DaemonProcess

pytestmark = pytest.mark.timeout(60)


def test_begin_get_list_end(coordinator: Coordinator) -> None:
    begun = coordinator.begin(
        execution_id="turn-1", context_id="main", grace=timedelta(milliseconds=750), labels={"agent": "test"}
    )
    assert begun.execution_id == "turn-1"
    assert begun.attach_token and begun.attach_token not in repr(begun)
    assert begun.tool_env() == {
        "INTERRUPT_SIDECAR_ADDRESS": coordinator.address,
        "INTERRUPT_SIDECAR_TOKEN": begun.attach_token,
    }
    info = coordinator.get("turn-1")
    assert (info.cancelled, info.ended, info.reason) == (False, False, None)
    assert info.context_id == "main" and info.labels == {"agent": "test"}
    assert info.grace == timedelta(milliseconds=750)
    assert [execution.execution_id for execution in coordinator.list(context_id="main")] == ["turn-1"]
    with pytest.raises(AlreadyExists):
        coordinator.begin(execution_id="turn-1")
    ended = coordinator.end("turn-1")
    assert ended.ended and ended.ended_at is not None
    coordinator.end("turn-1")  # idempotent
    assert coordinator.list() == []
    assert [execution.execution_id for execution in coordinator.list(include_ended=True)] == ["turn-1"]


def test_interrupt_is_single_shot_and_the_first_reason_wins(coordinator: Coordinator) -> None:
    execution_id = coordinator.begin().execution_id
    first = coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT, detail="Ctrl+C")
    again = coordinator.interrupt(execution_id, reason=InterruptReason.BUDGET_EXCEEDED)
    assert [(o.execution_id, o.tripped, o.reason) for o in first] == [(execution_id, True, InterruptReason.USER_SIGINT)]
    assert [(o.tripped, o.reason) for o in again] == [(False, InterruptReason.USER_SIGINT)]
    info = coordinator.get(execution_id)
    assert info.cancelled and info.reason is InterruptReason.USER_SIGINT and info.detail == "Ctrl+C"
    assert info.tripped_at is not None
    coordinator.end(execution_id)


def test_a_context_interrupt_trips_only_that_context(coordinator: Coordinator) -> None:
    main = coordinator.begin(context_id="main").execution_id
    sub = coordinator.begin(context_id="sub-agent").execution_id
    outcomes = coordinator.interrupt(context_id="sub-agent", reason=InterruptReason.NOW_PRIORITY_INPUT)
    assert [(o.execution_id, o.tripped) for o in outcomes] == [(sub, True)]
    assert not coordinator.get(main).cancelled
    assert coordinator.get(sub).cancelled
    with pytest.raises(ValueError, match="exactly one"):
        coordinator.interrupt(main, context_id="main", reason=InterruptReason.USER_SIGINT)
    coordinator.end(main)
    coordinator.end(sub)


def test_a_child_trips_when_its_parent_does(coordinator: Coordinator) -> None:
    parent = coordinator.begin().execution_id
    child = coordinator.begin(parent_execution_id=parent).execution_id
    coordinator.interrupt(parent, reason=InterruptReason.USER_SIGINT)
    eventually(lambda: coordinator.get(child).cancelled, what="the cascade")
    assert coordinator.get(child).reason is InterruptReason.PARENT_CANCELLED
    coordinator.end(child)
    coordinator.end(parent)


def test_unknown_executions_are_not_found(coordinator: Coordinator) -> None:
    with pytest.raises(NotFound) as raised:
        coordinator.interrupt("no-such-execution", reason=InterruptReason.USER_SIGINT)
    assert "no-such-execution" in str(raised.value) or raised.value.message
    with pytest.raises(NotFound):
        coordinator.get("no-such-execution")


def test_keep_alive_renews_a_lease(coordinator: Coordinator) -> None:
    leased = coordinator.begin(lease_ttl=30).execution_id
    unleased = coordinator.begin().execution_id
    assert coordinator.keep_alive(leased) is not None
    assert coordinator.keep_alive(unleased) is None
    coordinator.end(leased)
    coordinator.end(unleased)


def test_watch_starts_with_a_snapshot_and_reports_the_tools_run(coordinator: Coordinator) -> None:
    begun = coordinator.begin()
    watcher = Watcher(coordinator, begun.execution_id)
    with attach(address=coordinator.address, token=begun.attach_token, behavior=InterruptBehavior.COOPERATIVE) as run:
        coordinator.interrupt(begun.execution_id, reason=InterruptReason.TASK_CANCELLED)
        assert run.signal.event.wait(WAIT_S)
    coordinator.end(begun.execution_id)
    watcher.join()
    kinds = watcher.kinds()
    assert kinds[0] == "snapshot" and kinds[-1] == "ended"
    for earlier, later in (("tool_attached", "tripped"), ("tripped", "tool_unwound"), ("tool_unwound", "ended")):
        assert kinds.index(earlier) < kinds.index(later), kinds
    snapshot = watcher.events[0].snapshot
    assert snapshot is not None and snapshot.execution_id == begun.execution_id and not snapshot.cancelled
    sequences = [event.sequence for event in watcher.events[1:]]
    assert sequences == sorted(sequences)


async def test_async_coordinator_round_trip(daemon: DaemonProcess) -> None:
    async with aio.AsyncCoordinator(daemon.address) as coordinator:
        async with coordinator.execution(context_id="async") as begun:
            events = coordinator.watch(begun.execution_id)
            first = await asyncio.wait_for(anext(events), WAIT_S)
            assert first.kind is EventKind.SNAPSHOT
            outcomes = await coordinator.interrupt(begun.execution_id, reason=InterruptReason.SESSION_RELEASED)
            assert outcomes[0].tripped
            while (event := await asyncio.wait_for(anext(events), WAIT_S)).kind is not EventKind.TRIPPED:
                pass
            assert event.proto.tripped.reason == int(InterruptReason.SESSION_RELEASED)
            await events.aclose()
        assert (await coordinator.get(begun.execution_id)).ended


# -- the interrupt-controller adapter ---------------------------------------------------------


def test_the_controller_event_is_set_by_a_sidecar_interrupt(daemon: DaemonProcess, coordinator: Coordinator) -> None:
    with SidecarInterruptController(daemon.address, context_id="main") as controller:
        assert not controller.is_set() and controller.reason is None
        controller.check()
        execution_id = controller.execution_id
        assert execution_id is not None
        # Someone else — a Ctrl+C handler, a budget guard — interrupts through the sidecar.
        coordinator.interrupt(execution_id, reason=InterruptReason.BUDGET_EXCEEDED)
        assert controller.event.wait(WAIT_S)
        assert controller.is_set()
        assert controller.reason == "BUDGET_EXCEEDED"
        assert controller.interrupt_reason is InterruptReason.BUDGET_EXCEEDED
        with pytest.raises(InterruptedError, match="BUDGET_EXCEEDED"):
            controller.check()


def test_controller_request_trips_the_execution_for_its_tools(coordinator: Coordinator, daemon: DaemonProcess) -> None:
    with SidecarInterruptController(daemon.address) as controller:
        env = controller.tool_env()
        with attach(
            address=env["INTERRUPT_SIDECAR_ADDRESS"],
            token=env["INTERRUPT_SIDECAR_TOKEN"],
            behavior=InterruptBehavior.COOPERATIVE,
        ) as run:
            controller.request("user_stop")
            assert controller.is_set() and controller.reason == "user_stop"  # at once
            assert run.signal.event.wait(WAIT_S)
            assert run.signal.reason is InterruptReason.USER_SIGINT
            assert run.signal.detail == "user_stop"
        assert controller.execution_id is not None
        info = coordinator.get(controller.execution_id)
        assert info.cancelled and info.detail == "user_stop"


def test_controller_clear_starts_a_fresh_turn(daemon: DaemonProcess, coordinator: Coordinator) -> None:
    with SidecarInterruptController(daemon.address) as controller:
        first = controller.execution_id
        controller.request(InterruptReason.NOW_PRIORITY_INPUT)
        assert controller.reason == "NOW_PRIORITY_INPUT"
        controller.clear()
        second = controller.execution_id
        assert second is not None and second != first
        assert not controller.is_set() and controller.reason is None
        assert first is not None and coordinator.get(first).ended
        assert not coordinator.get(second).cancelled
        # A stale interrupt of the old turn cannot reach the new one: that turn has ended.
        with pytest.raises(FailedPrecondition):
            coordinator.interrupt(first, reason=InterruptReason.USER_SIGINT)
        assert not controller.is_set() and not coordinator.get(second).cancelled
    assert coordinator.get(second).ended


def test_controller_bound_to_an_existing_execution(daemon: DaemonProcess, coordinator: Coordinator) -> None:
    execution_id = coordinator.begin().execution_id
    coordinator.interrupt(execution_id, reason=InterruptReason.HOLDER_LOST, detail="node-3 gone")
    controller = SidecarInterruptController(daemon.address, execution_id=execution_id)
    try:
        assert controller.is_set()  # the trip before it bound is reflected at once
        assert controller.reason == "node-3 gone"
        controller.clear()
        assert not controller.is_set() and controller.execution_id is None
        controller.request("offline stop")  # unbound: a local flag, like the seed's controller
        assert controller.is_set()
        second = coordinator.begin().execution_id
        controller.bind(second)
        assert not controller.is_set()
        threading.Thread(
            target=coordinator.interrupt, args=(second,), kwargs={"reason": InterruptReason.LEASE_LOST}
        ).start()
        assert controller.event.wait(WAIT_S)
        coordinator.end(second)
    finally:
        controller.close()
    assert not coordinator.get(execution_id).ended  # bound mode never ends what it did not begin
    coordinator.end(execution_id)
