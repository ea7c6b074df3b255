"""PID-reuse safety, run as PID 1 of a private PID namespace::

    unshare --pid --fork --mount-proc --kill-child python pid_reuse_scenario.py

In a namespace of its own the PIDs are ours to steer: ``/proc/sys/kernel/ns_last_pid``
makes the next process get a chosen PID. The scenario registers a process group, lets it
die, hands its number to an unrelated process that leads a group of the same number, trips
the execution, and checks the stranger survives and the refusal is reported. It also checks
the ``init_group`` rule, which needs PID 1's group to be a real one (only possible here).

Prints one JSON verdict line on stdout: ``{"ok": bool, "checks": {name: bool}, ...}``.
Stdlib, grpc and the generated stubs only: this runs outside pytest and outside ``tests``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
KITCHEN_SINK = Path(__file__).resolve().parent / "kitchen_sink.py"
DEADLINE_S = 10.0
REUSE_ATTEMPTS = 20


def stat_of(pid: int) -> tuple[str, int, int] | None:
    """(state, pgrp, start time) of ``pid`` now, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[2]), int(fields[19])


def alive(pid: int, start: int) -> bool:
    now = stat_of(pid)
    return now is not None and now[2] == start and now[0] not in ("Z", "X")


def poll_until(check: Any, what: str, timeout: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout}s")
        time.sleep(0.01)
    return result


class Tool:
    """One Attach stream, driven synchronously."""

    def __init__(self, channel: grpc.Channel, token: str) -> None:
        self._outgoing: queue.Queue[pb.ToolMessage | None] = queue.Queue()
        self._replies: Iterator[pb.SidecarMessage] = pb_grpc.ToolChannelServiceStub(channel).Attach(
            iter(self._outgoing.get, None), timeout=60
        )
        self.send(
            pb.ToolMessage(
                hello=pb.Hello(
                    attach_token=token, tool_name="pid-reuse", behavior=pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED
                )
            )
        )
        assert self.recv().HasField("attached")

    def send(self, message: pb.ToolMessage) -> None:
        self._outgoing.put(message)

    def recv(self) -> pb.SidecarMessage:
        return next(self._replies)

    def register(self, terminator_id: str, pgid: int) -> pb.SidecarMessage:
        self.send(
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(
                    terminator_id=terminator_id, process_group=pb.ProcessGroupTerminator(pgid=pgid)
                )
            )
        )
        return self.recv()

    def close(self) -> None:
        self._outgoing.put(None)


