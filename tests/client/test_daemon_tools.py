"""Tools against the real daemon: the interruptible-tools seed's three recipes on the wire,
process groups killed by the daemon, terminators, and refusals."""

from __future__ import annotations

import asyncio
import os
import signal as signal_module
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from interrupt_sidecar_client import (
    CancellationSignal,
    CancelledExecution,
    Coordinator,
    FailedPrecondition,
    InterruptBehavior,
    InterruptReason,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ToolOutcome,
    Unauthenticated,
    aio,
    attach,
)
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from tests.client.support import WAIT_S, Watcher, aeventually, eventually, group_members
from tests.conftest import DaemonProcess

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def tool_env(coordinator: Coordinator, monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    """Begin an execution and put its address and token in the environment, as an agent
    hands them to a tool. Returns the execution id."""

    def begin(**options: object) -> str:
        begun = coordinator.begin(**options)  # type: ignore[arg-type]
        for name, value in begun.tool_env().items():
            monkeypatch.setenv(name, value)
        return begun.execution_id

    return begin


# -- Recipe 1: a COOPERATIVE tool ends early ---------------------------------------------


def grep_tool(pattern: str, paths: list[Path], after_each_file: Callable[[CancellationSignal], None]) -> str:
    """The seed's GrepTool: polls the signal before the work and before each file."""
    with attach(behavior=InterruptBehavior.COOPERATIVE, tool_name="grep") as run:
        signal = run.signal
        if signal.is_cancelled:
            return f"Grep interrupted: {signal.reason}"
        matches: list[str] = []
        for path in paths:
            if signal.is_cancelled:
                return f"Grep interrupted: {signal.reason}"
            matches += [line for line in path.read_text().splitlines() if pattern in line]
            after_each_file(signal)
        return f"{len(matches)} matches"


def test_cooperative_scan_returns_early_with_the_reason(
    coordinator: Coordinator, tool_env: Callable[..., str], tmp_path: Path
) -> None:
    paths = []
    for name in ("a.txt", "b.txt", "c.txt"):
        path = tmp_path / name
        path.write_text("TODO: something\nnothing here\n" * 2000)
        paths.append(path)
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)
    scanned: list[int] = []

    def after_each_file(signal: CancellationSignal) -> None:
        scanned.append(1)
        if len(scanned) == 1:
            # A NOW input arrives from the agent's side while the first file is done.
            coordinator.interrupt(execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT, detail="do url2 instead")
            # The cancel reaches the tool's stream asynchronously: wait for it (no sleep),
            # so the tool's next check is the one that sees it.
            assert signal.event.wait(WAIT_S)

    result = grep_tool("TODO", paths, after_each_file)
    coordinator.end(execution_id)
    watcher.join()
    assert result == "Grep interrupted: NOW_PRIORITY_INPUT"
    assert len(scanned) == 1
    assert [event.outcome for event in watcher.of("tool_unwound")] == [pb.TOOL_OUTCOME_INTERRUPTED]
    assert watcher.of("grace_overrun") == []


def test_an_uninterrupted_cooperative_scan_completes(
    coordinator: Coordinator, tool_env: Callable[..., str], tmp_path: Path
) -> None:
    path = tmp_path / "a.txt"
    path.write_text("TODO one\nTODO two\n")
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)
    assert grep_tool("TODO", [path], lambda signal: None) == "2 matches"
    coordinator.end(execution_id)
    watcher.join()
    assert [event.outcome for event in watcher.of("tool_unwound")] == [pb.TOOL_OUTCOME_COMPLETED]


# -- Recipe 2: a THREAD_INTERRUPT tool blocked in a long call ------------------------------


def bash_tool(command: list[str], started: threading.Event) -> str:
    """The seed's BashTool: blocked waiting for a child; the worker is interrupted at the trip,
    and the child is killed by a terminator registered as a second line (belt and braces)."""
    with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name="bash") as run:
        process = subprocess.Popen(command)
        try:
            with run.registrar.registered(process.kill):
                started.set()
                try:
                    process.wait()
                except CancelledExecution as interrupted:
                    return f"Bash interrupted: {interrupted.reason}"
                return f"exit {process.returncode}"
        finally:
            process.kill()
            process.wait()


def test_thread_interrupt_tool_blocked_in_a_long_call_is_interrupted(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)
    started = threading.Event()

    def ctrl_c() -> None:
        if started.wait(WAIT_S):
            coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT)

    trip = threading.Thread(target=ctrl_c)
    trip.start()
    began = time.monotonic()
    result = bash_tool(["sleep", "30"], started)
    trip.join(WAIT_S)
    assert result == "Bash interrupted: USER_SIGINT"
    assert time.monotonic() - began < 20
    coordinator.end(execution_id)
    watcher.join()
    assert [event.outcome for event in watcher.of("tool_unwound")] == [pb.TOOL_OUTCOME_INTERRUPTED]


