"""The OpenAI Agents SDK adapter with the real SDK, its ScriptedModel, a real daemon."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from interrupt_sidecar_client import Coordinator, InterruptReason
from interrupt_sidecar_client.adapters.openai_agents import (
    InterruptibleRunner,
    TurnInterrupted,
    bridge_params,
    create_subprocess_exec,
    function_tool,
    open_turn,
    popen,
)

from tests.adapters.support import (
    GRACE,
    MARGIN,
    assert_all_gone,
    interrupt_context,
    pids_of,
    stubborn_tree_command,
    survivors_now,
    tree_command,
)
from tests.conftest import DaemonProcess


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing may reach the network: a dummy key (never used: the model is scripted), no tracing."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-offline")
    set_tracing_disabled(True)


class Probe:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.exited = threading.Event()
        self.finished = False


def interrupted_outputs(history: list[Any]) -> list[dict[str, Any]]:
    return [
        item
        for item in history
        if isinstance(item, dict)
        and item.get("type") == "function_call_output"
        and str(item.get("output", "")).startswith("Interrupted (USER_SIGINT")
    ]


def crunch_tool(probe: Probe) -> Any:
    @function_tool
    def crunch(steps: int) -> str:
        """Crunch numbers in pure Python (a sync tool: the SDK runs it with asyncio.to_thread)."""
        probe.started.set()
        try:
            for _ in range(steps):
                time.sleep(0.01)
            probe.finished = True
            return "crunched"
        finally:
            probe.exited.set()

    return crunch


async def interrupt_when(started: threading.Event, address: str, context_id: str) -> float:
    await asyncio.to_thread(started.wait, 20)
    assert started.is_set()
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, address, context_id)
    return t0


@pytest.mark.timeout(60)
async def test_a_sync_tool_is_interrupted_and_the_next_turn_sees_why(daemon: DaemonProcess) -> None:
    probe = Probe()
    scripted = ScriptedModel([[function_call("crunch", {"steps": 6000}, call_id="call-1")], [assistant_message("ok")]])
    agent = Agent(name="coder", model=scripted, tools=[crunch_tool(probe)])
    runner = InterruptibleRunner(address=daemon.address, context_id="oa-sync", grace=GRACE)
    interrupter = asyncio.ensure_future(interrupt_when(probe.started, daemon.address, "oa-sync"))
    with pytest.raises(TurnInterrupted) as caught:
        await runner.run(agent, "go")
    assert time.monotonic() - await interrupter < GRACE + MARGIN
    assert probe.exited.wait(GRACE + MARGIN) and not probe.finished, "the worker thread was not interrupted"
    stopped = caught.value
    assert [(c.name, c.call_id, c.started) for c in stopped.calls] == [("crunch", "call-1", True)]
    assert stopped.history is not None
    kinds = [item.get("type", item.get("role")) for item in stopped.history]
    assert kinds == ["user", "function_call", "function_call_output"], stopped.history
    (output,) = interrupted_outputs(stopped.history)
    assert output["call_id"] == "call-1" and "stopped before it finished" in output["output"]

    # The next turn: a new execution, untouched; the model is given the interrupted output.
    result = await runner.run(agent, [*stopped.history, {"role": "user", "content": "again"}])
    assert result.final_output == "ok"
    assert scripted.last_call is not None
    assert interrupted_outputs(list(scripted.last_call.input))


@pytest.mark.timeout(60)
async def test_an_async_tool_is_cancelled_in_a_streamed_run(daemon: DaemonProcess) -> None:
    probe = Probe()

    @function_tool
    async def fetch(url: str) -> str:
        """Fetch a page (an async tool)."""
        probe.started.set()
        try:
            await asyncio.sleep(60)
            probe.finished = True
            return "page"
        finally:
            probe.exited.set()

    scripted = ScriptedModel([[function_call("fetch", {"url": "x"}, call_id="call-2")]])
    agent = Agent(name="coder", model=scripted, tools=[fetch])
    runner = InterruptibleRunner(address=daemon.address, context_id="oa-async", grace=GRACE)
    interrupter = asyncio.ensure_future(interrupt_when(probe.started, daemon.address, "oa-async"))
    streamed = runner.run_streamed(agent, "go")

    async def consume() -> None:
        async for _event in streamed.stream_events():
            pass

    with pytest.raises(TurnInterrupted) as caught:
        await consume()
    assert time.monotonic() - await interrupter < GRACE + MARGIN
    assert probe.exited.is_set() and not probe.finished
    assert streamed.result is not None and streamed.result.is_complete
    assert caught.value.history is not None
    (output,) = interrupted_outputs(caught.value.history)
    assert output["call_id"] == "call-2"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_tools_process_tree_is_killed_setsid_grandchild_included(
    daemon: DaemonProcess, tmp_path: Path, kind: str
) -> None:
    pidfile = tmp_path / "pids"

    @function_tool
    def build_sync(target: str) -> str:
        """Run the build (sync)."""
        with popen(tree_command(pidfile)) as proc:
            return f"exit {proc.wait()}"

    @function_tool
    async def build_async(target: str) -> str:
        """Run the build (async)."""
        async with create_subprocess_exec(*tree_command(pidfile)) as proc:
            return f"exit {await proc.wait()}"

    tool = build_sync if kind == "sync" else build_async
    scripted = ScriptedModel([[function_call(tool.name, {"target": "all"}, call_id="call-3")]])
    runner = InterruptibleRunner(address=daemon.address, context_id=f"oa-tree-{kind}", grace=GRACE)
    call = asyncio.ensure_future(runner.run(Agent(name="coder", model=scripted, tools=[tool]), "go"))
    pids = await asyncio.to_thread(pids_of, pidfile)
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, daemon.address, f"oa-tree-{kind}")
    with pytest.raises(TurnInterrupted) as caught:
        await call
    assert time.monotonic() - t0 < GRACE + MARGIN
    assert_all_gone(pids, timeout=1.0)
    assert caught.value.history is not None and len(interrupted_outputs(caught.value.history)) == 1


#: The SIGKILL comes this long after the trip: the gap a call returning at the leader's death shows.
KILL_AFTER = 1.0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_run_returns_only_once_the_daemon_reports_the_tree_gone(
    daemon: DaemonProcess, tmp_path: Path, kind: str
) -> None:
    """The leader dies at SIGTERM; a setsid grandchild ignoring it lives until the SIGKILL
    ``KILL_AFTER`` later. The run must not return in between (checked at once, no waiting)."""
    pidfile = tmp_path / "pids"

    @function_tool
    def build_sync(target: str) -> str:
        """Run the build (sync)."""
        with popen(stubborn_tree_command(pidfile), kill_after=KILL_AFTER) as proc:
            return f"exit {proc.wait()}"

    @function_tool
    async def build_async(target: str) -> str:
        """Run the build (async)."""
        async with create_subprocess_exec(*stubborn_tree_command(pidfile), kill_after=KILL_AFTER) as proc:
            return f"exit {await proc.wait()}"

    tool = build_sync if kind == "sync" else build_async
    scripted = ScriptedModel([[function_call(tool.name, {"target": "all"}, call_id="call-4")]])
    runner = InterruptibleRunner(address=daemon.address, context_id=f"oa-stubborn-{kind}", grace=GRACE)
    call = asyncio.ensure_future(runner.run(Agent(name="coder", model=scripted, tools=[tool]), "go"))
    pids = await asyncio.to_thread(pids_of, pidfile, count=2)
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, daemon.address, f"oa-stubborn-{kind}")
    with pytest.raises(TurnInterrupted) as caught:
        await call
    assert survivors_now(pids) == [], "the run returned while the daemon was still killing the tree"
    assert time.monotonic() - t0 < GRACE + KILL_AFTER + MARGIN
    assert caught.value.unconfirmed_pgids == []


@pytest.mark.timeout(60)
async def test_a_tool_call_of_a_tripped_turn_is_refused_without_running(daemon: DaemonProcess) -> None:
    probe = Probe()
    crunch = crunch_tool(probe)
    from agents.tool_context import ToolContext

    with Coordinator(daemon.address) as coordinator:
        begun = coordinator.begin(context_id="oa-refuse", grace=GRACE)
        coordinator.interrupt(begun.execution_id, reason=InterruptReason.USER_SIGINT)
        async with open_turn("openai-agents", execution=begun) as turn:
            ctx = ToolContext(context=None, tool_name="crunch", tool_call_id="call-9", tool_arguments='{"steps": 1}')
            answer = await crunch.on_invoke_tool(ctx, '{"steps": 1}')
        assert "was not run" in answer
        assert not probe.started.is_set()
        assert [c.started for c in turn.interrupted_calls()] == [False]
        scripted = ScriptedModel([[function_call("crunch", {"steps": 1}, call_id="call-1")]])
        with pytest.raises(TurnInterrupted):
            await InterruptibleRunner().run(Agent(name="coder", model=scripted, tools=[crunch]), "go", execution=begun)
        assert not probe.started.is_set()
        coordinator.end(begun.execution_id)


def test_bridge_params_rewrites_the_command() -> None:
    params = {"command": "npx", "args": ["-y", "mcp-server-commands"], "cwd": "/tmp"}
    rewritten = bridge_params(params, token_file="/run/agent/turn-token", options=["--scope", "turn"])
    assert rewritten == {
        "command": "interrupt-sidecar",
        "args": ["mcp", "--scope", "turn", "--", "npx", "-y", "mcp-server-commands"],
        "cwd": "/tmp",
        "env": {"INTERRUPT_SIDECAR_TOKEN_FILE": "/run/agent/turn-token"},
    }
