"""Reading processes from ``/proc``: one scan gives every process's parent, group, session,
start time and owner, which is all the OS edge needs to find a tree and pin identities.

A process is identified by ``(pid, start)``: the start time (``/proc/PID/stat`` field 22,
clock ticks since boot) never repeats for a recycled PID within one boot, so a pair read
earlier either names the same process now or a process that is gone.
"""

from __future__ import annotations

import os
import resource
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
    # cost of a whole-tree scan (see _StatFiles for the rest of that story).
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
    return _parse(pid, raw)


def _parse(pid: int, raw: bytes) -> ProcStat | None:
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split(maxsplit=20)
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


class _StatFiles:
    """``/proc/PID/stat`` files kept open between scans, read again with ``pread``.

    A scan reads every process on the host before a kill may signal (about 9 us a
    process here); opening and closing the file is ~3 us of that, and long-lived
    processes are most of any host. Each open file pins its process's ``struct pid``,
    not the PID number: once that process is gone the read fails (ESRCH) even if the
    number was reused, so a kept file can never describe a stranger. Files of PIDs no
    longer listed are closed at each scan, and the cache is capped (a quarter of the
    open-file limit, at most 4,096) so it can never starve the daemon's sockets.
    """

    def __init__(self, cap: int = 4_096) -> None:
        self._fds: dict[int, int] = {}
        self._cap = cap

    def _room(self) -> int:
        try:
            soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        except (OSError, ValueError):
            return 0
        limit = self._cap if soft == resource.RLIM_INFINITY else min(self._cap, soft // 4)
        return limit - len(self._fds)

    def scan(self) -> dict[int, ProcStat]:
        listed = [int(name) for name in os.listdir(PROC) if name.isdigit()]
        present = set(listed)
        for pid in [pid for pid in self._fds if pid not in present]:
            os.close(self._fds.pop(pid))
        room = self._room()
        found: dict[int, ProcStat] = {}
        for pid in listed:
            cached = pid in self._fds
            raw = self._read(pid, may_keep=room > 0)
            if not cached and pid in self._fds:
                room -= 1
            stat = _parse(pid, raw) if raw else None
            if stat is not None:
                found[pid] = stat
        return found

    def _read(self, pid: int, may_keep: bool) -> bytes:
        fd = self._fds.get(pid)
        if fd is not None:
            try:
                return os.pread(fd, 1024, 0)
            except OSError:  # gone (and its number maybe reused): open afresh below
                os.close(self._fds.pop(pid))
        try:
            fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return b""
        try:
            raw = os.pread(fd, 1024, 0)
        except OSError:
            os.close(fd)
            return b""
        if may_keep:
            self._fds[pid] = fd
        else:
            os.close(fd)
        return raw


_stat_files = _StatFiles()


def uid_of(pid: int) -> int | None:
    """The (real) owner of process ``pid``, from its /proc directory; None when it is gone."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def scan() -> dict[int, ProcStat]:
    """Every process visible in this PID namespace's ``/proc``, by pid."""
    return _stat_files.scan()


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
