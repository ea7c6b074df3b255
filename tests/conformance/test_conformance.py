"""One real daemon, five client libraries, the same scenarios: see PROTOCOL.md.

The runner plays the agent (with the Python client's Coordinator) and checks, step by step,
what each language's driver reports. Languages whose driver was not built (toolchain
missing) are skipped with the reason their build left in ``build/conformance/<lang>/SKIPPED``;
with ``INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES=1`` (set by .ci/run) a skip is a failure.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from interrupt_sidecar_client import Coordinator, EventKind, ExecutionEvent, InterruptReason

from tests.conftest import DaemonProcess, group_members, start_daemon

from .conftest import LANGUAGES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = ROOT / "build" / "conformance"
SCENARIOS = sorted(p.name for p in HERE.iterdir() if (p / "README.md").is_file())
STEP_TIMEOUT_S = 20.0  # a driver's own waits give up after 10 s; this only catches a hung driver
REQUIRE_ALL = os.environ.get("INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES") == "1"


def driver_command(language: str, scenario: str) -> list[str]:
    """The argv that runs ``scenario``'s driver in ``language``, or skip/fail when it is not built."""
    if language == "python":
        return [sys.executable, str(HERE / scenario / "driver.py")]
    launcher = BUILD / language / "driver"
    if launcher.is_file() and os.access(launcher, os.X_OK):
        return [str(launcher), scenario]
    skipped = BUILD / language / "SKIPPED"
    why = skipped.read_text().strip() if skipped.is_file() else f"{launcher.relative_to(ROOT)} was not built"
    message = f"{language} skipped: {why} (build it with `python scripts/build_clients.py {language}`)"
    if REQUIRE_ALL:
        pytest.fail(f"{message}; INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES=1 makes a skip a failure")
    pytest.skip(message)


@dataclass
class Driver:
    """A running driver: its JSON steps arrive on a queue; ``go`` goes to its stdin."""

    process: subprocess.Popen[str]
    language: str
    steps: queue.Queue[dict[str, Any] | None] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)
    stderr_lines: list[str] = field(default_factory=list)

    def start_pumps(self) -> None:
        assert self.process.stdout is not None and self.process.stderr is not None
        stdout, stderr = self.process.stdout, self.process.stderr

        def read_steps() -> None:
            for line in stdout:
                self.seen.append(line.rstrip("\n"))
                try:
                    self.steps.put(json.loads(line))
                except json.JSONDecodeError:
                    self.steps.put({"step": "unparseable", "line": line})
            self.steps.put(None)

        def read_stderr() -> None:
            self.stderr_lines.extend(stderr)

        threading.Thread(target=read_steps, daemon=True).start()
        threading.Thread(target=read_stderr, daemon=True).start()

    def transcript(self) -> str:
        return f"stdout so far: {self.seen}\nstderr:\n{''.join(self.stderr_lines)}"

    def expect(self, step: str, **fields: object) -> dict[str, Any]:
        """The next step must be ``step`` with (at least) ``fields``."""
        try:
            got = self.steps.get(timeout=STEP_TIMEOUT_S)
        except queue.Empty:
            pytest.fail(
                f"{self.language} driver printed nothing for {STEP_TIMEOUT_S}s, expected {step!r}\n{self.transcript()}"
            )
        if got is None:
            self.process.wait(5)
            pytest.fail(
                f"{self.language} driver exited ({self.process.returncode}) before {step!r}\n{self.transcript()}"
            )
        assert got.get("step") == step, f"expected step {step!r}, got {got}\n{self.transcript()}"
        for key, value in fields.items():
            assert got.get(key) == value, (
                f"step {step!r}: {key}={got.get(key)!r}, expected {value!r}\n{self.transcript()}"
            )
        return got

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def finish(self) -> None:
        """The driver must exit 0 with nothing more to say."""
        try:
            code = self.process.wait(STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.language} driver did not exit\n{self.transcript()}")
        rest = self.steps.get(timeout=5)
        assert rest is None, f"unexpected extra step {rest}\n{self.transcript()}"
        assert code == 0, f"{self.language} driver exited {code}\n{self.transcript()}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@dataclass
class Stage:
    """What a scenario gets: the daemon, an agent's coordinator, and a way to start the driver."""

    daemon: DaemonProcess
    coordinator: Coordinator
    command: list[str]
    language: str
    drivers: list[Driver] = field(default_factory=list)

    def start(self, token: str, **extra_env: str) -> Driver:
        env = {
            **os.environ,
            "INTERRUPT_SIDECAR_ADDRESS": self.daemon.address,
            "INTERRUPT_SIDECAR_TOKEN": token,
            "PYTHONPATH": str(ROOT),
            **extra_env,
        }
        process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        driver = Driver(process, self.language)
        driver.start_pumps()
        self.drivers.append(driver)
        return driver


