"""The LangGraph adapter with the real langchain/langgraph, a fake chat model, a real daemon."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import pytest
from interrupt_sidecar_client import Coordinator, InterruptReason
from interrupt_sidecar_client.adapters.langgraph import (
    InterruptibleGraph,
    TurnInterrupted,
    bridge_connections,
    interruptible_tools,
    open_turn,
    popen,
)
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

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


class ToolCallingFakeModel(GenericFakeChatModel):
    """GenericFakeChatModel answers from its script; create_agent also needs bind_tools."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeModel:
        return self


def calling(name: str, args: dict[str, Any], call_id: str = "call-1") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def model(*replies: AIMessage) -> ToolCallingFakeModel:
    return ToolCallingFakeModel(messages=iter(replies))


class Probe:
    """What a tool did: started, and whether its body ran to the end."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.exited = threading.Event()
        self.finished = False


def interrupted_results(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and str(m.content).startswith("Interrupted (USER_SIGINT")]


async def interrupt_when(started: threading.Event, address: str, context_id: str) -> float:
    await asyncio.to_thread(started.wait, 20)
    assert started.is_set()
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, address, context_id)
    return t0


async def run_interrupted(
    daemon: DaemonProcess, agent: Any, started: threading.Event, context_id: str, config: RunnableConfig | None
) -> tuple[TurnInterrupted, float]:
    graph = InterruptibleGraph(agent, address=daemon.address, context_id=context_id, grace=GRACE)
    interrupter = asyncio.ensure_future(interrupt_when(started, daemon.address, context_id))
    with pytest.raises(TurnInterrupted) as caught:
        await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    elapsed = time.monotonic() - await interrupter
    assert elapsed < GRACE + MARGIN, f"the call returned {elapsed:.2f} s after the interrupt"
    return caught.value, elapsed


def sync_tools(probe: Probe) -> list[BaseTool]:
    @tool
    def crunch(steps: int) -> str:
        """Crunch numbers in pure Python (a sync tool in a worker thread)."""
        probe.started.set()
        try:
            for _ in range(steps):
                time.sleep(0.01)
            probe.finished = True
            return "crunched"
        finally:
            probe.exited.set()

    return interruptible_tools([crunch])


@pytest.mark.timeout(60)
async def test_a_sync_tool_is_interrupted_and_the_history_says_so(daemon: DaemonProcess) -> None:
    probe = Probe()
    agent = create_agent(
        model(calling("crunch", {"steps": 6000}), AIMessage("done")),
        tools=sync_tools(probe),
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    stopped, _ = await run_interrupted(daemon, agent, probe.started, "lg-sync", config)
    assert probe.exited.wait(GRACE + MARGIN) and not probe.finished, "the worker thread was not interrupted"
    assert stopped.reason is InterruptReason.USER_SIGINT
    assert [(call.name, call.call_id, call.started) for call in stopped.calls] == [("crunch", "call-1", True)]
    assert stopped.history is not None
    (result,) = interrupted_results(stopped.history)
    assert result.tool_call_id == "call-1" and result.status == "error"
    assert "stopped before it finished" in str(result.content)

    # The next turn is a new execution and runs untouched; the model sees the interrupted result.
    graph = InterruptibleGraph(agent, address=daemon.address, context_id="lg-sync", grace=GRACE)
    state = await graph.ainvoke({"messages": [HumanMessage("again")]}, config)
    assert state["messages"][-1].content == "done"
    assert len(interrupted_results(state["messages"])) == 1


@pytest.mark.timeout(60)
async def test_an_async_tool_is_cancelled(daemon: DaemonProcess) -> None:
    probe = Probe()

    @tool
    async def fetch(url: str) -> str:
        """Fetch a page (an async tool)."""
        probe.started.set()
        try:
            await asyncio.sleep(60)
            probe.finished = True
            return "page"
        finally:
            probe.exited.set()

    agent = create_agent(
        model(calling("fetch", {"url": "x"}), AIMessage("done")),
        tools=interruptible_tools([fetch]),
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t2"}}
    stopped, _ = await run_interrupted(daemon, agent, probe.started, "lg-async", config)
    assert probe.exited.is_set() and not probe.finished
    assert stopped.history is not None and len(interrupted_results(stopped.history)) == 1


@pytest.mark.timeout(60)
async def test_a_tools_process_tree_is_killed_setsid_grandchild_included(daemon: DaemonProcess, tmp_path: Path) -> None:
    probe = Probe()
    pidfile = tmp_path / "pids"

    @tool
    def build(target: str) -> str:
        """Run the build (a sync tool that starts a process tree)."""
        probe.started.set()
        with popen(tree_command(pidfile)) as proc:
            return f"exit {proc.wait()}"

    agent = create_agent(
        model(calling("build", {"target": "all"}), AIMessage("done")),
        tools=interruptible_tools([build]),
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t3"}}
    graph = InterruptibleGraph(agent, address=daemon.address, context_id="lg-tree", grace=GRACE)
    call = asyncio.ensure_future(graph.ainvoke({"messages": [HumanMessage("go")]}, config))
    pids = await asyncio.to_thread(pids_of, pidfile)
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, daemon.address, "lg-tree")
    with pytest.raises(TurnInterrupted) as caught:
        await call
    assert time.monotonic() - t0 < GRACE + MARGIN
    assert_all_gone(pids, timeout=1.0)  # gone by the time the call returned, give or take reaping
    assert caught.value.history is not None and len(interrupted_results(caught.value.history)) == 1


@pytest.mark.timeout(60)
async def test_an_async_tools_process_tree_is_killed(daemon: DaemonProcess, tmp_path: Path) -> None:
    from interrupt_sidecar_client.adapters.langgraph import create_subprocess_exec

    pidfile = tmp_path / "pids"

    @tool
    async def build(target: str) -> str:
        """Run the build (an async tool that starts a process tree)."""
        async with create_subprocess_exec(*tree_command(pidfile)) as proc:
            return f"exit {await proc.wait()}"

    agent = create_agent(model(calling("build", {"target": "all"})), tools=interruptible_tools([build]))
    graph = InterruptibleGraph(agent, address=daemon.address, context_id="lg-atree", grace=GRACE)
    call = asyncio.ensure_future(graph.ainvoke({"messages": [HumanMessage("go")]}))
    pids = await asyncio.to_thread(pids_of, pidfile)
    await asyncio.to_thread(interrupt_context, daemon.address, "lg-atree")
    with pytest.raises(TurnInterrupted) as caught:
        await call
    assert caught.value.history is None  # no checkpointer: nothing to rebuild, the calls say what stopped
    assert [call.name for call in caught.value.calls] == ["build"]
    assert_all_gone(pids, timeout=1.0)


#: The SIGKILL comes this long after the trip: the gap a call returning at the leader's death shows.
KILL_AFTER = 1.0


def stubborn_tools(pidfile: Path) -> dict[str, BaseTool]:
    @tool
    def build_sync(target: str) -> str:
        """Run the build (sync: popen)."""
        with popen(stubborn_tree_command(pidfile), kill_after=KILL_AFTER) as proc:
            return f"exit {proc.wait()}"

    from interrupt_sidecar_client.adapters.langgraph import create_subprocess_exec

    @tool
    async def build_async(target: str) -> str:
        """Run the build (async: create_subprocess_exec)."""
        async with create_subprocess_exec(*stubborn_tree_command(pidfile), kill_after=KILL_AFTER) as proc:
            return f"exit {await proc.wait()}"

    return {"sync": build_sync, "async": build_async}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_ainvoke_returns_only_once_the_daemon_reports_the_tree_gone(
    daemon: DaemonProcess, tmp_path: Path, kind: str
) -> None:
    """The leader dies at SIGTERM; a setsid grandchild ignoring it lives until the SIGKILL
    ``KILL_AFTER`` later. The call must not return in between (checked at once, no waiting)."""
    pidfile = tmp_path / "pids"
    build = stubborn_tools(pidfile)[kind]
    agent = create_agent(model(calling(build.name, {"target": "all"})), tools=interruptible_tools([build]))
    graph = InterruptibleGraph(agent, address=daemon.address, context_id=f"lg-stubborn-{kind}", grace=GRACE)
    call = asyncio.ensure_future(graph.ainvoke({"messages": [HumanMessage("go")]}))
    pids = await asyncio.to_thread(pids_of, pidfile, count=2)
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, daemon.address, f"lg-stubborn-{kind}")
    with pytest.raises(TurnInterrupted) as caught:
        await call
    assert survivors_now(pids) == [], "the call returned while the daemon was still killing the tree"
    assert time.monotonic() - t0 < GRACE + KILL_AFTER + MARGIN
    assert caught.value.unconfirmed_pgids == []


@pytest.mark.timeout(60)
def test_invoke_returns_only_once_the_daemon_reports_the_tree_gone(daemon: DaemonProcess, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    build = stubborn_tools(pidfile)["sync"]
    agent = create_agent(model(calling(build.name, {"target": "all"})), tools=interruptible_tools([build]))
    graph = InterruptibleGraph(agent, address=daemon.address, context_id="lg-stubborn-invoke", grace=GRACE)
    with TreeInterrupter(pidfile, daemon.address, "lg-stubborn-invoke") as tree:
        with pytest.raises(TurnInterrupted) as caught:
            graph.invoke({"messages": [HumanMessage("go")]})
        assert len(tree.pids) == 2
        assert survivors_now(tree.pids) == [], "the call returned while the daemon was still killing the tree"
    assert caught.value.unconfirmed_pgids == []


@pytest.mark.timeout(60)
async def test_a_subgraph_tool_is_interrupted_with_the_parent_run(daemon: DaemonProcess, tmp_path: Path) -> None:
    """langgraph#5682: a node that runs a subgraph; cancelling the parent must stop the subgraph's tool."""
    probe = Probe()
    pidfile = tmp_path / "pids"

    @tool
    def build(target: str) -> str:
        """Run the build."""
        probe.started.set()
        with popen(tree_command(pidfile)) as proc:
            return f"exit {proc.wait()}"

    inner = create_agent(model(calling("build", {"target": "all"})), tools=interruptible_tools([build]))

    class State(TypedDict):
        messages: list[BaseMessage]

    async def research(state: State) -> State:
        result = await inner.ainvoke({"messages": list(state["messages"])})  # type: ignore[call-overload]
        return {"messages": result["messages"]}

    builder = StateGraph(State)
    builder.add_node("research", research)
    builder.add_edge(START, "research")
    builder.add_edge("research", END)
    parent = builder.compile()
    graph = InterruptibleGraph(parent, address=daemon.address, context_id="lg-sub", grace=GRACE)
    call = asyncio.ensure_future(graph.ainvoke({"messages": [HumanMessage("go")]}))
    pids = await asyncio.to_thread(pids_of, pidfile)
    t0 = time.monotonic()
    await asyncio.to_thread(interrupt_context, daemon.address, "lg-sub")
    with pytest.raises(TurnInterrupted) as caught:
        await call
    assert time.monotonic() - t0 < GRACE + MARGIN
    assert [(c.name, c.started) for c in caught.value.calls] == [("build", True)]
    assert_all_gone(pids, timeout=1.0)