class Scenario:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.checks: dict[str, bool] = {}
        self.facts: dict[str, Any] = {}
        self.children: list[subprocess.Popen[bytes]] = []
        self.daemon_log = directory / "daemon.log"
        self.in_borrowed_group = False

    def leave_borrowed_group(self) -> None:
        if self.in_borrowed_group:
            os.setpgid(0, 0)
            self.in_borrowed_group = False

    def check(self, name: str, ok: bool) -> None:
        self.checks[name] = bool(ok)

    def spawn(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, **kwargs)
        self.children.append(child)
        return child

    def run(self) -> None:
        self.check("pid_1", os.getpid() == 1)
        # PID 1 joins a group of its own child, so "the group of PID 1" is a real pgid > 1
        # that the daemon must refuse (init_group). Joined before the daemon starts (it reads
        # PID 1's group once) and left as soon as the rule is checked: a PID 1 that exits
        # while in another process's group hangs forever in the kernel (zap_pid_ns_processes
        # waits for that pgid's number to be freed, and PID 1 itself holds it).
        init_group = self.spawn(["sleep", "300"], process_group=0)
        os.setpgid(0, init_group.pid)
        self.in_borrowed_group = True
        self.facts["init_pgid"] = init_group.pid
        daemon, address = self.start_daemon()
        with grpc.insecure_channel(address) as channel:
            coordinator = pb_grpc.CoordinatorServiceStub(channel)
            begun = coordinator.BeginExecution(pb.BeginExecutionRequest(grace=Duration(nanos=300_000_000)))
            tool = Tool(channel, begun.attach_token)
            refused = tool.register("init", init_group.pid)
            self.leave_borrowed_group()
            self.check(
                "init_group_refused",
                refused.error.code == grpc.StatusCode.PERMISSION_DENIED.value[0] and "PID 1" in refused.error.message,
            )
            self.facts["init_group_refusal"] = refused.error.message

            old_pid, old_start = self.registered_group_that_dies(tool)
            stranger = self.stranger_with_pid(old_pid)
            if stranger is None:
                return
            stranger_stat = stat_of(old_pid)
            assert stranger_stat is not None
            self.check("stranger_leads_group_with_old_number", stranger_stat[1] == old_pid)
            self.check("stranger_is_another_process", stranger_stat[2] != old_start)
            stranger_start = stranger_stat[2]

            events = self.trip(coordinator, begun.execution_id)
            kinds = [e.WhichOneof("event") for e in events]
            failures = [e.terminator_failed.message for e in events if e.HasField("terminator_failed")]
            self.facts["events"] = kinds
            self.facts["failures"] = failures
            self.check("refusal_reported_on_watch", any("reused" in m and str(old_pid) in m for m in failures))
            self.check(
                "nothing_signalled", not any(e.HasField("process_group_signalled") for e in events if e is not None)
            )
            self.check("stranger_survives_the_trip", alive(old_pid, stranger_start))
            # Ending the execution ends the watch once no kill is in flight: after that the
            # daemon can do nothing more to the stranger, so its survival is final.
            coordinator.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))
            self.drain_watch(coordinator, begun.execution_id)
            self.check("stranger_survives_the_end", alive(old_pid, stranger_start) and stranger.poll() is None)
            tool.close()
        daemon.send_signal(signal.SIGTERM)
        self.facts["daemon_exit"] = daemon.wait(DEADLINE_S)
        log = self.daemon_log.read_text()
        self.check("refusal_in_daemon_log", "reused" in log and f"process group {old_pid}" in log)

    def start_daemon(self) -> tuple[subprocess.Popen[bytes], str]:
        address = f"unix://{self.directory}/s.sock"
        daemon = self.spawn(
            [sys.executable, "-m", "interrupt_sidecar", "serve", "--listen", address, "--metrics-listen", ""],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.daemon_log.open("wb"),
            # Its own group, so the init_group rule (not own_group) is what refuses PID 1's.
            start_new_session=True,
        )
        assert daemon.stdout is not None
        ready = daemon.stdout.readline().decode()
        if not ready.startswith("ready "):
            raise RuntimeError(f"daemon not ready: {ready!r} {self.daemon_log.read_text()}")
        return daemon, address

    def registered_group_that_dies(self, tool: Tool) -> tuple[int, int]:
        report = self.directory / "sink.jsonl"
        sink = self.spawn(
            [sys.executable, str(KITCHEN_SINK), "--report", str(report), "--term", "exit", "--exit-code", "7"],
            start_new_session=True,
        )
        line = poll_until(lambda: report.exists() and report.read_text().endswith("\n") and report.read_text(), "sink")
        pinned = json.loads(line.splitlines()[0])
        registered = tool.register("pg", sink.pid)
        self.check("group_registered", registered.terminator_registered.terminator_id == "pg")
        # The group dies by itself (a tool's child that finished), and its PID is freed.
        os.kill(sink.pid, signal.SIGTERM)
        self.check("group_exited_with_its_code", sink.wait(DEADLINE_S) == 7)
        self.check("old_pid_free", stat_of(sink.pid) is None)
        self.facts["old_pid"] = sink.pid
        return sink.pid, int(pinned["start"])

    def stranger_with_pid(self, pid: int) -> subprocess.Popen[bytes] | None:
        """An unrelated process leading a new group, given ``pid`` through ns_last_pid.
        Retried: a thread of this process or of the daemon may take the number first."""
        for attempt in range(1, REUSE_ATTEMPTS + 1):
            Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
            stranger = self.spawn(["sleep", "300"], start_new_session=True)
            if stranger.pid == pid:
                self.facts["reuse_attempts"] = attempt
                return stranger
            stranger.kill()
            stranger.wait()
        self.check("pid_reused", False)
        return None

    def trip(self, coordinator: pb_grpc.CoordinatorServiceStub, execution_id: str) -> list[pb.ExecutionEvent]:
        stream = coordinator.WatchExecution(pb.WatchExecutionRequest(execution_id=execution_id), timeout=DEADLINE_S)
        first = next(stream)
        assert first.HasField("snapshot")
        coordinator.Interrupt(
            pb.InterruptRequest(execution_id=execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT, detail="reuse")
        )
        events = []
        for event in stream:
            events.append(event)
            if event.WhichOneof("event") in ("terminator_failed", "process_group_gone"):
                break
        stream.cancel()
        return events

    def drain_watch(self, coordinator: pb_grpc.CoordinatorServiceStub, execution_id: str) -> None:
        stream = coordinator.WatchExecution(pb.WatchExecutionRequest(execution_id=execution_id), timeout=DEADLINE_S)
        kinds = [event.WhichOneof("event") for event in stream]
        self.facts["after_end"] = kinds

    def cleanup(self) -> None:
        """Stop every process this namespace holds: ours by PID, then any straggler (as PID 1
        of a private namespace, every process here is one we started)."""
        self.leave_borrowed_group()
        for child in self.children:
            if child.poll() is None:
                child.kill()
        for child in self.children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(DEADLINE_S)
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(entry.name), signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass


def _terminated(_signum: int, _frame: object) -> None:
    # unshare --kill-child=SIGTERM: the test gave up on us. Unwind through cleanup (which
    # leaves the borrowed group first) rather than die where the kernel would hang.
    raise SystemExit(2)


def main() -> int:
    signal.signal(signal.SIGTERM, _terminated)
    with tempfile.TemporaryDirectory(prefix="isr-", dir="/tmp") as directory:
        scenario = Scenario(Path(directory))
        error = None
        try:
            scenario.run()
        except (Exception, SystemExit):
            error = traceback.format_exc()
        finally:
            scenario.cleanup()
        ok = error is None and bool(scenario.checks) and all(scenario.checks.values())
        verdict = {"ok": ok, "checks": scenario.checks, "facts": scenario.facts, "error": error}
        print(json.dumps(verdict), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
