"""The official TypeScript SDK client (``@modelcontextprotocol/sdk``) driving the bridge
around ``mcp-server-commands``: the interrupted call answered, the command killed, the next
call served, and after the SDK's close nothing left running."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest

from tests.mcp.support import BRIDGE, COMMANDS, HERE, Turns, alive, eventually, parent_of, processes_running, within

# A real node client and server: seconds, so marked slow (`make test` runs it).
pytestmark = pytest.mark.slow


async def event(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await within(process.stdout.readline(), 30)
    assert line, "the TypeScript client ended early"
    parsed: dict[str, Any] = json.loads(line)
    return parsed


@pytest.mark.timeout(90)
async def test_typescript_sdk_client_through_the_bridge(turns: Turns) -> None:
    turns.begin(grace=0.3)
    duration = f"{300 + random.random():.6f}"
    client = await asyncio.create_subprocess_exec(
        "node",
        str(HERE / "servers" / "ts_client.mjs"),
        *BRIDGE,
        "--",
        *COMMANDS,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={**turns.env(), "TS_SLEEP": f"sleep {duration}"},
    )
    try:
        connected = await event(client)
        bridge_pid = connected["pid"]
        [pid] = await eventually(lambda: processes_running("sleep", duration))
        [server] = [p for p in processes_running(*COMMANDS) if parent_of(p) == bridge_pid]
        turns.interrupt()
        first = await event(client)
        assert first["result"]["isError"] is True
        assert "Interrupted" in first["result"]["content"][0]["text"]
        await eventually(lambda: not alive(pid), timeout=10)

        turns.begin()
        assert client.stdin is not None
        client.stdin.write(b"next\n")
        second = await event(client)
        assert "from-typescript" in second["result"]["content"][0]["text"]

        assert (await event(client))["event"] == "closed"
        await eventually(lambda: not alive(bridge_pid) and not alive(server), timeout=10)
    finally:
        if client.returncode is None:
            client.kill()
        await client.wait()
