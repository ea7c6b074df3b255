"""What the termination tests share: the kitchen sink as a test-side object, an independent
``/proc`` reader (the tests must not verify the daemon with the daemon's own code), death
timestamps through pidfds, and the wire steps of a process-group registration."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests import requires
from tests.conftest import ROOT
from tests.daemon.wire import RawTool, Watch, eventually, watch

KITCHEN_SINK = Path(__file__).resolve().parent / "kitchen_sink.py"
EXTERNAL = pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED
#: How long a tree may take to vanish from /proc once the daemon says it is gone (reaping by
#: init is asynchronous) or once a test expects it gone. Generous: CI machines stall.
GONE_TIMEOUT_S = 3.0


# -- /proc, read independently of interrupt_sidecar.osedge ---------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    state: str
    pgrp: int
    session: int
    start: int


def read_proc(pid: int) -> Proc | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return Proc(pid, fields[0].decode(), int(fields[2]), int(fields[3]), int(fields[19]))


def is_alive(pid: int, start: int) -> bool:
    """True while the process ``(pid, start)`` exists and is not a zombie."""
    now = read_proc(pid)
    return now is not None and now.start == start and now.state not in ("Z", "X")


def pids_with_argument(argument: str) -> list[int]:
    """Live processes whose command line contains ``argument`` (a per-test unique path): the
    kitchen sink forks without exec, so every process of its tree carries the root's argv."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if argument.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                stat = read_proc(int(entry.name))
                if stat is not None and stat.state not in ("Z", "X"):
                    found.append(int(entry.name))
    return found


def signal_exact(pid: int, start: int, signum: int) -> None:
    """Signal ``(pid, start)`` through a pidfd, so cleanup can never hit a recycled PID."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if is_alive(pid, start):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(fd, signum)
    finally:
        os.close(fd)


# -- the kitchen sink ----------------------------------------------------------------------


@dataclass
class KitchenSink:
    """One kitchen-sink tree; the root is the leader of its own process group."""

    process: subprocess.Popen[bytes]
    report: Path
    _cleaned: bool = field(default=False, repr=False)

    @classmethod
    def start(cls, directory: Path, *args: str) -> KitchenSink:
        report = directory / f"report-{time.monotonic_ns()}.jsonl"
        process = subprocess.Popen(
            [sys.executable, str(KITCHEN_SINK), "--report", str(report), *args],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        return cls(process, report)

    @property
    def pgid(self) -> int:
        return self.process.pid

    def reports(self) -> list[dict[str, Any]]:
        try:
            text = self.report.read_text()
        except FileNotFoundError:
            return []
        # A line being written right now may be incomplete: only whole lines count.
        return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]

    async def reported(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until at least ``count`` processes of the tree have reported."""

        def enough() -> list[dict[str, Any]] | None:
            found = self.reports()
            return found if len(found) >= count else None

        result: list[dict[str, Any]] = await eventually(enough, timeout)
        return result

    def by_role(self, role: str) -> list[dict[str, Any]]:
        return [r for r in self.reports() if r["role"] == role]

    async def all_in_state(self, state: str, timeout: float = 10.0) -> None:
        def check() -> bool:
            return all((p := read_proc(r["pid"])) is not None and p.state == state for r in self.reports())

        await eventually(check, timeout)

    def survivors(self) -> list[dict[str, Any]]:
        """Every reported process still alive (same pid and start time, not a zombie), plus any
        process carrying this tree's argv that never got to report."""
        alive = [r for r in self.reports() if is_alive(r["pid"], r["start"])]
        known = {r["pid"] for r in alive}
        unreported = [
            {"pid": pid, "role": "unreported"}
            for pid in pids_with_argument(str(self.report))
            if pid not in known and pid != self.process.pid
        ]
        return alive + unreported

    async def all_gone(self, timeout: float = GONE_TIMEOUT_S) -> None:
        """Every process of the tree is gone from /proc (zombies count as gone)."""
        self.process.poll()  # reap the root, our own child, so it is not a zombie forever
        try:
            await eventually(lambda: not self.survivors(), timeout, interval=0.02)
        except AssertionError:
            survivors = self.survivors()
            for s in survivors:
                s["now"] = read_proc(s["pid"])
            raise AssertionError(f"{len(survivors)} of {len(self.reports())} processes survived: {survivors}") from None

    def cleanup(self) -> None:
        """SIGKILL whatever is left (each by its pinned identity), then reap the root."""
        if self._cleaned:
            return
        self._cleaned = True
        for record in self.reports():
            signal_exact(record["pid"], record["start"], signal.SIGKILL)
        for pid in pids_with_argument(str(self.report)):
            stat = read_proc(pid)
            if stat is not None:
                signal_exact(pid, stat.start, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@contextlib.contextmanager
def kitchen_sink(directory: Path, *args: str) -> Iterator[KitchenSink]:
    sink = KitchenSink.start(directory, *args)
    try:
        yield sink
    finally:
        sink.cleanup()


class DeathClock:
    """Wall-clock time (ns) at which each watched process exited, observed through pidfds.

    A process cannot die of SIGKILL before SIGKILL was sent, so its death time is a lower
    bound the daemon cannot fake for "the escalation was not sent before the grace".
    """

    def __init__(self) -> None:
        self.died_at: dict[int, int] = {}
        self._fds: dict[int, int] = {}

    def watch(self, pid: int, start: int) -> None:
        fd = os.pidfd_open(pid)
        if not is_alive(pid, start):
            os.close(fd)
            raise AssertionError(f"process {pid} died before it was watched")
        loop = asyncio.get_running_loop()
        self._fds[pid] = fd
        loop.add_reader(fd, self._died, pid)

    def _died(self, pid: int) -> None:
        self.died_at.setdefault(pid, time.time_ns())
        fd = self._fds.pop(pid)
        asyncio.get_running_loop().remove_reader(fd)
        os.close(fd)

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        for fd in self._fds.values():
            loop.remove_reader(fd)
            os.close(fd)
        self._fds.clear()


# -- the wire ------------------------------------------------------------------------------


def seconds(value: float) -> Duration:
    duration = Duration()
    duration.FromNanoseconds(round(value * 1e9))
    return duration


async def begin(stub: pb_grpc.CoordinatorServiceAsyncStub, grace_s: float) -> pb.BeginExecutionResponse:
    return await stub.BeginExecution(pb.BeginExecutionRequest(grace=seconds(grace_s)))


async def register_group(
    channel: grpc.aio.Channel, token: str, pgid: int, **group: Any
) -> tuple[RawTool, pb.SidecarMessage]:
    """Attach an EXTERNALLY_TERMINATED tool and register ``pgid``; returns the daemon's answer."""
    tool = RawTool(channel)
    attached = await tool.hello(token, EXTERNAL, name="kitchen-sink")
    assert attached.HasField("attached"), attached
    await tool.send(
        register_terminator=pb.RegisterTerminator(
            terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=pgid, **group)
        )
    )
    return tool, await tool.recv()


