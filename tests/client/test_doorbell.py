"""The cancel doorbell: the cancel rings on a unix socket ahead of the stream, and is taken once.

Against the real daemon: the doorbell is asked for and connected over its unix socket, the
cancel it brings is the stream's own, the run trips exactly once, and ending the run hangs
the doorbell up. Against FakeSidecar and a doorbell socket of the test's own: each order of
the two copies, every way the doorbell can fail (none may hurt the run), and when hello
does not ask for it at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
import struct
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from interrupt_sidecar_client import (
    Cancellation,
    CancellationSignal,
    CancelledExecution,
    Coordinator,
    InterruptBehavior,
    InterruptReason,
    ToolOutcome,
    aio,
    attach,
)
from interrupt_sidecar_client._config import DOORBELL_ENV
from interrupt_sidecar_client._doorbell import DoorbellClient
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._stream import ToolStream
from interrupt_sidecar_client._types import cancellation_from_pb

from tests.client.support import WAIT_S, FakeSidecar, Peer, Watcher, aeventually, attached, eventually
from tests.conftest import DaemonProcess

pytestmark = pytest.mark.timeout(60)

#: The name of the client's doorbell connect task.
DOORBELL_TASK = "interrupt-sidecar doorbell"
TOKEN = "0123456789abcdef0123456789abcdef"


# -- instruments ---------------------------------------------------------------------------


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[Cancellation]:
    """Every cancel handed to a run's signal, whichever way it came (the handshake, the
    stream's reader, the doorbell): exactly one entry means the second copy was dropped
    before it reached the signal, not just ignored by it."""
    calls: list[Cancellation] = []
    original = CancellationSignal._trip

    def counting(self: CancellationSignal, cancellation: Cancellation) -> bool:
        calls.append(cancellation)
        return original(self, cancellation)

    monkeypatch.setattr(CancellationSignal, "_trip", counting)
    return calls


class HeldStreamCancels:
    """Holds back every cancel the stream's reader gets, so only the doorbell can trip the run."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.messages: list[tuple[ToolStream, pb.SidecarMessage]] = []
        self._dispatch = ToolStream._dispatch

        def dispatch(stream: ToolStream, message: pb.SidecarMessage) -> None:
            if message.WhichOneof("message") == "cancel":
                self.messages.append((stream, message))
            else:
                self._dispatch(stream, message)

        monkeypatch.setattr(ToolStream, "_dispatch", dispatch)

    def release(self) -> None:
        """Hand the held cancels to the stream as its reader would have."""
        for stream, message in self.messages:
            self._dispatch(stream, message)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldStreamCancels:
    return HeldStreamCancels(monkeypatch)


class LateStream:
    """Delays, by ``delay_s``, what the stream's reader gets from the cancel on (in order),
    as a stream that falls behind the doorbell would: the run is tripped, and its worker
    interrupted, well before the stream's copy of the cancel and the run_terminator
    messages behind it are read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay_s: float) -> None:
        self.held: list[tuple[ToolStream, pb.SidecarMessage]] = []
        self.released = False
        self._dispatch = ToolStream._dispatch

        def dispatch(stream: ToolStream, message: pb.SidecarMessage) -> None:
            if self.released or not (self.held or message.WhichOneof("message") == "cancel"):
                self._dispatch(stream, message)
                return
            if not self.held:
                asyncio.get_running_loop().call_later(delay_s, self._release)
            self.held.append((stream, message))

        monkeypatch.setattr(ToolStream, "_dispatch", dispatch)

    def _release(self) -> None:
        self.released = True
        for stream, message in self.held:
            self._dispatch(stream, message)


def stream_of(run: aio.AsyncToolRun) -> ToolStream:
    stream = run._stream
    assert stream is not None
    return stream


def doorbell_tasks() -> list[asyncio.Task[object]]:
    """The client's doorbell tasks still running on this loop."""
    return [task for task in asyncio.all_tasks() if task.get_name() == DOORBELL_TASK and not task.done()]


def frame(cancel: pb.Cancel) -> bytes:
    body = cancel.SerializeToString()
    return struct.pack(">I", len(body)) + body