async def test_async_thread_interrupt_tool_blocked_in_a_long_await_is_interrupted(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    entered = asyncio.Event()

    async def fetch_tool() -> str:
        try:
            async with aio.attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name="fetch"):
                entered.set()
                await asyncio.sleep(30)
                return "fetched"
        except CancelledExecution as interrupted:
            return f"Fetch interrupted: {interrupted.reason}"

    tool = asyncio.ensure_future(fetch_tool())
    await asyncio.wait_for(entered.wait(), WAIT_S)
    await asyncio.to_thread(coordinator.interrupt, execution_id, reason=InterruptReason.PARENT_CANCELLED)
    assert await asyncio.wait_for(tool, WAIT_S) == "Fetch interrupted: PARENT_CANCELLED"
    await asyncio.to_thread(coordinator.end, execution_id)


# -- Recipe 3: a NON_INTERRUPTIBLE tool ignores a pre-tripped signal ----------------------


def test_non_interruptible_tool_ignores_a_pretripped_signal_and_succeeds(
    coordinator: Coordinator, tool_env: Callable[..., str], tmp_path: Path
) -> None:
    path = tmp_path / "hello.txt"
    path.write_text("hello")
    execution_id = tool_env()
    coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT)
    watcher = Watcher(coordinator, execution_id)

    def read_tool() -> str:
        with attach(behavior=InterruptBehavior.NON_INTERRUPTIBLE, tool_name="read") as run:
            assert run.signal.is_cancelled  # it sees the state it attached in...
            assert run.signal.reason is InterruptReason.USER_SIGINT
            return path.read_text()  # ...and runs to completion anyway

    assert read_tool() == "hello"
    coordinator.end(execution_id)
    watcher.join()
    assert [event.outcome for event in watcher.of("tool_unwound")] == [pb.TOOL_OUTCOME_COMPLETED]
    assert watcher.of("grace_overrun") == []


def test_non_interruptible_tool_is_never_sent_the_cancel(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)
    with attach(behavior=InterruptBehavior.NON_INTERRUPTIBLE) as run:
        coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT)
        watcher.wait_for("tripped")
        assert not run.signal.is_cancelled
        with pytest.raises(FailedPrecondition):
            run.registrar.register(lambda: None)
    coordinator.end(execution_id)
    watcher.join()


# -- process groups killed by the daemon -----------------------------------------------------


def test_process_group_helper_child_group_is_dead_after_the_trip(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)
    # A shell with a grandchild in the same group: the whole group must go.
    with (
        attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, tool_name="runner") as run,
        run.registrar.popen(["sh", "-c", "sleep 60 & exec sleep 61"]) as proc,
    ):
        assert os.getpgid(proc.pid) == proc.pid
        eventually(lambda: len(group_members(proc.pgid)) == 2, what="the child and grandchild")
        coordinator.interrupt(execution_id, reason=InterruptReason.TASK_CANCELLED)
        assert proc.wait(WAIT_S) == -signal_module.SIGTERM
        eventually(lambda: group_members(proc.pgid) == [], what="the whole group to die")
    coordinator.end(execution_id)
    watcher.join()
    signalled = watcher.of("process_group_signalled")
    assert [(event.pgid, event.signal) for event in signalled][:1] == [(proc.pgid, signal_module.SIGTERM)]


def test_a_group_ignoring_sigterm_is_killed_after_kill_after(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    with (
        attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED) as run,
        run.registrar.popen([sys.executable, "-c", stubborn], kill_after=0.2, stdout=subprocess.PIPE) as proc,
    ):
        assert proc.process.stdout is not None
        assert proc.process.stdout.readline() == b"ready\n"  # SIGTERM is ignored from here on
        coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT)
        assert proc.wait(WAIT_S) == -signal_module.SIGKILL
    coordinator.end(execution_id)


async def test_async_process_group_helper(coordinator: Coordinator, tool_env: Callable[..., str]) -> None:
    execution_id = tool_env()
    async with aio.attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED) as run:
        async with await run.registrar.create_subprocess_exec("sleep", "60") as proc:
            assert os.getpgid(proc.pid) == proc.pid
            await asyncio.to_thread(coordinator.interrupt, execution_id, reason=InterruptReason.SYSTEM_SHUTDOWN)
            assert await asyncio.wait_for(proc.wait(), WAIT_S) == -signal_module.SIGTERM
        assert proc.terminator is None  # unregistered
    await aeventually(lambda: group_members(proc.pgid) == [], what="the group to die")
    await asyncio.to_thread(coordinator.end, execution_id)


def test_a_finished_child_is_unregistered_and_nothing_is_signalled(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)
    with attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED) as run:
        with run.registrar.popen(["true"]) as proc:
            assert proc.wait(WAIT_S) == 0
        assert run.registrar.terminators == ()
        coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT)
        assert run.signal.event.wait(WAIT_S)
    coordinator.end(execution_id)
    watcher.join()
    assert watcher.of("process_group_signalled") == []


