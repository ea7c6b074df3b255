"""The OS edge for process groups: refuse what a tool does not own, pin identities, and kill
whole trees — including descendants that left the group — until nothing is left.

Safety rules (DESIGN.md §4), each refusal carrying a bounded ``cause`` for the metric:

* ``invalid_pgid``: pgid <= 1 (0 and negatives mean "my group"/"everything" to kill(2));
* ``own_group``: the daemon's own group, or a group the daemon is a member of;
* ``init_group``: the group of PID 1 of the daemon's PID namespace;
* ``not_found``: no live member (a group is pinned by what is running now);
* ``foreign_uid``: a member runs as a uid outside the allowed set;
* ``identity_changed``: before a signal, the pgid names another group than the one pinned.

Identity. At registration the group's leader is pinned by ``(pid, start time)`` and its
session. Before every group signal the leader is re-read: a live leader with another start
time, or a leader where the pinned group had none, means the pgid was recycled (PID reuse)
and nothing is sent. While any member lives the kernel keeps the pgid reserved, so a group
without its leader is still the registered one.

Trees. ``setsid()``/``setpgid()`` take a process out of the group, so a group signal misses
it. A :class:`ProcessTree` therefore also follows the parent chain in ``/proc`` from every
member and signals each escaped descendant individually, through a pidfd pinned to its
``(pid, start)``, rescanning on every pass so descendants forked meanwhile are caught too.
"""

from __future__ import annotations

import contextlib
import os
import signal as signal_module

from interrupt_sidecar.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied, SidecarError
from interrupt_sidecar.osedge import procfs
from interrupt_sidecar.record import Record, init_field

_VALID_SIGNALS = frozenset(int(s) for s in signal_module.valid_signals())
#: At most this many survey → SIGSTOP rounds before signalling (each round stops the escaped
#: processes the previous survey found; a tree with none needs no second survey).
_FREEZE_ROUNDS = 20
#: Signals after which a stopped process could not act without SIGCONT (systemd does the same).
_NO_CONT_AFTER = frozenset({int(signal_module.SIGKILL), int(signal_module.SIGCONT), int(signal_module.SIGSTOP)})


def _refusal(kind: type[SidecarError], cause: str, message: str) -> SidecarError:
    # ``cause`` is what the refusal metric is labelled with (runtime.observer.refusal_cause).
    return kind(message, cause=cause)


class GroupIdentity(Record):
    """What a process group was at registration.

    ``leader_start`` is the leader's start time in clock ticks since boot, or None when the
    leader had already exited and only members kept the group alive.
    """

    __slots__ = ("leader_start", "pgid", "session")
    pgid: int
    leader_start: int | None
    session: int | None

    def __init__(self, pgid: int, leader_start: int | None, session: int | None) -> None:
        init_field(self, "pgid", pgid)
        init_field(self, "leader_start", leader_start)
        init_field(self, "session", session)


class TreeStatus:
    """What one pass over a tree found and did."""

    # A plain class: a dataclass compiles its methods at import, on the way to "ready".
    __slots__ = ("escaped", "members", "processes", "signalled")

    def __init__(self, members: int, escaped: int, processes: list[tuple[int, int]]) -> None:
        #: Live members of the group itself.
        self.members = members
        #: Live descendants outside the group (setsid/setpgid children), tracked by (pid, start).
        self.escaped = escaped
        #: Processes signalled in this pass (group members count as one killpg).
        self.signalled = 0
        #: Every live process the survey found, as (pid, start time): waiting on their pidfds
        #: observes the tree's end without another scan.
        self.processes = processes

    @property
    def alive(self) -> bool:
        return bool(self.members or self.escaped)


