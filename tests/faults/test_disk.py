"""A disk that fails under the journal: full (ENOSPC), read-only (EROFS), failing (EIO).

The promise (docs/operations-faults.md): an Interrupt still trips, tells the tools and kills
their process groups, but is never answered OK while its trip is not in the journal (it
answers UNAVAILABLE, saying it tripped); a begin and a process-group registration (writes
ahead of the fact) are refused with UNAVAILABLE; the health service reports NOT_SERVING while
the journal cannot write and SERVING once it can; once the disk is back every kept write is
in, so a ``kill -9`` then loses nothing; nothing crashes.
"""

from __future__ import annotations

import asyncio
import errno
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from grpc_health.v1 import health_pb2, health_pb2_grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import ROOT, DaemonProcess, start_daemon
from tests.daemon.wire import RawTool, eventually
from tests.faults.disk import FailWrites, PrivateDisk, alive, no_traceback

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
#: 64 labels of 256 characters: about 16 KiB of journal per begin, so a full disk shows fast.
BIG_LABELS = {f"k{i}": "x" * 256 for i in range(64)}


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="isfault-", dir="/tmp") as directory:
        yield Path(directory)


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    made: list[subprocess.Popen[bytes]] = []
    yield made
    for process in made:
        if process.poll() is None:
            process.kill()
        process.wait(5)


class Client:
    """The daemon's three services over one channel."""

    def __init__(self, daemon: DaemonProcess) -> None:
        self.daemon = daemon
        self.channel = grpc.aio.insecure_channel(daemon.address)
        self.stub = pb_grpc.CoordinatorServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)

    async def status(self) -> int:
        return (await self.health.Check(health_pb2.HealthCheckRequest(service=""))).status  # type: ignore[no-any-return]

    async def begin(self, **fields: object) -> pb.BeginExecutionResponse:
        return await self.stub.BeginExecution(pb.BeginExecutionRequest(**fields))  # type: ignore[arg-type]

    async def interrupt(self, execution_id: str) -> pb.InterruptResponse:
        return await self.stub.Interrupt(
            pb.InterruptRequest(execution_id=execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT)
        )

    async def get(self, execution_id: str) -> pb.Execution:
        return (await self.stub.GetExecution(pb.GetExecutionRequest(execution_id=execution_id))).execution

    async def tool_with_group(self, token: str, pgid: int) -> RawTool:
        tool = RawTool(self.channel)
        assert (await tool.hello(token, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED)).HasField("attached")
        await tool.send(
            register_terminator=pb.RegisterTerminator(
                terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=pgid)
            )
        )
        answer = await tool.recv()
        assert answer.HasField("terminator_registered"), answer
        return tool

    async def close(self) -> None:
        await self.channel.close()


