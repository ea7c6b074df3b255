"""What the adapter tests share: a tool that starts a process tree, and /proc checks."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from interrupt_sidecar_client import Coordinator, InterruptReason

#: The daemon's grace for every turn in these tests; bounds are generous multiples of it.
GRACE = 0.5
#: A framework call must return within the grace plus this (a shared 2-core machine).
MARGIN = 4.0


def tree_command(pidfile: Path) -> list[str]:
    """sh with a child in its group and a setsid grandchild; it writes the three pids, then waits."""
    tmp = f"{pidfile}.tmp"
    return [
        "sh",
        "-c",
        f"echo $$ > {tmp}; sleep 60 & echo $! >> {tmp}; setsid sleep 61 & echo $! >> {tmp}; mv {tmp} {pidfile}; wait",
    ]


def stubborn_tree_command(pidfile: Path) -> list[str]:
    """sh (dies at SIGTERM) with a setsid grandchild that IGNORES SIGTERM: the daemon kills the
    leader at the trip but the grandchild only at the SIGKILL after ``kill_after``. Writes
    both pids once the grandchild is set up, then waits."""
    tmp, mark = f"{pidfile}.tmp", f"{pidfile}.grandchild"
    # The grandchild writes its pid only once it is in its own session and ignores TERM
    # (an ignored signal stays ignored across exec): a trip before that would find it still
    # in the group, or not yet deaf to SIGTERM, and test nothing.
    grandchild = f"trap '' TERM; echo \\$\\$ > {mark}.tmp; mv {mark}.tmp {mark}; exec sleep 61"
    return [
        "sh",
        "-c",
        f'echo $$ > {tmp}; setsid sh -c "{grandchild}" & '
        f"while [ ! -e {mark} ]; do sleep 0.01; done; cat {mark} >> {tmp}; mv {tmp} {pidfile}; wait",
    ]


def survivors_now(pids: list[int]) -> list[int]:
    """The pids still alive at this instant (no waiting); kills them so nothing is left behind."""
    survivors = [pid for pid in pids if alive(pid)]
    for pid in survivors:
        os.kill(pid, 9)
    return survivors


def wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not callable(predicate) or not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def pids_of(pidfile: Path, timeout: float = 10.0, count: int = 3) -> list[int]:
    wait_for(pidfile.exists, timeout, f"{pidfile}")
    pids = [int(line) for line in pidfile.read_text().split()]
    assert len(pids) == count, pids
    return pids


def alive(pid: int) -> bool:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return data[data.rfind(b")") + 2 : data.rfind(b")") + 3] not in (b"Z", b"X")


def assert_all_gone(pids: list[int], timeout: float = 5.0) -> None:
    """Every process of the tree has left /proc (or is a zombie) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            survivors = [pid for pid in pids if alive(pid)]
            for pid in survivors:  # leave nothing behind for the next test
                os.kill(pid, 9)
            raise AssertionError(f"survivors: {survivors}")
        time.sleep(0.02)


class TreeInterrupter:
    """A thread that interrupts ``context_id`` once a tool's tree has written its pids, for
    tests of a blocking call: ``with TreeInterrupter(...) as tree:`` around the call; after
    the call ``tree.pids`` are the tree's pids and ``tree.t0`` the moment of the interrupt."""

    def __init__(self, pidfile: Path, address: str, context_id: str, *, count: int = 2) -> None:
        self.pids: list[int] = []
        self.t0 = 0.0
        self._thread = threading.Thread(target=self._interrupt, args=(pidfile, address, context_id, count))

    def _interrupt(self, pidfile: Path, address: str, context_id: str, count: int) -> None:
        self.pids.extend(pids_of(pidfile, count=count))
        self.t0 = time.monotonic()
        interrupt_context(address, context_id)

    def __enter__(self) -> TreeInterrupter:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._thread.join(30)


def interrupt_context(address: str, context_id: str) -> None:
    with Coordinator(address) as coordinator:
        outcomes = coordinator.interrupt(context_id=context_id, reason=InterruptReason.USER_SIGINT, detail="Esc")
        assert any(outcome.tripped for outcome in outcomes), outcomes
