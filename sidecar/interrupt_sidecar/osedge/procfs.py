"""Reading processes from ``/proc``: one scan gives every process's parent, group, session,
start time and owner, which is all the OS edge needs to find a tree and pin identities.

A process is identified by ``(pid, start)``: the start time (``/proc/PID/stat`` field 22,
clock ticks since boot) never repeats for a recycled PID within one boot, so a pair read
earlier either names the same process now or a process that is gone.
"""

from __future__ import annotations

import os
import resource
import select
import signal as signal_module
import time
from collections.abc import Iterable
from pathlib import Path

from interrupt_sidecar.record import Record, init_field

PROC = Path("/proc")

#: ``os.pidfd_open`` and ``signal.pidfd_send_signal`` exist (Linux >= 5.3, Python >= 3.9).
HAVE_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal_module, "pidfd_send_signal")


class ProcStat(Record):
    """One process as ``/proc`` showed it."""

    __slots__ = ("pgrp", "pid", "ppid", "session", "start", "state")
    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start: int

    def __init__(self, pid: int, state: str, ppid: int, pgrp: int, session: int, start: int) -> None:
        init_field(self, "pid", pid)
        init_field(self, "state", state)
        init_field(self, "ppid", ppid)
        init_field(self, "pgrp", pgrp)
        init_field(self, "session", session)
        init_field(self, "start", start)

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def read_stat(pid: int) -> ProcStat | None:
    """The process ``pid`` now, or None when there is none (or it cannot be read)."""
    # Raw os calls, not pathlib: a kill pass re-reads the tree's processes one by one
    # (see _ProcessTable for how it avoids reading the rest of the host).
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


class _PidCursor:
    """Whether any PID has been handed out since a moment: the last field of ``/proc/loadavg``.

    That field is the PID most recently allocated in the reader's PID namespace (every
    process and thread created in it or below it takes one). PIDs are allocated cyclically,
    so the value comes back only after the whole PID space has been handed out again: at
    least ``pid_max - 300`` allocations. Each allocation and each release of a PID takes
    one global kernel spinlock (``pidmap_lock``), and creating a task costs microseconds of
    a core besides, so we count on at most four million allocations a second (well above
    what clone() sustains even on large machines) and trust an unchanged value for
    ``pid_max / 4e6`` seconds after it was read: 8 ms at the 32,768 default, 1 s at
    4,194,304. Past that window the caller lists ``/proc`` again. So the shortcut serves
    surveys that follow a listing closely (a kill right after a registration, the rescans
    while a tree dies, several groups killed by one trip), not a kill long after the last.

    Off (``read`` gives None) when ``/proc`` belongs to another PID namespace than ours
    (``/proc/self`` is not our PID), or when the files cannot be read. A process allowed to
    set ``ns_last_pid`` (CAP_SYS_ADMIN over the namespace, for checkpoint/restore) can wind
    the value back and hide a fork from it.
    """

    #: A bound on PID allocations per second (see above).
    ALLOCATIONS_PER_S = 4_000_000

    def __init__(self) -> None:
        self._fd: int | None = None
        self.window_s = 0.0
        try:
            if os.readlink(PROC / "self") != str(os.getpid()):
                return
            with open(PROC / "sys/kernel/pid_max") as f:
                pid_max = int(f.read())
            self._fd = os.open(PROC / "loadavg", os.O_RDONLY | os.O_CLOEXEC)
        except (OSError, ValueError):
            return
        self.window_s = pid_max / self.ALLOCATIONS_PER_S

    def read(self) -> int | None:
        """The last PID allocated, or None when unknown."""
        if self._fd is None:
            return None
        try:
            return int(os.pread(self._fd, 128, 0).rsplit(maxsplit=1)[1])
        except (OSError, ValueError, IndexError):
            return None