class ProcessTree:
    """A registered group and every descendant seen below it, killed as one.

    Descendants are remembered by ``(pid, start)`` once seen, so one whose parent died
    (re-parented to init) is still killed on the next pass.
    """

    __slots__ = ("allowed_uids", "escaped", "identity")

    def __init__(self, identity: GroupIdentity, allowed_uids: frozenset[int]) -> None:
        self.identity = identity
        self.allowed_uids = allowed_uids
        #: Escaped descendants seen so far: pid -> start time.
        self.escaped: dict[int, int] = {}

    def _survey(self) -> tuple[list[procfs.ProcStat], list[procfs.ProcStat], bool]:
        """(live members, live escaped descendants, whether the pgid is still the pinned group)."""
        pgid = self.identity.pgid
        # The scan is incremental: which processes exist and their parents are current, but
        # a live process's group is as of its last read. Everything the tree may hold (the
        # members then, the escaped, everything below them) is read again before deciding.
        processes = procfs.scan()
        candidates = [p.pid for p in procfs.group_members(processes, pgid)]
        candidates += [pid for pid in self.escaped if pid in processes]
        candidates += [p.pid for p in procfs.descendants(processes, candidates)]
        procfs.refresh(processes, candidates)
        members = procfs.group_members(processes, pgid)
        same = ProcessGroups.still_same(self.identity)
        if not members and same and _group_exists(pgid):
            # A member the table does not know as one: a process that joined the group
            # (setpgid) since its last read. Read everything.
            processes = procfs.scan(full=True)
            members = procfs.group_members(processes, pgid)
        # A recycled pgid's members are a stranger's: never root the descendant search there.
        roots = [m.pid for m in members] if same else []
        roots += [pid for pid in self.escaped if pid in processes]
        for child in procfs.descendants(processes, roots):
            # A descendant running as another uid (a setuid program) is not the tool's to kill.
            if (
                child.pgrp != self.identity.pgid
                and child.pid not in self.escaped
                and procfs.uid_of(child.pid) in self.allowed_uids
            ):
                self.escaped[child.pid] = child.start
        live_escaped = []
        for pid, start in list(self.escaped.items()):
            now = processes.get(pid)
            if now is None or now.start != start or now.zombie:
                del self.escaped[pid]
            else:
                live_escaped.append(now)
        return (members if same else []), live_escaped, same

    def status(self) -> TreeStatus:
        """Rescan: what of the tree is still alive (newly forked descendants are tracked)."""
        members, escaped, _ = self._survey()
        return _status(members, escaped)

    @staticmethod
    def pidfds(processes: list[tuple[int, int]]) -> list[int]:
        """Open pidfds of these processes that are still alive (the caller closes them).

        Readable when the process exits: waiting on them observes the tree's end without
        polling. Empty when the kernel has no pidfds.
        """
        fds = []
        for pid, start in processes:
            fd = procfs.open_pidfd(pid, start)
            if fd is not None:
                fds.append(fd)
        return fds


