"""LangChain / LangGraph: a graph's turn tied to an execution, its tool calls attached.

::

    from interrupt_sidecar_client.adapters.langgraph import InterruptibleGraph, TurnInterrupted, interruptible_tools

    agent = create_agent(model, tools=interruptible_tools([bash, fetch]), checkpointer=InMemorySaver())
    graph = InterruptibleGraph(agent, context_id="main")
    try:
        result = await graph.ainvoke({"messages": [("user", "build it")]}, config)
    except TurnInterrupted as stopped:
        ...  # stopped.history: the thread's messages, the interrupted tool results included

The trip cancels the task running ``ainvoke``/``astream`` (LangGraph's own cancel; not
``interrupt()``, which is a human-in-the-loop pause that waits for a resume). What runs
outside that task is stopped by the client: a sync tool's worker thread (THREAD_INTERRUPT),
an async tool's task (COOPERATIVE, cancelled by the adapter), a tool's subprocesses
(:func:`popen`, a process group the daemon kills with its descendants). With a
checkpointer, the tool calls left unanswered get ``ToolMessage(status="error")`` results that
say they were interrupted and why, so the next turn's model sees what happened and a resume
never runs them again.

Requires ``langchain-core`` and ``langgraph`` (``pip install 'interrupt-sidecar-client[langgraph]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import tool as as_tool

from interrupt_sidecar_client._coordinator import AsyncCoordinator
from interrupt_sidecar_client._types import BegunExecution
from interrupt_sidecar_client.adapters._turn import (
    InterruptedCall,
    Turn,
    TurnInterrupted,
    TurnSettings,
    bridge_stdio,
    call_async,
    call_sync,
    create_subprocess_exec,
    current_turn,
    interrupted_text,
    open_turn,
    popen,
    run_blocking_turn,
    run_turn,
)

__all__ = [
    "InterruptedCall",
    "InterruptibleGraph",
    "TurnInterrupted",
    "bridge_connections",
    "create_subprocess_exec",
    "current_turn",
    "interruptible_tool",
    "interruptible_tools",
    "open_turn",
    "popen",
]

FRAMEWORK = "langgraph"


# -- tools -----------------------------------------------------------------------------


def _call_of(tool: BaseTool, tool_input: Any) -> tuple[str, str]:
    """The tool call's name and id: ToolNode invokes tools with the model's ToolCall dict."""
    if isinstance(tool_input, Mapping) and tool_input.get("type") == "tool_call":
        return str(tool_input.get("name") or tool.name), str(tool_input.get("id") or "")
    return tool.name, ""


def _message(tool: BaseTool, tool_input: Any, call: InterruptedCall) -> Any:
    if isinstance(tool_input, Mapping) and tool_input.get("type") == "tool_call":
        return ToolMessage(content=call.text, tool_call_id=call.call_id, name=call.name, status="error")
    return call.text  # invoked with plain arguments: the caller expects the tool's own output type


def _is_async(tool: BaseTool) -> bool:
    if isinstance(tool, StructuredTool):
        return tool.coroutine is not None
    return type(tool)._arun is not BaseTool._arun


class _Interruptible:
    """Mixed into a copy of the user's tool class: every invocation runs attached.

    A class of its own per tool class (not a wrapper tool), so ToolNode still sees the
    tool's own schema, injected arguments and ``return_direct``.
    """

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        tool = cast(BaseTool, self)
        name, call_id = _call_of(tool, input)
        parent = cast(Any, super())
        return call_sync(
            name,
            call_id,
            lambda: parent.invoke(input, config, **kwargs),
            lambda call: _message(tool, input, call),
        )

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        tool = cast(BaseTool, self)
        if not _is_async(tool):
            # A sync tool runs in a worker thread; ``invoke`` above attaches it there, so the
            # THREAD_INTERRUPT interrupt reaches the thread that runs the body.
            from langchain_core.runnables.config import run_in_executor

            return await run_in_executor(config, self.invoke, input, config, **kwargs)
        name, call_id = _call_of(tool, input)
        parent = cast(Any, super())
        result: Any = await call_async(
            name,
            call_id,
            lambda: cast(Awaitable[Any], parent.ainvoke(input, config, **kwargs)),
            lambda call: _message(tool, input, call),
        )
        return result


_CLASSES: dict[type[BaseTool], type[BaseTool]] = {}


def interruptible_tool(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    """A copy of ``tool`` (a LangChain tool, or a function ``@tool`` would take) whose calls
    are attached to the current turn: sync bodies THREAD_INTERRUPT, async ones COOPERATIVE."""
    base = tool if isinstance(tool, BaseTool) else as_tool(tool)
    if isinstance(base, _Interruptible):
        return base
    cls = type(base)
    sub = _CLASSES.get(cls)
    if sub is None:
        sub = _CLASSES[cls] = cast(type[BaseTool], type(f"Interruptible{cls.__name__}", (_Interruptible, cls), {}))
    copy = base.model_copy()
    object.__setattr__(copy, "__class__", sub)
    return copy


def interruptible_tools(tools: Sequence[BaseTool | Callable[..., Any]]) -> list[BaseTool]:
    """:func:`interruptible_tool` for each tool: pass the result to ``create_agent`` or ``ToolNode``."""
    return [interruptible_tool(tool) for tool in tools]


# -- the turn --------------------------------------------------------------------------


def _tool_messages(messages: Sequence[BaseMessage], calls: Sequence[InterruptedCall], text: str) -> list[ToolMessage]:
    """ToolMessages for the last AI message's tool calls that have no result yet."""
    answered = {message.tool_call_id for message in messages if isinstance(message, ToolMessage)}
    by_id = {call.call_id: call for call in calls}
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            return [
                ToolMessage(
                    content=by_id[call["id"]].text if call["id"] in by_id else text,
                    tool_call_id=call["id"] or "",
                    name=call["name"],
                    status="error",
                )
                for call in message.tool_calls
                if call["id"] not in answered
            ]
    return []


