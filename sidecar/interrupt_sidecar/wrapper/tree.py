"""Find the wrapper's descendants through ``/proc`` and kill them without hitting a stranger.

The wrapper is a child subreaper, so every process the command started — including one
that double-forked and called ``setsid()`` to leave the group — is still a descendant:
its parent chain in ``/proc`` leads to the wrapper. After the command exits, whatever
is left is terminated (SIGTERM + SIGCONT), then SIGKILLed after the grace, round after
round until ``/proc`` shows none.

PID reuse: a descendant found in one scan may exit and its PID be recycled before it is
signalled. Each process is signalled through a pidfd opened *before* its start time is
re-checked, so the pidfd provably names the process that was scanned.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable

from interrupt_sidecar.osedge.procfs import descendants, scan, signal_process

log = logging.getLogger(__name__)

#: After SIGKILL, how long survivors are waited for before the wrapper gives up (and says so).
GIVE_UP_AFTER_KILL_S = 5.0


async def kill_descendants(root: int, grace: float, reap: Callable[[], None]) -> None:
    """Terminate every live descendant of ``root``; SIGKILL those still alive after ``grace`` s.

    ``reap`` collects exited children (the wrapper's own, and orphans re-parented to it).
    Repeats until ``/proc`` shows no live descendant, so children forked during the
    clean-up are caught too. Each process is signalled through ``signal_process`` (procfs):
    a pidfd whose start time is checked after opening, so a recycled PID is never hit.
    """
    loop = asyncio.get_running_loop()
    kill_at = loop.time() + grace
    signalled: set[tuple[int, int]] = set()
    killed: set[tuple[int, int]] = set()
    delay = 0.001
    while True:
        reap()
        alive = descendants(scan(), [root])
        if not alive:
            return
        now = loop.time()
        if now >= kill_at + GIVE_UP_AFTER_KILL_S:
            log.warning("descendants survived SIGKILL: %s", ", ".join(str(p.pid) for p in alive))
            return
        for proc in alive:
            key = (proc.pid, proc.start)
            if now >= kill_at:
                if key not in killed and signal_process(proc.pid, proc.start, signal.SIGKILL):
                    killed.add(key)
            elif key not in signalled and signal_process(proc.pid, proc.start, signal.SIGTERM):
                signalled.add(key)
                # A stopped process cannot act on SIGTERM until it is continued.
                signal_process(proc.pid, proc.start, signal.SIGCONT)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
