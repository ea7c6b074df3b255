"""The OS edge's /proc reader: a scan keeps stat files open between scans (``pread`` instead
of open/read/close), and must never describe a process from a file that outlived it."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

from sidecar.osedge import procfs

pytestmark = pytest.mark.timeout(30)


def _spawn_sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_scan_sees_a_new_process_and_then_its_state_change_through_the_kept_file() -> None:
    child = _spawn_sleeper()
    try:
        first = procfs.scan()
        assert child.pid in first
        assert child.pid in procfs._stat_files._fds, "the scan should keep the file open"
        os.kill(child.pid, 19)  # SIGSTOP: the kept file must show the new state, not a copy
        deadline = time.monotonic() + 10
        while procfs.scan()[child.pid].state != "T":
            assert time.monotonic() < deadline, "the stopped state never showed through the kept file"
            time.sleep(0.01)
        assert procfs.scan()[child.pid] == procfs.read_stat(child.pid)
    finally:
        child.kill()
        child.wait()


def test_a_gone_process_drops_out_of_the_scan_and_its_file_is_closed() -> None:
    child = _spawn_sleeper()
    assert child.pid in procfs.scan()
    fd = procfs._stat_files._fds[child.pid]
    child.kill()
    child.wait()
    assert child.pid not in procfs.scan()
    assert child.pid not in procfs._stat_files._fds
    # Closed, not leaked (the number may since name another file, but not this one).
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        target = ""
    assert target != f"/proc/{child.pid}/stat"


def test_a_kept_file_of_a_dead_process_reads_nothing_even_before_the_next_listing() -> None:
    # The window a reused PID would fall into: the number is listed again (by the new
    # process), but the kept file pins the old process, so its read must fail, not answer.
    child = _spawn_sleeper()
    procfs.scan()
    fd = procfs._stat_files._fds[child.pid]
    child.kill()
    child.wait()
    with pytest.raises(ProcessLookupError):
        os.pread(fd, 1024, 0)


@pytest.mark.parametrize(("cap", "soft_limit", "kept"), [(3, 1_000_000, 3), (4_096, 16, 4)])
def test_the_kept_files_are_capped_and_take_at_most_a_quarter_of_the_open_file_limit(
    cap: int, soft_limit: int, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The limit is reported, not set: lowering the real one would fail the other files
    # this process holds open.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (soft_limit, hard))
    files = procfs._StatFiles(cap=cap)
    try:
        found = files.scan()
        assert len(found) > kept, "this host should list more processes than the cap"
        assert len(files._fds) == kept
        # The next scan still reads every process (beyond the cap without keeping them).
        assert len(files.scan()) > kept
        assert len(files._fds) == kept
    finally:
        for fd in files._fds.values():
            os.close(fd)
