"""The kill part's reaper: ``python -m bench.reaper``, a child subreaper of its own.

Why a process of its own: the moment a tree is gone is stamped by the thread that reaps
it, and a stamp taken in the process that also runs the gRPC client waits for that
process's GIL. While the daemon's cancel and its ``Interrupt`` answer were being read
there, that wait put up to 3 ms on the daemon's figure and none on the floors' (which read
no stream). Here nothing else runs while a tree dies: the command thread is blocked on
stdin, so the reaping thread stamps as soon as ``waitpid`` returns.

Protocol (one line each): ``spawn ARGV-AS-JSON`` on stdin → ``spawned PID`` on stdout (the
process leads a new group, ``posix_spawn(setpgroup=0)``); every reap of a child or an
orphan that came to us → ``reaped PID MONO_NS WALL_NS``. EOF on stdin ends it. The first
line says whether the reaping thread runs at a real-time priority: ``realtime 1|0``.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36


class _Out:
    """stdout shared by the two threads, one whole line at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


def _reap(out: _Out, children: threading.Semaphore) -> None:
    out.line(f"realtime {int(_make_realtime())}")
    while True:
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            children.acquire(timeout=0.05)  # nothing to reap until the next spawn
            continue
        stamp = (time.monotonic_ns(), time.time_ns())
        out.line(f"reaped {pid} {stamp[0]} {stamp[1]}")


def _make_realtime() -> bool:
    """Run the calling thread (Linux: only it) under SCHED_FIFO, so it preempts the processes under test.

    Why: on two cores, a reaping thread that has to wait for a core of its own behind the
    daemon, the client and the floors stamps its reap up to ~1 ms after the exit (seen
    with ``perf sched`` tracepoints). At a real-time priority it runs within microseconds
    of the exit, and it does so for every side alike. Needs CAP_SYS_NICE (root here).
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except PermissionError:
        return False
    return True


def main() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    out = _Out()
    children = threading.Semaphore(0)
    threading.Thread(target=_reap, args=(out, children), daemon=True).start()
    for line in sys.stdin:
        command, _, arg = line.rstrip("\n").partition(" ")
        if command != "spawn":
            raise SystemExit(f"bench.reaper: unknown command {command!r}")
        argv: list[str] = json.loads(arg)
        pid = os.posix_spawn(argv[0], argv, os.environ, setpgroup=0)
        children.release()
        out.line(f"spawned {pid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
