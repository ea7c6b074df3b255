"""Running the project's image with podman, for the image and Kubernetes tests.

Every call goes through the project's containers.conf (scripts/ensure_podman.sh
writes it), and every container and volume made here is named with a per-run
prefix so that the fixtures can remove exactly what they made.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = ROOT / "build" / "podman" / "containers.conf"


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def podman(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run podman; on failure the assertion carries its stderr."""
    result = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, env=podman_env(), check=False
    )
    if check:
        assert result.returncode == 0, f"podman {' '.join(args)}: exit {result.returncode}\n{result.stderr}"
    return result


def build_image(timeout: float = 1800) -> str:
    """`make image`'s script: builds (cached by podman's layers) and returns the image's name."""
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build_image.sh")],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"scripts/build_image.sh failed:\n{result.stderr}"
    return result.stdout.strip().splitlines()[-1]


def wait_for(what: str, check: Callable[[], bool], timeout: float, interval: float = 0.1) -> float:
    """Poll check() until it holds; returns the seconds it took, fails with `what` at the deadline."""
    start = time.monotonic()
    eventually(check, timeout, interval, what=what)
    return time.monotonic() - start


def processes_with(marker: str, exact: bool = False) -> list[int]:
    """PIDs (as the host sees them) of live processes whose command line holds marker
    (or, exact, is marker: its arguments joined by spaces)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            raw = Path(f"/proc/{entry}/cmdline").read_bytes().rstrip(b"\0")
            cmdline = raw.replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if (cmdline == marker if exact else marker in cmdline) and state not in (b"Z", b"X"):
            pids.append(int(entry))
    return pids


def proc_status(pid: int, key: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    raise KeyError(key)
