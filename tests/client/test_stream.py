"""The client's end of the Attach stream against a scripted daemon (FakeSidecar).

What the real daemon rarely or never does on purpose — refusing each way, answering out
of order, a terminator that fails, a stream that ends early — scripted message by message.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from interrupt_sidecar_client import (
    AlreadyExists,
    CancelledExecution,
    ConnectionLost,
    FailedPrecondition,
    InterruptBehavior,
    InterruptReason,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    SidecarError,
    ToolOutcome,
    Unauthenticated,
    Unavailable,
    aio,
)
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from tests.client.support import WAIT_S, FakeSidecar, Peer, attached

pytestmark = pytest.mark.timeout(30)


async def attach_to(fake: FakeSidecar, behavior: InterruptBehavior, **answer: object) -> tuple[aio.AsyncToolRun, Peer]:
    """Attach through the fake; ``answer`` is what the daemon replies to hello (default: attached)."""
    opening = asyncio.ensure_future(aio.attach(address=fake.address, token="ist1.t.s", behavior=behavior))
    peer = await fake.arun(fake.accept())
    await fake.arun(peer.send(**(answer or {"attached": attached()})))
    return await asyncio.wait_for(opening, WAIT_S), peer


async def test_hello_carries_the_tool_description(fake_sidecar: FakeSidecar) -> None:
    opening = asyncio.ensure_future(
        aio.attach(
            address=fake_sidecar.address,
            token="ist1.abc.secret",
            behavior=InterruptBehavior.COOPERATIVE,
            tool_name="grep",
            tool_call_id="call-7",
            pid=4321,
        )
    )
    peer = await fake_sidecar.arun(fake_sidecar.accept())
    assert peer.hello == pb.Hello(
        attach_token="ist1.abc.secret",
        tool_name="grep",
        tool_call_id="call-7",
        behavior=pb.INTERRUPT_BEHAVIOR_COOPERATIVE,
        pid=4321,
        doorbell=True,  # an interruptible tool on a unix socket asks for the cancel doorbell
    )
    await fake_sidecar.arun(peer.send(attached=attached("exec-42")))
    run = await asyncio.wait_for(opening, WAIT_S)
    assert run.attached and run.execution_id == "exec-42" and run.tool_id == "tool-1"
    await run.unwind()
    unwound = await fake_sidecar.arun(peer.recv())
    assert unwound is not None and unwound.unwound.outcome == pb.TOOL_OUTCOME_COMPLETED
    assert await fake_sidecar.arun(peer.recv()) is None  # then the client half-closes
    await fake_sidecar.arun(peer.end())


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (grpc.StatusCode.UNAUTHENTICATED, Unauthenticated),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgument),
        (grpc.StatusCode.NOT_FOUND, NotFound),
        (grpc.StatusCode.PERMISSION_DENIED, PermissionDenied),
        (grpc.StatusCode.FAILED_PRECONDITION, FailedPrecondition),
    ],
)
async def test_a_refused_attach_raises_the_mapped_error(
    fake_sidecar: FakeSidecar, code: grpc.StatusCode, error: type[SidecarError]
) -> None:
    opening = asyncio.ensure_future(aio.attach(address=fake_sidecar.address, token="ist1.t.s"))
    peer = await fake_sidecar.arun(fake_sidecar.accept())
    await fake_sidecar.arun(peer.end(code, "the daemon's reason"))
    with pytest.raises(error) as raised:
        await asyncio.wait_for(opening, WAIT_S)
    assert raised.value.code is code
    assert "the daemon's reason" in str(raised.value)
    assert code.name in str(raised.value)


async def test_an_unreachable_daemon_raises_unavailable() -> None:
    with pytest.raises(Unavailable, match="nowhere"):
        await aio.attach(address="unix:///tmp/nowhere-interrupt-sidecar.sock", token="ist1.t.s", timeout=WAIT_S)


async def test_already_tripped_interruptible_tool_starts_with_the_full_cancel(fake_sidecar: FakeSidecar) -> None:
    opening = asyncio.ensure_future(
        aio.attach(address=fake_sidecar.address, token="ist1.t.s", behavior=InterruptBehavior.COOPERATIVE)
    )
    peer = await fake_sidecar.arun(fake_sidecar.accept())
    await fake_sidecar.arun(peer.send(attached=attached(cancelled=True, reason=pb.INTERRUPT_REASON_BUDGET_EXCEEDED)))
    await fake_sidecar.arun(peer.send(cancel=pb.Cancel(reason=pb.INTERRUPT_REASON_BUDGET_EXCEEDED, detail="$5 spent")))
    run = await asyncio.wait_for(opening, WAIT_S)
    assert run.signal.is_cancelled
    assert run.signal.reason is InterruptReason.BUDGET_EXCEEDED
    assert run.signal.detail == "$5 spent"
    await run.unwind(ToolOutcome.INTERRUPTED)
    await fake_sidecar.arun(peer.end())


async def test_callback_terminators_run_in_order_and_each_result_is_reported(fake_sidecar: FakeSidecar) -> None:
    run, peer = await attach_to(fake_sidecar, InterruptBehavior.THREAD_INTERRUPT)
    calls: list[str] = []

    def failing() -> None:
        calls.append("second")
        raise ProcessLookupError("already gone")

    for terminator_id, callback in (
        ("first", lambda: calls.append("first")),
        ("second", failing),
        ("third", lambda: calls.append("third")),
    ):
        registering = asyncio.ensure_future(run.registrar.register(callback, terminator_id=terminator_id))
        request = await fake_sidecar.arun(peer.recv())
        assert request is not None and request.register_terminator.terminator_id == terminator_id
        assert request.register_terminator.HasField("callback")
        await fake_sidecar.arun(peer.send(terminator_registered=pb.TerminatorRegistered(terminator_id=terminator_id)))
        await asyncio.wait_for(registering, WAIT_S)

    await fake_sidecar.arun(peer.send(cancel=pb.Cancel(reason=pb.INTERRUPT_REASON_USER_SIGINT)))
    for terminator_id in ("first", "second", "third", "ghost"):
        await fake_sidecar.arun(peer.send(run_terminator=pb.RunTerminator(terminator_id=terminator_id)))
    results: dict[str, str] = {}
    while len(results) < 4:
        message = await fake_sidecar.arun(peer.recv())
        assert message is not None and message.WhichOneof("message") == "terminator_result"
        results[message.terminator_result.terminator_id] = message.terminator_result.error
    assert calls == ["first", "second", "third"]
    assert results["first"] == results["third"] == ""
    assert results["second"] == "ProcessLookupError: already gone"
    assert "not registered" in results["ghost"]
    assert run.signal.reason is InterruptReason.USER_SIGINT
    await run.unwind(ToolOutcome.INTERRUPTED)
    await fake_sidecar.arun(peer.end())


async def test_run_terminator_before_the_acknowledgement_still_runs_it(fake_sidecar: FakeSidecar) -> None:
    run, peer = await attach_to(fake_sidecar, InterruptBehavior.THREAD_INTERRUPT)
    ran = asyncio.Event()
    registering = asyncio.ensure_future(run.registrar.register(ran.set, terminator_id="late"))
    await fake_sidecar.arun(peer.recv())
    await fake_sidecar.arun(peer.send(run_terminator=pb.RunTerminator(terminator_id="late")))
    await fake_sidecar.arun(peer.send(terminator_registered=pb.TerminatorRegistered(terminator_id="late")))
    await asyncio.wait_for(registering, WAIT_S)
    await asyncio.wait_for(ran.wait(), WAIT_S)
    await run.unwind()
    await fake_sidecar.arun(peer.end())


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (grpc.StatusCode.FAILED_PRECONDITION, FailedPrecondition),
        (grpc.StatusCode.ALREADY_EXISTS, AlreadyExists),
        (grpc.StatusCode.NOT_FOUND, NotFound),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgument),
    ],
)
async def test_a_refused_registration_raises_the_mapped_error(
    fake_sidecar: FakeSidecar, code: grpc.StatusCode, error: type[SidecarError]
) -> None:
    run, peer = await attach_to(fake_sidecar, InterruptBehavior.EXTERNALLY_TERMINATED)
    registering = asyncio.ensure_future(run.registrar.register_process_group(4242, terminator_id="group"))
    request = await fake_sidecar.arun(peer.recv())
    assert request is not None and request.register_terminator.process_group.pgid == 4242
    refusal = pb.ChannelError(code=code.value[0], message="refused by the script", terminator_id="group")
    await fake_sidecar.arun(peer.send(error=refusal))
    with pytest.raises(error) as raised:
        await asyncio.wait_for(registering, WAIT_S)
    assert raised.value.terminator_id == "group"
    assert raised.value.code is code
    assert run.registrar.terminators == ()
    await run.unwind()
    await fake_sidecar.arun(peer.end())


async def test_unregister_waits_for_the_acknowledgement(fake_sidecar: FakeSidecar) -> None:
    run, peer = await attach_to(fake_sidecar, InterruptBehavior.THREAD_INTERRUPT)
    registering = asyncio.ensure_future(run.registrar.register(lambda: None, terminator_id="t"))
    await fake_sidecar.arun(peer.recv())
    await fake_sidecar.arun(peer.send(terminator_registered=pb.TerminatorRegistered(terminator_id="t")))
    terminator = await asyncio.wait_for(registering, WAIT_S)
    unregistering = asyncio.ensure_future(run.registrar.unregister(terminator))
    request = await fake_sidecar.arun(peer.recv())
    assert request is not None and request.unregister_terminator.terminator_id == "t"
    await asyncio.sleep(0.01)
    assert not unregistering.done()
    await fake_sidecar.arun(peer.send(terminator_unregistered=pb.TerminatorUnregistered(terminator_id="t")))
    await asyncio.wait_for(unregistering, WAIT_S)
    await run.unwind()
    await fake_sidecar.arun(peer.end())


async def test_a_stream_that_ends_early_fails_pending_and_later_requests(fake_sidecar: FakeSidecar) -> None:
    run, peer = await attach_to(fake_sidecar, InterruptBehavior.THREAD_INTERRUPT)
    registering = asyncio.ensure_future(run.registrar.register(lambda: None))
    await fake_sidecar.arun(peer.recv())
    await fake_sidecar.arun(peer.end(grpc.StatusCode.UNAVAILABLE, "daemon shutting down"))
    with pytest.raises(Unavailable):
        await asyncio.wait_for(registering, WAIT_S)
    with pytest.raises(Unavailable):
        await run.registrar.register(lambda: None)
    assert not run.signal.is_cancelled  # losing the daemon is not a cancel
    await run.unwind()  # still completes


async def test_a_daemon_that_closes_the_stream_cleanly_gives_connection_lost(fake_sidecar: FakeSidecar) -> None:
    run, peer = await attach_to(fake_sidecar, InterruptBehavior.THREAD_INTERRUPT)
    await fake_sidecar.arun(peer.end())

    async def register_until_refused() -> None:
        for _ in range(1000):  # until the client has seen the end
            await run.registrar.register(lambda: None)
            await asyncio.sleep(0.01)

    with pytest.raises(ConnectionLost):
        await register_until_refused()
    await run.unwind()


async def test_thread_interrupt_from_a_cancel_message(fake_sidecar: FakeSidecar) -> None:
    run, peer = await attach_to(fake_sidecar, InterruptBehavior.THREAD_INTERRUPT)
    entered = asyncio.Event()

    async def tool() -> None:
        async with run:
            entered.set()
            await asyncio.sleep(60)

    task = asyncio.ensure_future(tool())
    await asyncio.wait_for(entered.wait(), WAIT_S)
    await fake_sidecar.arun(peer.send(cancel=pb.Cancel(reason=pb.INTERRUPT_REASON_HOLDER_LOST, detail="node 3")))
    with pytest.raises(CancelledExecution) as raised:
        await asyncio.wait_for(task, WAIT_S)
    assert raised.value.reason is InterruptReason.HOLDER_LOST
    unwound = await fake_sidecar.arun(peer.recv())
    assert unwound is not None and unwound.unwound.outcome == pb.TOOL_OUTCOME_INTERRUPTED
    await fake_sidecar.arun(peer.end())