def full_cancel(reason: int = pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT, detail: str = "do url2 instead") -> pb.Cancel:
    cancel = pb.Cancel(reason=reason, detail=detail)  # type: ignore[arg-type]
    tripped_at = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    cancel.tripped_at.FromDatetime(tripped_at)
    cancel.grace_deadline.FromDatetime(tripped_at + timedelta(milliseconds=500))
    return cancel


# -- against the real daemon ---------------------------------------------------------------


async def test_the_doorbell_brings_the_streams_cancel_first_and_once(
    daemon: DaemonProcess, trips: list[Cancellation], held: HeldStreamCancels
) -> None:
    async with aio.AsyncCoordinator(daemon.address) as coordinator:
        begun = await coordinator.begin(grace=2.0)
        run = await aio.attach(address=daemon.address, token=begun.attach_token, behavior=InterruptBehavior.COOPERATIVE)
        stream = stream_of(run)
        doorbell = stream.doorbell
        assert doorbell is not None, "the daemon granted no doorbell: the hello did not ask for one"
        assert doorbell.path == f"{daemon.socket_path}.doorbell"
        await aeventually(lambda: doorbell.socket is not None, what="the doorbell connection")
        assert doorbell.socket is not None
        assert doorbell.socket.family == socket.AF_UNIX
        assert doorbell.socket.getpeername() == doorbell.path
        fired: list[int] = []
        run.signal.on_cancel(lambda: fired.append(1))

        await coordinator.interrupt(begun.execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT, detail="url2")
        cancellation = await asyncio.wait_for(run.signal.wait(), WAIT_S)
        # Every cancel of the stream is held back: this one can only have come by the doorbell.
        assert stream.cancel_path == "doorbell" and doorbell.rang
        assert fired == [1]
        # The frame is all the doorbell ever says: the client hangs up right after it.
        await aeventually(lambda: doorbell.socket is not None and doorbell.socket.fileno() == -1, what="hang-up")

        # The stream's copy follows, and is the same cancel, field for field.
        await aeventually(lambda: len(held.messages) == 1, what="the stream's copy of the cancel")
        assert cancellation == cancellation_from_pb(held.messages[0][1].cancel)
        assert cancellation.reason is InterruptReason.NOW_PRIORITY_INPUT and cancellation.detail == "url2"
        execution = await coordinator.get(begun.execution_id)
        assert cancellation.tripped_at is not None and cancellation.tripped_at == execution.tripped_at
        assert cancellation.grace_deadline is not None and cancellation.grace_deadline > cancellation.tripped_at
        held.release()
        assert stream.cancel_path == "doorbell"
        assert fired == [1]
        assert trips == [cancellation]  # the stream's copy never reached the signal

        await run.unwind(ToolOutcome.INTERRUPTED)
        assert doorbell_tasks() == []
        await coordinator.end(begun.execution_id)


def test_a_blocking_tool_takes_the_cancel_once_and_hangs_up_the_doorbell(
    coordinator: Coordinator, daemon: DaemonProcess, trips: list[Cancellation], monkeypatch: pytest.MonkeyPatch
) -> None:
    begun = coordinator.begin()
    for name, value in begun.tool_env().items():
        monkeypatch.setenv(name, value)
    fired: list[int] = []
    with attach(behavior=InterruptBehavior.COOPERATIVE, tool_name="grep") as run:
        stream = run._core._stream
        assert stream is not None and stream.doorbell is not None
        doorbell = stream.doorbell
        eventually(lambda: doorbell.socket is not None, what="the doorbell connection")
        run.signal.on_cancel(lambda: fired.append(1))
        coordinator.interrupt(begun.execution_id, reason=InterruptReason.USER_SIGINT, detail="Ctrl+C")
        assert run.signal.event.wait(WAIT_S)
        assert stream.cancel_path in ("doorbell", "stream")
    # The stream has ended: both copies have come by now, and only one was taken.
    assert stream.ended
    assert len(trips) == 1 and fired == [1]
    assert trips[0].reason is InterruptReason.USER_SIGINT and trips[0].detail == "Ctrl+C"
    assert doorbell.closed and doorbell.socket is not None and doorbell.socket.fileno() == -1
    assert doorbell.connecting is not None and doorbell.connecting.done()
    coordinator.end(begun.execution_id)


