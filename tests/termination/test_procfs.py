"""The OS edge's /proc reader: a table kept current between scans by reading only what may
have changed (new processes, the exited and their re-parented children, zombies), through
stat files kept open and pidfds watched in one epoll set. It must never describe a process
from a descriptor that outlived it, and a tree survey must still see group changes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator

import pytest
from interrupt_sidecar.osedge import procfs
from interrupt_sidecar.osedge.process_groups import ProcessGroups

from tests.client.support import eventually

pytestmark = pytest.mark.timeout(30)

#: A child that sleeps; on each line from stdin it runs the command named by it.
_COMMANDS = """
import os, sys, time
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "fork":
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        print(pid, flush=True)
    elif cmd.startswith("setpgid "):
        os.setpgid(0, int(cmd.split()[1]))
        print("ok", flush=True)
    elif cmd == "exit":
        os._exit(0)
time.sleep(60)
"""


class Child:
    """A scriptable child process (see _COMMANDS)."""

    def __init__(self, *, new_group: bool = False) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _COMMANDS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            process_group=0 if new_group else None,
        )
        self.pid = self.process.pid

    def tell(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def ask(self, command: str) -> str:
        self.tell(command)
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def spawn() -> Iterator[Callable[..., Child]]:
    children: list[Child] = []

    def start(**kwargs: bool) -> Child:
        children.append(Child(**kwargs))
        return children[-1]

    yield start
    for child in children:
        child.stop()


def test_a_new_process_is_read_and_watched(spawn: Callable[..., Child]) -> None:
    child = spawn()
    procfs.scan()
    assert child.pid in procfs.scan()
    assert child.pid in procfs._table._stat_fds, "its stat file should be kept open"
    assert child.pid in procfs._table._pidfds, "its exit should be watched"


def test_a_group_change_shows_through_refresh_and_full_scans_not_through_the_table(
    spawn: Callable[..., Child],
) -> None:
    child = spawn()
    before = procfs.scan()[child.pid]
    assert child.ask(f"setpgid {child.pid}") == "ok"
    assert procfs.scan()[child.pid].pgrp == before.pgrp, "an update re-reads only what may have changed"
    processes = procfs.scan()
    procfs.refresh(processes, [child.pid])
    assert processes[child.pid].pgrp == child.pid
    assert procfs.scan(full=True)[child.pid].pgrp == child.pid


def test_the_state_change_of_a_kept_process_shows_on_refresh(spawn: Callable[..., Child]) -> None:
    child = spawn()
    procfs.scan()
    os.kill(child.pid, signal.SIGSTOP)

    def stopped() -> bool:
        processes = procfs.scan()
        procfs.refresh(processes, [child.pid])
        return processes[child.pid].state == "T"

    eventually(stopped, timeout=10, what="the stopped state to show through the kept file")
    os.kill(child.pid, signal.SIGCONT)


def test_children_of_an_exited_process_are_read_again_with_their_new_parent(spawn: Callable[..., Child]) -> None:
    parent = spawn()
    grandchild = int(parent.ask("fork"))
    try:
        assert procfs.scan()[grandchild].ppid == parent.pid
        parent.tell("exit")  # no answer: the forked child holds the pipe open
        parent.process.wait(10)
        processes = procfs.scan()
        assert parent.pid not in processes
        fresh = procfs.read_stat(grandchild)
        assert fresh is not None and fresh.ppid != parent.pid
        assert processes[grandchild].ppid == fresh.ppid, "a re-parented child must not keep its dead parent"
    finally:
        os.kill(grandchild, signal.SIGKILL)


def _same_open_file(fd: int, witness: int) -> bool:
    """Whether descriptor ``fd`` refers to the open file that ``witness`` (a dup) refers to.

    Every descriptor of one open file shares its status flags, and no other file's follow
    them: set O_NONBLOCK through the witness, then clear it, and ``fd`` must show both (a
    stranger that is non-blocking already would pass the first alone). Unlike a path or an
    inode, this tells apart two pidfds on every kernel (before 6.9 all share one inode)."""
    try:
        fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:  # EBADF: closed (or closed since the listing)
        return False
    flags = fcntl.fcntl(witness, fcntl.F_GETFL)
    try:
        for nonblocking in (flags | os.O_NONBLOCK, flags & ~os.O_NONBLOCK):
            fcntl.fcntl(witness, fcntl.F_SETFL, nonblocking)
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK != nonblocking & os.O_NONBLOCK:
                return False
        return True
    finally:
        fcntl.fcntl(witness, fcntl.F_SETFL, flags)


@contextlib.contextmanager
def witnessed(fds: Iterable[int]) -> Iterator[Callable[[], None]]:
    """Keep the open files behind ``fds`` identifiable after those numbers are closed, and
    yield a check that no descriptor of this process (the witnesses aside) still refers to
    any of them.

    Why not look at the numbers: a freed number goes to the next file opened, which is
    often another pidfd (the table's own, for a process that appeared since its last scan,
    opened in the very scan that closed ours), and ``readlink`` names every pidfd
    ``anon_inode:[pidfd]``, whoever's it is. The witness (a dup) pins the file itself."""
    witnesses = [os.dup(fd) for fd in fds]

    def closed_everywhere() -> None:
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd in witnesses:
                continue
            for witness in witnesses:
                assert not _same_open_file(fd, witness), f"descriptor {fd} still refers to a closed file"

    try:
        yield closed_everywhere
    finally:
        for witness in witnesses:
            os.close(witness)