def _group_exists(pgid: int) -> bool:
    """Whether any process (zombies included) is in group ``pgid``: signal 0 tests, sends nothing."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _status(members: list[procfs.ProcStat], escaped: list[procfs.ProcStat]) -> TreeStatus:
    return TreeStatus(
        members=len(members),
        escaped=len(escaped),
        processes=[(p.pid, p.start) for p in (*members, *escaped)],
    )


class ProcessGroups:
    """Validates, pins and signals process groups on behalf of tools."""

    def __init__(self, *, allowed_uids: frozenset[int] | None = None) -> None:
        self._own_pgid = os.getpgid(0)
        self._own_pid = os.getpid()
        try:
            self._init_pgid: int | None = os.getpgid(1)
        except (ProcessLookupError, PermissionError):
            self._init_pgid = None
        #: Who a registered group's members may run as (``--allow-uid``; default: the daemon's uid).
        self.allowed_uids = allowed_uids if allowed_uids is not None else frozenset({os.getuid()})

    @staticmethod
    def validate_signal(signum: int) -> int:
        """The signal to send at the trip: 0 means SIGTERM."""
        if signum == 0:
            return int(signal_module.SIGTERM)
        if signum not in _VALID_SIGNALS:
            raise InvalidArgument(f"process_group.signal {signum} is not a signal number on this host")
        return signum

    def pin(self, pgid: int) -> GroupIdentity:
        """Check a group may be registered and pin its identity (see the module docstring)."""
        if pgid <= 1:
            raise _refusal(
                InvalidArgument, "invalid_pgid", f"process_group.pgid must be a process group id > 1, got {pgid}"
            )
        if pgid == self._own_pgid:
            raise _refusal(
                PermissionDenied,
                "own_group",
                f"process group {pgid} is the daemon's own group; refusing to register it",
            )
        if pgid == self._init_pgid:
            raise _refusal(
                PermissionDenied,
                "init_group",
                f"process group {pgid} is the group of PID 1 of this PID namespace; refusing to register it",
            )
        members = procfs.group_members(procfs.scan(full=True), pgid)
        if not members:
            raise _refusal(
                NotFound,
                "not_found",
                f"process group {pgid} has no live process; start the process before registering it",
            )
        foreign = sorted({uid for m in members if (uid := procfs.uid_of(m.pid)) is not None} - self.allowed_uids)
        if foreign:
            raise _refusal(
                PermissionDenied,
                "foreign_uid",
                f"process group {pgid} has members running as uid {foreign[0]}, outside the allowed uids "
                f"{sorted(self.allowed_uids)} (the daemon's --allow-uid)",
            )
        if any(m.pid == self._own_pid for m in members):
            raise _refusal(
                PermissionDenied, "own_group", f"process group {pgid} contains the daemon; refusing to register it"
            )
        leader = next((m for m in members if m.pid == pgid), None)
        return GroupIdentity(
            pgid=pgid,
            leader_start=leader.start if leader else None,
            session=leader.session if leader else members[0].session,
        )

    def tree(self, identity: GroupIdentity) -> ProcessTree:
        """The killable tree of a pinned group."""
        return ProcessTree(identity, self.allowed_uids)

    @staticmethod
    def still_same(identity: GroupIdentity) -> bool:
        """False when the group's pgid now names another group (PID reuse)."""
        # Through the table's kept file when it has one (a pread instead of an open, read
        # and close): a kept file reads nothing once its process is gone, so a reused PID
        # is read anew.
        leader = procfs.reread(identity.pgid)
        if leader is not None and leader.pgrp == identity.pgid and not leader.zombie:
            # A live leader must be the one pinned. When none was pinned the leader had
            # exited, so a leader now is a new process with a reused PID.
            return identity.leader_start is not None and leader.start == identity.leader_start
        # No leader: while any member lives the kernel keeps the pgid reserved, so the
        # surviving members belong to the registered group.
        return True

    def signal_tree(self, tree: ProcessTree, signum: int) -> TreeStatus:
        """Send ``signum`` (then SIGCONT, so a stopped process can act on it) to the group
        and to every escaped descendant. Raises ``FailedPrecondition`` (cause
        ``identity_changed``) and sends nothing to the group when its pgid was recycled."""
        identity = tree.identity
        members, escaped, same = self._freeze(tree)
        status = _status(members, escaped)
        # Escaped descendants are pinned one by one, so they are signalled even when the
        # group's pgid was recycled.
        for process in escaped:
            if procfs.signal_process(process.pid, process.start, signum):
                status.signalled += 1
                if signum not in _NO_CONT_AFTER:
                    procfs.signal_process(process.pid, process.start, int(signal_module.SIGCONT))
        if not same:
            raise _refusal(
                FailedPrecondition,
                "identity_changed",
                f"process group {identity.pgid} is no longer the group that was registered "
                "(its PID was reused); not signalled",
            )
        if members:
            try:
                os.killpg(identity.pgid, signum)
                if signum not in _NO_CONT_AFTER:
                    os.killpg(identity.pgid, signal_module.SIGCONT)
                status.signalled += 1
            except ProcessLookupError:
                status.members = 0
        return status

    @staticmethod
    def _freeze(tree: ProcessTree) -> tuple[list[procfs.ProcStat], list[procfs.ProcStat], bool]:
        """SIGSTOP the whole tree before signalling it; returns the final survey.

        Why: a tree that forks faster than a scan-then-signal pass (a fork loop whose
        children call setsid) would leave children born after the scan, and once their
        parent is killed they are re-parented to init, out of reach of any later scan.
        Stopped processes cannot fork, so survey → stop what is new → survey again
        converges; the real signal (then SIGCONT) follows. SIGSTOP cannot be caught.
        """
        stop = int(signal_module.SIGSTOP)
        # The group first, before any scan: one killpg freezes every member (the kernel
        # restarts a fork that races a group-wide signal, so no child slips out unstopped),
        # and a frozen parent cannot die and hand its escaped children to init.
        if ProcessGroups.still_same(tree.identity):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(tree.identity.pgid, stop)
        members, escaped, same = tree._survey()
        # Then what left the group, until a survey finds nothing new (each round stops the
        # escaped processes found, which cannot fork any more either).
        stopped: set[int] = set()
        for _ in range(_FREEZE_ROUNDS):
            fresh = [process for process in escaped if process.pid not in stopped]
            if not fresh:
                break
            for process in fresh:
                procfs.signal_process(process.pid, process.start, stop)
                stopped.add(process.pid)
            members, escaped, same = tree._survey()
        return members, escaped, same
