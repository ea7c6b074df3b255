"""Which processes an MCP call started, and how they are killed without hitting a stranger.

The bridge is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so everything the server
starts — including a tool that double-forks and calls ``setsid()`` — stays a descendant of
the bridge in ``/proc``. A call's processes are the descendants that appeared after the
call began: a *baseline* of ``(pid, start time)`` pairs is taken when the call is forwarded,
and at the kill everything below the bridge that is not in the baseline (and is not the
server itself) is the call's. The pair names one process for good (a recycled PID has
another start time), and every signal goes through ``procfs.signal_process`` — a pidfd
whose start time is re-checked after opening — the same path the daemon and
``interrupt-sidecar run`` kill with.

Calls that overlap share the processes started while both ran: a kill of one call's
processes also stops what an overlapping call of *another* turn started in that window
(calls of the same turn trip together anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Collection
from dataclasses import dataclass

from interrupt_sidecar.osedge.procfs import ProcStat, descendants, scan, signal_process

log = logging.getLogger(__name__)

Identity = tuple[int, int]  # (pid, start time in clock ticks since boot)

#: After SIGKILL, how long the processes are waited for before the bridge gives up (and says so).
GIVE_UP_AFTER_KILL_S = 5.0


def tree(root: int) -> list[ProcStat]:
    """Live descendants of ``root`` (zombies excluded)."""
    return descendants(scan(), [root])


def baseline(root: int) -> frozenset[Identity]:
    """Who is below ``root`` now: the processes a call that starts now did not start."""
    return frozenset((p.pid, p.start) for p in tree(root))


def reap_orphans(root: int, keep: Collection[int]) -> None:
    """Collect exited children of the subreaper ``root`` (orphans re-parented to it), except
    the pids in ``keep`` (the server, whose status asyncio's child watcher collects)."""
    for process in scan().values():
        if process.ppid == root and process.zombie and process.pid not in keep:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(process.pid, os.WNOHANG)


@dataclass(slots=True)
class KillReport:
    """What one kill did."""

    found: int = 0
    terminated: int = 0
    killed: int = 0
    survivors: int = 0


async def kill(
    root: int,
    *,
    spare: Collection[Identity] = (),
    spare_pids: Collection[int] = (),
    kill_after: float,
) -> KillReport:
    """SIGTERM (and SIGCONT) every live descendant of ``root`` except ``spare``/``spare_pids``;
    SIGKILL those still alive ``kill_after`` s later; return once ``/proc`` shows none.

    Repeats the scan until nothing is left, so processes forked during the kill are caught
    too (they are not in ``spare``: they appeared after the baseline).
    """
    spare_set = set(spare)

    def select() -> list[ProcStat]:
        reap_orphans(root, spare_pids)
        return [p for p in tree(root) if (p.pid, p.start) not in spare_set and p.pid not in spare_pids]

    return await _kill_until_gone(select, kill_after)


async def kill_family(
    root: int, members: Collection[Identity], *, keep: Collection[int], kill_after: float
) -> KillReport:
    """Like :func:`kill`, for ``members`` and whatever they fork meanwhile, and nothing else
    below ``root``: a server's tree, taken before the server was stopped (its orphans are
    re-parented to the bridge, so they are no longer found below it), while a new server
    may already be running beside them. ``keep``: pids whose exit status is not ours to reap."""
    family = set(members)

    def select() -> list[ProcStat]:
        reap_orphans(root, keep)
        table = scan()
        alive = [p for p in table.values() if (p.pid, p.start) in family and not p.zombie]
        for child in descendants(table, [p.pid for p in alive]):
            family.add((child.pid, child.start))
            alive.append(child)
        return alive

    return await _kill_until_gone(select, kill_after)


async def _kill_until_gone(select: Callable[[], list[ProcStat]], kill_after: float) -> KillReport:
    loop = asyncio.get_running_loop()
    kill_at = loop.time() + kill_after
    report = KillReport()
    terminated: set[Identity] = set()
    killed: set[Identity] = set()
    seen: set[Identity] = set()
    delay = 0.001
    while True:
        alive = select()
        seen.update((p.pid, p.start) for p in alive)
        report.found = len(seen)
        if not alive:
            return report
        now = loop.time()
        if now >= kill_at + GIVE_UP_AFTER_KILL_S:
            report.survivors = len(alive)
            log.warning("processes survived SIGKILL: %s", ", ".join(str(p.pid) for p in alive))
            return report
        for process in alive:
            identity = (process.pid, process.start)
            if now >= kill_at:
                if identity not in killed and signal_process(process.pid, process.start, signal.SIGKILL):
                    killed.add(identity)
                    report.killed = len(killed)
            elif identity not in terminated and signal_process(process.pid, process.start, signal.SIGTERM):
                terminated.add(identity)
                report.terminated = len(terminated)
                # A stopped process cannot act on SIGTERM until it is continued.
                signal_process(process.pid, process.start, signal.SIGCONT)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
