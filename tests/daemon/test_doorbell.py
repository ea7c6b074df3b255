"""The cancel doorbell: a raw unix socket that rings a tool's cancel ahead of its stream.

Against a real daemon (its own socket, its own doorbell), plus the listener in-process
where a rule needs its timing shortened (the token timeout, the pending cap)."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from interrupt_sidecar.config import ConfigError, build_serve_config
from interrupt_sidecar.services import doorbell as doorbell_module
from interrupt_sidecar.services.doorbell import TOKEN_LENGTH, DoorbellListener, cancel_frame
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import ROOT, DaemonProcess, start_daemon
from tests.daemon.wire import RECV_TIMEOUT_S, RawTool, eventually
from tests.observability.support import free_port, sample_value, scrape

COOP = pb.INTERRUPT_BEHAVIOR_COOPERATIVE
NON = pb.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE


async def begin(stub: pb_grpc.CoordinatorServiceAsyncStub) -> pb.BeginExecutionResponse:
    return await stub.BeginExecution(pb.BeginExecutionRequest())


async def interrupt(stub: pb_grpc.CoordinatorServiceAsyncStub, execution_id: str, detail: str = "") -> None:
    await stub.Interrupt(
        pb.InterruptRequest(execution_id=execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT, detail=detail)
    )


async def hello(tool: RawTool, token: str, behavior: int = COOP, doorbell: bool = True) -> pb.Attached:
    await tool.send(hello=pb.Hello(attach_token=token, tool_name="t", behavior=behavior, doorbell=doorbell))  # type: ignore[arg-type]
    return (await tool.recv()).attached


class Bell:
    """The tool's end of a doorbell connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, path: str, token: str | bytes) -> Bell:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(token.encode() if isinstance(token, str) else token)
        await writer.drain()
        return cls(reader, writer)

    async def cancel(self) -> pb.Cancel:
        (length,) = struct.unpack(">I", await asyncio.wait_for(self.reader.readexactly(4), RECV_TIMEOUT_S))
        return pb.Cancel.FromString(await asyncio.wait_for(self.reader.readexactly(length), RECV_TIMEOUT_S))

    async def hung_up(self) -> bool:
        """True when the daemon closed the connection without writing anything more."""
        return await asyncio.wait_for(self.reader.read(), RECV_TIMEOUT_S) == b""

    def close(self) -> None:
        self.writer.close()


async def test_the_doorbell_rings_the_same_cancel_as_the_stream(
    daemon: DaemonProcess, channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    attached = await hello(tool, begun.attach_token)
    assert attached.doorbell.path == f"{daemon.socket_path}.doorbell"
    assert len(attached.doorbell.token) == TOKEN_LENGTH and int(attached.doorbell.token, 16) >= 0
    # Owner-only, like the gRPC socket: the doorbell hands out cancels.
    assert stat.S_IMODE(os.stat(attached.doorbell.path).st_mode) == 0o600
    bell = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    await interrupt(stub, begun.execution_id, detail="stop now")
    rung = await bell.cancel()
    streamed = (await tool.recv()).cancel
    assert rung == streamed
    assert rung.detail == "stop now" and rung.reason == pb.INTERRUPT_REASON_USER_SIGINT
    # Nothing else is ever written; ending the stream hangs up.
    await tool.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED))
    assert await tool.close() == []
    assert await bell.hung_up()
    bell.close()


