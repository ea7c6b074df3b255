"""Cascades across daemons: parent → child → grandchild in three daemons on loopback.

The top daemon listens on TCP with a bearer token (as across pods); the middle one keeps a
journal so it can be killed and restarted; the bottom one holds the tool that must hear
the cancel.
"""

from __future__ import annotations

import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess, free_port, start_daemon
from tests.daemon.wire import RawTool, Watch, eventually

TOKEN = "federation-test-coordinator-credential"
BEARER = (("authorization", f"Bearer {TOKEN}"),)


class Node:
    """One daemon of the chain, restartable on the same socket, port and state dir."""

    def __init__(self, directory: Path, *extra: str) -> None:
        self.dir = directory
        self.extra = extra
        self.process: DaemonProcess = start_daemon(directory, *extra)
        self.channel = grpc.aio.insecure_channel(self.process.address)
        self.stub: pb_grpc.CoordinatorServiceAsyncStub = pb_grpc.CoordinatorServiceStub(self.channel)

    async def restart_after_kill_9(self) -> None:
        self.process.stop(signal.SIGKILL)
        await self.channel.close()
        self.process = start_daemon(self.dir, *self.extra)
        self.channel = grpc.aio.insecure_channel(self.process.address)
        self.stub = pb_grpc.CoordinatorServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()
        self.process.stop(signal.SIGTERM)


@pytest.fixture
def dirs() -> Iterator[list[Path]]:
    with tempfile.TemporaryDirectory(prefix="isd-fed-", dir="/tmp") as root:
        made = [Path(root) / name for name in ("a", "b", "c")]
        for path in made:
            path.mkdir()
        yield made


@pytest.fixture
async def chain(dirs: list[Path]) -> AsyncIterator[tuple[Node, Node, Node, str]]:
    top_dir, middle_dir, bottom_dir = dirs
    (top_dir / "token").write_text(TOKEN)
    port = free_port()
    top = Node(top_dir, "--listen", f"127.0.0.1:{port}", "--auth-token-file", str(top_dir / "token"))
    middle = Node(middle_dir, "--state-dir", str(middle_dir / "state"))
    bottom = Node(bottom_dir)
    try:
        yield top, middle, bottom, f"127.0.0.1:{port}"
    finally:
        for node in (bottom, middle, top):
            await node.close()