async def test_an_execution_tripped_before_the_attach_cancels_once(
    daemon: DaemonProcess, trips: list[Cancellation]
) -> None:
    async with aio.AsyncCoordinator(daemon.address) as coordinator:
        begun = await coordinator.begin()
        await coordinator.interrupt(begun.execution_id, reason=InterruptReason.BUDGET_EXCEEDED, detail="$5 spent")
        run = await aio.attach(address=daemon.address, token=begun.attach_token, behavior=InterruptBehavior.COOPERATIVE)
        stream = stream_of(run)
        assert run.signal.reason is InterruptReason.BUDGET_EXCEEDED and run.signal.detail == "$5 spent"
        # The cancel came on the stream right after attached; the doorbell (which would
        # ring the same cancel the moment it connected) is not even opened.
        assert stream.cancel_path == "stream"
        assert stream.doorbell is None
        fired: list[int] = []
        run.signal.on_cancel(lambda: fired.append(1))
        await run.unwind(ToolOutcome.INTERRUPTED)
        assert stream.ended
        assert len(trips) == 1 and fired == [1]
        assert doorbell_tasks() == []
        await coordinator.end(begun.execution_id)


@pytest.mark.parametrize("ending", ["unwind", "close"])
async def test_ending_the_run_closes_the_doorbell_connection(daemon: DaemonProcess, ending: str) -> None:
    async with aio.AsyncCoordinator(daemon.address) as coordinator:
        begun = await coordinator.begin()
        run = await aio.attach(
            address=daemon.address, token=begun.attach_token, behavior=InterruptBehavior.THREAD_INTERRUPT
        )
        stream = stream_of(run)
        doorbell = stream.doorbell
        assert doorbell is not None
        await aeventually(lambda: doorbell.socket is not None, what="the doorbell connection")
        sock = doorbell.socket
        assert sock is not None and sock.fileno() != -1
        if ending == "unwind":
            await run.unwind()
        else:  # the path of a stream torn down without an unwound
            await stream.close()
            await run.unwind()
        # No waiting: closing the run returns only once the socket is closed.
        assert sock.fileno() == -1
        assert doorbell.closed and doorbell.connecting is not None and doorbell.connecting.done()
        assert doorbell_tasks() == []
        assert not run.signal.is_cancelled
        await coordinator.end(begun.execution_id)


@pytest.mark.parametrize("opt_out", ["environment", "argument"])
async def test_a_tool_that_opts_out_gets_no_doorbell_and_the_streams_cancel(
    daemon: DaemonProcess, trips: list[Cancellation], monkeypatch: pytest.MonkeyPatch, opt_out: str
) -> None:
    if opt_out == "environment":
        monkeypatch.setenv(DOORBELL_ENV, "0")
    async with aio.AsyncCoordinator(daemon.address) as coordinator:
        begun = await coordinator.begin()
        run = await aio.attach(
            address=daemon.address,
            token=begun.attach_token,
            behavior=InterruptBehavior.COOPERATIVE,
            doorbell=False if opt_out == "argument" else None,
        )
        stream = stream_of(run)
        # The daemon grants a doorbell to every hello that asks: none means none was asked for.
        assert stream._doorbell_grant is None and stream.doorbell is None
        await coordinator.interrupt(begun.execution_id, reason=InterruptReason.USER_SIGINT)
        await asyncio.wait_for(run.signal.wait(), WAIT_S)
        assert stream.cancel_path == "stream"
        await run.unwind(ToolOutcome.INTERRUPTED)
        assert len(trips) == 1
        await coordinator.end(begun.execution_id)


