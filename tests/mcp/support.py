"""What the MCP bridge tests share: where the third-party software is, the bridge's command
line, turns on a real daemon, and ``/proc`` reads done by the tests themselves."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from interrupt_sidecar_client import BegunExecution, Coordinator, InterruptReason

from tests.conftest import ROOT, DaemonProcess
from tests.polling import eventually_async

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "servers" / "node_modules"
SHELL_VENV = ROOT / "build" / "mcp" / "shell-venv"

#: The bridge, as a host would start it (the venv's interpreter, so the tests need no PATH).
BRIDGE = [sys.executable, "-m", "interrupt_sidecar", "mcp"]

EVERYTHING = ["node", str(NODE_MODULES / "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
COMMANDS = ["node", str(NODE_MODULES / "mcp-server-commands/build/index.js")]
SHELL = [str(SHELL_VENV / "bin" / "mcp-shell-server")]
BLOCKING = [str(SHELL_VENV / "bin" / "python"), str(HERE / "blocking_server.py")]
MODERN = [sys.executable, str(HERE / "modern_server.py")]
SCRIPTED = [sys.executable, str(HERE / "scripted_server.py")]
TAP = [sys.executable, str(HERE / "tap.py")]

T = TypeVar("T")


async def eventually(check: Callable[[], T], timeout: float = 15.0, interval: float = 0.005) -> T:
    """Poll ``check`` until it returns something truthy; fail at the deadline."""
    return await eventually_async(check, timeout, interval)


async def within(awaitable: Awaitable[T], timeout: float = 20.0) -> T:
    return await asyncio.wait_for(awaitable, timeout)


def _alive_stat(pid: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def processes_running(*argv: str) -> list[int]:
    """Live processes whose command line is exactly ``argv`` (e.g. ``sleep 300``), per /proc."""
    wanted = [a.encode() for a in argv]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if cmdline == wanted and _alive_stat(entry):
            found.append(int(entry))
    return found


def parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


def alive(pid: int) -> bool:
    return _alive_stat(str(pid))


class Turns:
    """The agent's side of the daemon: a turn per ``begin``, its token in the token file."""

    def __init__(self, daemon: DaemonProcess, directory: Path) -> None:
        self.daemon = daemon
        self.coordinator = Coordinator(daemon.address)
        self.token_file = directory / "turn-token"
        self.current: BegunExecution | None = None

    def begin(self, grace: float = 0.5) -> BegunExecution:
        self.current = self.coordinator.begin(grace=grace)
        # Atomically, as the docs ask: the bridge may read it at any moment.
        tmp = self.token_file.with_suffix(".tmp")
        tmp.write_text(self.current.attach_token)
        tmp.replace(self.token_file)
        return self.current

    def interrupt(self, reason: InterruptReason = InterruptReason.USER_SIGINT) -> float:
        """Trip the current turn; returns the monotonic time just before the call."""
        assert self.current is not None
        started = time.monotonic()
        self.coordinator.interrupt(self.current.execution_id, reason=reason)
        return started

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "INTERRUPT_SIDECAR_ADDRESS": self.daemon.address,
            "INTERRUPT_SIDECAR_TOKEN_FILE": str(self.token_file),
        }

    def close(self) -> None:
        self.coordinator.close()


def agent_lines(log: Path) -> list[dict[str, Any]]:
    """Every JSON-RPC message the agent was sent, from a tap log (batches flattened)."""
    messages: list[dict[str, Any]] = []
    if not log.exists():
        return messages
    for raw in log.read_bytes().splitlines():
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        messages.extend(data if isinstance(data, list) else [data])
    return messages


def answers_to(log: Path, request_id: Any) -> list[dict[str, Any]]:
    """The responses (results and errors) the agent was sent for ``request_id``."""
    return [m for m in agent_lines(log) if m.get("id") == request_id and "method" not in m]


def assert_one_answer_each(log: Path) -> None:
    """The bridge's invariant: the agent got at most one answer per request id."""
    seen: dict[str, int] = {}
    for message in agent_lines(log):
        if "id" in message and "method" not in message:
            key = json.dumps(message["id"])
            seen[key] = seen.get(key, 0) + 1
    assert all(count == 1 for count in seen.values()), f"answered more than once: {seen}"
