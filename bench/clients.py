"""In-process clients, one per kind of target, with the same shape: set a trial up (an
attached stream the server has acknowledged), then fire the trigger and time until the
pushed message is read. Raw generated stubs, no client library, so the daemon and the
bare grpc.aio floor pay the same client-side costs."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench.floor import READY
from bench.procs import AUTH_METADATA

RECV_TIMEOUT_S = 10.0
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


@dataclass
class Sample:
    """One trigger → push, on CLOCK_MONOTONIC (shared by every process on the host)."""

    fired_ns: int
    received_ns: int
    #: Daemon only: Cancel.tripped_at (wall clock) → received, on CLOCK_REALTIME.
    internal_ns: int | None = None

    @property
    def latency_ns(self) -> int:
        return self.received_ns - self.fired_ns


class Trial(Protocol):
    async def fire(self) -> Sample: ...
    async def finish(self) -> None: ...


class Target(Protocol):
    name: str

    async def setup(self) -> Trial: ...
    async def close(self) -> None: ...


class _Outgoing:
    """The sending half of a bidi call, fed from a queue; ``None`` half-closes."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    async def messages(self) -> AsyncIterator[Any]:
        while (message := await self.queue.get()) is not None:
            yield message


def channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)


# -- the daemon --------------------------------------------------------------------


class DaemonTarget:
    """The daemon; with ``doorbell`` the tool asks for the cancel doorbell and takes the
    cancel from whichever of it and the stream delivers first (as the Python client does)."""

    def __init__(
        self,
        address: str,
        behavior: pb.InterruptBehavior.ValueType = pb.INTERRUPT_BEHAVIOR_COOPERATIVE,
        doorbell: bool = False,
    ) -> None:
        self.name = "daemon+doorbell" if doorbell else "daemon"
        self.channel = channel(address)
        self.coordinator = pb_grpc.CoordinatorServiceStub(self.channel)
        self.tools = pb_grpc.ToolChannelServiceStub(self.channel)
        self.behavior = behavior
        self.doorbell = doorbell

    async def setup(self) -> DaemonTrial:
        begun = await self.coordinator.BeginExecution(pb.BeginExecutionRequest(), metadata=AUTH_METADATA)
        out = _Outgoing()
        call = self.tools.Attach(out.messages())
        hello = pb.Hello(
            attach_token=begun.attach_token, tool_name="bench", behavior=self.behavior, doorbell=self.doorbell
        )
        out.queue.put_nowait(pb.ToolMessage(hello=hello))
        attached = await asyncio.wait_for(call.read(), RECV_TIMEOUT_S)
        assert isinstance(attached, pb.SidecarMessage) and attached.HasField("attached"), attached
        bell = None
        if self.doorbell:
            assert attached.attached.HasField("doorbell"), "the daemon granted no doorbell"
            bell = await ring_doorbell(attached.attached.doorbell)
        return DaemonTrial(self, begun.execution_id, call, out, bell)

    async def close(self) -> None:
        await self.channel.close()


class DaemonTrial:
    def __init__(
        self,
        target: DaemonTarget,
        execution_id: str,
        call: grpc.aio.StreamStreamCall[pb.ToolMessage, pb.SidecarMessage],
        out: _Outgoing,
        bell: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None,
    ) -> None:
        self.target, self.execution_id, self.call, self.out = target, execution_id, call, out
        self.bell = bell

    async def fire(self) -> Sample:
        request = pb.InterruptRequest(execution_id=self.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT)
        fired = time.monotonic_ns()
        answer = self.target.coordinator.Interrupt(request, metadata=AUTH_METADATA)
        rung: pb.Cancel | None = None
        if self.bell is not None:
            rung = await asyncio.wait_for(read_doorbell(self.bell[0]), RECV_TIMEOUT_S)
            received = time.monotonic_ns()
            wall = time.time_ns()
            assert rung is not None, "the doorbell hung up without a cancel"
        message = await asyncio.wait_for(self.call.read(), RECV_TIMEOUT_S)
        if rung is None:
            received = time.monotonic_ns()
            wall = time.time_ns()
        await answer
        assert isinstance(message, pb.SidecarMessage) and message.HasField("cancel"), message
        cancel = rung if rung is not None else message.cancel
        return Sample(fired, received, wall - cancel.tripped_at.ToNanoseconds())

    async def finish(self) -> None:
        if self.bell is not None:
            self.bell[1].close()
        self.out.queue.put_nowait(pb.ToolMessage(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED)))
        self.out.queue.put_nowait(None)
        while await asyncio.wait_for(self.call.read(), RECV_TIMEOUT_S) is not grpc.aio.EOF:
            pass
        await self.target.coordinator.EndExecution(
            pb.EndExecutionRequest(execution_id=self.execution_id), metadata=AUTH_METADATA
        )