class _ProcessTable:
    """Every process in ``/proc`` as last read, kept current by reading only what changed.

    Why: a kill surveys the host's processes before it signals (descendants that left the
    group are found only through parent links), and reading ``/proc/PID/stat`` for every
    process on the host costs in proportion to how many there are (the kernel formats each
    file anew), all before the first signal. Between two surveys a process appears only by
    fork, disappears only by exit, and its parent link changes only when its parent exits
    (it is re-parented). So each entry keeps two descriptors:

    * its stat file, read again with ``pread``. A kept file pins its process's ``struct
      pid``, not the number: once the process is gone the read fails (ESRCH), so a kept file
      can never describe a stranger that reused the PID;
    * a pidfd in one epoll set. A pidfd turns readable when its process exits, so one
      ``epoll_wait(0)`` names every process that exited since the last survey.

    An update lists ``/proc`` (new PIDs are read), drops what exited or vanished and re-reads
    their children (whose parent changed), and re-reads zombies. The listing (most of an
    update's cost) is skipped when no PID was handed out since the last one (see
    :class:`_PidCursor`). What it cannot see is a live process changing its group
    (``setpgid``/``setsid``): callers re-read the processes whose group matters to them with
    :meth:`refresh`, and read everything with ``full=True`` when the table may be missing a
    group member (see ``ProcessTree._survey``).

    Capped (a quarter of the open-file limit, two descriptors an entry, at most 2,048
    entries) so it can never starve the daemon's sockets; a host with more processes is
    read in full every time, as if there were no table.
    """

    def __init__(self, cap: int = 2_048) -> None:
        self._procs: dict[int, ProcStat] = {}
        self._stat_fds: dict[int, int] = {}
        self._pidfds: dict[int, int] = {}
        self._pid_of_fd: dict[int, int] = {}
        self._epoll: select.epoll | None = None
        #: True when every live, non-zombie entry has a pidfd in the epoll set: only then
        #: does an update know every exit.
        self._tracking = False
        self._cap = cap
        self._cursor = _PidCursor()
        #: The PID cursor read just before the last listing of /proc, and when (monotonic s).
        self._listed_cursor: int | None = None
        self._listed_at = 0.0

    def _room(self) -> int:
        try:
            soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        except (OSError, ValueError):
            return 0
        return self._cap if soft == resource.RLIM_INFINITY else min(self._cap, soft // 8)

    # -- entries ---------------------------------------------------------------------------

    def _drop(self, pid: int) -> None:
        self._procs.pop(pid, None)
        fd = self._stat_fds.pop(pid, None)
        if fd is not None:
            os.close(fd)
        pidfd = self._pidfds.pop(pid, None)
        if pidfd is not None:
            self._pid_of_fd.pop(pidfd, None)
            if self._epoll is not None:
                self._epoll.unregister(pidfd)
            os.close(pidfd)

    def _read(self, pid: int, track: bool) -> ProcStat | None:
        """Read ``pid`` afresh into the table (None and dropped when it is gone)."""
        fd = self._stat_fds.get(pid)
        if fd is not None:
            try:
                raw = os.pread(fd, 1024, 0)
            except OSError:  # gone, and its number maybe reused: start over
                self._drop(pid)
                return self._read(pid, track)
            stat = _parse(pid, raw)
            if stat is None:
                self._drop(pid)
            else:
                self._procs[pid] = stat
            return stat
        # New: the pidfd first, then the stat file. Should the process die and its number be
        # reused in between, the stat describes the newcomer while the pidfd is already
        # readable, so the next update drops the entry and reads the newcomer as new.
        pidfd = _pidfd_open(pid) if track else None
        try:
            fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            if pidfd is not None:
                os.close(pidfd)
            return None
        try:
            raw = os.pread(fd, 1024, 0)
        except OSError:
            raw = b""
        stat = _parse(pid, raw) if raw else None
        if stat is None or not track:
            os.close(fd)
            if pidfd is not None:
                os.close(pidfd)
            return stat
        if stat.zombie:  # its pidfd is readable for good: the zombie is re-read each update
            if pidfd is not None:
                os.close(pidfd)
        elif pidfd is None:
            # A live process whose exit could not be watched (no descriptor left): without
            # it, a stale parent link could name a stranger that reused the PID. Stop
            # trusting the table; the next scan reads everything.
            os.close(fd)
            self._tracking = False
            return stat
        else:
            assert self._epoll is not None
            self._epoll.register(pidfd, select.EPOLLIN)
            self._pidfds[pid] = pidfd
            self._pid_of_fd[pidfd] = pid
        self._procs[pid] = stat
        self._stat_fds[pid] = fd
        return stat

    def _clear(self) -> None:
        for pid in list(self._procs):
            self._drop(pid)
        self._tracking = False

    # -- surveys ---------------------------------------------------------------------------

    def _list(self) -> list[int]:
        # The cursor is read before the listing: a PID handed out while /proc is being listed
        # changes the cursor, so the next update lists again.
        self._listed_cursor = self._cursor.read()
        self._listed_at = time.monotonic()
        return [int(name) for name in os.listdir(PROC) if name.isdigit()]

    def _nothing_new(self) -> bool:
        """No PID handed out since the last listing: every process now is in the table
        (or exited since, which its pidfd or its zombie re-read shows)."""
        cursor = self._listed_cursor
        return (
            cursor is not None
            and time.monotonic() - self._listed_at < self._cursor.window_s
            and self._cursor.read() == cursor
        )

    def scan(self, full: bool = False) -> dict[int, ProcStat]:
        """Every process now (a snapshot the caller may keep)."""
        if not full and self._tracking and self._nothing_new():
            listed: list[int] | None = None
        else:
            listed = self._list()
            if full or not self._tracking or len(listed) > self._room():
                return self._read_all(listed)
        # Without a listing every entry counts as present: an exited one is re-read below
        # (its pidfd turned readable, or it is a zombie) and dropped when it is gone.
        present = set(listed) if listed is not None else self._procs.keys()
        stale: set[int] = set()
        assert self._epoll is not None
        while True:
            ready = self._epoll.poll(0, 256)
            for fd, _ in ready:
                # Exited (a zombie now, or reaped): never watched again; re-read below if listed.
                pid = self._pid_of_fd.pop(fd)
                del self._pidfds[pid]
                self._epoll.unregister(fd)
                os.close(fd)
                stale.add(pid)
            if len(ready) < 256:
                break
        gone = [pid for pid in self._procs if pid not in present]
        # A zombie has no pidfd watched: it is read each time until it is reaped.
        zombies = [process.pid for process in self._procs.values() if process.zombie]
        exited = stale.union(gone, zombies)
        for process in self._procs.values():
            # Children of an exited process were re-parented: their parent link is stale.
            if process.ppid in exited:
                stale.add(process.pid)
        stale.update(zombies)
        for pid in gone:
            self._drop(pid)
        for pid in stale:
            present_now = pid in present  # ``present`` may be the live key view of _procs
            self._drop(pid)
            if present_now:
                self._read(pid, track=True)
        for pid in listed or ():
            if pid not in self._procs:
                self._read(pid, track=True)
        return dict(self._procs)

    def _read_all(self, listed: list[int]) -> dict[int, ProcStat]:
        if len(listed) > self._room() or not HAVE_PIDFD:
            # Too many to track (or no pidfds): read everything, keep nothing.
            self._clear()
            found = {}
            for pid in listed:
                stat = self._read(pid, track=False)
                if stat is not None:
                    found[pid] = stat
            return found
        if self._epoll is None:
            self._epoll = select.epoll()
        present = set(listed)
        for pid in [pid for pid in self._procs if pid not in present]:
            self._drop(pid)
        self._tracking = True  # unless a read below cannot watch its process
        for pid in listed:
            self._read(pid, track=True)
        return dict(self._procs)

    def lend_pidfd(self, pid: int, start: int) -> int | None:
        """A duplicate of the kept pidfd of the live process ``(pid, start)`` (the caller
        closes it), or None when the table cannot vouch for that process.

        The entry's pidfd was opened before its stat was read. Should the process have died
        and its number been reused in between, the stat (and so ``start``) describes the
        newcomer while the pidfd is the dead process's, already readable. So a pidfd is lent
        only while it is not readable: its process is alive, holds ``pid``, and is the one
        the stat was read from.
        """
        pidfd = self._pidfds.get(pid)
        known = self._procs.get(pid)
        if pidfd is None or known is None or known.start != start or not self._tracking:
            return None
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if poller.poll(0):
            return None  # exited: the next scan drops the entry
        return os.dup(pidfd)  # non-inheritable, like the pidfd itself

    def reread(self, pid: int) -> ProcStat | None:
        """``pid`` read afresh (through its kept file when it has one)."""
        if pid in self._stat_fds:
            return self._read(pid, track=True)
        return read_stat(pid)


def _pidfd_open(pid: int) -> int | None:
    if not HAVE_PIDFD:
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


_table = _ProcessTable()


def uid_of(pid: int) -> int | None:
    """The (real) owner of process ``pid``, from its /proc directory; None when it is gone."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def scan(full: bool = False) -> dict[int, ProcStat]:
    """Every process visible in this PID namespace's ``/proc``, by pid.

    Incremental (see :class:`_ProcessTable`): exact for which processes exist and for their
    parents; a live process's group is as of its last read unless ``full``. Re-read the
    processes whose group matters with :func:`refresh`.
    """
    return _table.scan(full)


def reread(pid: int) -> ProcStat | None:
    """The process ``pid`` now (through the table's kept stat file when it has one)."""
    return _table.reread(pid)


def refresh(processes: dict[int, ProcStat], pids: Iterable[int]) -> None:
    """Re-read ``pids`` into ``processes``, a :func:`scan`: their group or state may have
    changed since (a process gone now is removed)."""
    for pid in pids:
        stat = _table.reread(pid)
        if stat is None:
            processes.pop(pid, None)
        else:
            processes[pid] = stat


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
    # The process table (what the last survey saw) already holds one: a dup is one cheap
    # syscall, where a new one is pidfd_open plus a stat read to check its start time (a
    # kill's watcher and each signal to an escaped descendant ask for one per process).
    lent = _table.lend_pidfd(pid, start)
    if lent is not None:
        return lent
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