def eventually(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


# -- scenarios -------------------------------------------------------------------------


def cancel_delivered(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    events: Generator[ExecutionEvent, None, None] = stage.coordinator.watch(turn.execution_id)  # type: ignore[assignment]
    assert next(events).kind is EventKind.SNAPSHOT  # the watch is live before the tool starts
    driver = stage.start(turn.attach_token)
    driver.expect("attached", cancelled=False)
    detail = "conformance: cancel_delivered"
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT, detail=detail)
    driver.expect("cancelled", reason="USER_SIGINT", detail=detail)
    driver.finish()
    for event in events:
        if event.kind is EventKind.TOOL_UNWOUND:
            assert event.proto.tool_unwound.tool_name == f"conformance-{stage.language}"
            break
    events.close()
    stage.coordinator.end(turn.execution_id)


def single_shot(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    driver.expect("attached", cancelled=False)
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    driver.expect("cancelled", reason="USER_SIGINT")
    (again,) = stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT)
    assert not again.tripped and again.reason is InterruptReason.USER_SIGINT
    driver.go()
    driver.expect("final", reason="USER_SIGINT", notifications=1)
    driver.finish()
    stage.coordinator.end(turn.execution_id)


def non_interruptible(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    driver.expect("attached", cancelled=False)
    driver.expect("register", refused=True, code="FAILED_PRECONDITION")
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    eventually(lambda: stage.coordinator.get(turn.execution_id).cancelled, "the execution to be cancelled")
    driver.go()
    driver.expect("final", cancelled=False)
    driver.finish()
    stage.coordinator.end(turn.execution_id)


def register_after_trip(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    driver.expect("attached", cancelled=False)
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    driver.expect("cancelled", reason="USER_SIGINT")
    driver.expect("terminator_ran", terminator_id="late")
    driver.finish()
    stage.coordinator.end(turn.execution_id)


def fifo_terminators(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    ids = ["first", "second", "third"]
    driver.expect("registered", terminator_ids=ids)
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    driver.expect("terminators_ran", order=ids)
    driver.finish()
    stage.coordinator.end(turn.execution_id)


def leave_at_trip(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    events: Generator[ExecutionEvent, None, None] = stage.coordinator.watch(turn.execution_id)  # type: ignore[assignment]
    assert next(events).kind is EventKind.SNAPSHOT
    driver = stage.start(turn.attach_token)
    driver.expect("registered", terminator_id="slow_failing")
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    driver.expect("ended", reason="USER_SIGINT")
    driver.finish()
    # After the stream ends nothing more can be reported: what the tool reported is in.
    seen: list[ExecutionEvent] = []
    for event in events:
        seen.append(event)
        if event.kind is EventKind.TOOL_DETACHED:
            break
    events.close()
    kinds = [event.kind.value for event in seen]
    failed = [event.proto.terminator_failed for event in seen if event.kind is EventKind.TERMINATOR_FAILED]
    assert failed, f"no terminator_failed before the tool's stream ended: {kinds}\n{driver.transcript()}"
    assert failed[0].terminator_id == "slow_failing" and "would not stop" in failed[0].message, failed[0]
    stage.coordinator.end(turn.execution_id)


def register_after_unwound(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    driver.expect("attached", cancelled=False)
    driver.expect("register", refused=True, code="FAILED_PRECONDITION")
    driver.finish()
    assert not stage.coordinator.get(turn.execution_id).cancelled
    stage.coordinator.end(turn.execution_id)


def refused_on_the_wire(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    driver.expect("attached", behavior="NON_INTERRUPTIBLE")
    refused = driver.expect("refused", terminator_id="refused", code="FAILED_PRECONDITION")
    # The daemon's words (domain.execution.ensure_behavior_allows), not a client library's.
    assert "declared NON_INTERRUPTIBLE" in refused["message"], f"{refused}\n{driver.transcript()}"
    driver.expect("attached", behavior="EXTERNALLY_TERMINATED")
    driver.expect("registered", terminator_id="accepted")
    refused = driver.expect("refused", terminator_id="too_late", code="FAILED_PRECONDITION")
    assert "has closed its run" in refused["message"], f"{refused}\n{driver.transcript()}"
    driver.finish()
    assert not stage.coordinator.get(turn.execution_id).cancelled
    stage.coordinator.end(turn.execution_id)


def process_group(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    # Watched from before the trip: the group must die because the daemon signalled it (a
    # client that killed the child itself would pass every other check here).
    events: Generator[ExecutionEvent, None, None] = stage.coordinator.watch(turn.execution_id)  # type: ignore[assignment]
    assert next(events).kind is EventKind.SNAPSHOT
    driver = stage.start(turn.attach_token)
    started = driver.expect("started")
    pid, pgid = started["pid"], started["pgid"]
    assert pid == pgid, f"the helper must start the child as the leader of a new group: {started}"
    assert group_members(pgid)
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
    driver.expect("cancelled", reason="USER_SIGINT")
    driver.expect("child_exited")
    driver.finish()
    eventually(lambda: not group_members(pgid), f"process group {pgid} to be gone")
    signalled, gone = [], []
    for event in events:
        if event.kind is EventKind.PROCESS_GROUP_SIGNALLED:
            signalled.append(event.proto.process_group_signalled)
        elif event.kind is EventKind.PROCESS_GROUP_GONE:
            gone.append(event.proto.process_group_gone)
            break
    events.close()
    assert [(s.pgid, s.signal, s.escalation) for s in signalled] == [(pgid, int(signal.SIGTERM), False)], signalled
    assert [g.pgid for g in gone] == [pgid], gone
    stage.coordinator.end(turn.execution_id)


def stale_execution(stage: Stage) -> None:
    stale = stage.coordinator.begin()
    current = stage.coordinator.begin()
    driver = stage.start(current.attach_token, CONFORMANCE_STALE_TOKEN=stale.attach_token)
    driver.expect("attached", stale_cancelled=False, current_cancelled=False)
    stage.coordinator.interrupt(stale.execution_id, reason=InterruptReason.USER_SIGINT)
    stage.coordinator.end(stale.execution_id)
    driver.expect("stale_cancelled", reason="USER_SIGINT")
    assert not stage.coordinator.get(current.execution_id).cancelled
    driver.go()
    driver.expect("current", cancelled=False)
    stage.coordinator.interrupt(current.execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT)
    driver.expect("current_cancelled", reason="NOW_PRIORITY_INPUT")
    driver.finish()
    stage.coordinator.end(current.execution_id)


def idiom(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    driver.expect("before", cancelled=False)
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT)
    driver.expect("after", cancelled=True, reason="NOW_PRIORITY_INPUT")
    driver.finish()
    stage.coordinator.end(turn.execution_id)


def attach_after_trip(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    stage.coordinator.interrupt(turn.execution_id, reason=InterruptReason.TASK_CANCELLED)
    driver = stage.start(turn.attach_token)
    driver.expect("attached", cancelled=True, reason="TASK_CANCELLED")
    driver.finish()
    stage.coordinator.end(turn.execution_id)


def daemon_restart(stage: Stage) -> None:
    turn = stage.coordinator.begin()
    driver = stage.start(turn.attach_token)
    driver.expect("attached", cancelled=False)
    socket_dir = stage.daemon.socket_path.parent
    stage.daemon.stop(signal.SIGKILL)
    stage.daemon.socket_path.unlink(missing_ok=True)  # a crashed daemon leaves its socket file
    stage.daemon = start_daemon(socket_dir)
    driver.go()
    driver.expect("after_restart", error_code="UNAVAILABLE", cancelled=False)
    driver.finish()


SCENARIO_FUNCTIONS: dict[str, Callable[[Stage], None]] = {
    f.__name__: f
    for f in (
        cancel_delivered,
        single_shot,
        non_interruptible,
        register_after_trip,
        fifo_terminators,
        leave_at_trip,
        register_after_unwound,
        refused_on_the_wire,
        process_group,
        stale_execution,
        idiom,
        attach_after_trip,
        daemon_restart,
    )
}


def test_every_scenario_folder_has_a_runner_and_all_drivers() -> None:
    assert sorted(SCENARIO_FUNCTIONS) == SCENARIOS
    files = {
        "python": "driver.py",
        "go": "driver.go",
        "typescript": "driver.ts",
        "java": "Driver.java",
        "rust": "driver.rs",
    }
    missing = [f"{s}/{files[lang]}" for s in SCENARIOS for lang in LANGUAGES if not (HERE / s / files[lang]).is_file()]
    if missing and not REQUIRE_ALL:
        pytest.skip(f"drivers not written yet: {missing}")
    assert not missing


@pytest.fixture(scope="module")
def shared_daemon() -> Iterator[DaemonProcess]:
    """The one real daemon every scenario but daemon_restart runs against."""
    with tempfile.TemporaryDirectory(prefix="isd-conf-", dir="/tmp") as directory:
        daemon = start_daemon(Path(directory))
        try:
            yield daemon
        finally:
            code = daemon.stop()
            assert code == 0, f"daemon exited with {code}; stderr:\n{daemon.stderr}"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(scenario: str, language: str, shared_daemon: DaemonProcess) -> None:
    command = driver_command(language, scenario)
    if scenario == "daemon_restart":
        with tempfile.TemporaryDirectory(prefix="isd-rs-", dir="/tmp") as directory:
            own = start_daemon(Path(directory))
            stage = Stage(own, Coordinator(own.address), command, language)
            try:
                SCENARIO_FUNCTIONS[scenario](stage)
            finally:
                for driver in stage.drivers:
                    driver.kill()
                stage.daemon.stop()
        return
    stage = Stage(shared_daemon, Coordinator(shared_daemon.address), command, language)
    try:
        SCENARIO_FUNCTIONS[scenario](stage)
    finally:
        for driver in stage.drivers:
            driver.kill()
