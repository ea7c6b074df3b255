"""``mcp-server-commands`` (npm) through the bridge, driven by the official Python SDK client.

On its own this server never answers a cancelled ``run_command`` and leaves the command
running (and orphaned when the client closes it by signalling its pid): see bench/.
Through the bridge the agent is answered at the trip, the command is gone at the grace,
the server survives, and nothing outlives the session whatever the close sequence.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from interrupt_sidecar_client import EventKind, ExecutionEvent, ToolOutcome, aio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp.raw_agent import RawAgent
from tests.mcp.support import (
    BRIDGE,
    COMMANDS,
    TAP,
    Turns,
    alive,
    assert_one_answer_each,
    eventually,
    parent_of,
    processes_running,
    within,
)

# Real third-party servers (node, a venv of their own): seconds each, so marked slow (`make test` runs them).
pytestmark = pytest.mark.slow


def unique_sleep() -> tuple[str, str]:
    """A ``sleep`` no other test (or helper on this host) runs: its argv identifies it."""
    return "sleep", f"{300 + random.random():.6f}"


def bridged(turns: Turns, *extra: str, tap: Path | None = None) -> StdioServerParameters:
    argv = [*BRIDGE, *extra, "--", *COMMANDS]
    if tap is not None:
        argv = [*TAP, str(tap), "--", *argv]
    return StdioServerParameters(command=argv[0], args=argv[1:], env=turns.env())


def text_of(result: object) -> str:
    content = getattr(result, "content", [])
    return " ".join(getattr(c, "text", "") for c in content)


@pytest.mark.timeout(60)
async def test_the_command_is_killed_and_the_server_survives(turns: Turns, tmp_path: Path) -> None:
    turns.begin(grace=0.3)
    sleep = unique_sleep()
    log = tmp_path / "agent.log"
    async with Client(bridged(turns, tap=log)) as client:
        call = asyncio.create_task(client.call_tool("run_command", {"command": " ".join(sleep)}))
        [pid] = await eventually(lambda: processes_running(*sleep))
        turns.interrupt()
        result = await within(call, 10)
        assert result.is_error
        assert "Interrupted" in text_of(result) and "USER_SIGINT" in text_of(result)
        # Gone after the grace (0.3 s), the server still up: the next turn's call works.
        await eventually(lambda: not alive(pid), timeout=10)
        turns.begin()
        after = await within(client.call_tool("run_command", {"command": "echo survived"}), 15)
        assert not after.is_error and "survived" in text_of(after)
    assert_one_answer_each(log)


@pytest.mark.timeout(60)
async def test_a_new_call_of_a_tripped_turn_never_reaches_the_server(turns: Turns, tmp_path: Path) -> None:
    turns.begin()
    sleep = unique_sleep()
    async with Client(bridged(turns)) as client:
        turns.interrupt()
        result = await within(client.call_tool("run_command", {"command": " ".join(sleep)}), 15)
        assert result.is_error and "Interrupted" in text_of(result)
        await asyncio.sleep(0.3)  # had it reached the server, the sleep would be running by now
        assert not processes_running(*sleep)
        listed = await within(client.list_tools(), 15)  # listing passes through
        assert [t.name for t in listed.tools] == ["run_command"]


@pytest.mark.timeout(60)
async def test_without_a_token_the_bridge_is_a_pipe(turns: Turns) -> None:
    env = {k: v for k, v in turns.env().items() if k != "INTERRUPT_SIDECAR_TOKEN_FILE"}
    argv = [*BRIDGE, "--", *COMMANDS]
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env=env)) as client:
        result = await within(client.call_tool("run_command", {"command": "echo plain"}), 15)
        assert "plain" in text_of(result)


@pytest.mark.timeout(60)
async def test_the_sdk_close_leaves_nothing_behind(turns: Turns) -> None:
    """The Python SDK's close: stdin closed, then the group SIGTERMed and SIGKILLed. The
    command leaves the group (``setsid``), so the SDK's group kill alone would miss it."""
    turns.begin()
    sleep = unique_sleep()
    async with Client(bridged(turns)) as client:
        command = f"setsid {' '.join(sleep)}"
        asyncio.create_task(client.call_tool("run_command", {"command": command}))  # noqa: RUF006
        [pid] = await eventually(lambda: processes_running(*sleep))
    await eventually(lambda: not alive(pid), timeout=10)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["stdin", "sigterm"])
async def test_any_close_sequence_leaves_nothing_behind(turns: Turns, how: str) -> None:
    """``stdin``: the agent just closes the pipe. ``sigterm``: the TypeScript SDK's escalation
    (the bridge's pid only) without closing stdin first — the server and the command must
    still not outlive the bridge."""
    turns.begin()
    sleep = unique_sleep()
    agent = await RawAgent.start([*BRIDGE, "--", *COMMANDS], turns.env())
    try:
        await agent.handshake()
        agent.call(1, "run_command", {"command": " ".join(sleep)})
        [pid] = await eventually(lambda: processes_running(*sleep))
        [server] = [p for p in processes_running(*COMMANDS) if parent_of(p) == agent.process.pid]
        await agent.close(how)
        await eventually(lambda: not alive(pid) and not alive(server), timeout=10)
    finally:
        await agent.kill()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("scope", ["call", "turn"])
