"""The terminator registrar and runner: pure client-side logic against a fake backend, no daemon."""

from __future__ import annotations

import asyncio
import os
import signal as signal_module
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from interrupt_sidecar_client import (
    AlreadyExists,
    CancellationSource,
    FailedPrecondition,
    InterruptBehavior,
    InterruptReason,
    InvalidArgument,
    NotFound,
    TerminatorKind,
    aio,
    attach,
)
from interrupt_sidecar_client._registrar import AsyncTerminatorRegistrar, TerminatorRunner
from interrupt_sidecar_client._terminator import CallbackSpec, ProcessGroupSpec, TerminatorSpec

from tests.client.support import WAIT_S, aeventually, eventually, group_members

pytestmark = pytest.mark.timeout(30)


class FakeBackend:
    """Records what reaches the wire; refuses what it is told to."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, TerminatorSpec | None]] = []
        self.refuse: Exception | None = None

    async def register(self, terminator_id: str, spec: TerminatorSpec) -> None:
        self.calls.append(("register", terminator_id, spec))
        if self.refuse is not None:
            raise self.refuse

    async def unregister(self, terminator_id: str) -> None:
        self.calls.append(("unregister", terminator_id, None))


def registrar(behavior: InterruptBehavior) -> tuple[AsyncTerminatorRegistrar, FakeBackend]:
    backend = FakeBackend()
    return AsyncTerminatorRegistrar(behavior, backend), backend


# -- policy ---------------------------------------------------------------------


@pytest.mark.parametrize("behavior", [InterruptBehavior.NON_INTERRUPTIBLE, InterruptBehavior.COOPERATIVE])
async def test_tools_without_terminators_may_not_register(behavior: InterruptBehavior) -> None:
    reg, backend = registrar(behavior)
    with pytest.raises(FailedPrecondition, match=behavior.name):
        await reg.register(lambda: None)
    with pytest.raises(FailedPrecondition):
        await reg.register_process_group(12345)
    assert backend.calls == []


async def test_only_externally_terminated_tools_may_register_process_groups() -> None:
    reg, backend = registrar(InterruptBehavior.THREAD_INTERRUPT)
    await reg.register(lambda: None)
    with pytest.raises(FailedPrecondition, match="EXTERNALLY_TERMINATED"):
        await reg.register_process_group(12345)
    assert [call[0] for call in backend.calls] == ["register"]


async def test_registration_reaches_the_backend_with_its_spec() -> None:
    reg, backend = registrar(InterruptBehavior.EXTERNALLY_TERMINATED)
    callback = await reg.register(lambda: None)
    group = await reg.register_process_group(4242, signal=signal_module.SIGINT, kill_after=1.5)
    assert callback.kind is TerminatorKind.CALLBACK
    assert group.kind is TerminatorKind.PROCESS_GROUP and group.pgid == 4242
    assert backend.calls == [
        ("register", callback.terminator_id, CallbackSpec()),
        ("register", group.terminator_id, ProcessGroupSpec(4242, signal_module.SIGINT, timedelta(seconds=1.5))),
    ]
    assert reg.terminators == (callback, group)


async def test_ids_are_fresh_unless_chosen_and_duplicates_are_refused() -> None:
    reg, _ = registrar(InterruptBehavior.THREAD_INTERRUPT)
    first = await reg.register(lambda: None)
    second = await reg.register(lambda: None)
    assert first.terminator_id != second.terminator_id
    chosen = await reg.register(lambda: None, terminator_id="kill-shell")
    assert chosen.terminator_id == "kill-shell"
    with pytest.raises(AlreadyExists):
        await reg.register(lambda: None, terminator_id="kill-shell")
    with pytest.raises(InvalidArgument):
        await reg.register(lambda: None, terminator_id="")


async def test_pgid_must_be_greater_than_one() -> None:
    reg, backend = registrar(InterruptBehavior.EXTERNALLY_TERMINATED)
    for pgid in (0, 1, -5):
        with pytest.raises(InvalidArgument):
            await reg.register_process_group(pgid)
    assert backend.calls == []


async def test_a_refused_registration_leaves_nothing_behind() -> None:
    reg, backend = registrar(InterruptBehavior.EXTERNALLY_TERMINATED)
    backend.refuse = NotFound("process group 4242 does not exist")
    with pytest.raises(NotFound):
        await reg.register_process_group(4242, terminator_id="group")
    assert reg.terminators == ()
    backend.refuse = None
    await reg.register_process_group(4242, terminator_id="group")  # the id is free again


async def test_unregister_is_idempotent() -> None:
    reg, backend = registrar(InterruptBehavior.THREAD_INTERRUPT)
    terminator = await reg.register(lambda: None)
    await reg.unregister(terminator)
    await reg.unregister(terminator)
    await reg.unregister("never-registered")
    assert reg.terminators == ()
    assert [call[0] for call in backend.calls] == ["register", "unregister", "unregister", "unregister"]


async def test_registrar_as_async_context_manager_closes_and_unregisters() -> None:
    reg, backend = registrar(InterruptBehavior.THREAD_INTERRUPT)
    async with reg as entered:
        assert entered is reg
        terminator = await reg.register(lambda: None)
    assert reg.closed
    assert backend.calls[-1] == ("unregister", terminator.terminator_id, None)
    with pytest.raises(FailedPrecondition, match="closed"):
        await reg.register(lambda: None)
    await reg.unregister(terminator)  # a no-op once closed
    await reg.close()  # idempotent


async def test_registered_block_unregisters_on_exit() -> None:
    reg, backend = registrar(InterruptBehavior.THREAD_INTERRUPT)
    async with reg.registered(lambda: None, terminator_id="cancel-future") as terminator:
        assert list(reg.terminators) == [terminator]
    assert list(reg.terminators) == []
    assert backend.calls[-1] == ("unregister", "cancel-future", None)


# -- the runner -------------------------------------------------------------------


async def test_runner_starts_terminators_in_order_and_a_failure_stops_none() -> None:
    calls: list[str] = []
    reports: dict[str, str] = {}

    def failing() -> None:
        calls.append("b")
        raise OSError("no such process")

    async def slow() -> None:
        calls.append("c")
        await asyncio.sleep(0)

    table = {"a": lambda: calls.append("a"), "b": failing, "c": slow, "d": lambda: calls.append("d")}

    async def report(terminator_id: str, error: str) -> None:
        reports[terminator_id] = error

    runner = TerminatorRunner(table.get, report)
    for terminator_id in ("a", "b", "c", "d", "unknown"):
        runner.submit(terminator_id)
    await aeventually(lambda: len(reports) == 5, what="five terminator results")
    assert calls == ["a", "b", "c", "d"]
    assert reports["a"] == reports["c"] == reports["d"] == ""
    assert reports["b"] == "OSError: no such process"
    assert "not registered" in reports["unknown"]
    await runner.close()


async def test_a_hanging_async_terminator_delays_no_other() -> None:
    release = asyncio.Event()
    reports: list[str] = []

    async def hangs() -> None:
        await release.wait()

    async def report(terminator_id: str, error: str) -> None:
        reports.append(terminator_id)

    runner = TerminatorRunner({"hang": hangs, "quick": lambda: None}.get, report)
    runner.submit("hang")
    runner.submit("quick")
    await aeventually(lambda: reports == ["quick"], what="the quick terminator's result")
    release.set()
    await aeventually(lambda: reports == ["quick", "hang"], what="the slow terminator's result")
    await runner.close()


# -- local runs: attach(source=...) and no-op mode ------------------------------------------


async def test_local_run_runs_callbacks_in_order_at_the_trip_and_late_ones_at_once() -> None:
    source = CancellationSource()
    calls: list[str] = []
    async with aio.attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, source=source) as run:
        await run.registrar.register(lambda: calls.append("first"))
        await run.registrar.register(lambda: calls.append("second"))
        removed = await run.registrar.register(lambda: calls.append("removed"))
        await run.registrar.unregister(removed)
        threading.Thread(target=source.cancel, args=(InterruptReason.USER_SIGINT,)).start()
        await aeventually(lambda: calls == ["first", "second"], what="both terminators")
        await run.registrar.register(lambda: calls.append("late"))
        await aeventually(lambda: calls == ["first", "second", "late"], what="the late terminator")
    assert run.registrar.closed


def test_no_op_run_accepts_what_the_behaviour_allows_and_never_runs_it() -> None:
    calls: list[str] = []
    with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name="offline") as run:
        assert not run.attached
        assert run.execution_id is None
        terminator = run.registrar.register(lambda: calls.append("ran"))
        run.registrar.unregister(terminator)
        with pytest.raises(FailedPrecondition):
            run.registrar.register_process_group(os.getpid())
    assert calls == []
    with pytest.raises(FailedPrecondition):
        run.registrar.register(lambda: None)


def test_sync_registrar_as_context_manager_runs_callbacks_in_worker_threads() -> None:
    source = CancellationSource()
    ran_on: list[str] = []
    with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, source=source, interrupt_worker=False) as run:
        with run.registrar as registrar:
            registrar.register(lambda: ran_on.append(threading.current_thread().name))
            source.cancel(InterruptReason.USER_SIGINT)
            eventually(lambda: len(ran_on) == 1, what="the terminator")
        assert registrar.closed
        with pytest.raises(FailedPrecondition):
            registrar.register(lambda: None)
    assert ran_on[0] != threading.current_thread().name


def test_local_process_group_is_signalled_at_the_trip() -> None:
    source = CancellationSource(grace=timedelta(seconds=5))
    with attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, source=source) as run:
        child = [sys.executable, "-c", "import time; time.sleep(60)"]
        with run.registrar.popen(child) as proc:
            assert os.getpgid(proc.pid) == proc.pid != os.getpgrp()
            source.cancel(InterruptReason.USER_SIGINT)
            assert proc.wait(WAIT_S) == -signal_module.SIGTERM
        assert group_members(proc.pgid) == []


def test_local_backend_refuses_a_group_that_does_not_exist() -> None:
    with attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, source=CancellationSource()) as run:
        with pytest.raises(InvalidArgument, match="own group"):
            run.registrar.register_process_group(os.getpgrp())
        with pytest.raises(NotFound):
            run.registrar.register_process_group(2**22 + 12345)


def test_the_process_helper_refuses_before_starting_a_child(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    run = attach(behavior=InterruptBehavior.THREAD_INTERRUPT)
    with pytest.raises(FailedPrecondition, match="EXTERNALLY_TERMINATED"):
        run.registrar.popen([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    run.unwind()
    assert not marker.exists()