@pytest.mark.timeout(60)
async def test_a_tool_call_of_a_tripped_turn_is_refused_without_running(daemon: DaemonProcess) -> None:
    probe = Probe()
    (crunch,) = sync_tools(probe)
    with Coordinator(daemon.address) as coordinator:
        begun = coordinator.begin(context_id="lg-refuse", grace=GRACE)
        coordinator.interrupt(begun.execution_id, reason=InterruptReason.USER_SIGINT)
        async with open_turn("langgraph", execution=begun) as turn:
            call = {"type": "tool_call", "name": "crunch", "args": {"steps": 1}, "id": "call-9"}
            sync_answer = await asyncio.to_thread(crunch.invoke, call)
            async_answer = await crunch.ainvoke(call)
        for answer in (sync_answer, async_answer):
            assert isinstance(answer, ToolMessage) and answer.status == "error"
            assert "was not run" in str(answer.content)
        assert not probe.started.is_set()
        assert [c.started for c in turn.interrupted_calls()] == [False, False]
        # A turn begun on a tripped execution does not start the graph at all.
        agent = create_agent(model(calling("crunch", {"steps": 1})), tools=[crunch])
        with pytest.raises(TurnInterrupted):
            await InterruptibleGraph(agent).ainvoke({"messages": [HumanMessage("go")]}, execution=begun)
        # The blocking invoke too: TurnInterrupted (its attach is refused), not a bare CancelledExecution.
        with pytest.raises(TurnInterrupted) as caught:
            await asyncio.to_thread(
                InterruptibleGraph(agent).invoke, {"messages": [HumanMessage("go")]}, execution=begun
            )
        assert caught.value.execution_id == begun.execution_id and caught.value.calls == []
        assert not probe.started.is_set()
        coordinator.end(begun.execution_id)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["ainvoke", "invoke"])
