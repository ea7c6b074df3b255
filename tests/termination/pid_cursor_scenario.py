"""The process table's PID-cursor shortcut, run as PID 1 of a private PID namespace::

    unshare --pid --fork --mount-proc --kill-child python pid_cursor_scenario.py

In a namespace of its own only this scenario hands out PIDs, so whether an update lists
``/proc`` is known exactly: it must not when no PID was handed out since the last listing,
and must when one was. Every update without a listing must still see what changed without
a new PID: exits, zombies and their reaping, children re-parented to us, and the escaped
descendant a kill has to reach. The cursor must be off where ``/proc`` is another PID
namespace's.

Prints one JSON verdict line on stdout: ``{"ok": bool, "checks": {name: bool}, ...}``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
from typing import Any

from interrupt_sidecar.osedge import procfs
from interrupt_sidecar.osedge.process_groups import ProcessGroups

DEADLINE_S = 10.0
listings = 0
_listdir = os.listdir


def counting_listdir(path: Any) -> list[str]:
    """os.listdir, counted when it lists /proc (the real call is still made)."""
    global listings
    if str(path) == "/proc":
        listings += 1
    return _listdir(path)


def state_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()[0].decode()


def comm_of(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def poll_until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while not (result := check()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {DEADLINE_S}s")
        time.sleep(0.005)
    return result


def spawn(argv: list[str]) -> int:
    """Start ``argv`` leading a new group; returns once it runs ``sleep``."""
    pid = os.posix_spawn(argv[0], argv, os.environ, setpgroup=0)
    poll_until(lambda: comm_of(pid) == "sleep", f"{argv} to exec sleep")
    return pid


def children_of(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def scan_counting() -> tuple[dict[int, procfs.ProcStat], int]:
    """(the table's scan, how many listings of /proc it made)."""
    before = listings
    found = procfs.scan()
    return found, listings - before


def run(checks: dict[str, bool], facts: dict[str, Any]) -> None:
    checks["pid_1"] = os.getpid() == 1
    table = procfs._table
    checks["cursor_on"] = table._cursor.read() is not None
    # The window is a safety bound on wrap-around (8 ms at pid_max 32,768): far longer here,
    # so the steps' own waits cannot expire it; its expiry is checked on its own below.
    window = table._cursor.window_s
    table._cursor.window_s = 3600.0
    # procfs calls os.listdir: count its listings of /proc (the real call is still made).
    os.listdir = counting_listdir  # type: ignore[assignment]

    a = spawn(["/bin/sleep", "1000"])
    procfs.scan(full=True)
    found, listed = scan_counting()
    checks["no_listing_without_a_new_pid"] = listed == 0 and a in found

    os.kill(a, signal.SIGKILL)
    os.waitpid(a, 0)
    found, listed = scan_counting()
    checks["an_exit_is_seen_without_a_listing"] = listed == 0 and a not in found

    b = spawn(["/bin/sleep", "1000"])
    found, listed = scan_counting()
    checks["a_new_pid_is_listed"] = listed == 1 and b in found and not found[b].zombie

    os.kill(b, signal.SIGKILL)
    poll_until(lambda: state_of(b) == "Z", "b to become a zombie")
    found, listed = scan_counting()
    checks["a_zombie_shows_without_a_listing"] = listed == 0 and b in found and found[b].zombie
    os.waitpid(b, 0)
    found, listed = scan_counting()
    checks["a_reaped_zombie_goes_without_a_listing"] = listed == 0 and b not in found

    # A parent and its child; the parent dies and the child is re-parented to us (PID 1).
    parent = spawn(["/bin/sh", "-c", "/bin/sleep 1000 & exec /bin/sleep 1000"])
    child = poll_until(lambda: children_of(parent), "the child of the parent")[0]
    poll_until(lambda: comm_of(child) == "sleep", "the child to exec sleep")
    found, listed = scan_counting()
    facts["parent_listing"] = listed
    os.kill(parent, signal.SIGKILL)
    os.waitpid(parent, 0)
    found, listed = scan_counting()
    checks["a_reparented_child_is_read_again_without_a_listing"] = (
        listed == 0 and parent not in found and child in found and found[child].ppid == 1
    )
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)

    # A tree whose descendant left the group (setsid) before the kill: the kill's survey
    # finds it through the table, without a listing, and signals it.
    leader = spawn(["/bin/sh", "-c", "/usr/bin/setsid /bin/sleep 1000 & exec /bin/sleep 1000"])
    escaped = poll_until(lambda: children_of(leader), "the escaped child")[0]
    poll_until(lambda: comm_of(escaped) == "sleep" and os.getsid(escaped) == escaped, "the child to setsid")
    groups = ProcessGroups()
    tree = groups.tree(groups.pin(leader))  # reads /proc in full
    before = listings
    status = groups.signal_tree(tree, int(signal.SIGTERM))
    facts["kill_status"] = {"members": status.members, "escaped": status.escaped, "signalled": status.signalled}
    checks["an_escaped_descendant_is_found_without_a_listing"] = listings == before and status.escaped == 1
    for pid in (leader, escaped):
        os.waitpid(pid, 0)  # both ours by now (the escaped one re-parented to PID 1)
    checks["the_kill_took_the_whole_tree"] = state_of(leader) is None and state_of(escaped) is None

    # Past the window an unchanged cursor is not trusted.
    table._cursor.window_s = 0.0
    found, listed = scan_counting()
    table._cursor.window_s = window
    checks["past_the_window_the_listing_comes_back"] = listed == 1
    facts["window_s"] = window

    # A nested PID namespace without its own /proc: /proc is ours there, so the cursor is off.
    probe = "from interrupt_sidecar.osedge.procfs import _PidCursor; print(_PidCursor().read())"
    nested = subprocess.run(
        ["unshare", "--pid", "--fork", sys.executable, "-c", probe], capture_output=True, text=True, timeout=DEADLINE_S
    )
    facts["nested"] = nested.stdout.strip() or nested.stderr.strip()
    checks["cursor_off_where_proc_is_another_namespace"] = nested.stdout.strip() == "None"


def main() -> int:
    checks: dict[str, bool] = {}
    facts: dict[str, Any] = {}
    error = None
    try:
        run(checks, facts)
    except Exception:  # the verdict must say what broke
        error = traceback.format_exc()
    print(json.dumps({"ok": error is None and all(checks.values()), "checks": checks, "facts": facts, "error": error}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
