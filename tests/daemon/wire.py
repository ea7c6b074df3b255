"""Raw wire helpers: talk to the daemon with the generated stubs only, as a tool in
any language would."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

RECV_TIMEOUT_S = 10.0


class RawTool:
    """One Attach stream driven message by message."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._outgoing: asyncio.Queue[pb.ToolMessage | None] = asyncio.Queue()
        self.call = pb_grpc.ToolChannelServiceStub(channel).Attach(self._requests())

    async def _requests(self) -> AsyncIterator[pb.ToolMessage]:
        while (message := await self._outgoing.get()) is not None:
            yield message

    async def send(self, **fields: Any) -> None:
        await self._outgoing.put(pb.ToolMessage(**fields))

    async def put(self, message: pb.ToolMessage) -> None:
        await self._outgoing.put(message)

    async def hello(self, token: str, behavior: int = 0, name: str = "tool", pid: int = 0) -> pb.SidecarMessage:
        await self.send(hello=pb.Hello(attach_token=token, tool_name=name, behavior=behavior, pid=pid))  # type: ignore[arg-type]
        return await self.recv()

    async def recv(self, timeout: float = RECV_TIMEOUT_S) -> pb.SidecarMessage:
        message = await asyncio.wait_for(self.call.read(), timeout)
        assert message is not grpc.aio.EOF, "stream ended"
        assert isinstance(message, pb.SidecarMessage)
        return message

    async def close(self) -> list[pb.SidecarMessage]:
        """Half-close and return every message still to come."""
        await self._outgoing.put(None)
        rest: list[pb.SidecarMessage] = []
        while True:
            message = await asyncio.wait_for(self.call.read(), RECV_TIMEOUT_S)
            if message is grpc.aio.EOF:
                return rest
            assert isinstance(message, pb.SidecarMessage)
            rest.append(message)

    async def status(self) -> grpc.StatusCode:
        """Wait for the stream's end and return its status code."""
        return await asyncio.wait_for(self.call.code(), RECV_TIMEOUT_S)


async def eventually(check: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01) -> Any:
    """Poll ``check`` (sync or async) until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {result!r})")
        await asyncio.sleep(interval)


class Watch:
    """A WatchExecution stream opened before the action it observes."""

    def __init__(self, stub: pb_grpc.CoordinatorServiceAsyncStub, execution_id: str) -> None:
        self.call: grpc.aio.UnaryStreamCall[pb.WatchExecutionRequest, pb.ExecutionEvent] = stub.WatchExecution(
            pb.WatchExecutionRequest(execution_id=execution_id)
        )
        self.seen: list[pb.ExecutionEvent] = []

    async def next(self) -> pb.ExecutionEvent | None:
        event = await asyncio.wait_for(self.call.read(), RECV_TIMEOUT_S)
        if event is grpc.aio.EOF:
            return None
        assert isinstance(event, pb.ExecutionEvent)
        self.seen.append(event)
        return event

    async def started(self) -> Watch:
        """Wait for the snapshot, after which every event is seen."""
        first = await self.next()
        assert first is not None and first.HasField("snapshot"), first
        return self

    async def until(self, predicate: Callable[[pb.ExecutionEvent], bool]) -> list[pb.ExecutionEvent]:
        """Collect events until one satisfies ``predicate``; returns all seen so far."""
        while True:
            event = await self.next()
            assert event is not None, f"watch ended before the event came: {self.seen}"
            if predicate(event):
                return self.seen

    def of(self, kind: str) -> list[Any]:
        return [getattr(e, kind) for e in self.seen if e.WhichOneof("event") == kind]

    def close(self) -> None:
        self.call.cancel()


async def watch(stub: pb_grpc.CoordinatorServiceAsyncStub, execution_id: str) -> Watch:
    return await Watch(stub, execution_id).started()


async def group_owner(channel: grpc.aio.Channel, attach_token: str, pgid: int) -> RawTool:
    """An externally terminated tool that has registered process group ``pgid`` (confirmed)."""
    tool = RawTool(channel)
    await tool.hello(attach_token, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED)
    await tool.send(
        register_terminator=pb.RegisterTerminator(
            terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=pgid)
        )
    )
    assert (await tool.recv()).HasField("terminator_registered")
    return tool
