"""Reading processes from ``/proc``: one scan gives every process's parent, group, session,
start time and owner, which is all the OS edge needs to find a tree and pin identities.

A process is identified by ``(pid, start)``: the start time (``/proc/PID/stat`` field 22,
clock ticks since boot) never repeats for a recycled PID within one boot, so a pair read
earlier either names the same process now or a process that is gone.
"""

from __future__ import annotations

import os
import signal as signal_module
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")

#: ``os.pidfd_open`` and ``signal.pidfd_send_signal`` exist (Linux >= 5.3, Python >= 3.9).
HAVE_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal_module, "pidfd_send_signal")


@dataclass(frozen=True, slots=True)
class ProcStat:
    """One process as ``/proc`` showed it."""

    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start: int

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def read_stat(pid: int) -> ProcStat | None:
    """The process ``pid`` now, or None when there is none (or it cannot be read)."""
    # Raw os calls, not pathlib: a kill pass reads every process's stat, and this is the
    # cost of a whole-tree scan (about 4 us a process here, against 15 us with pathlib
    # plus a stat() for the owner, which only a few callers need: see uid_of).
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    if len(rest) < 20:
        return None
    return ProcStat(
        pid=pid,
        state=rest[0].decode(),
        ppid=int(rest[1]),
        pgrp=int(rest[2]),
        session=int(rest[3]),
        start=int(rest[19]),
    )


def uid_of(pid: int) -> int | None:
    """The (real) owner of process ``pid``, from its /proc directory; None when it is gone."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def scan() -> dict[int, ProcStat]:
    """Every process visible in this PID namespace's ``/proc``, by pid."""
    found = {}
    for name in os.listdir(PROC):
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                found[stat.pid] = stat
    return found


def group_members(processes: dict[int, ProcStat], pgid: int) -> list[ProcStat]:
    """Live (non-zombie) members of process group ``pgid``."""
    return [p for p in processes.values() if p.pgrp == pgid and not p.zombie]


def descendants(processes: dict[int, ProcStat], roots: list[int]) -> list[ProcStat]:
    """Live processes below ``roots`` in the parent chain (the roots themselves excluded)."""
    children: dict[int, list[ProcStat]] = {}
    for process in processes.values():
        children.setdefault(process.ppid, []).append(process)
    found: list[ProcStat] = []
    seen = set(roots)
    frontier = list(roots)
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child.pid not in seen:
                seen.add(child.pid)
                frontier.append(child.pid)
                if not child.zombie:
                    found.append(child)
    return found


def open_pidfd(pid: int, start: int) -> int | None:
    """A pidfd for the process ``(pid, start)``, or None when that process is gone.

    The start time is checked *after* opening: a pidfd pins one process, so a match then
    proves the fd refers to the process that was meant, and signals sent through it can
    never reach a stranger that reused the PID.
    """
    if not HAVE_PIDFD:
        return None
    try:
        fd = os.pidfd_open(pid)
    except (ProcessLookupError, OSError):
        return None
    now = read_stat(pid)
    if now is None or now.start != start or now.zombie:
        os.close(fd)
        return None
    return fd


def signal_process(pid: int, start: int, signum: int) -> bool:
    """Send ``signum`` to the process ``(pid, start)`` only; False when it is gone.

    Through a pidfd where the kernel has them (race-free); otherwise re-checked by start
    time immediately before ``kill`` (a window of microseconds, which PID reuse would need
    a full wrap of the PID space to hit).
    """
    if HAVE_PIDFD:
        fd = open_pidfd(pid, start)
        if fd is None:
            return False
        try:
            signal_module.pidfd_send_signal(fd, signum)
        except ProcessLookupError:
            return False
        finally:
            os.close(fd)
        return True
    now = read_stat(pid)
    if now is None or now.start != start or now.zombie:
        return False
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True