async def test_the_kill_scope_decides_what_else_goes(turns: Turns, scope: str) -> None:
    """A call of the turn left a job in the background and returned; a second call is
    interrupted. Scope ``call`` kills the second call's command only; ``turn`` the job too."""
    turns.begin(grace=0.2)
    job, command = unique_sleep(), unique_sleep()
    async with Client(bridged(turns, "--scope", scope)) as client:
        started = f"{' '.join(job)} >/dev/null 2>&1 &"
        assert not (await within(client.call_tool("run_command", {"command": started}), 15)).is_error
        [job_pid] = await eventually(lambda: processes_running(*job))
        call = asyncio.create_task(client.call_tool("run_command", {"command": " ".join(command)}))
        [pid] = await eventually(lambda: processes_running(*command))
        turns.interrupt()
        await within(call, 10)
        await eventually(lambda: not alive(pid), timeout=10)
        if scope == "turn":
            await eventually(lambda: not alive(job_pid), timeout=10)
        else:
            await asyncio.sleep(0.3)
            assert alive(job_pid)
    await eventually(lambda: not alive(job_pid), timeout=10)  # the session's end takes it in any case


@pytest.mark.timeout(60)
async def test_scope_server_restarts_the_server_for_the_next_turn(turns: Turns) -> None:
    turns.begin(grace=0.2)
    sleep = unique_sleep()
    async with Client(bridged(turns, "--scope", "server")) as client:
        first = text_of(await within(client.call_tool("run_command", {"command": "echo $PPID"}), 15)).strip()
        call = asyncio.create_task(client.call_tool("run_command", {"command": " ".join(sleep)}))
        [pid] = await eventually(lambda: processes_running(*sleep))
        turns.interrupt()
        assert (await within(call, 10)).is_error
        await eventually(lambda: not alive(pid) and not alive(int(first)), timeout=10)
        turns.begin()
        second = text_of(await within(client.call_tool("run_command", {"command": "echo $PPID"}), 30)).strip()
        assert second.isdigit() and second != first


@pytest.mark.timeout(60)
async def test_the_python_sdk_can_name_the_turn_per_call(turns: Turns) -> None:
    """No token file: the host passes each call's token in ``_meta`` (``call_tool(meta=...)``)."""
    env = {k: v for k, v in turns.env().items() if k != "INTERRUPT_SIDECAR_TOKEN_FILE"}
    argv = [*BRIDGE, "--", *COMMANDS]
    sleep = unique_sleep()
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env=env)) as client:
        begun = turns.begin(grace=0.2)
        # An open map in the SDK (extra keys round-trip), which mypy's TypedDict cannot say.
        meta: Any = {"dev.interruptsidecar/token": begun.attach_token}
        call = asyncio.create_task(client.call_tool("run_command", {"command": " ".join(sleep)}, meta=meta))
        [pid] = await eventually(lambda: processes_running(*sleep))
        turns.interrupt()
        result = await within(call, 10)
        assert result.is_error and "Interrupted" in text_of(result)
        await eventually(lambda: not alive(pid), timeout=10)


@pytest.mark.timeout(60)
async def test_the_daemon_sees_each_call_as_a_tool(turns: Turns) -> None:
    """``WatchExecution`` shows the MCP call like any tool: attached under its name and id,
    unwound INTERRUPTED, and a grace overrun because the server's work outlived the grace."""
    begun = turns.begin(grace=0.2)
    sleep = unique_sleep()
    events: list[ExecutionEvent] = []

    async def watch() -> None:
        async with aio.AsyncCoordinator(turns.daemon.address) as coordinator:
            async for event in coordinator.watch(begun.execution_id):
                events.append(event)

    watching = asyncio.create_task(watch())
    await eventually(lambda: events)  # the snapshot: the watch is on
    async with Client(bridged(turns)) as client:
        call = asyncio.create_task(client.call_tool("run_command", {"command": " ".join(sleep)}))
        [pid] = await eventually(lambda: processes_running(*sleep))
        turns.interrupt()
        await within(call, 10)
        await eventually(lambda: not alive(pid), timeout=10)
        await eventually(lambda: [e for e in events if e.kind is EventKind.TOOL_UNWOUND], timeout=10)
    turns.coordinator.end(begun.execution_id)
    await within(watching, 10)
    kinds = [e.kind for e in events]
    [attached] = [e.proto.tool_attached for e in events if e.kind is EventKind.TOOL_ATTACHED]
    assert attached.tool_name == "mcp:run_command" and attached.tool_call_id.isdigit()
    [unwound] = [e.proto.tool_unwound for e in events if e.kind is EventKind.TOOL_UNWOUND]
    assert unwound.tool_name == "mcp:run_command" and unwound.outcome == int(ToolOutcome.INTERRUPTED)
    assert EventKind.GRACE_OVERRUN in kinds
    assert kinds.index(EventKind.TRIPPED) < kinds.index(EventKind.TOOL_UNWOUND)
