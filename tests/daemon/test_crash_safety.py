"""Holders, leases and the journal: no orphans when the agent or the daemon dies.

Real daemons, real processes: an agent process killed while holding an execution, a lease
left to expire, and a daemon ``kill -9``-ed at varied points and restarted on its
``--state-dir``.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import ROOT, DaemonProcess, group_members, start_daemon
from tests.daemon.wire import RawTool, Watch, eventually, group_owner


@dataclass
class Sleeper:
    """A ``sleep`` leading a process group of its own, reaped by the test."""

    process: subprocess.Popen[bytes]

    @property
    def pgid(self) -> int:
        return self.process.pid

    def dead(self) -> bool:
        return self.process.poll() is not None

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(5)


@pytest.fixture
def sleepers() -> Iterator[list[Sleeper]]:
    made: list[Sleeper] = []
    yield made
    for sleeper in made:
        sleeper.kill()


def new_sleeper(made: list[Sleeper]) -> Sleeper:
    sleeper = Sleeper(subprocess.Popen(["sleep", "300"], start_new_session=True))
    made.append(sleeper)
    return sleeper


def new_stubborn(made: list[Sleeper]) -> subprocess.Popen[bytes]:
    """A process leading its own group that ignores SIGTERM (only SIGKILL ends it), once ready."""
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
            "time.sleep(300)",
        ],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    made.append(Sleeper(stubborn))
    assert stubborn.stdout is not None
    assert stubborn.stdout.readline() == b"ready\n"  # SIGTERM is ignored from here on
    stubborn.stdout.close()
    return stubborn


@pytest.fixture
def state_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="isd-st-", dir="/tmp") as directory:
        yield Path(directory)


@pytest.fixture
async def running(state_dir: Path) -> AsyncIterator[Daemon]:
    daemon = Daemon(state_dir)
    try:
        yield daemon
    finally:
        await daemon.close()
        daemon.process.stop(signal.SIGKILL)


class Daemon:
    """A daemon on ``state_dir/sock`` with its journal in ``state_dir/state``; restartable."""

    def __init__(self, state_dir: Path, *extra: str) -> None:
        self.dir = state_dir
        self.extra = extra
        self.process = self._start()
        self.channel = grpc.aio.insecure_channel(self.process.address)
        self.stub = pb_grpc.CoordinatorServiceStub(self.channel)

    def _start(self) -> DaemonProcess:
        return start_daemon(self.dir, "--state-dir", str(self.dir / "state"), *self.extra)

    async def crash_and_restart(self) -> None:
        self.process.stop(signal.SIGKILL)
        await self.channel.close()
        self.process = self._start()
        self.channel = grpc.aio.insecure_channel(self.process.address)
        self.stub = pb_grpc.CoordinatorServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close()

    async def begin(self, **fields: object) -> pb.BeginExecutionResponse:
        return await self.stub.BeginExecution(pb.BeginExecutionRequest(**fields))  # type: ignore[arg-type]

    async def get(self, execution_id: str) -> pb.Execution:
        return (await self.stub.GetExecution(pb.GetExecutionRequest(execution_id=execution_id))).execution

    async def interrupt(self, execution_id: str, reason: int = pb.INTERRUPT_REASON_USER_SIGINT) -> None:
        await self.stub.Interrupt(pb.InterruptRequest(execution_id=execution_id, reason=reason))  # type: ignore[arg-type]

    async def register_group(self, token: str, pgid: int) -> RawTool:
        return await group_owner(self.channel, token, pgid)

    def hold(self, execution_id: str) -> Watch:
        watch = Watch(self.stub, execution_id)
        watch.call = self.stub.WatchExecution(pb.WatchExecutionRequest(execution_id=execution_id, hold=True))
        return watch


# -- holders and leases ------------------------------------------------------------


AGENT = textwrap.dedent(
    """
    import sys
    from interrupt_sidecar_client import Coordinator
    coordinator = Coordinator(sys.argv[1])
    events = coordinator.watch(sys.argv[2], hold=True)
    next(events)  # the snapshot: the hold is in place
    print("holding", flush=True)
    for _ in events:
        pass
    """
)


async def test_an_agent_killed_while_holding_trips_holder_lost_and_its_tools_groups_die(
    running: Daemon, sleepers: list[Sleeper]
) -> None:
    begun = await running.begin()
    sleeper = new_sleeper(sleepers)
    tool = await running.register_group(begun.attach_token, sleeper.pgid)
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT, running.process.address, begun.execution_id],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert agent.stdout is not None
        assert (await asyncio.to_thread(agent.stdout.readline)).strip() == "holding"
        assert (await running.get(begun.execution_id)).holders == 1
        agent.kill()  # the agent crashes: its socket closes with it
        cancel = (await tool.recv()).cancel
        assert cancel.reason == pb.INTERRUPT_REASON_HOLDER_LOST
        await eventually(sleeper.dead, timeout=5.0)
        assert sleeper.process.returncode == -signal.SIGTERM
        execution = await running.get(begun.execution_id)
        assert execution.reason == pb.INTERRUPT_REASON_HOLDER_LOST and execution.holders == 0
    finally:
        agent.kill()
        agent.wait(5)
        assert agent.stdout is not None
        agent.stdout.close()


async def test_a_holder_that_ends_its_watch_after_the_execution_ended_trips_nothing(running: Daemon) -> None:
    begun = await running.begin()
    holder = running.hold(begun.execution_id)
    await holder.started()
    ended = await running.stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))
    assert not ended.execution.cancelled
    await holder.until(lambda e: e.HasField("ended"))
    holder.close()
    assert not (await running.get(begun.execution_id)).cancelled


async def test_holding_an_ended_execution_is_refused(running: Daemon) -> None:
    begun = await running.begin()
    await running.stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))
    holder = running.hold(begun.execution_id)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await holder.next()
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_an_unrenewed_lease_trips_lease_lost_and_kills_the_groups(
    running: Daemon, sleepers: list[Sleeper]
) -> None:
    from google.protobuf.duration_pb2 import Duration

    begun = await running.begin(lease_ttl=Duration(nanos=300_000_000))
    sleeper = new_sleeper(sleepers)
    tool = await running.register_group(begun.attach_token, sleeper.pgid)
    assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_LEASE_LOST
    await eventually(sleeper.dead, timeout=5.0)


# -- the journal: kill -9 and restart ------------------------------------------------


async def test_a_trip_survives_a_crash_and_the_restart_kills_its_groups(
    running: Daemon, sleepers: list[Sleeper]
) -> None:
    # SIGTERM ignored and a long grace: when the daemon dies the group is still alive.
    stubborn = new_stubborn(sleepers)
    from google.protobuf.duration_pb2 import Duration

    begun = await running.begin(grace=Duration(seconds=1))
    await running.register_group(begun.attach_token, stubborn.pid)
    await running.interrupt(begun.execution_id, pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT)
    await running.crash_and_restart()
    # The restart remembers the trip (reason and all) and finishes the kill: SIGKILL at the grace.
    execution = await running.get(begun.execution_id)
    assert execution.cancelled and execution.reason == pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT
    await eventually(lambda: stubborn.poll() is not None, timeout=5.0)
    assert stubborn.returncode == -signal.SIGKILL


async def test_a_tool_reattaches_with_its_token_after_a_restart_and_sees_the_true_state(running: Daemon) -> None:
    begun = await running.begin()
    await running.interrupt(begun.execution_id, pb.INTERRUPT_REASON_TASK_CANCELLED)
    await running.crash_and_restart()
    tool = RawTool(running.channel)
    attached = (await tool.hello(begun.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)).attached
    assert attached.execution_id == begun.execution_id
    assert attached.cancelled and attached.reason == pb.INTERRUPT_REASON_TASK_CANCELLED
    assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_TASK_CANCELLED


async def crash_iteration(daemon: Daemon, sleepers: list[Sleeper], point: int) -> None:
    """One round: executions in every state, ``kill -9`` at ``point``, restart, check.

    - ``tripped``: interrupted before the crash → its group must die, its trip be remembered;
    - ``held``: its holder (this test) comes back after the restart → its group must live;
    - ``orphaned``: held, but its holder never comes back → HOLDER_LOST, group dies;
    - ``idle``: neither tripped nor held → untouched.
    ``point`` varies where the crash lands relative to the trip.
    """
    tripped, held, orphaned, idle = [await daemon.begin() for _ in range(4)]
    groups = {}
    for name, begun in (("tripped", tripped), ("held", held), ("orphaned", orphaned), ("idle", idle)):
        sleeper = new_sleeper(sleepers)
        await daemon.register_group(begun.attach_token, sleeper.pgid)
        groups[name] = sleeper
    holders = [daemon.hold(held.execution_id), daemon.hold(orphaned.execution_id)]
    for holder in holders:
        await holder.started()
    interrupted = point != 0  # point 0: the crash lands before the interrupt is sent
    if interrupted:
        await daemon.interrupt(tripped.execution_id)
        if point == 2:  # ... or after the group is already gone
            await eventually(groups["tripped"].dead, timeout=5.0)
    await daemon.crash_and_restart()
    # The agent holding `held` is alive: it holds again at once. `orphaned`'s never does.
    again = daemon.hold(held.execution_id)
    await again.started()
    watch_orphaned = Watch(daemon.stub, orphaned.execution_id)
    await watch_orphaned.started()
    await watch_orphaned.until(lambda e: e.HasField("tripped"))
    assert watch_orphaned.of("tripped")[0].reason == pb.INTERRUPT_REASON_HOLDER_LOST
    await eventually(groups["orphaned"].dead, timeout=5.0)
    if interrupted:
        execution = await daemon.get(tripped.execution_id)
        assert execution.cancelled and execution.reason == pb.INTERRUPT_REASON_USER_SIGINT, "a trip was lost"
        await eventually(groups["tripped"].dead, timeout=5.0)
    else:
        assert not (await daemon.get(tripped.execution_id)).cancelled
        assert group_members(groups["tripped"].pgid)
    # Untripped with a live holder, and untripped unheld: nothing of theirs was killed.
    assert group_members(groups["held"].pgid) and group_members(groups["idle"].pgid)
    assert not (await daemon.get(held.execution_id)).cancelled
    assert not (await daemon.get(idle.execution_id)).cancelled
    again.close()
    watch_orphaned.close()
    # Clean up through the daemon, which proves the restored groups are still killable.
    for begun in (tripped, held, idle):
        await daemon.interrupt(begun.execution_id)
    for name in ("tripped", "held", "idle"):
        await eventually(groups[name].dead, timeout=5.0)
    for begun in (tripped, held, orphaned, idle):
        await daemon.stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))


@pytest.mark.timeout(60)
async def test_crash_loop_quick(state_dir: Path, sleepers: list[Sleeper]) -> None:
    daemon = Daemon(state_dir, "--holder-grace", "500ms")
    try:
        for point in (0, 1, 2):
            await crash_iteration(daemon, sleepers, point)
    finally:
        await daemon.close()
        daemon.process.stop(signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_crash_loop_50_iterations(state_dir: Path, sleepers: list[Sleeper]) -> None:
    daemon = Daemon(state_dir, "--holder-grace", "300ms")
    rng = random.Random(20261130)
    try:
        for _ in range(50):
            await crash_iteration(daemon, sleepers, rng.choice((0, 1, 1, 2)))
    finally:
        await daemon.close()
        daemon.process.stop(signal.SIGKILL)


def _serve_once(listen: Path, state: Path) -> subprocess.CompletedProcess[str]:
    """``serve`` on ``listen`` and ``state``, expected to refuse to start (it is not stopped)."""
    return subprocess.run(
        [sys.executable, "-m", "interrupt_sidecar", "serve", "--listen", f"unix://{listen}", "--state-dir", str(state)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )


def test_a_second_daemon_on_the_same_state_dir_is_refused(state_dir: Path) -> None:
    first = start_daemon(state_dir, "--state-dir", str(state_dir / "state"))
    try:
        other = state_dir / "other"
        other.mkdir()
        proc = _serve_once(other / "s.sock", state_dir / "state")
        assert proc.returncode == 3, proc.stderr
        assert "in use by another running daemon" in proc.stderr
        # Both taken (the first daemon's socket and state dir): the state dir is the error named.
        both = _serve_once(state_dir / "sidecar.sock", state_dir / "state")
        assert both.returncode == 3, both.stderr
        assert "--state-dir" in both.stderr and "in use by another running daemon" in both.stderr, both.stderr
    finally:
        assert first.stop() == 0


def test_a_journal_that_cannot_open_fails_the_start_and_leaves_no_socket(tmp_short: Path) -> None:
    # The journal opens on a thread while the sockets are bound: a start it fails must
    # take the sockets it bound with it, and report the journal.
    state = tmp_short / "state"
    state.mkdir(mode=0o700)
    (state / "journal.sqlite3").write_bytes(b"not a database" * 100)
    proc = _serve_once(tmp_short / "s.sock", state)
    assert proc.returncode == 3, proc.stderr
    assert "journal" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_short / "s.sock").exists()


# -- shutdown ------------------------------------------------------------------------


async def test_sigterm_with_a_stubborn_tool_exits_0_within_grace_plus_one_second(
    running: Daemon, sleepers: list[Sleeper]
) -> None:
    from google.protobuf.duration_pb2 import Duration

    stubborn = new_stubborn(sleepers)
    grace_s = 1.0
    begun = await running.begin(grace=Duration(seconds=1))
    tool = await running.register_group(begun.attach_token, stubborn.pid)  # never reports unwound
    health = health_pb2_grpc.HealthStub(running.channel)
    serving = await health.Check(health_pb2.HealthCheckRequest())
    assert serving.status == health_pb2.HealthCheckResponse.SERVING
    started = time.monotonic()
    running.process.process.send_signal(signal.SIGTERM)
    assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_SYSTEM_SHUTDOWN
    code = await asyncio.to_thread(running.process.process.wait, 15)
    elapsed = time.monotonic() - started
    assert code == 0
    # The daemon's promise (and what Kubernetes' termination grace is sized by): the
    # grace, then SIGKILL, streams ended, exit — within one second after the grace.
    assert elapsed <= grace_s + 1.0, f"shutdown took {elapsed:.2f}s with a {grace_s}s grace"
    assert stubborn.poll() == -signal.SIGKILL
    assert await tool.status() == grpc.StatusCode.UNAVAILABLE
