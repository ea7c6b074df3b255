"""9. MCP: a tool call of a real MCP server interrupted mid-way, two ways, in the same run.

* **own cancel** — the agent talks to the server directly and cancels the way the MCP
  clients do: ``notifications/cancelled`` for the call (t0 = that line written);
* **bridge** — the agent talks to ``interrupt-sidecar mcp -- SERVER`` and the turn is
  tripped with ``Interrupt`` (t0 = just before the RPC).

Per trial a fresh server (and bridge) answers the handshake, a ``tools/call`` starts the
work (a ``sleep`` for the command servers, the long-running operation with a progress token
for server-everything), and once the work runs (the ``sleep`` is in ``/proc``; the first
progress arrived) the call is interrupted. Measured from t0: the agent has its answer, and
the call's processes are gone (checked in ``/proc`` every 2 ms); within the window, what
was not answered / is still alive is counted (survivors), and progress notifications for
the call that reached the agent after t0. The agent is a raw JSON-RPC client here (an SDK
hides late answers and late progress), the servers are the ones tests/mcp installs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interrupt_sidecar_client import InterruptReason, aio

from bench.context import Context
from bench.procs import ROOT, alive, start_daemon
from bench.stats import summarize

NODE = ROOT / "tests" / "mcp" / "servers" / "node_modules"
SHELL_VENV = ROOT / "build" / "mcp" / "shell-venv"
BRIDGE = [sys.executable, "-m", "interrupt_sidecar", "mcp"]
GRACE_S = 0.5


@dataclass(frozen=True)
class Server:
    argv: list[str]
    tool: str
    arguments: Callable[[str], dict[str, Any]]
    #: True: the call runs ``sleep <duration>`` (watched in /proc); False: it only sends progress.
    processes: bool
    env: dict[str, str]


SERVERS = {
    "mcp-server-commands": Server(
        ["node", str(NODE / "mcp-server-commands/build/index.js")],
        "run_command",
        lambda d: {"command": f"sleep {d}"},
        True,
        {},
    ),
    "mcp-shell-server": Server(
        [str(SHELL_VENV / "bin" / "mcp-shell-server")],
        "shell_execute",
        lambda d: {"command": ["sleep", d]},
        True,
        {"ALLOW_COMMANDS": "sleep"},
    ),
    "server-everything": Server(
        ["node", str(NODE / "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
        "trigger-long-running-operation",
        lambda d: {"duration": 20, "steps": 40},
        False,
        {},
    ),
}


def _sleeps(duration: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        if cmdline == [b"sleep", duration.encode()] and stat[stat.rfind(b")") + 2] not in b"ZX":
            found.append(int(entry))
    return found


class Agent:
    """A raw JSON-RPC client: every line it gets, with the monotonic time it was read."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[tuple[float, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            with contextlib.suppress(ValueError):
                data = json.loads(raw)
                for message in data if isinstance(data, list) else [data]:
                    self.lines.append((time.monotonic(), message))
            self.changed.set()

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    def answer_at(self, request_id: int) -> float | None:
        return next((t for t, m in self.lines if m.get("id") == request_id and "method" not in m), None)

    def progress_after(self, t0: float) -> int:
        return sum(1 for t, m in self.lines if t > t0 and m.get("method") == "notifications/progress")

    async def wait(self, check: Callable[[], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while not (found := check()):
            if time.monotonic() > deadline:
                raise TimeoutError("the MCP server did not get there in time")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 0.01)
        return found


async def trial(
    server: Server, bridged: bool, coordinator: aio.AsyncCoordinator, address: str, window: float
) -> dict[str, Any]:
    duration = f"{300 + random.random():.6f}"
    env = {**os.environ, **server.env}
    begun = None
    argv = server.argv
    if bridged:
        begun = await coordinator.begin(grace=GRACE_S)
        env |= {"INTERRUPT_SIDECAR_ADDRESS": address, "INTERRUPT_SIDECAR_TOKEN": begun.attach_token}
        argv = [*BRIDGE, "--", *argv]
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    agent = Agent(process)
    pids: list[int] = []
    try:
        agent.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "b", "version": "1"},
                },
            }
        )
        await agent.wait(lambda: agent.answer_at(0), 30)
        agent.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        params = {"name": server.tool, "arguments": server.arguments(duration), "_meta": {"progressToken": "p1"}}
        agent.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        if server.processes:
            pids = await agent.wait(lambda: _sleeps(duration), 30)
        else:
            await agent.wait(lambda: agent.progress_after(0.0) >= 1, 30)
        t0 = time.monotonic()
        if bridged:
            assert begun is not None
            await coordinator.interrupt(begun.execution_id, reason=InterruptReason.USER_SIGINT)
        else:
            agent.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        gone_at: float | None = None
        deadline = t0 + window
        while time.monotonic() < deadline:
            if server.processes and gone_at is None and not any(alive(p) for p in pids):
                gone_at = time.monotonic()
            if (gone_at is not None or not server.processes) and agent.answer_at(1) is not None and bridged:
                break  # the bridge's figures are in; the window matters for the survivors of the own path
            await asyncio.sleep(0.002)
        answered = agent.answer_at(1)
        return {
            "answered_ms": None if answered is None else (answered - t0) * 1e3,
            "gone_ms": None if gone_at is None else (gone_at - t0) * 1e3,
            "survivors": sum(1 for p in pids if alive(p)),
            "late_progress": agent.progress_after(t0) if not server.processes else 0,
        }
    finally:
        # Our own session: the server (and the bridge) and whatever stayed in it; survivors
        # that left it are killed by pid.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await process.wait()
        agent.reader.cancel()
        if begun is not None:
            with contextlib.suppress(Exception):
                await coordinator.end(begun.execution_id)


def _figure(samples: list[dict[str, Any]], key: str) -> dict[str, Any]:
    values = [s[key] for s in samples if s[key] is not None]
    figure: dict[str, Any] = {"of": len(samples), "count": len(values)}
    if values:
        figure |= summarize(values) | {"repeats": 1}  # the trials interleave the paths: one repeat
    return figure


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    trials = o.mcp_trials
    window = 1.5 if o.quick else 5.0
    daemon = start_daemon(o.loops[0], tcp=False)
    address = daemon.address("unix")
    out: dict[str, Any] = {"grace_ms": GRACE_S * 1e3, "window_s": window, "trials": trials}
    try:
        async with aio.AsyncCoordinator(address) as coordinator:
            for name, server in SERVERS.items():
                ctx.log(f"mcp {name}: {trials} trials own cancel / bridge, interleaved")
                samples: dict[str, list[dict[str, Any]]] = {"own_cancel": [], "bridge": []}
                for _ in range(trials):
                    samples["own_cancel"].append(await trial(server, False, coordinator, address, window))
                    samples["bridge"].append(await trial(server, True, coordinator, address, window))
                entry: dict[str, Any] = {}
                for path, got in samples.items():
                    entry[path] = {
                        "answered": _figure(got, "answered_ms"),
                        "gone": _figure(got, "gone_ms") if server.processes else None,
                        "survivors": sum(s["survivors"] for s in got),
                        "late_progress": sum(s["late_progress"] for s in got),
                    }
                    ctx.samples[f"mcp {name} {path} answered"] = [
                        s["answered_ms"] for s in got if s["answered_ms"] is not None
                    ]
                out[name] = entry
    finally:
        daemon.stop()
    return out
