"""Helpers for the client tests: polling with a deadline, and a scripted tool-channel peer.

``FakeSidecar`` is a real gRPC server (on a private unix socket, on a loop thread of its
own) whose Attach streams are handed to the test one by one, so a test can script the
daemon's side message by message — what the client does with refusals, out-of-order
answers, failing terminators and a stream that ends early.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import grpc
from interrupt_sidecar_client import Coordinator, EventKind, ExecutionEvent
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import group_members as group_members  # re-exported for the client tests

T = TypeVar("T")

#: Upper bound for anything a test waits for. Generous: the machine may be slow and busy.
WAIT_S = 15.0


def eventually(predicate: Callable[[], bool], *, timeout: float = WAIT_S, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds, failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


async def aeventually(predicate: Callable[[], bool], *, timeout: float = WAIT_S, what: str = "condition") -> None:
    """``eventually`` for async tests: polls without blocking the loop."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


#: Where :func:`latch_async_spawn` can hold ``create_subprocess_exec``'s spawn.
SPAWN_WINDOWS = ("asyncio's spawn", "the registration")


def latch_async_spawn(monkeypatch: Any, window: str, gate: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Make every async spawn of the test await ``gate()`` in ``window`` (after the fork):

    * "asyncio's spawn": while asyncio is still making the child's transport — the task that
      called ``create_subprocess_exec`` waits for it inside asyncio, where a cancel of that
      task runs asyncio's own cleanup (a SIGKILL of the leader alone);
    * "the registration": at the start of the group's registration with the daemon, in the
      task that registers.
    """
    if window == "asyncio's spawn":
        from asyncio import base_subprocess

        connect = base_subprocess.BaseSubprocessTransport._connect_pipes

        async def latched_connect(self: Any, waiter: Any) -> None:
            await gate()
            await connect(self, waiter)

        monkeypatch.setattr(base_subprocess.BaseSubprocessTransport, "_connect_pipes", latched_connect)
    else:
        assert window == "the registration", window
        from interrupt_sidecar_client._registrar import AsyncTerminatorRegistrar

        register = AsyncTerminatorRegistrar.register_process_group

        async def latched_register(self: AsyncTerminatorRegistrar, pgid: int, **kwargs: Any) -> Any:
            await gate()
            return await register(self, pgid, **kwargs)

        monkeypatch.setattr(AsyncTerminatorRegistrar, "register_process_group", latched_register)


class Peer:
    """The daemon's end of one Attach stream. Its coroutines run on the fake's loop."""

    def __init__(self, requests: AsyncIterator[pb.ToolMessage], context: grpc.aio.ServicerContext[Any, Any]) -> None:
        self._requests = requests
        self._context = context
        self.received: asyncio.Queue[pb.ToolMessage | None] = asyncio.Queue()
        self._end: asyncio.Future[tuple[grpc.StatusCode | None, str]] = asyncio.get_running_loop().create_future()
        self.hello = pb.Hello()

    async def pump(self) -> None:
        async for message in self._requests:
            await self.received.put(message)
        await self.received.put(None)  # the tool half-closed: end the stream, like the daemon
        await self.end()

    async def recv(self, timeout: float = WAIT_S) -> pb.ToolMessage | None:
        """The next message from the tool; None when it half-closed."""
        return await asyncio.wait_for(self.received.get(), timeout)

    async def send(self, **fields: Any) -> None:
        await self._context.write(pb.SidecarMessage(**fields))

    async def end(self, code: grpc.StatusCode | None = None, details: str = "") -> None:
        """End the stream: OK, or with a status."""
        if not self._end.done():
            self._end.set_result((code, details))

    async def serve(self) -> None:
        code, details = await self._end
        if code is not None:
            await self._context.abort(code, details)


class _Servicer(pb_grpc.ToolChannelServiceServicer):
    def __init__(self) -> None:
        self.peers: asyncio.Queue[Peer] = asyncio.Queue()

    async def Attach(  # type: ignore[override]
        self, request_iterator: AsyncIterator[pb.ToolMessage], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        peer = Peer(request_iterator, context)
        pump = asyncio.get_running_loop().create_task(peer.pump())
        first = await peer.recv()
        assert first is not None and first.WhichOneof("message") == "hello"
        peer.hello = first.hello
        await self.peers.put(peer)
        try:
            await peer.serve()
        finally:
            pump.cancel()


class FakeSidecar:
    """A scripted ToolChannelService on ``unix://<tmp>/fake.sock`` (or loopback TCP with
    ``tcp=True``); use ``run``/``arun`` to drive it."""

    def __init__(self, *, tcp: bool = False) -> None:
        self._directory = tempfile.mkdtemp(prefix="iscf-", dir="/tmp")
        self._tcp = tcp
        self.address = f"unix://{self._directory}/fake.sock"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-sidecar", daemon=True)
        self._thread.start()
        self._servicer: _Servicer | None = None
        self._server: grpc.aio.Server | None = None
        self.run(self._start())

    async def _start(self) -> None:
        self._servicer = _Servicer()
        self._server = grpc.aio.server()
        pb_grpc.add_ToolChannelServiceServicer_to_server(self._servicer, self._server)
        if self._tcp:
            # Port 0: the server picks a free one, so nothing can take it in between.
            self.address = f"127.0.0.1:{self._server.add_insecure_port('127.0.0.1:0')}"
        else:
            self._server.add_insecure_port(self.address)
        await self._server.start()

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the fake's loop; block until done (for sync tests)."""
        return self._submit(coroutine).result(WAIT_S * 2)

    async def arun(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the fake's loop; await it (for async tests)."""
        return await asyncio.wrap_future(self._submit(coroutine))

    async def accept(self, timeout: float = WAIT_S) -> Peer:
        """The next stream that said hello."""
        assert self._servicer is not None
        return await asyncio.wait_for(self._servicer.peers.get(), timeout)

    async def _stop(self) -> None:
        if self._server is not None:
            await self._server.stop(None)

    def close(self) -> None:
        try:
            self.run(self._stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(WAIT_S)
            self._loop.close()
            shutil.rmtree(self._directory, ignore_errors=True)


def attached(execution_id: str = "exec-1", *, cancelled: bool = False, reason: int = 0) -> pb.Attached:
    """An ``attached`` answer as the daemon would send it."""
    return pb.Attached(execution_id=execution_id, cancelled=cancelled, reason=reason, tool_id="tool-1")  # type: ignore[arg-type]


class Watcher:
    """Collects an execution's events on a thread (blocking API), until it ends."""

    def __init__(self, coordinator: Coordinator, execution_id: str) -> None:
        self.events: list[ExecutionEvent] = []
        self._lock = threading.Lock()
        self._coordinator = coordinator
        self._execution_id = execution_id
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch {execution_id}", daemon=True)
        self._thread.start()
        assert self._started.wait(WAIT_S), "the watch never delivered its snapshot"

    def _run(self) -> None:
        for event in self._coordinator.watch(self._execution_id):
            with self._lock:
                self.events.append(event)
            self._started.set()
            if event.kind is EventKind.ENDED:
                return

    def kinds(self) -> list[str]:
        with self._lock:
            return [event.kind.value for event in self.events]

    def of(self, kind: str) -> list[Any]:
        """The payloads (``proto.<kind>``) of the events of one kind, in order."""
        with self._lock:
            return [getattr(event.proto, kind) for event in self.events if event.kind.value == kind]

    def wait_for(self, kind: str, count: int = 1) -> list[Any]:
        eventually(lambda: len(self.of(kind)) >= count, what=f"{count} {kind!r} event(s); got {self.kinds()}")
        return self.of(kind)

    def join(self) -> None:
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive(), f"the watch did not end; events {self.kinds()}"
