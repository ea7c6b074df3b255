"""A cancel of the task calling ``run.registrar.create_subprocess_exec`` while it spawns.

asyncio's ``create_subprocess_exec`` forks, then waits for the child's transport; a cancel of
the calling task landing there runs asyncio's own cleanup, which SIGKILLs the leader alone:
the rest of its process group lived on, never registered with the daemon, killed by nobody.
The spawn is latched there until the task's cancel is pending (tests/client/support.py
``latch_async_spawn``), so the cancel lands in the window every time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from interrupt_sidecar_client import InterruptBehavior, aio

from tests.adapters.support import assert_all_gone, pids_of
from tests.client.support import aeventually, latch_async_spawn
from tests.conftest import DaemonProcess

pytestmark = pytest.mark.timeout(60)


async def test_a_cancel_landing_in_asyncios_spawn_kills_the_whole_group_and_is_raised(
    daemon: DaemonProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "pids"
    tmp = f"{pidfile}.tmp"
    # The leader and a child in its group; a kill of the leader alone leaves the child.
    tree = ["sh", "-c", f"echo $$ > {tmp}; sleep 60 & echo $! >> {tmp}; mv {tmp} {pidfile}; wait"]
    spawner: list[asyncio.Task[Any]] = []
    pids: list[int] = []

    async def gate() -> None:
        pids.extend(await asyncio.to_thread(pids_of, pidfile, count=2))
        spawner[0].cancel()
        await aeventually(lambda: spawner[0].cancelling() > 0, what="the spawning task to be cancelled")

    latch_async_spawn(monkeypatch, "asyncio's spawn", gate)
    async with aio.AsyncCoordinator(daemon.address) as coordinator:
        begun = await coordinator.begin(context_id="spawn-cancel")
        async with aio.attach(
            behavior=InterruptBehavior.EXTERNALLY_TERMINATED,
            tool_name="t:process",
            address=begun.address,
            token=begun.attach_token,
        ) as run:
            spawner.append(asyncio.ensure_future(run.registrar.create_subprocess_exec(*tree)))
            with pytest.raises(asyncio.CancelledError):
                await spawner[0]
            assert len(pids) == 2
            # Killed as the caller's `async with` would have: the group, not the leader alone,
            # and its registration withdrawn.
            assert_all_gone(pids, timeout=5.0)
            assert run.registrar.terminators == ()
        await coordinator.end(begun.execution_id)
