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
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PROC = Path("/proc")
#: After SIGKILL, how long survivors are waited for before the wrapper gives up (and says so).
GIVE_UP_AFTER_KILL_S = 5.0


@dataclass(frozen=True, slots=True)
class Proc:
    """One process as ``/proc/PID/stat`` showed it."""

    pid: int
    ppid: int
    state: str
    start: int  # clock ticks since boot: with the pid, the process's identity

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X", "x")


def read_proc(pid: int) -> Proc | None:
    """``/proc/PID/stat`` parsed, or None once the process is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    return Proc(pid=pid, ppid=int(rest[1]), state=rest[0].decode(), start=int(rest[19]))


def descendants(root: int) -> list[Proc]:
    """Every process whose parent chain leads to ``root`` (zombies included), parents first."""
    children: dict[int, list[Proc]] = {}
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            proc = read_proc(int(entry.name))
            if proc is not None:
                children.setdefault(proc.ppid, []).append(proc)
    found: list[Proc] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for child in children.get(parent, ()):
            found.append(child)
            frontier.append(child.pid)
    return found


def send(proc: Proc, signum: int) -> bool:
    """Signal ``proc`` if it is still the process that was scanned. False if it is gone."""
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return False
    except OSError:  # no pidfds (kernel < 5.3): the start-time check still narrows the race
        fd = None
    try:
        now = read_proc(proc.pid)
        if now is None or now.start != proc.start:
            return False  # exited, and the pid may already name someone else
        if fd is None:
            os.kill(proc.pid, signum)
        else:
            signal.pidfd_send_signal(fd, signum)
        return True
    except ProcessLookupError:
        return False
    finally:
        if fd is not None:
            os.close(fd)


async def kill_descendants(root: int, grace: float, reap: Callable[[], None]) -> list[Proc]:
    """Terminate every live descendant of ``root``; SIGKILL those still alive after ``grace`` s.

    ``reap`` collects exited children (the wrapper's own, and orphans re-parented to it).
    Repeats until ``/proc`` shows no live descendant, so children forked during the
    clean-up are caught too. Returns the processes it signalled.
    """
    loop = asyncio.get_running_loop()
    kill_at = loop.time() + grace
    signalled: dict[tuple[int, int], Proc] = {}
    killed: set[tuple[int, int]] = set()
    delay = 0.001
    while True:
        reap()
        alive = [p for p in descendants(root) if p.alive]
        if not alive:
            return list(signalled.values())
        now = loop.time()
        if now >= kill_at + GIVE_UP_AFTER_KILL_S:
            log.warning("descendants survived SIGKILL: %s", ", ".join(str(p.pid) for p in alive))
            return list(signalled.values())
        for proc in alive:
            key = (proc.pid, proc.start)
            if now >= kill_at:
                if key not in killed and send(proc, signal.SIGKILL):
                    killed.add(key)
                    signalled[key] = proc
            elif key not in signalled and send(proc, signal.SIGTERM):
                signalled[key] = proc
                # A stopped process cannot act on SIGTERM until it is continued.
                with contextlib.suppress(OSError):
                    send(proc, signal.SIGCONT)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
