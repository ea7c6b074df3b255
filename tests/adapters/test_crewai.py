"""The CrewAI adapter with the real crewai, a scripted ``BaseLLM``, a real daemon.

crewai 1.15.30 requires mcp<2 while the repository's test extra pins mcp 2.x, so this file
runs in build/crewai-venv (``make crewai-test-deps``), driven by test_crewai_venv.py.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.mcp import MCPServerStdio
from crewai.tools import BaseTool, tool
from interrupt_sidecar_client import Coordinator, InterruptReason
from interrupt_sidecar_client.adapters.crewai import (
    InterruptibleCrew,
    TurnInterrupted,
    bridge_server,
    create_subprocess_exec,
    interruptible_tool,
    interruptible_tools,
    open_turn,
    popen,
)
from mcp import StdioServerParameters
from pydantic import Field

from tests.adapters.support import (
    GRACE,
    MARGIN,
    TreeInterrupter,
    assert_all_gone,
    interrupt_context,
    pids_of,
    stubborn_tree_command,
    survivors_now,
    tree_command,
)
from tests.conftest import DaemonProcess


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Nothing may reach the network: CrewAI's telemetry and tracing off, and every attempt
    of this process to connect a TCP or UDP socket recorded and failed (the daemon is on a
    unix socket; the model is scripted)."""
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("CREWAI_DISABLE_TRACKING", "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    attempts: list[object] = []
    connect = socket.socket.connect
    connect_ex = socket.socket.connect_ex

    def guarded(real: Any) -> Any:
        def attempt(self: socket.socket, address: Any) -> Any:
            if self.family in (socket.AF_INET, socket.AF_INET6):
                attempts.append(address)
                raise OSError(f"offline test: connect to {address!r} refused")
            return real(self, address)

        return attempt

    monkeypatch.setattr(socket.socket, "connect", guarded(connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(connect_ex))
    yield
    assert attempts == [], f"outbound connections attempted: {attempts}"


class ScriptedLLM(BaseLLM):
    """A model that answers each call with the next scripted reply: a list of OpenAI-style
    tool calls, or the final text. It records what each call was sent."""

    replies: list[Any] = Field(default_factory=list)
    sent: list[list[Any]] = Field(default_factory=list)

    def __init__(self, replies: list[Any]) -> None:
        super().__init__(model="scripted")
        self.replies.extend(replies)

    def supports_function_calling(self) -> bool:
        return True

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.sent.append(list(messages) if isinstance(messages, list) else [messages])
        return self.replies.pop(0)

    async def acall(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.call(messages, *args, **kwargs)


def tool_call(name: str, arguments: str, call_id: str = "call-1") -> list[dict[str, Any]]:
    return [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]


def crew_of(llm: ScriptedLLM, tools: list[BaseTool]) -> Crew:
    agent = Agent(role="coder", goal="build it", backstory="a coder", llm=llm, tools=tools, max_iter=3)
    task = Task(description="build it", expected_output="a build", agent=agent)
    return Crew(agents=[agent], tasks=[task])


class Probe:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.exited = threading.Event()
        self.finished = False


def crunch_tool(probe: Probe) -> BaseTool:
    @tool("crunch")
    def crunch(steps: int) -> str:
        """Crunch numbers in pure Python (a sync tool)."""
        probe.started.set()
        try:
            for _ in range(steps):
                time.sleep(0.01)
            probe.finished = True
            return "crunched"
        finally:
            probe.exited.set()

    return interruptible_tool(crunch)


def tool_messages(llm: ScriptedLLM) -> list[dict[str, Any]]:
    return [m for m in llm.sent[-1] if isinstance(m, dict) and m.get("role") == "tool"]


def interrupt_when(started: threading.Event, address: str, context_id: str) -> float:
    assert started.wait(20), "the tool never started"
    t0 = time.monotonic()
    interrupt_context(address, context_id)
    return t0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["kickoff", "kickoff_async"])
async def test_a_sync_tool_is_interrupted_no_model_call_follows_and_the_next_turn_works(
    daemon: DaemonProcess, how: str
) -> None:
    probe = Probe()
    llm = ScriptedLLM([tool_call("crunch", '{"steps": 6000}'), "too late"])
    crew = InterruptibleCrew(crew_of(llm, [crunch_tool(probe)]), address=daemon.address, context_id="crew", grace=GRACE)
    interrupter = asyncio.ensure_future(asyncio.to_thread(interrupt_when, probe.started, daemon.address, "crew"))
    kickoff = asyncio.to_thread(crew.kickoff, {}) if how == "kickoff" else crew.kickoff_async({})
    with pytest.raises(TurnInterrupted) as caught:
        await kickoff
    assert time.monotonic() - await interrupter < GRACE + MARGIN
    assert probe.exited.wait(GRACE + MARGIN) and not probe.finished, "the tool's thread was not interrupted"
    stopped = caught.value
    assert [(c.name, c.started) for c in stopped.calls] == [("crunch", True)]
    # The trip refused the model call CrewAI would have made with the interrupted result.
    assert len(llm.sent) == 1, "a model call followed the trip"
    assert llm.replies == ["too late"]
    assert stopped.history is not None
    (message,) = stopped.history
    assert message["role"] == "tool" and message["name"] == "crunch"
    assert (
        message["content"].startswith("Interrupted (USER_SIGINT: Esc)")
        and "stopped before it finished" in message["content"]
    )

    # The next turn: a new execution, untouched by the trip.
    again = ScriptedLLM([tool_call("crunch", '{"steps": 1}'), "done"])
    next_crew = InterruptibleCrew(crew_of(again, [crunch_tool(Probe())]), address=daemon.address, context_id="crew")
    output = await asyncio.to_thread(next_crew.kickoff, {})
    assert output.raw == "done"
    assert [m["content"] for m in tool_messages(again)] == ["crunched"]


@pytest.mark.timeout(60)
async def test_an_async_tool_is_cancelled_in_akickoff(daemon: DaemonProcess) -> None:
    probe = Probe()

    @tool("fetch")
    async def fetch(url: str) -> str:
        """Fetch a page (an async tool: CrewAI runs its coroutine to completion in a worker thread)."""
        probe.started.set()
        try:
            await asyncio.sleep(60)
            probe.finished = True
            return "page"
        finally:
            probe.exited.set()

    llm = ScriptedLLM([tool_call("fetch", '{"url": "x"}'), "too late"])
    crew = InterruptibleCrew(
        crew_of(llm, interruptible_tools([fetch])), address=daemon.address, context_id="crew-async", grace=GRACE
    )
    interrupter = asyncio.ensure_future(asyncio.to_thread(interrupt_when, probe.started, daemon.address, "crew-async"))
    with pytest.raises(TurnInterrupted) as caught:
        await crew.akickoff({})
    assert time.monotonic() - await interrupter < GRACE + MARGIN
    assert probe.exited.is_set() and not probe.finished
    assert [(c.name, c.started) for c in caught.value.calls] == [("fetch", True)]
    assert caught.value.history is not None and len(caught.value.history) == 1
    assert len(llm.sent) == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_tools_process_tree_is_killed_setsid_grandchild_included(
    daemon: DaemonProcess, tmp_path: Path, kind: str
) -> None:
    pidfile = tmp_path / "pids"

    class Build(BaseTool):
        name: str = "build"
        description: str = "Run the build."

        def _run(self, target: str) -> str:
            with popen(tree_command(pidfile)) as proc:
                return f"exit {proc.wait()}"

    class BuildAsync(BaseTool):
        name: str = "build"
        description: str = "Run the build (async)."

        async def _run(self, target: str) -> str:
            async with create_subprocess_exec(*tree_command(pidfile)) as proc:
                return f"exit {await proc.wait()}"

    llm = ScriptedLLM([tool_call("build", '{"target": "all"}'), "too late"])
    crew = InterruptibleCrew(
        crew_of(llm, [interruptible_tool(Build() if kind == "sync" else BuildAsync())]),
        address=daemon.address,
        context_id=f"tree-{kind}",
        grace=GRACE,
    )
    call = asyncio.ensure_future(asyncio.to_thread(crew.kickoff, {}) if kind == "sync" else crew.akickoff({}))
    pids = await asyncio.to_thread(pids_of, pidfile)
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, daemon.address, f"tree-{kind}")
    with pytest.raises(TurnInterrupted) as caught:
        await call
    assert time.monotonic() - t0 < GRACE + MARGIN
    assert_all_gone(pids, timeout=1.0)
    assert caught.value.history is not None and len(caught.value.history) == 1
    assert len(llm.sent) == 1


#: The SIGKILL comes this long after the trip: the gap a kickoff returning at the leader's death shows.
KILL_AFTER = 1.0


@pytest.mark.timeout(60)
def test_kickoff_returns_only_once_the_daemon_reports_the_tree_gone(daemon: DaemonProcess, tmp_path: Path) -> None:
    """The leader dies at SIGTERM; a setsid grandchild ignoring it lives until the SIGKILL
    ``KILL_AFTER`` later. The blocking kickoff must not raise in between (checked at once)."""
    pidfile = tmp_path / "pids"

    class Build(BaseTool):
        name: str = "build"
        description: str = "Run the build."

        def _run(self, target: str) -> str:
            with popen(stubborn_tree_command(pidfile), kill_after=KILL_AFTER) as proc:
                return f"exit {proc.wait()}"

    llm = ScriptedLLM([tool_call("build", '{"target": "all"}'), "too late"])
    crew = InterruptibleCrew(
        crew_of(llm, [interruptible_tool(Build())]), address=daemon.address, context_id="crew-stubborn", grace=GRACE
    )
    with TreeInterrupter(pidfile, daemon.address, "crew-stubborn") as tree:
        with pytest.raises(TurnInterrupted) as caught:
            crew.kickoff({})
        assert len(tree.pids) == 2
        assert survivors_now(tree.pids) == [], "kickoff raised while the daemon was still killing the tree"
    assert time.monotonic() - tree.t0 < GRACE + KILL_AFTER + MARGIN
    assert caught.value.unconfirmed_pgids == []
    assert len(llm.sent) == 1


@pytest.mark.timeout(60)
async def test_a_tool_call_of_a_tripped_turn_is_refused_without_running(daemon: DaemonProcess) -> None:
    probe = Probe()
    crunch = crunch_tool(probe)
    with Coordinator(daemon.address) as coordinator:
        begun = coordinator.begin(context_id="crew-refuse", grace=GRACE)
        coordinator.interrupt(begun.execution_id, reason=InterruptReason.USER_SIGINT)
        async with open_turn("crewai", execution=begun) as turn:
            answer = await asyncio.to_thread(crunch.run, steps=1)
        assert "was not run" in answer
        assert not probe.started.is_set()
        assert [c.started for c in turn.interrupted_calls()] == [False]
        # A whole kickoff of a tripped execution: not one model call, not one tool call.
        llm = ScriptedLLM([tool_call("crunch", '{"steps": 1}'), "done"])
        with pytest.raises(TurnInterrupted):
            await asyncio.to_thread(InterruptibleCrew(crew_of(llm, [crunch])).kickoff, {}, execution=begun)
        assert llm.sent == [] and not probe.started.is_set()
        coordinator.end(begun.execution_id)


def test_a_tool_outside_a_turn_runs_as_it_is() -> None:
    probe = Probe()
    assert crunch_tool(probe).run(steps=1) == "crunched"
    assert probe.finished


def test_bridge_server_rewrites_crewai_and_mcp_stdio_configs() -> None:
    server = MCPServerStdio(command="npx", args=["-y", "mcp-server-commands"], env={"A": "1"})
    rewritten = bridge_server(server, token_file="/run/agent/turn-token", options=["--scope", "turn"])
    assert isinstance(rewritten, MCPServerStdio)
    assert rewritten.command == "interrupt-sidecar"
    assert rewritten.args == ["mcp", "--scope", "turn", "--", "npx", "-y", "mcp-server-commands"]
    assert rewritten.env == {"A": "1", "INTERRUPT_SIDECAR_TOKEN_FILE": "/run/agent/turn-token"}
    assert server.command == "npx", "the original is left as it was"

    params = bridge_server(StdioServerParameters(command="uvx", args=["mcp-shell-server"]))
    assert isinstance(params, StdioServerParameters)
    assert (params.command, params.args, params.env) == (
        "interrupt-sidecar",
        ["mcp", "--", "uvx", "mcp-shell-server"],
        None,
    )
    assert os.environ.get("INTERRUPT_SIDECAR_TOKEN_FILE") is None


class FirstToolLLM(ScriptedLLM):
    """Calls whichever tool it is offered first (CrewAI names MCP tools after the server's
    command line), then answers."""

    def __init__(self, replies: list[Any]) -> None:
        super().__init__(replies)

    def call(self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not self.sent:
            name = tools[0]["function"]["name"]
            self.replies.insert(0, tool_call(name, self.replies.pop(0)))
        return super().call(messages)


@pytest.mark.timeout(60)
def test_an_mcp_tool_call_through_the_bridge_is_answered_at_the_trip(daemon: DaemonProcess, tmp_path: Path) -> None:
    started = tmp_path / "started"
    token_file = tmp_path / "turn-token"
    server = bridge_server(
        MCPServerStdio(command=sys.executable, args=[str(Path(__file__).with_name("crewai_mcp_server.py"))]),
        token_file=str(token_file),
        bridge=str(Path(sys.executable).with_name("interrupt-sidecar")),
        options=["--address", daemon.address],
    )
    llm = FirstToolLLM([f'{{"seconds": 60, "started": "{started}"}}', "too late"])
    agent = Agent(role="coder", goal="wait", backstory="a coder", llm=llm, mcps=[server], max_iter=3)
    crew = InterruptibleCrew(
        Crew(agents=[agent], tasks=[Task(description="wait", expected_output="done", agent=agent)]),
        address=daemon.address,
        context_id="crew-mcp",
        grace=GRACE,
        token_file=str(token_file),
    )
    outcome: list[BaseException] = []

    def kickoff() -> None:
        try:
            crew.kickoff({})
        except BaseException as error:
            outcome.append(error)

    runner = threading.Thread(target=kickoff)
    runner.start()
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline and runner.is_alive(), f"the MCP tool never started: {outcome}"
        time.sleep(0.01)
    t0 = time.monotonic()
    interrupt_context(daemon.address, "crew-mcp")
    runner.join(GRACE + MARGIN)
    assert not runner.is_alive(), "kickoff did not return after the trip"
    assert time.monotonic() - t0 < GRACE + MARGIN
    (error,) = outcome
    assert isinstance(error, TurnInterrupted), repr(error)
    assert len(llm.sent) == 1, "a model call followed the trip"
