"""A cancel of an async tool's task that lands while ``create_subprocess_exec`` is spawning.

The adapters cancel an async tool's task at the trip. ``create_subprocess_exec`` forks, waits
for asyncio to finish making the child's transport, registers the child's group with the
daemon and hands it to the turn; a cancel landing in between used to leave processes nobody
kills: asyncio's own cleanup of a cancelled spawn SIGKILLs the leader only, and the helper's
cleanup of a cancelled registration the leader's group only, so a ``setsid`` grandchild lived
on, and the turn never tracked the group. These tests latch the spawn in each of the two
places until the tree is up, the turn has tripped and the tool's task has its cancel pending,
so the cancel arrives in the window every time (as tests/client/test_spawn_interrupt_race.py
does for the sync ``popen``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from interrupt_sidecar_client.adapters._turn import (
    InterruptedCall,
    call_async,
    create_subprocess_exec,
    open_turn,
)

from tests.adapters.support import GRACE, MARGIN, interrupt_context, pids_of, stubborn_tree_command, survivors_now
from tests.client.support import SPAWN_WINDOWS, aeventually, latch_async_spawn
from tests.conftest import DaemonProcess

#: The SIGKILL comes this long after the trip (the tree's grandchild ignores SIGTERM).
KILL_AFTER = 1.0


def _text(call: InterruptedCall) -> str:
    return call.text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("window", SPAWN_WINDOWS)
async def test_a_cancel_landing_while_spawning_still_has_the_whole_tree_killed_and_waited_for(
    daemon: DaemonProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: str
) -> None:
    pidfile = tmp_path / "pids"
    context_id = "spawn-race"
    tool_task: list[asyncio.Task[Any]] = []
    pids: list[int] = []

    async def gate() -> None:
        # The tree is up (its setsid grandchild deaf to SIGTERM), so a kill of the leader or
        # its group alone would orphan the grandchild; then the trip, whose cancel of the
        # tool's task must have been requested before the spawn may go on.
        pids.extend(await asyncio.to_thread(pids_of, pidfile, count=2))
        await asyncio.to_thread(interrupt_context, daemon.address, context_id)
        await aeventually(lambda: tool_task[0].cancelling() > 0, what="the tool's task to be cancelled")

    async def build() -> str:
        current = asyncio.current_task()
        assert current is not None
        tool_task.append(current)
        async with create_subprocess_exec(*stubborn_tree_command(pidfile), kill_after=KILL_AFTER) as proc:
            return f"exit {await proc.wait()}"

    latch_async_spawn(monkeypatch, window, gate)
    async with open_turn("spawn-race", address=daemon.address, context_id=context_id, grace=GRACE) as turn:
        answer = await call_async("build", "call-1", build, _text)
        assert answer.startswith("Interrupted (USER_SIGINT: Esc)"), answer
        await asyncio.wait_for(turn.settle(), GRACE + KILL_AFTER + MARGIN)
        # The turn tracked the group and waited for the daemon's report of the tree gone.
        assert len(pids) == 2
        assert survivors_now(pids) == [], "the tree outlived the interrupted turn"
        assert turn.interrupted_error().unconfirmed_pgids == []
