"""The native command line (``clients/go/cmd/interrupt-sidecar``), built once per test run.

Tests that hold the Python and the native implementations to the same assertions take the
binary from :func:`native_binary`. It is built with the Go toolchain by
``make -C clients/go native`` into ``build/native/interrupt-sidecar`` (incremental: the go
command's caches make a rebuild of an unchanged tree a no-op). Without ``go`` the native
half of a parametrized test is skipped here and fails under CI (``tests/requires.py``).
"""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

from tests.requires import require_program

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "build" / "native" / "interrupt-sidecar"
_LOCK = ROOT / "build" / "native" / ".lock"
_built: list[Path] = []


def native_binary() -> Path:
    """The freshly built native binary (built at most once per process; a file lock keeps
    parallel test processes from building over each other)."""
    if _built:
        return _built[0]
    require_program("go", "the native command line is built with the Go toolchain")
    _LOCK.parent.mkdir(parents=True, exist_ok=True)
    with _LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["make", "--no-print-directory", "-C", str(ROOT / "clients" / "go"), "native"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    if result.returncode != 0:
        raise AssertionError(f"make -C clients/go native failed:\n{result.stdout}\n{result.stderr}")
    _built.append(BINARY)
    return BINARY
