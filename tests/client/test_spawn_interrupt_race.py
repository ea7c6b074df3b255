"""A THREAD_INTERRUPT that lands while the managed-process helper is spawning.

``popen`` forks, then registers the child's group with the daemon, then hands the child to
the caller's ``with``. An asynchronous exception (another thread's ``ThreadInterrupted``, or
the main thread's SIGINT-raised ``CancelledExecution``) landing anywhere in that stretch used
to leave the child running with nobody to kill it. These tests put a latch right after the
fork: the worker waits there until the interrupt has been fired at it, so the interrupt
arrives in the window every time.
"""

from __future__ import annotations

import contextlib
import os
import signal as signal_module
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from interrupt_sidecar_client import CancelledExecution, Coordinator, InterruptBehavior, InterruptReason, attach
from interrupt_sidecar_client._interrupt import ThreadInterrupter

from tests.client.support import WAIT_S, eventually

pytestmark = pytest.mark.timeout(60)


def _interrupter(run: Any) -> ThreadInterrupter:
    interrupter = run._scope._interrupter
    assert isinstance(interrupter, ThreadInterrupter)
    return interrupter


def _fired_at(interrupter: ThreadInterrupter) -> bool:
    """The interrupt has been fired at the worker, and (for the main thread) its SIGINT
    handled or held back: what the worker would be cut by from here on."""
    with interrupter._lock:  # interrupt() calls SetAsyncExc under it: once seen fired, that is done
        fired = interrupter._fired
    return fired and (not interrupter._is_main or interrupter._raised or interrupter._pending)


@contextlib.contextmanager
def latch_after_fork(
    monkeypatch: pytest.MonkeyPatch, interrupter: Callable[[], ThreadInterrupter], spawned: Callable[[int], None]
) -> Iterator[list[int]]:
    """Every Popen of the block, once forked, reports its pid and waits (in Python code,
    where an asynchronous exception lands) until the worker's interrupt has fired."""
    pids: list[int] = []
    real = subprocess.Popen

    class LatchedPopen(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            pids.append(self.pid)
            spawned(self.pid)
            target = interrupter()
            eventually(lambda: _fired_at(target), what="the interrupt to be fired at the worker")

    monkeypatch.setattr(subprocess, "Popen", LatchedPopen)
    try:
        yield pids
    finally:
        monkeypatch.setattr(subprocess, "Popen", real)
        for pid in pids:  # a leaked child must not outlive a failing test
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal_module.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _gone(pid: int) -> bool:
    """Killed and reaped: no /proc entry at all (a zombie still has one)."""
    return not os.path.exists(f"/proc/{pid}")


@pytest.mark.parametrize("thread", ["worker thread", "main thread"])
def test_an_interrupt_landing_between_the_fork_and_the_registration_still_kills_and_reaps_the_child(
    coordinator: Coordinator, monkeypatch: pytest.MonkeyPatch, thread: str
) -> None:
    begun = coordinator.begin()
    runs: list[Any] = []
    outcome: list[BaseException | str] = []

    def interrupt_at_fork(pid: int) -> None:
        # From another thread: the worker is parked in the latch until this has fired.
        threading.Thread(
            target=coordinator.interrupt, args=(begun.execution_id,), kwargs={"reason": InterruptReason.USER_SIGINT}
        ).start()

    def tool() -> None:
        try:
            with (
                attach(
                    behavior=InterruptBehavior.THREAD_INTERRUPT,
                    tool_name="t",
                    address=begun.address,
                    token=begun.attach_token,
                ) as run,
                attach(
                    behavior=InterruptBehavior.EXTERNALLY_TERMINATED,
                    tool_name="t:process",
                    address=begun.address,
                    token=begun.attach_token,
                ) as spawner,
            ):
                runs.append(run)
                with spawner.registrar.popen(["sleep", "60"]) as proc:
                    proc.wait()
            outcome.append("the block ended without the interrupt")
        except BaseException as error:  # recorded for the assertion
            outcome.append(error)

    with latch_after_fork(monkeypatch, lambda: _interrupter(runs[0]), interrupt_at_fork) as pids:
        if thread == "main thread":
            tool()
        else:
            worker = threading.Thread(target=tool)
            worker.start()
            worker.join(WAIT_S)
            assert not worker.is_alive()
        assert len(pids) == 1
        eventually(lambda: _gone(pids[0]), what=f"the child {pids[0]} to be killed and reaped")
    assert len(outcome) == 1 and isinstance(outcome[0], CancelledExecution), outcome
    coordinator.end(begun.execution_id)