class InterruptibleGraph:
    """A compiled graph whose ``ainvoke``/``astream``/``invoke`` each run as one execution.

    Each call begins an execution (with ``coordinator``, or one made for ``address``) and
    ends it, or follows ``execution=`` (begun by the agent runtime, which ends it). At the
    trip the call raises :class:`TurnInterrupted` once its tool calls have unwound;
    ``history`` holds the thread's messages with the interrupted results when the graph has
    a checkpointer and ``config`` a thread.
    """

    def __init__(
        self,
        graph: Any,
        *,
        coordinator: AsyncCoordinator | None = None,
        address: str | None = None,
        context_id: str = "",
        grace: timedelta | float | None = None,
        labels: Mapping[str, str] | None = None,
        token_file: str | None = None,
    ) -> None:
        self.graph = graph
        self._settings = TurnSettings(FRAMEWORK, coordinator, address, context_id, grace, labels, token_file)

    async def _history(self, turn: Turn, config: RunnableConfig | None) -> list[Any] | None:
        if getattr(self.graph, "checkpointer", None) is None or not (config or {}).get("configurable"):
            return None
        state = await self.graph.aget_state(config)
        messages = list(state.values.get("messages", [])) if isinstance(state.values, Mapping) else []
        answers = _tool_messages(messages, turn.interrupted_calls(), _refused_text(turn))
        if answers:
            # As the node that would have answered them (ToolNode, "tools" in create_agent).
            await self.graph.aupdate_state(config, {"messages": answers}, as_node=state.next[0] if state.next else None)
            state = await self.graph.aget_state(config)
            messages = list(state.values.get("messages", []))
        return messages

    async def ainvoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        execution: BegunExecution | None = None,
        **kwargs: Any,
    ) -> Any:
        """``graph.ainvoke`` as one turn; raises :class:`TurnInterrupted` at the trip."""
        async with self._settings.open(execution) as turn:
            return await run_turn(
                turn, self.graph.ainvoke(input, config, **kwargs), history=lambda: self._history(turn, config)
            )

    async def astream(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        execution: BegunExecution | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """``graph.astream`` as one turn: chunks as they come; :class:`TurnInterrupted` at the trip.

        The stream is read by a task of the adapter's (the one the trip cancels), so the
        consumer's own task is never cancelled."""
        async with self._settings.open(execution) as turn:
            chunks: asyncio.Queue[Any] = asyncio.Queue()
            end = object()

            async def pump() -> None:
                async for chunk in self.graph.astream(input, config, **kwargs):
                    chunks.put_nowait(chunk)

            reader = asyncio.ensure_future(run_turn(turn, pump(), history=lambda: self._history(turn, config)))
            reader.add_done_callback(lambda _: chunks.put_nowait(end))
            try:
                while (chunk := await chunks.get()) is not end:
                    yield chunk
                await reader  # raises TurnInterrupted, or what the graph raised
            finally:
                if not reader.done():
                    reader.cancel()
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await reader

    def invoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        execution: BegunExecution | None = None,
        **kwargs: Any,
    ) -> Any:
        """``graph.invoke`` as one turn, blocking: the calling thread runs the graph and is the
        one interrupted at the trip (THREAD_INTERRUPT), then :class:`TurnInterrupted` once the
        tool calls have unwound and their process trees are reported gone."""
        return run_blocking_turn(
            self._settings,
            execution,
            lambda: self.graph.invoke(input, config, **kwargs),
            history=lambda turn: self._history_sync(turn, config),
        )

    def _history_sync(self, turn: Turn, config: RunnableConfig | None) -> list[Any] | None:
        if getattr(self.graph, "checkpointer", None) is None or not (config or {}).get("configurable"):
            return None
        state = self.graph.get_state(config)
        messages = list(state.values.get("messages", []))
        answers = _tool_messages(messages, turn.interrupted_calls(), _refused_text(turn))
        if answers:
            self.graph.update_state(config, {"messages": answers}, as_node=state.next[0] if state.next else None)
            messages = list(self.graph.get_state(config).values.get("messages", []))
        return messages


def _refused_text(turn: Turn) -> str:
    return interrupted_text(turn.signal.cancellation, started=False)


# -- MCP -------------------------------------------------------------------------------


def bridge_connections(
    connections: Mapping[str, Mapping[str, Any]],
    *,
    token_file: str | None = None,
    bridge: str = "interrupt-sidecar",
    options: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """langchain-mcp-adapters' ``MultiServerMCPClient`` connections with every stdio server
    run behind ``interrupt-sidecar mcp --`` (other transports unchanged).

    ``token_file``: the bridge follows the turn whose token is written there
    (``InterruptibleGraph(..., token_file=...)`` writes each turn's)."""
    rewritten: dict[str, dict[str, Any]] = {}
    for name, connection in connections.items():
        entry = dict(connection)
        if entry.get("transport", "stdio") == "stdio" and "command" in entry:
            entry["command"], entry["args"] = bridge_stdio(
                str(entry["command"]), list(entry.get("args") or ()), bridge=bridge, options=options
            )
            if token_file is not None:
                entry["env"] = {**dict(entry.get("env") or {}), "INTERRUPT_SIDECAR_TOKEN_FILE": token_file}
        rewritten[name] = entry
    return rewritten