def test_an_exited_process_is_dropped_and_its_descriptors_closed(spawn: Callable[..., Child]) -> None:
    child = spawn()
    assert child.pid in procfs.scan()
    table = procfs._table
    with witnessed([table._stat_fds[child.pid], table._pidfds[child.pid]]) as closed_everywhere:
        child.stop()
        assert child.pid not in procfs.scan()
        assert child.pid not in table._stat_fds and child.pid not in table._pidfds
        closed_everywhere()


def test_a_closed_pidfd_is_told_from_another_pidfd_that_took_its_number(spawn: Callable[..., Child]) -> None:
    # The reuse the check above must see through, made on purpose: the number of a closed
    # pidfd now names another process's pidfd (what the table's next read of a new process
    # does, when one appeared since its last scan).
    child, other = spawn(), spawn()
    pidfd = os.pidfd_open(child.pid)
    stranger = os.pidfd_open(other.pid)
    try:
        with witnessed([pidfd]) as closed_everywhere:
            with pytest.raises(AssertionError, match=f"descriptor {pidfd} still refers"):
                closed_everywhere()  # open: the check must still catch a file left open
            # Atomically: the child's pidfd closed, the number given to the stranger's.
            os.dup2(stranger, pidfd)
            assert os.readlink(f"/proc/self/fd/{pidfd}") == "anon_inode:[pidfd]"
            closed_everywhere()
    finally:
        os.close(pidfd)
        os.close(stranger)


def test_a_zombie_is_read_again_until_it_is_reaped(spawn: Callable[..., Child]) -> None:
    child = spawn()
    procfs.scan()
    child.process.kill()
    eventually(lambda: procfs.scan()[child.pid].zombie, timeout=10, what="the zombie to show")
    child.process.wait(10)
    assert child.pid not in procfs.scan()


def test_a_kept_file_of_a_dead_process_reads_nothing_even_before_the_next_listing(
    spawn: Callable[..., Child],
) -> None:
    # The window a reused PID would fall into: the number is listed again (by the new
    # process), but the kept file pins the old process, so its read must fail, not answer.
    child = spawn()
    procfs.scan()
    fd = procfs._table._stat_fds[child.pid]
    child.stop()
    with pytest.raises(ProcessLookupError):
        os.pread(fd, 1024, 0)


