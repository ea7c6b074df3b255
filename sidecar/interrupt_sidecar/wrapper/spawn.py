"""Start the wrapped command behind a gate, and make the wrapper a child subreaper.

The command must not do any work before its process group is registered with the
daemon, or an interrupt arriving in between would find nothing to kill. So the wrapper
forks *first* (while it is still single-threaded: no gRPC thread exists yet), and the
child makes itself a process-group leader and then blocks reading a pipe, the *gate*.
The group exists (the daemon can pin and signal it) but runs no foreign code. Once the
group is registered the wrapper writes one byte and the child ``exec``\\ s the command;
if the wrapper decides not to run it (daemon unreachable, refused, already tripped) it
closes the gate and the child exits without ever running it.

A second pipe, close-on-exec, tells the wrapper whether ``exec`` worked: it reads EOF
when the command started, or the ``errno`` of the failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import signal
import sys
from collections.abc import Callable, Sequence

from interrupt_sidecar.wrapper.direct import FORWARDED_SIGNALS, reset_signals_for_exec

__all__ = [
    "FORWARDED_SIGNALS",
    "GatedChild",
    "become_subreaper",
    "hand_terminal",
    "reset_signals_for_exec",
    "spawn_gated",
]

#: ``prctl`` options (``<linux/prctl.h>``).
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

# The gated child's exit status when the wrapper closed the gate (the command never ran).
_ABORTED = 125
_GO = b"\x01"


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl({option}, {value}): {os.strerror(code)}")


def become_subreaper() -> None:
    """Make this process the reaper of its orphaned descendants (``PR_SET_CHILD_SUBREAPER``).

    A descendant whose parent exits (the classic double fork of a daemon) is re-parented
    to the nearest subreaper instead of PID 1, so it stays visible (and killable) as a
    descendant of the wrapper. Not inherited by children.
    """
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def hand_terminal(pgid: int) -> Callable[[], None] | None:
    """Make ``pgid`` the terminal's foreground group if the wrapper holds it; returns how to take it back.

    In a new process group the command would be a *background* job of the terminal the
    wrapper was started from: reading it would stop the command (SIGTTIN) for good. So,
    as a shell does, the wrapper hands the foreground to the command's group (Ctrl+C then
    reaches the command directly). Nothing happens without a terminal (the usual case:
    an agent's pipes) or when the wrapper itself runs in the background.
    """
    try:
        if not os.isatty(0) or os.tcgetpgrp(0) != os.getpgrp():
            return None
        os.tcsetpgrp(0, pgid)
    except OSError:
        return None

    def take_back() -> None:
        # The wrapper is a background group now: without ignoring SIGTTOU, tcsetpgrp
        # would stop it.
        previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            with contextlib.suppress(OSError):
                os.tcsetpgrp(0, os.getpgrp())
        finally:
            signal.signal(signal.SIGTTOU, previous)

    return take_back


class GatedChild:
    """The forked child, leader of its own process group, waiting at the gate."""

    def __init__(self, pid: int, gate_fd: int, status_fd: int) -> None:
        self.pid = pid
        self._gate_fd: int | None = gate_fd
        self._status_fd: int | None = status_fd

    @property
    def pgid(self) -> int:
        """The command's process group: the child leads it, so it is the child's pid."""
        return self.pid

    def release(self) -> bool:
        """Open the gate: the child execs the command. False if the child is already gone."""
        if self._gate_fd is None:
            return False
        try:
            os.write(self._gate_fd, _GO)
            return True
        except BrokenPipeError:  # killed at the gate (a forwarded signal, or the daemon's kill)
            return False
        finally:
            self._close_gate()

    def abort(self) -> None:
        """Close the gate without opening it: the child exits and the command never runs."""
        self._close_gate()
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None

    def _close_gate(self) -> None:
        if self._gate_fd is not None:
            os.close(self._gate_fd)
            self._gate_fd = None

    async def exec_error(self) -> OSError | None:
        """After :meth:`release`: None once ``exec`` succeeded (or the child died), else why it failed."""
        fd = self._status_fd
        if fd is None:
            return None
        loop = asyncio.get_running_loop()
        readable: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not readable.done():
                readable.set_result(None)

        loop.add_reader(fd, wake)
        try:
            await readable
            data = os.read(fd, 64)
        finally:
            loop.remove_reader(fd)
            os.close(fd)
            self._status_fd = None
        if not data:
            return None
        code = int(data.decode() or errno.ENOEXEC)
        return OSError(code, os.strerror(code))


def spawn_gated(argv: Sequence[str]) -> GatedChild:
    """Fork a child that leads a new process group and waits at the gate to exec ``argv``.

    Call it while the process is single-threaded and with :data:`FORWARDED_SIGNALS`
    blocked (the mask is inherited; the child unblocks once its dispositions are reset,
    so a signal forwarded early kills it as it would kill the command).
    """
    gate_read, gate_write = os.pipe()  # both close-on-exec (PEP 446)
    status_read, status_write = os.pipe()
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        _gated_child(argv, parent, gate_read, gate_write, status_read, status_write)
    os.close(gate_read)
    os.close(status_write)
    # Both sides set the group, so it exists whichever runs first (the shell's rule);
    # EACCES means the child already exec'd, ESRCH that it died: either way it is set.
    with contextlib.suppress(PermissionError, ProcessLookupError):
        os.setpgid(pid, pid)
    return GatedChild(pid, gate_write, status_read)


def _gated_child(
    argv: Sequence[str], parent: int, gate_read: int, gate_write: int, status_read: int, status_write: int
) -> None:  # pragma: no cover - runs in the child
    code = _ABORTED
    try:
        os.close(gate_write)
        os.close(status_read)
        os.setpgid(0, 0)
        reset_signals_for_exec()
        # If the wrapper dies (even by SIGKILL), the command dies with it rather than run
        # on unsupervised. Survives exec. Checked against the parent pid afterwards, since
        # the wrapper may have died before the prctl.
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(_ABORTED)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())  # the mask survives exec: clear it
        if os.read(gate_read, 1) != _GO:
            os._exit(_ABORTED)
        os.close(gate_read)
        code = 127
        os.execvp(argv[0], list(argv))
    except OSError as error:
        with contextlib.suppress(OSError):
            os.write(status_write, str(error.errno or errno.ENOEXEC).encode())
    except BaseException:
        pass
    os._exit(code)
