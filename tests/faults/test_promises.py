"""Promises the docs make that had no test that fails without them.

Each test names the promise; each checks order and outcome, never wall time (the speed of
these paths is measured by ``python -m bench``).
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason, SystemClock
from interrupt_sidecar.osedge.process_groups import ProcessGroups
from interrupt_sidecar.runtime import trip_path as trip_path_module
from interrupt_sidecar.runtime.trip_path import _YIELD_TO_WRITERS_UP_TO, TripPath
from interrupt_sidecar.runtime.watch import WatchHub
from interrupt_sidecar.services.doorbell import DoorbellListener
from interrupt_sidecar.services.status import Context
from interrupt_sidecar.services.tool_channel import AttachSession
from interrupt_sidecar_client import Coordinator as ClientCoordinator
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests import other_uid
from tests.cli.implementations import native_cli, python_cli
from tests.conftest import ROOT, DaemonProcess, free_port, group_members, start_daemon
from tests.daemon.wire import RawTool, eventually, group_owner
from tests.requires import require_program, require_root

USER_SIGINT = pb.INTERRUPT_REASON_USER_SIGINT


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="isp-", dir="/tmp") as directory:
        yield Path(directory)


@pytest.fixture
def daemon(workdir: Path) -> Iterator[DaemonProcess]:
    proc = start_daemon(workdir)
    try:
        yield proc
    finally:
        proc.stop(signal.SIGKILL)


@pytest.fixture
async def stub(daemon: DaemonProcess) -> AsyncIterator[pb_grpc.CoordinatorServiceAsyncStub]:
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        yield pb_grpc.CoordinatorServiceStub(channel)


# -- the answer waits for up to eight tools' cancels, not for nine ---------------------------


class SlowTransport:
    """The Attach stream's servicer context, each write completing after ``write_s`` (a
    real transport cannot be told to take exactly this long)."""

    def __init__(self, write_s: float) -> None:
        self.write_s = write_s
        self.written: list[pb.SidecarMessage] = []

    async def write(self, message: pb.SidecarMessage) -> None:
        await asyncio.sleep(self.write_s)
        self.written.append(message)


@pytest.mark.parametrize(
    ("tools", "written_before_the_answer"), [(_YIELD_TO_WRITERS_UP_TO, True), (_YIELD_TO_WRITERS_UP_TO + 1, False)]
)
async def test_the_answer_waits_for_eight_tools_cancels_and_not_for_nine(
    monkeypatch: pytest.MonkeyPatch, tools: int, written_before_the_answer: bool
) -> None:
    # The bound on the wait is lifted so a loaded machine cannot cut it short: what is
    # checked is whether the answer waits at all.
    monkeypatch.setattr(trip_path_module, "_ANSWER_AFTER_CANCELS_S", 30.0)
    clock = SystemClock()
    trip_path = TripPath(clock, ProcessGroups(), WatchHub(clock))
    coordinator = Coordinator(trip_path, clock, default_grace_ns=1_000_000_000)
    execution, _ = coordinator.begin(ExecutionSpec())
    transports, writers = [], []
    for i in range(tools):
        session = AttachSession()
        session.tool = execution.attach(
            tool_id=f"t{i}", tool_name="t", tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0, sink=session
        )
        transport = SlowTransport(0.02)
        transports.append(transport)
        writers.append(asyncio.create_task(session.drain(cast(Context, cast(Any, transport)))))
    await asyncio.sleep(0)
    coordinator.interrupt_execution(execution.execution_id, InterruptReason.USER_SIGINT, "")
    # Awaited directly, as the RPC does: the trip's counts are claimed before the loop turns.
    await trip_path.let_writers_start()
    written = [bool(t.written) for t in transports]
    assert written == [written_before_the_answer] * tools
    for writer in writers:
        writer.cancel()


# -- an answered Interrupt is journaled on the > 8-tool path, and before any signal --------------

# The group's leader: at SIGTERM it reads the journal (as a restarted daemon would) and
# writes down whether the trip was there already.
JOURNAL_READER = textwrap.dedent(
    """
    import signal, sqlite3, sys, time
    journal, execution_id, out = sys.argv[1:4]

    def on_term(signum, frame):
        db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
        row = db.execute("SELECT trip_reason FROM executions WHERE execution_id = ?", (execution_id,)).fetchone()
        with open(out, "w") as f:
            f.write(f"{row[0] if row else None}\\n")
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_term)
    print("ready", flush=True)
    while True:
        time.sleep(1)
    """
)


async def test_an_answered_interrupt_of_nine_tools_is_journaled_and_the_journal_has_it_before_the_signal(
    workdir: Path,
) -> None:
    state = workdir / "state"
    daemon = start_daemon(workdir, "--state-dir", str(state))
    leader: subprocess.Popen[str] | None = None
    try:
        async with grpc.aio.insecure_channel(daemon.address) as channel:
            stub = pb_grpc.CoordinatorServiceStub(channel)
            turn = await stub.BeginExecution(pb.BeginExecutionRequest(grace=Duration(seconds=5)))
            out = workdir / "seen"
            leader = subprocess.Popen(
                [sys.executable, "-c", JOURNAL_READER, str(state / "journal.sqlite3"), turn.execution_id, str(out)],
                start_new_session=True,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert leader.stdout is not None and leader.stdout.readline() == "ready\n"
            tools = []
            for _ in range(_YIELD_TO_WRITERS_UP_TO + 1):  # the path that answers before the writes
                tool = RawTool(channel)
                await tool.hello(turn.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
                tools.append(tool)
            tools.append(await group_owner(channel, turn.attach_token, leader.pid))  # kept open
            await stub.Interrupt(pb.InterruptRequest(execution_id=turn.execution_id, reason=USER_SIGINT))
        # Answered: killed at once, the daemon must still know the trip when it comes back.
        daemon.stop(signal.SIGKILL)
        assert leader.wait(10) == 0
        assert out.read_text() == f"{USER_SIGINT}\n", "the group was signalled before the journal had the trip"
        daemon = start_daemon(workdir, "--state-dir", str(state))
        async with grpc.aio.insecure_channel(daemon.address) as channel:
            stub = pb_grpc.CoordinatorServiceStub(channel)
            seen = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=turn.execution_id))).execution
            assert seen.cancelled and seen.reason == USER_SIGINT
    finally:
        daemon.stop(signal.SIGKILL)
        if leader is not None:
            if leader.poll() is None:
                leader.kill()
            leader.wait(5)
            if leader.stdout is not None:
                leader.stdout.close()


# -- process-group terminators outlive the tool's closed stream ---------------------------------


async def test_a_process_group_outlives_its_tools_closed_stream_and_is_killed_at_the_trip(
    daemon: DaemonProcess, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        async with grpc.aio.insecure_channel(daemon.address) as channel:
            turn = await stub.BeginExecution(pb.BeginExecutionRequest(grace=Duration(nanos=200_000_000)))
            tool = RawTool(channel)
            await tool.hello(turn.attach_token, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED)
            await tool.send(
                register_terminator=pb.RegisterTerminator(
                    terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=sleeper.pid)
                )
            )
            assert (await tool.recv()).HasField("terminator_registered")
            tool.call.cancel()  # the tool's process died: its stream is gone, no unwound
            await eventually(lambda: _attached_tools(stub, turn.execution_id), timeout=10)
            assert sleeper.poll() is None
            await stub.Interrupt(pb.InterruptRequest(execution_id=turn.execution_id, reason=USER_SIGINT))
            await eventually(lambda: sleeper.poll() is not None, timeout=10)
            assert group_members(sleeper.pid) == []
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        sleeper.wait(5)


async def _attached_tools(stub: pb_grpc.CoordinatorServiceAsyncStub, execution_id: str) -> bool:
    seen = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=execution_id))).execution
    return seen.attached_tools == 0


# -- the daemon's limits answer RESOURCE_EXHAUSTED ------------------------------------------------


async def test_the_terminators_per_tool_limit_is_resource_exhausted(
    daemon: DaemonProcess, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        turn = await stub.BeginExecution(pb.BeginExecutionRequest())
        tool = RawTool(channel)
        await tool.hello(turn.attach_token, pb.INTERRUPT_BEHAVIOR_THREAD_INTERRUPT)
        limit = 1_024  # ExecutionLimits.max_terminators_per_tool
        for i in range(limit + 1):
            await tool.send(
                register_terminator=pb.RegisterTerminator(terminator_id=f"t{i}", callback=pb.CallbackTerminator())
            )
        answers = [await tool.recv() for _ in range(limit + 1)]
        assert all(a.HasField("terminator_registered") for a in answers[:limit])
        last = answers[limit]
        assert last.HasField("error") and last.error.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0], last
        assert last.error.terminator_id == f"t{limit}"


# -- an execution pushed out of the remembered ended ones is NOT_FOUND --------------------------


async def test_an_execution_pushed_out_of_the_remembered_ended_ones_is_not_found(
    daemon: DaemonProcess, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    retention = 4_096  # CoordinatorLimits.ended_retention
    first = await stub.BeginExecution(pb.BeginExecutionRequest())
    await stub.EndExecution(pb.EndExecutionRequest(execution_id=first.execution_id))
    seen = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=first.execution_id))).execution
    assert seen.ended
    for batch in range(0, retention, 256):
        begun = await asyncio.gather(*(stub.BeginExecution(pb.BeginExecutionRequest()) for _ in range(256)))
        await asyncio.gather(*(stub.EndExecution(pb.EndExecutionRequest(execution_id=b.execution_id)) for b in begun))
        del batch
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await stub.GetExecution(pb.GetExecutionRequest(execution_id=first.execution_id))
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND, gone.value
    with pytest.raises(grpc.aio.AioRpcError) as gone_too:
        await stub.Interrupt(pb.InterruptRequest(execution_id=first.execution_id, reason=USER_SIGINT))
    assert gone_too.value.code() == grpc.StatusCode.NOT_FOUND


# -- the CLI's exit 6: a second signal during shutdown forces the exit ----------------------------


@pytest.mark.parametrize("implementation", ["python", "native"])
async def test_a_second_sigterm_during_shutdown_exits_6(workdir: Path, implementation: str) -> None:
    # Through the native binary too: it execs the Python daemon, so both signals reach it.
    cli = python_cli() if implementation == "python" else native_cli()
    daemon = start_daemon(workdir, "--grace", "30s", "--shutdown-timeout", "60s", command=cli.argv, env=cli.env)
    try:
        async with grpc.aio.insecure_channel(daemon.address) as channel:
            stub = pb_grpc.CoordinatorServiceStub(channel)
            turn = await stub.BeginExecution(pb.BeginExecutionRequest())
            tool = RawTool(channel)  # never reports unwound: shutdown waits out its grace
            await tool.hello(turn.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
            daemon.process.send_signal(signal.SIGTERM)
            assert (await tool.recv()).HasField("cancel")  # shutdown has begun
            daemon.process.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(daemon.process.wait, 15)
        assert code == 6, daemon.stderr
        assert "second SIGTERM" in daemon.stderr
    finally:
        daemon.stop(signal.SIGKILL)


# -- run: a command that exists but cannot be executed exits 126 -------------------------------


def test_run_exits_126_for_a_command_that_cannot_be_executed(workdir: Path, daemon: DaemonProcess) -> None:
    not_executable = workdir / "tool.sh"
    not_executable.write_text("#!/bin/sh\ntouch ran\n")
    not_executable.chmod(0o644)
    with ClientCoordinator(daemon.address) as coordinator:
        turn = coordinator.begin(grace=0.3)
        result = subprocess.run(
            [sys.executable, "-m", "interrupt_sidecar", "run", "--", str(not_executable)],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
            env={**turn.tool_env(), "PATH": "/usr/bin:/bin"},
        )
    assert result.returncode == 126, result
    assert "cannot run" in result.stderr


# -- the requests every client refuses locally, sent on the wire: the daemon refuses them too ----


async def test_the_daemon_itself_refuses_what_clients_refuse_locally(
    daemon: DaemonProcess, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    # The conformance scenarios non_interruptible and register_after_unwound are refused by
    # every client before anything is sent; here the same requests reach the daemon.
    failed_precondition = grpc.StatusCode.FAILED_PRECONDITION.value[0]
    async with grpc.aio.insecure_channel(daemon.address) as channel:
        turn = await stub.BeginExecution(pb.BeginExecutionRequest())
        for behavior in (pb.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE, pb.INTERRUPT_BEHAVIOR_COOPERATIVE):
            tool = RawTool(channel)
            await tool.hello(turn.attach_token, behavior)
            await tool.send(
                register_terminator=pb.RegisterTerminator(terminator_id="cb", callback=pb.CallbackTerminator())
            )
            refused = await tool.recv()
            assert refused.HasField("error") and refused.error.code == failed_precondition, (behavior, refused)
            assert refused.error.terminator_id == "cb"
        tool = RawTool(channel)
        await tool.hello(turn.attach_token, pb.INTERRUPT_BEHAVIOR_THREAD_INTERRUPT)
        await tool.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED))
        await tool.send(
            register_terminator=pb.RegisterTerminator(terminator_id="late", callback=pb.CallbackTerminator())
        )
        refused = await tool.recv()
        assert refused.HasField("error") and refused.error.code == failed_precondition, refused
        assert "closed its run" in refused.error.message
        # Nothing above tripped anything.
        seen = (await stub.GetExecution(pb.GetExecutionRequest(execution_id=turn.execution_id))).execution
        assert not seen.cancelled


# -- the doorbell rings before any stream write of the trip ------------------------------------


async def test_every_doorbell_rings_before_the_first_stream_write() -> None:
    with tempfile.TemporaryDirectory(prefix="isp-", dir="/tmp") as directory:
        listener = DoorbellListener(Path(directory) / "d.bell")
        listener.start()
        clock = SystemClock()
        trip_path = TripPath(clock, ProcessGroups(), WatchHub(clock))
        coordinator = Coordinator(trip_path, clock, default_grace_ns=1_000_000_000)
        execution, _ = coordinator.begin(ExecutionSpec())
        bells, transports, writers = [], [], []
        try:
            for i in range(3):
                session = AttachSession()
                session.tool = execution.attach(
                    tool_id=f"t{i}", tool_name="t", tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0
                )
                session.tool.sink = session
                line = listener.line()
                session.doorbell = line
                bell = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                bell.connect(str(listener.path))
                bell.sendall(line.token.encode())
                bells.append(bell)
                deadline = asyncio.get_running_loop().time() + 10
                while not line.claimed:
                    assert asyncio.get_running_loop().time() < deadline, "the doorbell never took the token"
                    await asyncio.sleep(0.005)
                transport = SlowTransport(0.0)
                transports.append(transport)
                writers.append(asyncio.create_task(session.drain(cast(Context, cast(Any, transport)))))
            await asyncio.sleep(0)
            coordinator.interrupt_execution(execution.execution_id, InterruptReason.USER_SIGINT, "")
            # No loop turn yet: every bell already holds its frame, no stream has written.
            rung = [len(b.recv(4096, socket.MSG_DONTWAIT)) > 0 for b in bells]
            assert rung == [True] * 3
            assert [t.written for t in transports] == [[]] * 3
            await trip_path.let_writers_start()
            for transport in transports:
                deadline = asyncio.get_running_loop().time() + 10
                while not transport.written:
                    assert asyncio.get_running_loop().time() < deadline
                    await asyncio.sleep(0.005)
                assert transport.written[0].HasField("cancel")
        finally:
            for writer in writers:
                writer.cancel()
            for bell in bells:
                bell.close()
            listener.close()


# -- run: a process group the daemon refuses exits 5, the command not run ----------------------


def test_run_exits_5_when_the_daemon_refuses_the_process_group(workdir: Path) -> None:
    # The wrapper runs as nobody, so its command's group runs as a uid outside the daemon's
    # allowed set (the daemon's own: root): the daemon refuses to ever signal it.
    require_root("running the wrapper as another uid needs root")
    setpriv = require_program("setpriv", "the wrapper is run as another uid")
    unshare = require_program("unshare", "nobody reaches the checkout through a private mount namespace")
    token_file = workdir / "token"
    token_file.write_text("t" * 32 + "\n")
    token_file.chmod(0o600)
    port = free_port()
    daemon = start_daemon(workdir, "--listen", f"127.0.0.1:{port}", "--auth-token-file", str(token_file))
    marker = Path(tempfile.mkdtemp(prefix="isp-nobody-", dir="/tmp"))
    marker.chmod(0o777)
    try:
        with ClientCoordinator(daemon.address) as coordinator:
            turn = coordinator.begin(grace=0.3)
            env = {
                "PATH": "/usr/bin:/bin",
                "INTERRUPT_SIDECAR_ADDRESS": f"127.0.0.1:{port}",
                "INTERRUPT_SIDECAR_TOKEN": turn.tool_env()["INTERRUPT_SIDECAR_TOKEN"],
                "PYTHONPATH": f"{ROOT / 'sidecar'}:{ROOT / 'clients' / 'python' / 'src'}",
            }
            as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
            run = [*as_nobody, "-m", "interrupt_sidecar", "run", "--", "touch", str(marker / "ran")]
            result = subprocess.run(
                # Wherever the checkout and the interpreter live (an owner-only home, pyenv
                # under /root): nobody must reach them. One process throughout (each step
                # execs the next), so the wrapper's PID and group are the ones started here.
                other_uid.argv(run, unshare=unshare),
                capture_output=True,
                text=True,
                timeout=60,
                cwd="/",
                env=env,
            )
        assert result.returncode == 5, result
        assert "refused the process group" in result.stderr, result.stderr
        assert not (marker / "ran").exists()
    finally:
        daemon.stop(signal.SIGKILL)
        shutil.rmtree(marker, ignore_errors=True)