async def registered_group(channel: grpc.aio.Channel, token: str, pgid: int, **group: Any) -> RawTool:
    tool, answer = await register_group(channel, token, pgid, **group)
    assert answer.terminator_registered.terminator_id == "pg", answer
    return tool


@dataclass
class TripRecord:
    """What WatchExecution said about one trip of an execution with one process group."""

    watcher: Watch
    events: list[pb.ExecutionEvent]

    def one(self, kind: str) -> pb.ExecutionEvent:
        found = [e for e in self.events if e.WhichOneof("event") == kind]
        assert len(found) == 1, (kind, self.events)
        return found[0]

    @property
    def tripped_at_ns(self) -> int:
        return self.one("tripped").tripped.tripped_at.ToNanoseconds()

    @property
    def signals(self) -> list[tuple[int, int, bool]]:
        return [(s.pgid, s.signal, s.escalation) for s in self.watcher.of("process_group_signalled")]

    def escalation(self) -> pb.ExecutionEvent:
        found = [
            e for e in self.events if e.HasField("process_group_signalled") and e.process_group_signalled.escalation
        ]
        assert len(found) == 1, self.events
        return found[0]

    @property
    def gone_latency_ns(self) -> int:
        return self.one("process_group_gone").process_group_gone.latency.ToNanoseconds()


async def trip(
    stub: pb_grpc.CoordinatorServiceAsyncStub, execution_id: str, *, until: str = "process_group_gone"
) -> TripRecord:
    """Trip with USER_SIGINT and collect the watch's events up to the first ``until`` event
    (or a TerminatorFailed, which ends every process-group story)."""
    watcher = await watch(stub, execution_id)
    await stub.Interrupt(pb.InterruptRequest(execution_id=execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT))
    events = await watcher.until(lambda e: e.WhichOneof("event") in (until, "terminator_failed"))
    return TripRecord(watcher, events)


def run_in_private_pid_namespace(scenario: Path, timeout_s: float) -> dict[str, Any]:
    """Run ``scenario`` as PID 1 of a private PID namespace (its own ``/proc``); its last
    stdout line is a JSON verdict, returned with the scenario's stderr added."""
    # --kill-child=SIGTERM: should this test give up, the scenario (PID 1 inside) unwinds
    # through its cleanup; everything else in the namespace dies with it.
    argv = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child=SIGTERM", sys.executable, str(scenario)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
    except FileNotFoundError:
        unavailable("unshare(1) is not installed")
    lines = done.stdout.strip().splitlines()
    if not lines and "unshare failed" in done.stderr:
        unavailable(f"unshare is denied here: {done.stderr.strip()}")
    assert lines, f"no verdict (exit {done.returncode}); stderr:\n{done.stderr}"
    verdict: dict[str, Any] = json.loads(lines[-1])
    verdict["stderr"] = done.stderr
    return verdict


def assert_scenario_passed(verdict: dict[str, Any], steps: set[str]) -> None:
    """Every check of a namespace scenario's verdict passed, and every one of ``steps`` ran
    (a scenario that stopped early must not pass)."""
    assert verdict["error"] is None, verdict["error"]
    checks = verdict["checks"]
    failed = [name for name, ok in checks.items() if not ok]
    assert not failed, f"failed checks {failed}: {json.dumps(verdict, indent=2)}"
    assert set(checks) == steps
    assert verdict["ok"]


def unavailable(why: str) -> None:
    # CI (.ci/run) promises root and unshare: there, not running a namespace test is a failure.
    requires.unavailable(f"a private-PID-namespace test cannot run: {why}")