def test_a_process_that_joined_the_group_after_its_last_read_is_found(spawn: Callable[..., Child]) -> None:
    # The table cannot see a live process change group; the survey asks the kernel whether
    # the group still has processes when it knows no member, and reads everything then.
    leader = spawn(new_group=True)
    joiner = spawn()
    groups = ProcessGroups()
    tree = groups.tree(groups.pin(leader.pid))
    procfs.scan()
    assert joiner.ask(f"setpgid {leader.pid}") == "ok"
    leader.stop()
    status = tree.status()
    assert status.members == 1 and status.processes[0][0] == joiner.pid


@pytest.mark.parametrize(("cap", "soft_limit", "kept"), [(3, 1_000_000, 3), (2_048, 32, 4)])
def test_the_table_is_capped_and_takes_at_most_a_quarter_of_the_open_file_limit(
    cap: int, soft_limit: int, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two descriptors an entry. The limit is reported, not set: lowering the real one would
    # fail the other files this process holds open.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (soft_limit, hard))
    table = procfs._ProcessTable(cap=cap)
    found = table.scan()
    assert len(found) > kept, "this host should list more processes than the cap"
    # Over the cap: every scan reads everything and keeps nothing.
    assert not table._stat_fds and not table._pidfds
    assert len(table.scan()) > kept
    assert not table._stat_fds and not table._pidfds


def test_a_pidfd_is_lent_from_the_table_and_outlives_its_entry(spawn: Callable[..., Child]) -> None:
    child = spawn()
    start = procfs.scan()[child.pid].start
    kept = procfs._table._pidfds[child.pid]
    fd = procfs.open_pidfd(child.pid, start)
    assert fd is not None and fd != kept
    try:
        # A duplicate shares the open file (and its status flags) with the table's pidfd; a
        # pidfd opened afresh would not.
        flags = fcntl.fcntl(kept, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        assert fcntl.fcntl(kept, fcntl.F_GETFL) & os.O_NONBLOCK, "the pidfd should be lent, not opened again"
        fcntl.fcntl(fd, fcntl.F_SETFL, flags)
        signal.pidfd_send_signal(fd, 0)  # it names the live child
        child.stop()
        procfs.scan()  # the entry is dropped and its own pidfd closed ...
        assert child.pid not in procfs._table._pidfds
        with pytest.raises(ProcessLookupError):  # ... while the lent one still names the child
            signal.pidfd_send_signal(fd, 0)
    finally:
        os.close(fd)


def test_a_pidfd_already_readable_is_never_lent(spawn: Callable[..., Child]) -> None:
    # The window the rule guards: an entry's pidfd opened just before its process died and
    # its number went to a newcomer, whose stat (and start) the entry then holds. Made here
    # by handing a live child's entry the pidfd of one that exited.
    dead, live = spawn(), spawn()
    processes = procfs.scan()
    table = procfs._table
    dead_pidfd = os.pidfd_open(dead.pid)
    dead.stop()
    own = table._pidfds[live.pid]
    table._pidfds[live.pid] = dead_pidfd
    try:
        assert table.lend_pidfd(live.pid, processes[live.pid].start) is None
    finally:
        table._pidfds[live.pid] = own
        os.close(dead_pidfd)
    fd = procfs.open_pidfd(live.pid, processes[live.pid].start)  # opened afresh and checked
    assert fd is not None
    os.close(fd)


def test_no_pidfd_is_lent_for_another_start_time_or_a_zombie(spawn: Callable[..., Child]) -> None:
    child = spawn()
    start = procfs.scan()[child.pid].start
    assert procfs._table.lend_pidfd(child.pid, start + 1) is None
    assert procfs.open_pidfd(child.pid, start + 1) is None
    child.process.kill()
    eventually(lambda: procfs.scan()[child.pid].zombie, timeout=10, what="the zombie to show")
    assert procfs._table.lend_pidfd(child.pid, start) is None
    assert procfs.open_pidfd(child.pid, start) is None