def sleeper(made: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    made.append(process)
    return process


async def until_refused(client: Client) -> grpc.aio.AioRpcError:
    """Begin turns with big labels until the journal cannot take one; that refusal."""
    for _ in range(2_000):
        try:
            await client.begin(labels=BIG_LABELS)
        except grpc.aio.AioRpcError as err:
            return err
    raise AssertionError("the journal never failed")


async def failing_disk_scenario(
    start: Callable[[], DaemonProcess],
    break_disk: Callable[[Client], object],
    mend_disk: Callable[[], None],
    sleepers: list[subprocess.Popen[bytes]],
    expect_in_error: str,
) -> None:
    daemon = start()
    client = Client(daemon)
    try:
        turn = await client.begin(grace=Duration(nanos=300_000_000))
        other = await client.begin()
        group = sleeper(sleepers)
        tool = await client.tool_with_group(turn.attach_token, group.pid)
        other_tool = RawTool(client.channel)
        assert (await other_tool.hello(other.attach_token, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED)).HasField(
            "attached"
        )
        assert await client.status() == SERVING

        result = break_disk(client)
        if asyncio.iscoroutine(result):
            await result

        # A begin is written ahead of the fact: refused, with a code and a message to act on.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await client.begin(labels=BIG_LABELS)
        assert refused.value.code() == UNAVAILABLE, refused.value
        assert "journal" in (refused.value.details() or "")
        await eventually(_is(client, NOT_SERVING), timeout=10)

        # So is a process group (the journal must have it before it may be killed).
        await other_tool.send(
            register_terminator=pb.RegisterTerminator(
                terminator_id="pg2", process_group=pb.ProcessGroupTerminator(pgid=sleeper(sleepers).pid)
            )
        )
        error = await other_tool.recv()
        assert error.HasField("error") and error.error.code == UNAVAILABLE.value[0], error

        # Safety first: the interrupt trips and kills, but does not claim the trip is journaled.
        with pytest.raises(grpc.aio.AioRpcError) as unjournaled:
            await client.interrupt(turn.execution_id)
        assert unjournaled.value.code() == UNAVAILABLE, unjournaled.value
        details = unjournaled.value.details() or ""
        assert "tripped" in details and expect_in_error in details, details
        cancel = await tool.recv()
        assert cancel.HasField("cancel"), cancel
        await eventually(lambda: group.poll() is not None, timeout=10)
        seen = await client.get(turn.execution_id)
        assert seen.cancelled and seen.reason == pb.INTERRUPT_REASON_USER_SIGINT
        # Asking again changes nothing: still not journaled, still not answered OK.
        with pytest.raises(grpc.aio.AioRpcError) as again:
            await client.interrupt(turn.execution_id)
        assert again.value.code() == UNAVAILABLE

        mend_disk()
        await eventually(_is(client, SERVING), timeout=10)
        answer = await client.interrupt(turn.execution_id)
        assert [(o.tripped, o.reason) for o in answer.outcomes] == [(False, pb.INTERRUPT_REASON_USER_SIGINT)]
        await client.begin(labels={"after": "mended"})
        assert alive(daemon.pid), "the daemon died"
        tripped_at = seen.tripped_at
    finally:
        await client.close()
        daemon.stop(signal.SIGKILL)
    no_traceback(daemon.stderr)

    # The disk was mended and the answer OK: a crash now forgets nothing.
    restarted = start()
    client = Client(restarted)
    try:
        after = await client.get(turn.execution_id)
        assert after.cancelled and after.reason == pb.INTERRUPT_REASON_USER_SIGINT
        assert after.tripped_at == tripped_at
    finally:
        await client.close()
        assert restarted.stop() == 0
    no_traceback(restarted.stderr)


def _is(client: Client, status: int) -> Callable[[], object]:
    async def check() -> bool:
        return await client.status() == status

    return check


@pytest.fixture
async def disk(workdir: Path) -> AsyncIterator[PrivateDisk]:
    made = PrivateDisk.mount(workdir / "disk", "1m")
    try:
        yield made
    finally:
        made.close()


async def test_a_full_disk_enospc(workdir: Path, disk: PrivateDisk, sleepers: list[subprocess.Popen[bytes]]) -> None:
    state = disk.mountpoint / "state"

    def start() -> DaemonProcess:
        return start_daemon(workdir, "--state-dir", str(state), prefix=disk.prefix)

    async def fill(client: Client) -> None:
        disk.fill()
        # The WAL may have room left in pages it already holds: write until it has none.
        refused = await until_refused(client)
        assert refused.code() == UNAVAILABLE, refused

    await failing_disk_scenario(start, fill, disk.free, sleepers, "full")


@pytest.mark.parametrize(("code", "words"), [(errno.EIO, "SQLITE_IOERR_WRITE"), (errno.EROFS, "SQLITE_IOERR_WRITE")])
async def test_a_disk_that_fails_writes(
    workdir: Path, sleepers: list[subprocess.Popen[bytes]], code: int, words: str
) -> None:
    state = workdir / "state"
    faults = FailWrites.build(workdir, state)

    def start() -> DaemonProcess:
        return start_daemon(workdir, "--state-dir", str(state), env=faults.env)

    await failing_disk_scenario(start, lambda _client: faults.fail(code), faults.heal, sleepers, words)


def test_a_read_only_state_dir_refuses_to_start(workdir: Path) -> None:
    # Read-only before the daemon starts (nothing holds it open, so the remount works): EROFS.
    disk = PrivateDisk.mount(workdir / "disk", "1m")
    try:
        disk.run("mkdir", "-m", "0700", str(disk.mountpoint / "state"))
        disk.run("mount", "-o", "remount,ro", str(disk.mountpoint))
        result = subprocess.run(
            [
                *disk.prefix,
                sys.executable,
                "-m",
                "interrupt_sidecar",
                "serve",
                "--listen",
                f"unix://{workdir / 'sock'}",
                "--metrics-listen",
                "",
                "--state-dir",
                str(disk.mountpoint / "state"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
        )
    finally:
        disk.close()
    assert result.returncode == 3, result
    assert "Read-only file system" in result.stderr and "--state-dir" in result.stderr, result.stderr
    no_traceback(result.stderr)
