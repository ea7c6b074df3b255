"""Processes the suite starts (the daemon, the floor servers, tool workers) and what it
reads about them from /proc. Every process is stopped by its own PID."""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 30.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def raise_nofile() -> None:
    """Raise this process's open-file soft limit to the hard limit (inherited by children:
    5,000 tools need more than 5,000 descriptors on each side)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process from /proc/<pid>/stat (clock-tick resolution)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    fields = data[data.rindex(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def alive(pid: int) -> bool:
    """The process exists and is no zombie (a zombie has exited and only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2] not in b"ZX"


def child_subreaper(on: bool) -> None:
    """Make this process the reaper of its descendants' orphans (``PR_SET_CHILD_SUBREAPER``),
    or stop being it: a tool's ``setsid`` grandchild outlives its shell, and must still be
    reaped by someone the suite controls."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, int(on), 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def kill_and_reap(pids: list[int], timeout: float = 5.0) -> list[int]:
    """SIGKILL each of ``pids`` still alive and wait for it to leave /proc, reaping those that
    are (or become, as orphans of a subreaper) children of this process. Returns the pids
    still alive at the deadline (none, unless a process cannot be killed)."""
    deadline = time.monotonic() + timeout
    while True:
        pending = []
        for pid in pids:
            if alive(pid):
                pending.append(pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            try:
                if os.waitpid(pid, os.WNOHANG) == (0, 0):
                    pending.append(pid)  # our child, not yet exited
            except ChildProcessError:
                pass  # gone, or another process's child: its parent reaps it
        if not pending or time.monotonic() > deadline:
            return sorted({pid for pid in pending if alive(pid)})
        time.sleep(0.01)


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _readline(stream: IO[str], timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout):
            return ""
    return stream.readline()


@dataclass
class Server:
    """A server process that prints ``ready <address>...`` on stdout once serving."""

    name: str
    process: subprocess.Popen[str]
    addresses: list[str]
    directory: tempfile.TemporaryDirectory[str]
    log_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def address(self, transport: str) -> str:
        for a in self.addresses:
            if a.startswith("unix:") == (transport == "unix"):
                return a
        raise KeyError(f"{self.name} has no {transport} listener: {self.addresses}")

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def rss(self) -> int:
        return rss_bytes(self.pid)

    def stop(self, timeout: float = 20.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()  # by PID: this process only
            code = self.process.wait(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.directory.cleanup()
        return code


#: The coordinator credential the daemon's TCP listener requires (``--auth-token-file``);
#: clients send it as ``authorization: Bearer`` on every coordinator call, floors included.
AUTH_TOKEN = secrets.token_hex(16)
AUTH_METADATA = (("authorization", f"Bearer {AUTH_TOKEN}"),)


def start_server(name: str, argv: list[str], tcp: bool, with_token: bool = False) -> Server:
    """Start ``argv`` + listen flags with a private unix socket (and loopback TCP port 0)."""
    directory = tempfile.TemporaryDirectory(prefix="isb-", dir="/tmp")
    listen = ["--listen", f"unix://{Path(directory.name) / 's.sock'}"]
    if tcp:
        listen += ["--listen", "127.0.0.1:0"]
    if with_token:
        token_file = Path(directory.name) / "token"
        token_file.write_text(AUTH_TOKEN + "\n")
        token_file.chmod(0o600)
        listen += ["--auth-token-file", str(token_file)]
    log_path = Path(directory.name) / "stderr.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen([*argv, *listen], stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT)
    assert process.stdout is not None
    line = _readline(process.stdout, READY_TIMEOUT_S)
    if not line.startswith("ready "):
        process.kill()
        process.wait(5)
        raise RuntimeError(f"{name} did not start: {line!r}; stderr: {log_path.read_text()[-2000:]}")
    return Server(name, process, line.split()[1:], directory, log_path)


def start_daemon(loop: str, tcp: bool = True, grace: str = "500ms") -> Server:
    argv = [sys.executable, "-m", "interrupt_sidecar", "serve", "--metrics-listen", "", "--loop", loop]
    argv += ["--log-level", "WARNING", "--grace", grace]
    return start_server(f"daemon[{loop}]", argv, tcp, with_token=tcp)


def start_floor(kind: str, loop: str, tcp: bool = True, wire: bool = False) -> Server:
    argv = [sys.executable, "-m", "bench.floor", kind, "--loop", loop, *(["--wire"] if wire else [])]
    return start_server(f"floor-{kind}{'-wire' if wire else ''}[{loop}]", argv, tcp)


def machine_info() -> dict[str, Any]:
    import grpc

    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", False
    try:
        import uvloop

        uvloop_version: str | None = str(getattr(uvloop, "__version__", "unknown"))
    except ImportError:
        uvloop_version = None
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "memory_mb": mem_kb // 1024,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "uvloop": uvloop_version,
        "git_commit": commit,
        "git_dirty": dirty,
        "loadavg_start": os.getloadavg(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def host_busy_fraction(seconds: float = 1.0) -> float:
    """Share of all CPUs busy over ``seconds`` (from /proc/stat): the contention right now."""

    def read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            parts = [int(x) for x in f.readline().split()[1:]]
        idle = parts[3] + parts[4]
        return sum(parts), idle

    t0, i0 = read()
    time.sleep(seconds)
    t1, i1 = read()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)
