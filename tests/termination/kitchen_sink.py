"""A misbehaving tool, by arguments: the process tree the daemon's kill path must handle.

Run it with ``sys.executable`` in a new session (it is then the leader of its own process
group). Every process it creates appends one JSON line to ``--report`` once it is set up
(handlers installed, escaped, stopped or not yet), so the test knows each ``(pid, start)``
it must later find gone through ``/proc``::

    {"pid": 123, "ppid": 120, "pgid": 120, "sid": 120, "start": 4567, "uid": 0,
     "role": "grandchild", "depth": 2}

Stdlib only, and children are made with ``os.fork`` (no exec): cheap enough to build
trees of dozens of processes on a 2-core CI machine, and every forked branch ends in
``os._exit`` so no child ever runs the parent's cleanup.

Options:

``--tree 2,3``        root has 2 children, each has 3 (grandchildren); any depth.
``--term ACTION``     what every process does on SIGTERM: ``default`` (die), ``ignore``,
                      or ``exit`` (a handler that exits with ``--exit-code``).
``--escaped-term ACTION``  the same for processes that left the group (default: ``--term``).
``--escape MODE``     every grandchild (depth 2) calls ``setsid`` or ``setpgid(0, 0)``.
``--stop WHO``        ``root`` or ``all`` processes SIGSTOP themselves after reporting.
``--fork-loop N``     the root also forks N sleeping children, one every
                      ``--fork-interval-ms``: a tree that keeps growing during the kill.
``--fork-escape``     each fork-loop child calls ``setsid`` (escapes while the tree grows).
``--foreign-member UID``  the root forks one member of its group that runs as UID.
``--uid UID``         the whole tree runs as UID (the root drops to it first; needs root).
``--non-dumpable``    the root calls ``prctl(PR_SET_DUMPABLE, 0)`` (as ssh-agent and gpg-agent
                      do): the kernel then shows its ``/proc/PID`` as owned by root.
``--exit-stagger-ms MS``  with ``exit``, the process numbered N (root 0, then each level
                      in order: the root's children 1..k, ...) exits N × MS after SIGTERM:
                      a tree whose members keep exiting one by one.
``--exit-now``        the root exits with ``--exit-code`` right after reporting.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: A hard bound on the fork loop, so a bug in a test can never fork-bomb the machine.
MAX_FORKS = 500


def start_time(pid: int) -> int:
    """Field 22 of /proc/PID/stat (clock ticks since boot): with the pid, a process's identity."""
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return int(raw[raw.rfind(b")") + 2 :].split()[19])


class Sink:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.report_fd = os.open(args.report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def report(self, role: str, depth: int) -> None:
        pid = os.getpid()
        line = json.dumps(
            {
                "pid": pid,
                "ppid": os.getppid(),
                "pgid": os.getpgid(0),
                "sid": os.getsid(0),
                "start": start_time(pid),
                "uid": os.getuid(),
                "role": role,
                "depth": depth,
            }
        )
        # One write of a short line to an O_APPEND file: lines of concurrent processes never interleave.
        os.write(self.report_fd, (line + "\n").encode())

    def on_term(self, action: str, ordinal: int = 0) -> None:
        if action == "ignore":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        elif action == "exit":
            code = self.args.exit_code
            delay_s = ordinal * self.args.exit_stagger_ms / 1000

            def exit_later(_signum: int, _frame: object) -> None:
                if delay_s:
                    time.sleep(delay_s)
                # os._exit: a forked child must not run the parent's atexit handlers or flush its buffers.
                os._exit(code)

            signal.signal(signal.SIGTERM, exit_later)
        else:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def maybe_stop(self, role: str) -> None:
        if self.args.stop == "all" or (self.args.stop == "root" and role == "root"):
            os.kill(os.getpid(), signal.SIGSTOP)

    def fork(self, body: Callable[[], None]) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                body()
            finally:
                os._exit(0)
        return pid

    def node(self, depth: int, ordinal: int = 0) -> None:
        """A process of the tree at ``depth`` (0 = root): set up, report, spawn, then live."""
        role = {0: "root", 1: "child", 2: "grandchild"}.get(depth, f"depth{depth}")
        escaped = depth == 2 and self.args.escape != "none"
        if escaped:
            if self.args.escape == "setsid":
                os.setsid()
            else:
                os.setpgid(0, 0)
        self.on_term(self.args.escaped_term if escaped else self.args.term, ordinal)
        self.report(role, depth)
        shape = self.args.tree
        if depth < len(shape):
            for i in range(shape[depth]):
                # Numbered level by level in a full tree: the root's children 1..k, and so on.
                self.fork(functools.partial(self.node, depth + 1, ordinal * shape[depth] + i + 1))
        if depth == 0 and self.args.foreign_member is not None:
            self.fork(self.foreign_member)
        self.maybe_stop(role)
        if depth == 0 and self.args.exit_now:
            os._exit(self.args.exit_code)
        if depth == 0 and self.args.fork_loop:
            self.fork_loop()
        self.live()

    def foreign_member(self) -> None:
        os.setuid(self.args.foreign_member)
        self.report("foreign", 1)
        self.live()

    def fork_loop(self) -> None:
        for _ in range(min(self.args.fork_loop, MAX_FORKS)):
            self.fork(self.forked)
            self.reap()
            # Paced on purpose: the tree must still be growing when the kill arrives.
            time.sleep(self.args.fork_interval_ms / 1000)

    def forked(self) -> None:
        if self.args.fork_escape:
            os.setsid()
            self.on_term(self.args.escaped_term)
        self.report("forked", 1)
        self.live()

    @staticmethod
    def reap() -> None:
        # Reap exited children without blocking, so the tree holds no zombies of its own.
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass

    def live(self) -> None:
        """Stay alive until a signal ends the process, reaping children as they exit."""
        while True:
            try:
                os.wait()
            except ChildProcessError:
                signal.pause()


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--report", required=True)
    p.add_argument("--tree", type=lambda s: [int(n) for n in s.split(",") if n], default=[])
    p.add_argument("--term", choices=["default", "ignore", "exit"], default="default")
    p.add_argument("--escaped-term", choices=["default", "ignore", "exit"])
    p.add_argument("--escape", choices=["none", "setsid", "setpgid"], default="none")
    p.add_argument("--stop", choices=["none", "root", "all"], default="none")
    p.add_argument("--fork-loop", type=int, default=0)
    p.add_argument("--fork-interval-ms", type=float, default=5.0)
    p.add_argument("--fork-escape", action="store_true")
    p.add_argument("--foreign-member", type=int)
    p.add_argument("--uid", type=int)
    p.add_argument("--non-dumpable", action="store_true")
    p.add_argument("--exit-code", type=int, default=0)
    p.add_argument("--exit-now", action="store_true")
    p.add_argument("--exit-stagger-ms", type=float, default=0.0)
    args = p.parse_args(argv)
    if args.escaped_term is None:
        args.escaped_term = args.term
    return args


def main() -> None:
    args = parse(sys.argv[1:])
    sink = Sink(args)
    # After the report is open (the foreign uid may not be able to open it), before anything else.
    if args.uid is not None:
        os.setuid(args.uid)
    if args.non_dumpable:
        pr_set_dumpable = 4
        if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")
    sink.node(0)


if __name__ == "__main__":
    main()