async def test_each_call_writes_its_turns_token_file(daemon: DaemonProcess, tmp_path: Path, how: str) -> None:
    token_file = tmp_path / "turn-token"
    agent = create_agent(model(AIMessage("done")), tools=[])
    graph = InterruptibleGraph(agent, token_file=str(token_file))
    with Coordinator(daemon.address) as coordinator:
        begun = coordinator.begin(context_id=f"lg-token-{how}", grace=GRACE)
        if how == "ainvoke":
            state = await graph.ainvoke({"messages": [HumanMessage("go")]}, execution=begun)
        else:
            state = await asyncio.to_thread(graph.invoke, {"messages": [HumanMessage("go")]}, execution=begun)
        coordinator.end(begun.execution_id)
    assert state["messages"][-1].content == "done"
    assert token_file.read_text() == begun.attach_token


@pytest.mark.timeout(60)
async def test_astream_yields_chunks_then_raises_at_the_trip(daemon: DaemonProcess) -> None:
    probe = Probe()
    agent = create_agent(model(calling("crunch", {"steps": 6000})), tools=sync_tools(probe))
    graph = InterruptibleGraph(agent, address=daemon.address, context_id="lg-stream", grace=GRACE)
    interrupter = asyncio.ensure_future(interrupt_when(probe.started, daemon.address, "lg-stream"))
    chunks: list[Any] = []

    async def consume() -> None:
        async for chunk in graph.astream({"messages": [HumanMessage("go")]}, stream_mode="updates"):
            chunks.append(chunk)

    with pytest.raises(TurnInterrupted):
        await consume()
    assert time.monotonic() - await interrupter < GRACE + MARGIN
    assert any("model" in chunk for chunk in chunks), chunks  # the model's step came through
    assert probe.exited.wait(GRACE + MARGIN) and not probe.finished


