"""Disks that fail, for real where the kernel lets us and at the syscall boundary where not.

* ``PrivateDisk``: a size-limited tmpfs mounted in a private mount namespace (``unshare -m``)
  that a ``sleep`` holds open; daemons are started in it with ``nsenter`` (it execs, so the
  PID is the daemon's) and survive each other's ``kill -9`` on the same files. Filling it
  gives a real ENOSPC; a tmpfs remounted read-only before the daemon starts, a real EROFS.
* ``FailWrites``: a live filesystem cannot be remounted read-only while the daemon holds the
  journal open for writing (the kernel answers EBUSY), and this kernel has no device-mapper
  for ``dm-error``; so EIO and EROFS on a live daemon come from ``failwrites.c``, an
  LD_PRELOAD shim that fails SQLite's own write calls on files under the state dir.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.requires import require_program, require_root

SHIM_SOURCE = Path(__file__).with_name("failwrites.c")


@dataclass
class PrivateDisk:
    mountpoint: Path
    holder: subprocess.Popen[bytes]

    @classmethod
    def mount(cls, mountpoint: Path, size: str, *options: str) -> PrivateDisk:
        require_root("mounting a tmpfs in a private mount namespace needs root")
        for program in ("unshare", "nsenter", "mount"):
            require_program(program, "the disk-fault tests mount a tmpfs in a private mount namespace")
        mountpoint.mkdir(parents=True, exist_ok=True)
        holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep", "3600"])
        disk = cls(mountpoint, holder)
        try:
            # Until unshare(2) has run, the holder is still in our namespace: a mount (and
            # the fill) entered through it would land on the host.
            ours = os.readlink("/proc/self/ns/mnt")
            deadline = time.monotonic() + 10
            while os.readlink(f"/proc/{holder.pid}/ns/mnt") == ours:
                assert holder.poll() is None and time.monotonic() < deadline, "unshare -m did not take effect"
                time.sleep(0.01)
            disk.run(
                "mount",
                "-t",
                "tmpfs",
                "-o",
                ",".join([f"size={size}", "mode=0700", *options]),
                "tmpfs",
                str(mountpoint),
            )
        except BaseException:
            disk.close()
            raise
        return disk

    @property
    def prefix(self) -> list[str]:
        """Run a program inside the namespace (nsenter execs it: same PID)."""
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--"]

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, *command], capture_output=True, text=True, timeout=30, check=check)

    def fill(self) -> None:
        """Write a file until the disk is full (dd stops at ENOSPC); never more than its size."""
        found = self.run("findmnt", "-n", "-b", "-o", "FSTYPE,SIZE", "--target", str(self.mountpoint)).stdout.split()
        assert found[0] == "tmpfs", f"{self.mountpoint} is not the private tmpfs: {found}"
        blocks = int(found[1]) // 4096 + 1
        result = self.run(
            "dd", "if=/dev/zero", f"of={self.mountpoint / 'fill'}", "bs=4096", f"count={blocks}", check=False
        )
        assert "No space left on device" in result.stderr, result.stderr

    def free(self) -> None:
        self.run("rm", "-f", str(self.mountpoint / "fill"))

    def close(self) -> None:
        if self.holder.poll() is None:
            self.holder.send_signal(signal.SIGKILL)
        self.holder.wait(10)


@dataclass
class FailWrites:
    """Writes to files under ``directory`` fail with ``errno`` while ``fail`` is in effect."""

    library: Path
    control: Path
    directory: Path

    @classmethod
    def build(cls, workdir: Path, directory: Path) -> FailWrites:
        gcc = require_program("gcc", "the EIO/EROFS tests build an LD_PRELOAD shim")
        library = workdir / "failwrites.so"
        subprocess.run(
            [gcc, "-shared", "-fPIC", "-O2", "-o", str(library), str(SHIM_SOURCE), "-ldl"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return cls(library, workdir / "failwrites.errno", directory)

    @property
    def env(self) -> dict[str, str]:
        return {
            "LD_PRELOAD": str(self.library),
            "FAILWRITES_DIR": str(self.directory),
            "FAILWRITES_CONTROL": str(self.control),
        }

    def fail(self, errno: int) -> None:
        self.control.write_text(f"{errno}\n")

    def heal(self) -> None:
        self.control.unlink(missing_ok=True)


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