async def ring_doorbell(doorbell: pb.Doorbell) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect to the cancel doorbell and prove the token; the reader gets the cancel."""
    reader, writer = await asyncio.open_unix_connection(doorbell.path)
    writer.write(doorbell.token.encode())
    return reader, writer


async def read_doorbell(reader: asyncio.StreamReader) -> pb.Cancel | None:
    """The doorbell's cancel, or None when it hung up without one."""
    try:
        (length,) = struct.unpack(">I", await reader.readexactly(4))
        return pb.Cancel.FromString(await reader.readexactly(length))
    except asyncio.IncompleteReadError:
        return None


# -- the bare grpc.aio floor --------------------------------------------------------


class GrpcFloorTarget:
    def __init__(self, address: str) -> None:
        self.name = "grpc-floor"
        self.channel = channel(address)
        self.attach: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = self.channel.stream_stream(
            "/bench.Floor/Attach"
        )
        self.trip: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary("/bench.Floor/Trip")

    async def setup(self) -> GrpcFloorTrial:
        key = uuid.uuid4().hex.encode()
        out = _Outgoing()
        call = self.attach(out.messages())
        out.queue.put_nowait(key)
        ready = await asyncio.wait_for(call.read(), RECV_TIMEOUT_S)
        assert ready == READY, ready
        return GrpcFloorTrial(self, key, call, out)

    async def close(self) -> None:
        await self.channel.close()


class GrpcFloorTrial:
    def __init__(self, target: GrpcFloorTarget, key: bytes, call: grpc.aio.StreamStreamCall, out: _Outgoing) -> None:  # type: ignore[type-arg]
        self.target, self.key, self.call, self.out = target, key, call, out

    async def fire(self) -> Sample:
        fired = time.monotonic_ns()
        answer = self.target.trip(self.key, metadata=AUTH_METADATA)
        message = await asyncio.wait_for(self.call.read(), RECV_TIMEOUT_S)
        received = time.monotonic_ns()
        await answer
        assert isinstance(message, bytes) and message != READY, message
        return Sample(fired, received)

    async def finish(self) -> None:
        self.out.queue.put_nowait(None)
        while await asyncio.wait_for(self.call.read(), RECV_TIMEOUT_S) is not grpc.aio.EOF:
            pass


# -- the raw asyncio unix-socket floor ----------------------------------------------


class RawFloorTarget:
    def __init__(self, address: str) -> None:
        self.name = "raw-floor"
        self.path = address.removeprefix("unix://")
        self.control: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def setup(self) -> RawFloorTrial:
        if self.control is None:
            self.control = await asyncio.open_unix_connection(self.path)
        key = uuid.uuid4().hex.encode()
        reader, writer = await asyncio.open_unix_connection(self.path)
        writer.write(b"P" + key + b"\n")
        assert await asyncio.wait_for(reader.readline(), RECV_TIMEOUT_S) == b"r\n"
        return RawFloorTrial(self.control, key, reader, writer)

    async def close(self) -> None:
        if self.control is not None:
            self.control[1].close()


class RawFloorTrial:
    def __init__(
        self,
        control: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        key: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.control, self.key, self.reader, self.writer = control, key, reader, writer

    async def fire(self) -> Sample:
        creader, cwriter = self.control
        fired = time.monotonic_ns()
        cwriter.write(b"T" + self.key + b"\n")
        (size,) = struct.unpack("!I", await asyncio.wait_for(self.reader.readexactly(4), RECV_TIMEOUT_S))
        await self.reader.readexactly(size)
        received = time.monotonic_ns()
        assert await creader.readline() == b"k\n"
        return Sample(fired, received)

    async def finish(self) -> None:
        self.writer.close()