@pytest.mark.timeout(60)
def test_invoke_interrupts_the_calling_thread_and_the_tool(daemon: DaemonProcess) -> None:
    probe = Probe()
    agent = create_agent(
        model(calling("crunch", {"steps": 6000})), tools=sync_tools(probe), checkpointer=InMemorySaver()
    )
    graph = InterruptibleGraph(agent, address=daemon.address, context_id="lg-invoke", grace=GRACE)
    t0: list[float] = []

    def interrupter() -> None:
        probe.started.wait(20)
        t0.append(time.monotonic())
        interrupt_context(daemon.address, "lg-invoke")

    thread = threading.Thread(target=interrupter)
    thread.start()
    try:
        with pytest.raises(TurnInterrupted) as caught:
            graph.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t9"}})
    finally:
        thread.join(30)
    assert time.monotonic() - t0[0] < GRACE + MARGIN
    assert probe.exited.wait(GRACE + MARGIN) and not probe.finished
    assert caught.value.history is not None and len(interrupted_results(caught.value.history)) == 1


def test_bridge_connections_rewrites_stdio_servers_only() -> None:
    connections: dict[str, dict[str, Any]] = {
        "shell": {"transport": "stdio", "command": "uvx", "args": ["mcp-shell-server"], "env": {"A": "1"}},
        "web": {"transport": "streamable_http", "url": "http://127.0.0.1:1/mcp"},
    }
    rewritten = bridge_connections(connections, token_file="/run/agent/turn-token")
    assert rewritten["shell"]["command"] == "interrupt-sidecar"
    assert rewritten["shell"]["args"] == ["mcp", "--", "uvx", "mcp-shell-server"]
    assert rewritten["shell"]["env"] == {"A": "1", "INTERRUPT_SIDECAR_TOKEN_FILE": "/run/agent/turn-token"}
    assert rewritten["web"] == connections["web"]
    assert connections["shell"]["command"] == "uvx"  # the caller's config is not changed