async def test_a_trip_before_the_tool_connects_rings_on_connect(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    attached = await hello(tool, begun.attach_token)
    await interrupt(stub, begun.execution_id)
    streamed = (await tool.recv()).cancel
    bell = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    assert await bell.cancel() == streamed
    bell.close()
    await tool.close()


async def test_a_tool_attached_after_the_trip_is_rung_on_connect(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    await interrupt(stub, begun.execution_id)
    tool = RawTool(channel)
    attached = await hello(tool, begun.attach_token)
    assert attached.cancelled and attached.HasField("doorbell")
    streamed = (await tool.recv()).cancel
    bell = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    assert await bell.cancel() == streamed
    bell.close()
    await tool.close()


async def test_an_unknown_token_is_hung_up_on(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    attached = await hello(tool, begun.attach_token)
    wrong = "0" * TOKEN_LENGTH if attached.doorbell.token != "0" * TOKEN_LENGTH else "1" * TOKEN_LENGTH
    stranger = await Bell.connect(attached.doorbell.path, wrong)
    assert await stranger.hung_up()
    stranger.close()
    # The real token still works afterwards.
    bell = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    await interrupt(stub, begun.execution_id)
    assert (await bell.cancel()).reason == pb.INTERRUPT_REASON_USER_SIGINT
    bell.close()
    await tool.close()


async def test_a_token_is_used_once(channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    attached = await hello(tool, begun.attach_token)
    first = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    second = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    assert await second.hung_up()
    second.close()
    await interrupt(stub, begun.execution_id)
    assert (await first.cancel()).reason == pb.INTERRUPT_REASON_USER_SIGINT
    first.close()
    await tool.close()


async def test_the_stream_ending_untripped_hangs_up_without_a_frame(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    tool = RawTool(channel)
    attached = await hello(tool, begun.attach_token)
    bell = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    await tool.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED))
    assert await tool.close() == []
    assert await bell.hung_up()
    bell.close()
    # And its token is withdrawn with it.
    late = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
    assert await late.hung_up()
    late.close()


async def test_no_doorbell_unless_asked_and_never_for_a_tool_without_cancels(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    begun = await begin(stub)
    unasked, non_interruptible = RawTool(channel), RawTool(channel)
    assert not (await hello(unasked, begun.attach_token, doorbell=False)).HasField("doorbell")
    assert not (await hello(non_interruptible, begun.attach_token, behavior=NON)).HasField("doorbell")
    await unasked.close()
    await non_interruptible.close()


@pytest.fixture
def daemon_without_doorbell(tmp_short: Path) -> Iterator[DaemonProcess]:
    proc = start_daemon(tmp_short, "--doorbell", "off")
    try:
        assert not Path(f"{proc.socket_path}.doorbell").exists()  # no socket either
        yield proc
    finally:
        assert proc.stop() == 0, proc.stderr


async def test_doorbell_off_grants_none(daemon_without_doorbell: DaemonProcess) -> None:
    async with grpc.aio.insecure_channel(daemon_without_doorbell.address) as channel:
        begun = await begin(pb_grpc.CoordinatorServiceStub(channel))
        tool = RawTool(channel)
        assert not (await hello(tool, begun.attach_token)).HasField("doorbell")
        await tool.close()


def test_shutdown_removes_the_doorbell_socket(tmp_short: Path) -> None:
    proc = start_daemon(tmp_short)
    path = Path(f"{proc.socket_path}.doorbell")
    assert stat.S_ISSOCK(path.lstat().st_mode)
    assert proc.stop() == 0, proc.stderr
    assert not path.exists()


def test_a_stale_doorbell_socket_is_replaced_and_a_file_is_refused(tmp_short: Path) -> None:
    path = tmp_short / "sidecar.sock.doorbell"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # bound, never listening: what a killed daemon leaves
    stale.close()
    proc = start_daemon(tmp_short)
    assert proc.stop() == 0, proc.stderr
    path.write_text("not a socket")
    result = subprocess.run(
        [sys.executable, "-m", "interrupt_sidecar", "serve", "--listen", f"unix://{tmp_short}/sidecar.sock"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode != 0
    assert f"cannot open the doorbell socket {path}" in result.stderr, result.stderr
    assert "not a socket" in result.stderr and "--doorbell" in result.stderr


def test_rings_are_counted(tmp_short: Path) -> None:
    port = free_port()
    proc = start_daemon(tmp_short, "--metrics-listen", f"127.0.0.1:{port}")
    try:

        async def two_tools() -> None:
            async with grpc.aio.insecure_channel(proc.address) as channel:
                stub = pb_grpc.CoordinatorServiceStub(channel)
                begun = await begin(stub)
                rung, unasked = RawTool(channel), RawTool(channel)
                attached = await hello(rung, begun.attach_token)
                await hello(unasked, begun.attach_token, doorbell=False)
                bell = await Bell.connect(attached.doorbell.path, attached.doorbell.token)
                await interrupt(stub, begun.execution_id)
                await bell.cancel()
                bell.close()
                await rung.close()
                await unasked.close()

        asyncio.run(two_tools())
        text = scrape(port)
        assert sample_value(text, "interrupt_sidecar_doorbell_cancels_total") == 1
        assert (
            sample_value(
                text, "interrupt_sidecar_cancel_delivery_seconds_count", reason="USER_SIGINT", behavior="COOPERATIVE"
            )
            == 2
        )
    finally:
        assert proc.stop() == 0, proc.stderr


# -- configuration ----------------------------------------------------------------------


def _config(doorbell: str | None, *listen: str) -> Path | None:
    return build_serve_config(
        listen=list(listen) or ["unix:///run/is/s.sock"],
        metrics_listen=None,
        state_dir=None,
        grace=None,
        loop=None,
        allow_insecure_tcp=None,
        shutdown_timeout=None,
        log_level=None,
        env={},
        auth_token_file=None,
        doorbell=doorbell,
    ).doorbell


def test_doorbell_config() -> None:
    assert _config(None) == Path("/run/is/s.sock.doorbell")  # auto by default
    assert _config("auto") == Path("/run/is/s.sock.doorbell")
    assert _config("off") is None
    # The clients' opt-out variable is the same: its values mean the same here.
    for word in ("0", "false", "No"):
        assert _config(word) is None
    for word in ("1", "true", "yes", "on"):
        assert _config(word) == Path("/run/is/s.sock.doorbell")
    assert _config("/run/x.bell") == Path("/run/x.bell")
    assert _config("unix:///run/x.bell") == Path("/run/x.bell")
    # A path too long for a socket address: auto quietly goes without.
    assert _config("auto", "unix:///" + "d" * 95 + "/s.sock") is None
    for bad, says in (
        ("relative.bell", "absolute socket path"),
        ("/" + "x" * 120, "107 bytes"),
        ("/run/is/s.sock", "also a --listen socket"),
    ):
        with pytest.raises(ConfigError, match=says):
            _config(bad)


def test_doorbell_auto_needs_a_unix_listener(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t" * 32)
    config = build_serve_config(
        listen=["127.0.0.1:0"],
        metrics_listen=None,
        state_dir=None,
        grace=None,
        loop=None,
        allow_insecure_tcp=None,
        shutdown_timeout=None,
        log_level=None,
        env={},
        auth_token_file=str(token),
    )
    assert config.doorbell is None


# -- the listener in-process ------------------------------------------------------------


@pytest.fixture
async def listener(tmp_short: Path) -> AsyncIterator[DoorbellListener]:
    bell = DoorbellListener(tmp_short / "d.bell")
    bell.start()
    try:
        yield bell
    finally:
        bell.close()


def _frame() -> bytes:
    cancel = pb.Cancel(reason=pb.INTERRUPT_REASON_USER_SIGINT, detail="x")
    return cancel_frame(cancel)


async def test_a_token_may_arrive_in_pieces(listener: DoorbellListener) -> None:
    line = listener.line()
    reader, writer = await asyncio.open_unix_connection(str(listener.path))
    writer.write(line.token[:5].encode())
    await writer.drain()
    await eventually(lambda: [len(got) for _, got, _ in listener._pending.values()] == [5])
    writer.write(line.token[5:].encode())
    await writer.drain()
    await eventually(lambda: line.claimed)
    line.ring(_frame())
    bell = Bell(reader, writer)
    assert (await bell.cancel()).detail == "x"
    line.close()
    assert await bell.hung_up()
    bell.close()


async def test_a_silent_connection_is_closed_after_the_token_timeout(
    listener: DoorbellListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doorbell_module, "TOKEN_TIMEOUT_S", 0.05)
    line = listener.line()
    reader, writer = await asyncio.open_unix_connection(str(listener.path))
    writer.write(line.token[:10].encode())  # never finished
    assert await Bell(reader, writer).hung_up()
    writer.close()
    assert not line.claimed
    assert listener.open_lines == 1  # the line itself waits for its tool


async def test_at_the_pending_cap_new_connections_wait_rather_than_being_refused(
    listener: DoorbellListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doorbell_module, "MAX_PENDING", 2)
    monkeypatch.setattr(doorbell_module, "TOKEN_TIMEOUT_S", 600.0)  # only a hang-up frees a slot here
    silent = [await asyncio.open_unix_connection(str(listener.path)) for _ in range(2)]
    await eventually(lambda: len(listener._pending) == 2)
    assert not listener.accepting  # at the cap: the listening socket is no longer watched
    line = listener.line()
    waiting = await Bell.connect(str(listener.path), line.token)  # sits in the kernel's backlog
    assert not line.claimed and len(listener._pending) == 2
    silent[0][1].close()  # one silent connection leaves: its slot goes to the waiting one
    await eventually(lambda: line.claimed)
    line.ring(_frame())
    assert (await waiting.cancel()).detail == "x"
    waiting.close()
    silent[1][1].close()
    await eventually(lambda: listener.accepting and not listener._pending)


async def test_closing_the_listener_hangs_up_on_everyone(tmp_short: Path) -> None:
    listener = DoorbellListener(tmp_short / "d.bell")
    listener.start()
    line = listener.line()
    bell = await Bell.connect(str(listener.path), line.token)
    await eventually(lambda: line.claimed)
    pending_reader, pending_writer = await asyncio.open_unix_connection(str(listener.path))
    await eventually(lambda: len(listener._pending) == 1)
    listener.close()
    assert await bell.hung_up()
    assert await Bell(pending_reader, pending_writer).hung_up()
    assert not listener.path.exists()
    assert listener.open_lines == 0
    bell.close()
    pending_writer.close()