async def test_a_worker_the_doorbell_interrupts_still_runs_and_reports_the_streams_terminators(
    daemon: DaemonProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The doorbell trips the run and interrupts its worker, which leaves its block at once;
    # the run_terminator messages come later, on the stream. Unwinding must wait for them
    # (the daemon asks for every callback terminator it acknowledged), run them and report
    # their results: after unwound the stream is half-closed and a report is lost.
    late = LateStream(monkeypatch, delay_s=0.2)
    coordinator = Coordinator(daemon.address)
    begun = await asyncio.to_thread(coordinator.begin, grace=2.0)
    watcher = await asyncio.to_thread(Watcher, coordinator, begun.execution_id)
    ran: list[str] = []
    runs: list[aio.AsyncToolRun] = []

    def failing() -> None:
        ran.append("failing")
        raise RuntimeError("the child would not stop")

    async def tool() -> None:
        async with aio.attach(
            address=daemon.address, token=begun.attach_token, behavior=InterruptBehavior.THREAD_INTERRUPT
        ) as run:
            runs.append(run)
            doorbell = stream_of(run).doorbell
            assert doorbell is not None
            await aeventually(lambda: doorbell.socket is not None, what="the doorbell connection")
            await run.registrar.register(failing, terminator_id="failing")
            await asyncio.to_thread(coordinator.interrupt, begun.execution_id, reason=InterruptReason.USER_SIGINT)
            await asyncio.sleep(WAIT_S)  # interrupted by the doorbell's cancel long before this ends

    with pytest.raises(CancelledExecution):
        await asyncio.wait_for(tool(), WAIT_S)
    assert stream_of(runs[0]).cancel_path == "doorbell", "the stream's cancel was not held back"
    assert late.released, "the run unwound before the stream brought its run_terminator"
    assert ran == ["failing"]
    await asyncio.to_thread(watcher.wait_for, "tool_unwound")
    kinds = watcher.kinds()
    assert "terminator_failed" in kinds and kinds.index("terminator_failed") < kinds.index("tool_unwound"), kinds
    (failed,) = watcher.of("terminator_failed")
    assert failed.terminator_id == "failing" and "would not stop" in failed.message
    await asyncio.to_thread(coordinator.end, begun.execution_id)
    await asyncio.to_thread(watcher.join)
    coordinator.close()


# -- against a scripted daemon and a doorbell socket of the test's own -----------------------


class FakeDoorbell:
    """A doorbell socket the test owns: the client's connections, one by one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connections: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._connected, path=str(self.path))

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        await self.connections.put((reader, writer))

    async def accept(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The next connection, once it has written the token."""
        reader, writer = await asyncio.wait_for(self.connections.get(), WAIT_S)
        assert await asyncio.wait_for(reader.readexactly(len(TOKEN)), WAIT_S) == TOKEN.encode()
        return reader, writer

    async def close(self) -> None:
        for writer in self._writers:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory short enough for unix socket paths (107 bytes)."""
    directory = tempfile.mkdtemp(prefix="iscd-", dir="/tmp")
    try:
        yield Path(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def bell(short_dir: Path) -> AsyncIterator[FakeDoorbell]:
    doorbell = FakeDoorbell(short_dir / "bell.sock")
    await doorbell.start()
    try:
        yield doorbell
    finally:
        await doorbell.close()


async def attach_with_doorbell(
    fake: FakeSidecar, path: Path, behavior: InterruptBehavior = InterruptBehavior.COOPERATIVE
) -> tuple[aio.AsyncToolRun, Peer]:
    """Attach through the fake, which grants a doorbell at ``path``."""
    opening = asyncio.ensure_future(aio.attach(address=fake.address, token="ist1.t.s", behavior=behavior))
    peer = await fake.arun(fake.accept())
    assert peer.hello.doorbell
    answer = attached()
    answer.doorbell.path = str(path)
    answer.doorbell.token = TOKEN
    await fake.arun(peer.send(attached=answer))
    return await asyncio.wait_for(opening, WAIT_S), peer


async def stream_caught_up(fake: FakeSidecar, peer: Peer) -> None:
    """Return once the client has dispatched everything the fake sent before: a
    run_terminator for an unknown id is answered in order, after them."""
    await fake.arun(peer.send(run_terminator=pb.RunTerminator(terminator_id="sync")))
    answer = await fake.arun(peer.recv())
    assert answer is not None and answer.terminator_result.terminator_id == "sync"


async def test_the_doorbell_first_then_the_streams_copy_is_dropped(
    fake_sidecar: FakeSidecar, bell: FakeDoorbell, trips: list[Cancellation]
) -> None:
    run, peer = await attach_with_doorbell(fake_sidecar, bell.path)
    reader, writer = await bell.accept()
    fired: list[int] = []
    run.signal.on_cancel(lambda: fired.append(1))
    cancel = full_cancel()
    writer.write(frame(cancel))
    cancellation = await asyncio.wait_for(run.signal.wait(), WAIT_S)
    stream = stream_of(run)
    assert stream.cancel_path == "doorbell"  # the stream has sent nothing yet
    assert cancellation == cancellation_from_pb(cancel)
    assert cancellation.tripped_at == datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert cancellation.grace_deadline == cancellation.tripped_at + timedelta(milliseconds=500)
    assert await asyncio.wait_for(reader.read(), WAIT_S) == b""  # hung up after the frame
    await fake_sidecar.arun(peer.send(cancel=cancel))
    await stream_caught_up(fake_sidecar, peer)
    assert trips == [cancellation] and fired == [1]
    await run.unwind(ToolOutcome.INTERRUPTED)
    await fake_sidecar.arun(peer.end())


async def test_the_stream_first_then_the_doorbell_is_hung_up(
    fake_sidecar: FakeSidecar, bell: FakeDoorbell, trips: list[Cancellation]
) -> None:
    run, peer = await attach_with_doorbell(fake_sidecar, bell.path)
    reader, writer = await bell.accept()
    cancel = full_cancel(pb.INTERRUPT_REASON_HOLDER_LOST, "node 3")
    await fake_sidecar.arun(peer.send(cancel=cancel))
    cancellation = await asyncio.wait_for(run.signal.wait(), WAIT_S)
    assert stream_of(run).cancel_path == "stream"
    # The doorbell could only say the same again: the client hangs up at once.
    assert await asyncio.wait_for(reader.read(), WAIT_S) == b""
    writer.write(frame(cancel))  # a late ring reaches nobody
    await run.unwind(ToolOutcome.INTERRUPTED)
    assert trips == [cancellation]
    await fake_sidecar.arun(peer.end())


async def test_the_stream_ending_hangs_up_the_doorbell(fake_sidecar: FakeSidecar, bell: FakeDoorbell) -> None:
    run, peer = await attach_with_doorbell(fake_sidecar, bell.path)
    reader, _ = await bell.accept()
    await fake_sidecar.arun(peer.end(grpc.StatusCode.UNAVAILABLE, "daemon shutting down"))
    assert await asyncio.wait_for(reader.read(), WAIT_S) == b""
    assert not run.signal.is_cancelled  # losing the daemon is not a cancel
    await run.unwind()
    assert doorbell_tasks() == []


def _half_a_frame(writer: asyncio.StreamWriter) -> None:
    writer.write(b"\x00\x00")
    writer.close()


async def test_aclose_returns_only_once_the_socket_is_closed(bell: FakeDoorbell) -> None:
    rung: list[Cancellation] = []
    client = DoorbellClient(pb.Doorbell(path=str(bell.path), token=TOKEN), rung.append)
    client.open()
    await bell.accept()
    await aeventually(lambda: client.socket is not None, what="the connection")
    sock = client.socket
    assert sock is not None and sock.fileno() != -1
    await client.aclose()
    # The transport closes its socket a loop turn after close(): aclose waits for that.
    assert sock.fileno() == -1
    assert client.closed and client.connecting is not None and client.connecting.done()
    assert rung == []


async def test_closing_while_connecting_leaves_nothing_behind(bell: FakeDoorbell) -> None:
    client = DoorbellClient(pb.Doorbell(path=str(bell.path), token=TOKEN), lambda _: None)
    client.open()
    await client.aclose()  # before the connect task has even run
    assert client.closed and client.connecting is not None and client.connecting.done()
    assert doorbell_tasks() == []
    assert client.socket is None or client.socket.fileno() == -1


#: How a doorbell can let the tool down: what the fake doorbell does once the client has
#: connected (None: there is no socket at the granted path).
BREAKAGES: dict[str, Callable[[asyncio.StreamWriter], None] | None] = {
    "no socket at the path": None,
    "hang-up without a frame": lambda writer: writer.close(),
    "half a frame": _half_a_frame,
    "an impossible length": lambda writer: writer.write(b"\xff\xff\xff\xff" + b"x" * 16),
    "not a Cancel": lambda writer: writer.write(b"\x00\x00\x00\x03\xff\xff\xff"),
    "an empty frame": lambda writer: writer.write(b"\x00\x00\x00\x00"),
    "a Cancel without a reason": lambda writer: writer.write(frame(full_cancel(reason=0))),
}


@pytest.mark.parametrize("breakage", list(BREAKAGES))
async def test_a_broken_doorbell_never_hurts_the_run(
    fake_sidecar: FakeSidecar,
    bell: FakeDoorbell,
    trips: list[Cancellation],
    caplog: pytest.LogCaptureFixture,
    breakage: str,
) -> None:
    caplog.set_level(logging.DEBUG, logger="interrupt_sidecar_client")
    action = BREAKAGES[breakage]
    path = bell.path if action is not None else bell.path.with_name("nobody.sock")
    run, peer = await attach_with_doorbell(fake_sidecar, path, InterruptBehavior.THREAD_INTERRUPT)
    stream = stream_of(run)
    doorbell = stream.doorbell
    assert doorbell is not None
    if action is not None:
        _, writer = await bell.accept()
        action(writer)
    await aeventually(lambda: doorbell.closed, what="the client giving up on the doorbell")
    assert not run.signal.is_cancelled and not doorbell.rang
    doorbell_logs = [r for r in caplog.records if r.name == "interrupt_sidecar_client._doorbell"]
    assert doorbell_logs and all(record.levelno == logging.DEBUG for record in doorbell_logs)

    # The run goes on, and the stream's cancel still trips it.
    await fake_sidecar.arun(peer.send(cancel=full_cancel()))
    await asyncio.wait_for(run.signal.wait(), WAIT_S)
    assert stream.cancel_path == "stream" and len(trips) == 1
    await run.unwind(ToolOutcome.INTERRUPTED)
    unwound = await fake_sidecar.arun(peer.recv())
    assert unwound is not None and unwound.unwound.outcome == pb.TOOL_OUTCOME_INTERRUPTED
    await fake_sidecar.arun(peer.end())
    assert doorbell_tasks() == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], [r.message for r in caplog.records]


@pytest.mark.parametrize(
    ("behavior", "environment", "argument", "asks"),
    [
        (InterruptBehavior.COOPERATIVE, None, None, True),
        (InterruptBehavior.THREAD_INTERRUPT, None, None, True),
        (InterruptBehavior.EXTERNALLY_TERMINATED, None, None, True),
        (InterruptBehavior.NON_INTERRUPTIBLE, None, None, False),  # never sent a cancel
        (InterruptBehavior.NON_INTERRUPTIBLE, None, True, False),
        (InterruptBehavior.COOPERATIVE, "0", None, False),
        (InterruptBehavior.COOPERATIVE, "off", None, False),
        (InterruptBehavior.COOPERATIVE, "1", None, True),
        (InterruptBehavior.COOPERATIVE, None, False, False),
        (InterruptBehavior.COOPERATIVE, "0", True, True),  # the argument wins
    ],
)
async def test_hello_asks_for_the_doorbell_unless_told_not_to(
    fake_sidecar: FakeSidecar,
    monkeypatch: pytest.MonkeyPatch,
    behavior: InterruptBehavior,
    environment: str | None,
    argument: bool | None,
    asks: bool,
) -> None:
    if environment is not None:
        monkeypatch.setenv(DOORBELL_ENV, environment)
    opening = asyncio.ensure_future(
        aio.attach(address=fake_sidecar.address, token="ist1.t.s", behavior=behavior, doorbell=argument)
    )
    peer = await fake_sidecar.arun(fake_sidecar.accept())
    assert peer.hello.doorbell is asks
    await fake_sidecar.arun(peer.send(attached=attached()))
    run = await asyncio.wait_for(opening, WAIT_S)
    assert stream_of(run).doorbell is None  # none granted, none opened
    await run.unwind()
    await fake_sidecar.arun(peer.end())


async def test_a_tcp_address_never_asks_for_the_doorbell() -> None:
    fake = FakeSidecar(tcp=True)
    try:
        assert not fake.address.startswith("unix:")
        opening = asyncio.ensure_future(
            aio.attach(address=fake.address, token="ist1.t.s", behavior=InterruptBehavior.COOPERATIVE, doorbell=True)
        )
        peer = await fake.arun(fake.accept())
        # Over TCP the daemon may be on another host, where its doorbell path means nothing here.
        assert not peer.hello.doorbell
        await fake.arun(peer.send(attached=attached()))
        run = await asyncio.wait_for(opening, WAIT_S)
        await run.unwind()
        await fake.arun(peer.end())
    finally:
        fake.close()
