"""The OS edge for process groups: validate, pin, signal, and watch them go.

This is the basic form: ownership checks on the pgid, the group's leader pinned
by its start time, and a re-check before every signal so a recycled PID never
gets a signal meant for the group that was registered.
"""

from __future__ import annotations

import os
import signal as signal_module
from dataclasses import dataclass
from pathlib import Path

from sidecar.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied

PROC = Path("/proc")
_VALID_SIGNALS = frozenset(int(s) for s in signal_module.valid_signals())


@dataclass(frozen=True, slots=True)
class GroupIdentity:
    """What a process group was at registration.

    ``leader_start`` is the leader's start time in clock ticks since boot
    (``/proc/PID/stat`` field 22), or None when the leader had already exited
    and only members kept the group alive.
    """

    pgid: int
    leader_start: int | None
    session: int | None


@dataclass(frozen=True, slots=True)
class _Stat:
    pid: int
    state: str
    pgrp: int
    session: int
    start: int
    uid: int


def _read_stat(pid: int) -> _Stat | None:
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
        uid = (PROC / str(pid)).stat().st_uid
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    return _Stat(pid=pid, state=rest[0].decode(), pgrp=int(rest[2]), session=int(rest[3]), start=int(rest[19]), uid=uid)


def _members(pgid: int) -> list[_Stat]:
    members = []
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            stat = _read_stat(int(entry.name))
            if stat is not None and stat.pgrp == pgid:
                members.append(stat)
    return members


class ProcessGroups:
    """Validates and signals process groups on behalf of tools."""

    def __init__(self, *, allowed_uids: frozenset[int] | None = None) -> None:
        self._own_pgid = os.getpgid(0)
        self._own_pid = os.getpid()
        try:
            self._init_pgid: int | None = os.getpgid(1)
        except (ProcessLookupError, PermissionError):
            self._init_pgid = None
        self._allowed_uids = allowed_uids if allowed_uids is not None else frozenset({os.getuid()})

    @staticmethod
    def validate_signal(signum: int) -> int:
        """The signal to send at the trip: 0 means SIGTERM."""
        if signum == 0:
            return int(signal_module.SIGTERM)
        if signum not in _VALID_SIGNALS:
            raise InvalidArgument(f"process_group.signal {signum} is not a signal number on this host")
        return signum

    def pin(self, pgid: int) -> GroupIdentity:
        """Check a group may be registered and pin its identity.

        Refuses pgid <= 1, the daemon's own group, the group of the PID
        namespace's init, a group with no live member and a group with a member
        running as a uid outside the allowed set.
        """
        if pgid <= 1:
            raise InvalidArgument(f"process_group.pgid must be a process group id > 1, got {pgid}")
        if pgid == self._own_pgid:
            raise PermissionDenied(f"process group {pgid} is the daemon's own group; refusing to register it")
        if pgid == self._init_pgid:
            raise PermissionDenied(f"process group {pgid} is the group of PID 1; refusing to register it")
        members = [m for m in _members(pgid) if m.state != "Z"]
        if not members:
            raise NotFound(f"process group {pgid} has no live process; start the process before registering it")
        foreign = sorted({m.uid for m in members} - self._allowed_uids)
        if foreign:
            raise PermissionDenied(
                f"process group {pgid} has members running as uid {foreign[0]}, outside the allowed uids "
                f"{sorted(self._allowed_uids)}"
            )
        if any(m.pid == self._own_pid for m in members):
            raise PermissionDenied(f"process group {pgid} contains the daemon; refusing to register it")
        leader = next((m for m in members if m.pid == pgid), None)
        return GroupIdentity(
            pgid=pgid,
            leader_start=leader.start if leader else None,
            session=leader.session if leader else members[0].session,
        )

    def still_same(self, identity: GroupIdentity) -> bool:
        """False when the group's pgid now names another group (PID reuse)."""
        leader = _read_stat(identity.pgid)
        if leader is not None and leader.pgrp == identity.pgid:
            # A live leader must be the one pinned. When none was pinned the
            # leader had exited, so a leader now is a new process with a reused PID.
            return identity.leader_start is not None and leader.start == identity.leader_start
        # No leader: while any member lives the kernel keeps the pgid reserved,
        # so the surviving members belong to the registered group.
        return True

    def send(self, identity: GroupIdentity, signum: int) -> bool:
        """Signal the whole group, and SIGCONT it so a stopped member can act on
        a polite signal. Returns False when the group was gone or changed."""
        if not self.still_same(identity):
            raise FailedPrecondition(
                f"process group {identity.pgid} is no longer the group that was registered (PID reuse); not signalled"
            )
        try:
            os.killpg(identity.pgid, signum)
            if signum not in (signal_module.SIGKILL, signal_module.SIGCONT, signal_module.SIGSTOP):
                os.killpg(identity.pgid, signal_module.SIGCONT)
        except ProcessLookupError:
            return False
        return True

    @staticmethod
    def alive(pgid: int) -> bool:
        """True while the group has a member that is not a zombie."""
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return any(m.state != "Z" for m in _members(pgid))
