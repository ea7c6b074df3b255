"""The other real servers through the bridge, driven by the official Python SDK client:
``@modelcontextprotocol/server-everything`` (npm), ``mcp-shell-server`` (PyPI), a FastMCP
server whose sync tool blocks its event loop, and an MCPServer (SDK 2.x) on the stateless
2026-07-28 revision."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp.support import (
    BLOCKING,
    BRIDGE,
    EVERYTHING,
    MODERN,
    SHELL,
    TAP,
    Turns,
    agent_lines,
    alive,
    assert_one_answer_each,
    eventually,
    processes_running,
    within,
)

#: A bound far below the work being interrupted, not a latency claim (bench/ measures that).
ANSWERED_WITHIN_S = 2.0


# Real third-party servers (node, a venv of their own): seconds each, so marked slow (`make test` runs them).
pytestmark = pytest.mark.slow


def bridged(turns: Turns, server: list[str], *extra: str, tap: Path | None = None, **env: str) -> StdioServerParameters:
    argv = [*BRIDGE, *extra, "--", *server]
    if tap is not None:
        argv = [*TAP, str(tap), "--", *argv]
    return StdioServerParameters(command=argv[0], args=argv[1:], env={**turns.env(), **env})


def text_of(result: object) -> str:
    return " ".join(getattr(c, "text", "") for c in getattr(result, "content", []))


@pytest.mark.timeout(60)
async def test_everything_long_operation_answered_at_the_trip_and_no_progress_after(
    turns: Turns, tmp_path: Path
) -> None:
    turns.begin()
    seen: list[tuple[float, float]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((time.monotonic(), progress))

    log = tmp_path / "agent.log"
    async with Client(bridged(turns, EVERYTHING, tap=log)) as client:
        call = asyncio.create_task(
            client.call_tool(
                "trigger-long-running-operation", {"duration": 20, "steps": 40}, progress_callback=on_progress
            )
        )
        await eventually(lambda: len(seen) >= 2)  # mid-way: progress flows every 0.5 s
        tripped_at = turns.interrupt()
        result = await within(call, 10)
        answered_at = time.monotonic()
        assert result.is_error and "Interrupted" in text_of(result)
        assert answered_at - tripped_at < ANSWERED_WITHIN_S
        # The server goes on (it ignores the cancel); 3 of its 0.5 s steps later, nothing of
        # it came through. Read from the tap: the SDK itself drops progress for a finished call.
        await asyncio.sleep(1.5)
        sent = agent_lines(log)
        [answer_at] = [i for i, m in enumerate(sent) if "Interrupted" in str(m.get("result", ""))]
        tokens = {m["params"]["progressToken"] for m in sent[:answer_at] if m.get("method") == "notifications/progress"}
        assert tokens, "no progress before the trip: the test did not interrupt mid-way"
        late = [m for m in sent[answer_at:] if m.get("method") == "notifications/progress"]
        assert late == []
        turns.begin()
        echoed = await within(client.call_tool("echo", {"message": "still here"}), 15)
        assert "still here" in text_of(echoed)
    assert_one_answer_each(log)


@pytest.mark.timeout(60)
async def test_shell_server_stops_itself_and_its_late_error_never_reaches_the_agent(
    turns: Turns, tmp_path: Path
) -> None:
    """mcp-shell-server stops its command at the cancel, then answers the cancelled request
    with an error (code 0) that the spec says it must not send: the agent never sees it."""
    # A grace far above the server's own stop (ms), so a loaded machine cannot make the bridge kill.
    turns.begin(grace=3.0)
    duration = f"{300 + random.random():.6f}"
    log = tmp_path / "agent.log"
    errors = tmp_path / "bridge.err"
    with errors.open("w") as errlog:
        from mcp.client.stdio import stdio_client

        params = bridged(turns, SHELL, tap=log, ALLOW_COMMANDS="sleep,echo")
        async with Client(stdio_client(params, errlog=errlog)) as client:
            call = asyncio.create_task(client.call_tool("shell_execute", {"command": ["sleep", duration]}))
            [pid] = await eventually(lambda: processes_running("sleep", duration))
            turns.interrupt()
            result = await within(call, 10)
            assert result.is_error and "Interrupted" in text_of(result)
            # The server stops the sleep itself, within the grace: the bridge kills nothing.
            await eventually(lambda: not alive(pid), timeout=2.5)
            turns.begin()
            echoed = await within(client.call_tool("shell_execute", {"command": ["echo", "next"]}), 15)
            assert "next" in text_of(echoed)
    assert "stopped" not in errors.read_text()
    assert_one_answer_each(log)
    # The late error was sent by the server (the bridge dropped it): the tap saw only the bridge's answer.
    interrupted = [m for m in _responses(log) if "Interrupted" in str(m)]
    assert len(interrupted) == 1


def _responses(log: Path) -> list[dict[str, object]]:
    return [m for m in agent_lines(log) if "id" in m and "method" not in m]


@pytest.mark.timeout(150)
async def test_a_server_blocked_by_a_sync_tool_is_restarted(turns: Turns, tmp_path: Path) -> None:
    turns.begin(grace=0.2)
    errors = tmp_path / "bridge.err"
    with errors.open("w") as errlog:
        from mcp.client.stdio import stdio_client

        params = bridged(turns, BLOCKING, "--probe-timeout", "500ms")
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            first = text_of(await within(client.call_tool("pid", {}), 30))
            started = tmp_path / "blocking"
            call = asyncio.create_task(client.call_tool("block", {"seconds": 600, "started": str(started)}))
            # Blocking for sure (a cancel that arrived before the tool began would stop it cleanly).
            await eventually(started.exists)
            turns.interrupt()
            result = await within(call, 10)
            assert result.is_error and "Interrupted" in text_of(result)
            # The probe finds it deaf, the bridge kills it; the next call starts a new one
            # (the handshake replayed) and succeeds.
            await eventually(lambda: not alive(int(first)), timeout=15)
            turns.begin()
            try:
                # A restart pays the server's start-up again (mcp 1.x imports for seconds on a busy host).
                second = text_of(await within(client.call_tool("pid", {}), 90))
            except TimeoutError:
                errlog.flush()
                raise AssertionError(f"no answer after the restart; the bridge said: {errors.read_text()}") from None
            assert second != first and alive(int(second))
    assert "restarting it" in errors.read_text()


@pytest.mark.timeout(60)
async def test_stateless_era_server_left_process_is_killed(turns: Turns, tmp_path: Path) -> None:
    """The SDK 2.x client and server agree on 2026-07-28 (no handshake, no ping): the
    bridge follows, answers, kills the subprocess the cancelled coroutine left behind,
    and probes with server/discover."""
    turns.begin(grace=0.3)
    duration = f"{300 + random.random():.6f}"
    async with Client(bridged(turns, MODERN)) as client:
        assert client.session.protocol_version == "2026-07-28"
        call = asyncio.create_task(client.call_tool("run", {"argv": ["sleep", duration]}))
        [pid] = await eventually(lambda: processes_running("sleep", duration))
        turns.interrupt()
        result = await within(call, 10)
        assert result.is_error and "Interrupted" in text_of(result)
        await eventually(lambda: not alive(pid), timeout=10)
        turns.begin()
        assert text_of(await within(client.call_tool("pid", {}), 15)).isdigit()
