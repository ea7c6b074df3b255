"""Fixtures shared by every suite: a real daemon process on a real unix socket."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 20.0

# A suite started with SIGINT ignored (a background job of a non-interactive shell, `cmd &`
# in a script, or anything a harness starts that way) hands SIG_IGN to every process it
# spawns: an ignored signal stays ignored across fork and exec, and Python and Go both keep
# it so. Every test that presses Ctrl+C on a command (`run`, `status`, `top`, ...) would then
# wait for an exit that never comes. A handler of our own is reset to the default at exec,
# so the children start as they would from a terminal (tests/test_signal_dispositions.py).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The CrewAI adapter's tests import crewai, which lives in build/crewai-venv (it needs mcp<2;
# the test extra pins mcp 2.x): collected there, run from the main suite by
# tests/adapters/test_crewai_venv.py, which in turn is not collected where crewai is.
CREWAI_TESTS = ["adapters/test_crewai.py", "docs/test_adapters_crewai.py"]
collect_ignore = CREWAI_TESTS if importlib.util.find_spec("crewai") is None else ["adapters/test_crewai_venv.py"]


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as a module, importing its neighbours as it does when run (scripts/ first on the path)."""
    scripts = str(ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from /proc by the tests
    themselves (not with the daemon's reader, so a bug there cannot hide itself)."""
    members: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            data = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry))
    return members


@dataclass
class DaemonProcess:
    """A daemon started with ``python -m interrupt_sidecar serve``; stopped by its PID."""

    address: str
    process: subprocess.Popen[str]
    socket_path: Path
    stderr_lines: list[str] = field(default_factory=list)
    _pump: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Signal the daemon by its PID and reap it (SIGKILL if it does not exit in time)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(5)
        if self._pump is not None:
            self._pump.join(5)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        return code

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)


def start_daemon(
    directory: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
    command: Sequence[str] = (sys.executable, "-m", "interrupt_sidecar"),
) -> DaemonProcess:
    """Start a daemon on a unix socket in ``directory`` and wait for its ready line.

    ``prefix`` runs it through a program that execs it (``nsenter -t PID -m --``), so the
    process started is still the daemon and its PID the daemon's. ``command`` is the
    command line that serves (the native binary execs the Python one, same PID too)."""
    socket_path = directory / "sidecar.sock"
    address = f"unix://{socket_path}"
    process = subprocess.Popen(
        [
            *prefix,
            *command,
            "serve",
            "--listen",
            address,
            "--metrics-listen",
            "",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    daemon = DaemonProcess(address, process, socket_path)
    assert process.stderr is not None and process.stdout is not None
    stderr = process.stderr

    def pump() -> None:
        for line in stderr:
            daemon.stderr_lines.append(line)

    daemon._pump = threading.Thread(target=pump, daemon=True)
    daemon._pump.start()
    ready: list[str] = []
    reader = threading.Thread(target=lambda: ready.append(process.stdout.readline() if process.stdout else ""))
    reader.start()
    reader.join(READY_TIMEOUT_S)
    if not ready or not ready[0].startswith("ready "):
        daemon.stop(signal.SIGKILL)
        raise RuntimeError(f"daemon did not become ready: stdout={ready!r} stderr={daemon.stderr!r}")
    assert ready[0].split()[1] == address
    return daemon


@pytest.fixture
def daemon() -> Iterator[DaemonProcess]:
    """A fresh daemon per test, on a private unix socket; stopped (SIGTERM, then SIGKILL) after."""
    # Unix socket paths are limited to 107 bytes: keep the directory short.
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as directory:
        proc = start_daemon(Path(directory))
        try:
            yield proc
        finally:
            code = proc.stop()
            assert code == 0, f"daemon exited with {code}; stderr:\n{proc.stderr}"