def test_a_process_group_that_does_not_exist_is_refused(coordinator: Coordinator, tool_env: Callable[..., str]) -> None:
    tool_env()
    with attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED) as run:
        with pytest.raises(NotFound) as raised:
            run.registrar.register_process_group(2**22 + 4321)
        assert raised.value.terminator_id


# -- callback terminators run by the daemon's order --------------------------------------------


def test_callback_terminators_run_in_registration_order_and_failures_are_reported(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)
    calls: list[str] = []
    lock = threading.Lock()

    def record(name: str) -> Callable[[], None]:
        def terminator() -> None:
            with lock:
                calls.append(name)

        return terminator

    def failing() -> None:
        record("failing")()
        raise RuntimeError("cannot stop it")

    with attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, tool_name="multi") as run:
        run.registrar.register(record("first"), terminator_id="first")
        run.registrar.register(failing, terminator_id="failing")
        run.registrar.register(record("last"), terminator_id="last")
        coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT)
        eventually(lambda: len(calls) == 3, what="three terminators")
        failed = watcher.wait_for("terminator_failed")
        late: list[str] = []
        run.registrar.register(lambda: late.append("late"))  # after the trip: runs at once
        eventually(lambda: late == ["late"], what="the late terminator")
    coordinator.end(execution_id)
    watcher.join()
    assert calls == ["first", "failing", "last"]
    assert failed[0].terminator_id == "failing" and "cannot stop it" in failed[0].message


def test_registration_after_the_execution_ended_is_refused_by_the_daemon(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    execution_id = tool_env()
    with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, interrupt_worker=False) as run:
        coordinator.end(execution_id)
        with pytest.raises(FailedPrecondition) as raised:
            run.registrar.register(lambda: None, terminator_id="too-late")
        assert raised.value.terminator_id == "too-late"


def test_registration_after_unwound_is_refused(coordinator: Coordinator, tool_env: Callable[..., str]) -> None:
    execution_id = tool_env()
    run = attach(behavior=InterruptBehavior.THREAD_INTERRUPT)
    run.unwind(ToolOutcome.COMPLETED)
    with pytest.raises(FailedPrecondition):
        run.registrar.register(lambda: None)
    coordinator.end(execution_id)


# -- attaching ----------------------------------------------------------------------------


def test_attach_reads_the_environment(coordinator: Coordinator, tool_env: Callable[..., str]) -> None:
    execution_id = tool_env(grace=1.5)
    with attach(behavior=InterruptBehavior.COOPERATIVE, tool_name="env", tool_call_id="call-1") as run:
        assert run.attached
        assert run.execution_id == execution_id
        assert run.tool_id
        assert run.grace is not None and run.grace.total_seconds() == 1.5
        info = coordinator.get(execution_id)
        assert info.attached_tools == 1
    coordinator.end(execution_id)


def test_refused_attaches_raise_readable_errors(daemon: DaemonProcess, coordinator: Coordinator) -> None:
    begun = coordinator.begin()
    prefix, token_id, _secret = begun.attach_token.split(".")
    cases: list[tuple[str, type[Exception]]] = [
        ("", Unauthenticated),
        ("not-a-token", InvalidArgument),
        (f"{prefix}.0000000000000000.secret", PermissionDenied),
        (f"{prefix}.{token_id}.wrong-secret", PermissionDenied),
    ]
    for token, error in cases:
        with pytest.raises(error) as raised:
            attach(address=daemon.address, token=token)
        assert "attach" in str(raised.value)
    coordinator.end(begun.execution_id)
    with pytest.raises(PermissionDenied):  # the token of an ended execution: no different from a wrong one
        attach(address=daemon.address, token=begun.attach_token)


def test_an_interrupted_worker_leaving_at_once_still_reports_its_failing_terminator(
    coordinator: Coordinator, tool_env: Callable[..., str]
) -> None:
    # THREAD_INTERRUPT: the trip interrupts the worker, which leaves its block (and unwinds)
    # while the terminator is still running; the failure must still reach the daemon.
    execution_id = tool_env()
    watcher = Watcher(coordinator, execution_id)

    def failing() -> None:
        time.sleep(0.05)  # still running when the worker has already left its block
        raise RuntimeError("the child would not stop")

    def tool() -> None:
        with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name="t") as run:
            run.registrar.register(failing, terminator_id="failing")
            coordinator.interrupt(execution_id, reason=InterruptReason.USER_SIGINT)
            time.sleep(WAIT_S)  # interrupted by the trip's SIGINT long before this ends

    with pytest.raises(CancelledExecution):
        tool()
    failed = watcher.wait_for("terminator_failed")
    assert failed[0].terminator_id == "failing" and "would not stop" in failed[0].message
    coordinator.end(execution_id)
    watcher.join()