async def link(
    chain: tuple[Node, Node, Node, str], *, unreachable_after: Duration | None = None
) -> tuple[str, str, pb.BeginExecutionResponse, RawTool]:
    """Begin parent (top) → child (middle) → grandchild (bottom); attach a tool to the grandchild."""
    top, middle, bottom, top_tcp = chain
    parent = await top.stub.BeginExecution(pb.BeginExecutionRequest())
    remote = pb.RemoteParent(address=top_tcp, execution_id=parent.execution_id, credential=TOKEN)
    if unreachable_after is not None:
        remote.unreachable_after.CopyFrom(unreachable_after)
    child = await middle.stub.BeginExecution(pb.BeginExecutionRequest(remote_parent=remote))
    assert child.execution.remote_parent.execution_id == parent.execution_id
    assert child.execution.remote_parent.credential == "", "the credential is never returned"
    grandchild = await bottom.stub.BeginExecution(
        pb.BeginExecutionRequest(
            remote_parent=pb.RemoteParent(address=middle.process.address, execution_id=child.execution_id)
        )
    )
    tool = RawTool(bottom.channel)
    await tool.hello(grandchild.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
    # A trip right after this is caught either way: a follower that subscribes late reads
    # the parent's state in the snapshot its watch starts with.
    return parent.execution_id, child.execution_id, grandchild, tool


@pytest.mark.timeout(60)
async def test_a_trip_at_the_top_reaches_the_grandchilds_tool(chain: tuple[Node, Node, Node, str]) -> None:
    top, middle, _, _ = chain
    parent_id, child_id, _, tool = await link(chain)
    started = time.monotonic()
    await top.stub.Interrupt(
        pb.InterruptRequest(execution_id=parent_id, reason=pb.INTERRUPT_REASON_USER_SIGINT, detail="Ctrl+C"),
        metadata=BEARER,
    )
    cancel = (await tool.recv()).cancel
    assert cancel.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED
    assert parent_id in cancel.detail or child_id in cancel.detail
    assert time.monotonic() - started < 5
    child = (await middle.stub.GetExecution(pb.GetExecutionRequest(execution_id=child_id))).execution
    assert child.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED and "Ctrl+C" in child.detail


@pytest.mark.timeout(60)
async def test_the_chain_survives_the_middle_daemon_being_killed_and_restarted(
    chain: tuple[Node, Node, Node, str],
) -> None:
    top, middle, _, _ = chain
    parent_id, child_id, _, tool = await link(chain)
    await middle.restart_after_kill_9()
    # The journal brought the child back, and with it the subscription to its own parent.
    restored = (await middle.stub.GetExecution(pb.GetExecutionRequest(execution_id=child_id))).execution
    assert not restored.cancelled and restored.remote_parent.execution_id == parent_id
    await top.stub.Interrupt(
        pb.InterruptRequest(execution_id=parent_id, reason=pb.INTERRUPT_REASON_USER_SIGINT), metadata=BEARER
    )
    # The bottom daemon reconnected to the restarted middle one, so the cancel still arrives.
    cancel = (await tool.recv(timeout=15)).cancel
    assert cancel.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED


@pytest.mark.timeout(60)
async def test_an_unreachable_parent_daemon_trips_holder_lost_within_the_bound(
    chain: tuple[Node, Node, Node, str],
) -> None:
    top, middle, _, _ = chain
    bound = Duration(seconds=1)
    _, child_id, _, tool = await link(chain, unreachable_after=bound)
    watch = await Watch(middle.stub, child_id).started()
    top.process.stop(signal.SIGKILL)
    killed_at = time.monotonic()
    await watch.until(lambda e: e.HasField("tripped"))
    took = time.monotonic() - killed_at
    assert watch.of("tripped")[0].reason == pb.INTERRUPT_REASON_HOLDER_LOST
    # The bound, plus one reconnect attempt's round (the backoff never sleeps past the bound).
    assert took < bound.seconds + 3, f"HOLDER_LOST came {took:.1f}s after the parent's daemon died"
    # ... and the grandchild, below, trips with PARENT_CANCELLED.
    assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_PARENT_CANCELLED
    watch.close()


async def test_keep_running_when_unreachable_keeps_the_child(chain: tuple[Node, Node, Node, str]) -> None:
    top, middle, _, top_tcp = chain
    parent = await top.stub.BeginExecution(pb.BeginExecutionRequest())
    remote = pb.RemoteParent(
        address=top_tcp,
        execution_id=parent.execution_id,
        credential=TOKEN,
        keep_running_when_unreachable=True,
        unreachable_after=Duration(nanos=200_000_000),
    )
    child = await middle.stub.BeginExecution(pb.BeginExecutionRequest(remote_parent=remote))
    # A sibling with the default (trip) policy shows when the bound has certainly passed.
    sibling = await middle.stub.BeginExecution(
        pb.BeginExecutionRequest(
            remote_parent=pb.RemoteParent(
                address=top_tcp,
                execution_id=parent.execution_id,
                credential=TOKEN,
                unreachable_after=Duration(nanos=200_000_000),
            )
        )
    )
    top.process.stop(signal.SIGKILL)

    async def sibling_tripped() -> bool:
        got = await middle.stub.GetExecution(pb.GetExecutionRequest(execution_id=sibling.execution_id))
        return got.execution.cancelled

    await eventually(sibling_tripped, timeout=10)
    kept = (await middle.stub.GetExecution(pb.GetExecutionRequest(execution_id=child.execution_id))).execution
    assert not kept.cancelled


async def test_begin_refuses_an_unknown_or_unreachable_remote_parent(chain: tuple[Node, Node, Node, str]) -> None:
    _, middle, _, top_tcp = chain
    cases = [
        (pb.RemoteParent(address=top_tcp, execution_id="no-such", credential=TOKEN), grpc.StatusCode.NOT_FOUND),
        (pb.RemoteParent(address=top_tcp, execution_id="x", credential="wrong"), grpc.StatusCode.PERMISSION_DENIED),
        (pb.RemoteParent(address=f"127.0.0.1:{free_port()}", execution_id="x"), grpc.StatusCode.UNAVAILABLE),
        (pb.RemoteParent(address="", execution_id="x"), grpc.StatusCode.INVALID_ARGUMENT),
    ]
    for remote, code in cases:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await middle.stub.BeginExecution(pb.BeginExecutionRequest(remote_parent=remote))
        assert refused.value.code() == code, (remote, refused.value.details())
