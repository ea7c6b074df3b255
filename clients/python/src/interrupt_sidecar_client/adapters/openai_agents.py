"""The OpenAI Agents SDK: a run's turn tied to an execution, its function tools attached.

::

    from interrupt_sidecar_client.adapters.openai_agents import InterruptibleRunner, TurnInterrupted, function_tool

    @function_tool
    def bash(command: str) -> str: ...

    runner = InterruptibleRunner(context_id="main")
    try:
        result = await runner.run(agent, history)
    except TurnInterrupted as stopped:
        history = stopped.history  # input items, the interrupted tool outputs included

The trip maps to the SDK's own cancel: ``RunResultStreaming.cancel("immediate")`` for
:meth:`InterruptibleRunner.run_streamed`, cancelling the task of ``Runner.run`` for
:meth:`InterruptibleRunner.run`. What that cancel leaves running is stopped by the client:
a sync function tool's worker thread (``asyncio.to_thread``; THREAD_INTERRUPT, for tools
made with this module's :func:`function_tool`), an async tool's task (COOPERATIVE,
cancelled by the adapter), a tool's subprocesses (:func:`popen`).

Requires ``openai-agents`` (``pip install 'interrupt-sidecar-client[openai-agents]'``).
"""

from __future__ import annotations

import contextvars
import copy
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, cast, overload

from agents import Agent, FunctionTool, ItemHelpers, Runner, RunResult, RunResultStreaming
from agents import function_tool as agents_function_tool
from agents.tool_context import ToolContext

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
    open_turn,
    popen,
    run_turn,
)

__all__ = [
    "InterruptedCall",
    "InterruptibleRunner",
    "StreamedTurn",
    "TurnInterrupted",
    "bridge_params",
    "create_subprocess_exec",
    "current_turn",
    "function_tool",
    "interruptible_tool",
    "open_turn",
    "popen",
]

FRAMEWORK = "openai-agents"

#: Set on an ``on_invoke_tool`` this module made: its tool is not wrapped again.
_WRAPPED = "__interrupt_sidecar_wrapped__"
#: The name and id of the function-tool call running in this context (read by the body of a
#: sync tool, in the worker thread ``asyncio.to_thread`` copied the context into).
_CALL: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "interrupt_sidecar_agents_call", default=None
)


def _text(call: InterruptedCall) -> str:
    return call.text


def interruptible_tool(tool: FunctionTool, *, thread_body: bool = False) -> FunctionTool:
    """A copy of a ``FunctionTool`` whose calls are attached to the current turn.

    A tool made by the SDK's own ``function_tool`` runs a sync body in a thread the adapter
    cannot reach: its call is attached COOPERATIVE and answered as interrupted at the trip,
    but the thread runs on. Make sync tools with this module's :func:`function_tool` to have
    the thread interrupted (THREAD_INTERRUPT).
    """
    if getattr(tool.on_invoke_tool, _WRAPPED, False):
        return tool
    original = tool.on_invoke_tool

    @functools.wraps(original)  # keeps the SDK's markers (sync invoker, failure handler)
    async def on_invoke_tool(ctx: ToolContext[Any], input: str) -> Any:
        turn = current_turn()
        if turn is None:
            return await original(ctx, input)
        turn_calls(turn)[ctx.tool_call_id] = ctx.tool_call
        token = _CALL.set((ctx.tool_name, ctx.tool_call_id))
        try:
            if thread_body:
                # The body attaches itself, in its thread (function_tool below).
                if turn.interrupted:
                    return turn.refusal(ctx.tool_name, ctx.tool_call_id).text
                return await original(ctx, input)
            return await call_async(ctx.tool_name, ctx.tool_call_id, lambda: original(ctx, input), _text)
        finally:
            _CALL.reset(token)

    setattr(on_invoke_tool, _WRAPPED, True)
    wrapped = copy.copy(tool)
    wrapped.on_invoke_tool = on_invoke_tool
    return wrapped


@overload
def function_tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def function_tool(func: None = None, /, **kwargs: Any) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def function_tool(
    func: Callable[..., Any] | None = None, /, **kwargs: Any
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """The SDK's ``function_tool`` (same arguments), with the call attached to the current
    turn: a sync body THREAD_INTERRUPT in the worker thread the SDK runs it in, an async one
    COOPERATIVE in a task the adapter cancels at the trip."""

    def make(fn: Callable[..., Any]) -> FunctionTool:
        if inspect.iscoroutinefunction(fn):
            return interruptible_tool(agents_function_tool(fn, **kwargs))

        @functools.wraps(fn)  # the schema is read from the function's own signature and hints
        def body(*args: Any, **kw: Any) -> Any:
            name, call_id = _CALL.get() or (fn.__name__, "")
            return call_sync(name, call_id, lambda: fn(*args, **kw), _text)

        return interruptible_tool(agents_function_tool(body, **kwargs), thread_body=True)

    return make(func) if func is not None else make


def turn_calls(turn: Turn) -> dict[str, Any]:
    """The function calls of the turn (``ResponseFunctionToolCall`` by call id)."""
    return cast(dict[str, Any], turn.extras.setdefault("agents_calls", {}))


def _with_tools(agent: Agent[Any]) -> Agent[Any]:
    tools = [interruptible_tool(tool) if isinstance(tool, FunctionTool) else tool for tool in agent.tools]
    return agent.clone(tools=tools)


def _complete(turn: Turn, items: list[Any]) -> list[Any]:
    """``items`` (input items) with each interrupted call's function call and an output that
    says it was interrupted — the SDK's own cancel drops both."""
    present = {
        item.get("call_id") for item in items if isinstance(item, Mapping) and item.get("type") == "function_call"
    }
    answered = {
        item.get("call_id")
        for item in items
        if isinstance(item, Mapping) and item.get("type") == "function_call_output"
    }
    calls = turn_calls(turn)
    completed = list(items)
    for call in turn.interrupted_calls():
        if call.call_id in answered:
            continue
        raw = calls.get(call.call_id)
        if call.call_id not in present and raw is not None:
            completed.append(raw.model_dump(exclude_unset=True))
        completed.append({"type": "function_call_output", "call_id": call.call_id, "output": call.text})
    return completed


class InterruptibleRunner:
    """``Runner.run`` / ``Runner.run_streamed``, each call one execution.

    Each call begins an execution (with ``coordinator``, or one made for ``address``) and
    ends it, or follows ``execution=`` (begun by the agent runtime, which ends it). The
    starting agent's function tools are attached (:func:`interruptible_tool`); handoff
    agents' tools only if made with :func:`function_tool` or wrapped by you.
    """

    def __init__(
        self,
        *,
        coordinator: AsyncCoordinator | None = None,
        address: str | None = None,
        context_id: str = "",
        grace: timedelta | float | None = None,
        labels: Mapping[str, str] | None = None,
        token_file: str | None = None,
    ) -> None:
        self._settings = TurnSettings(FRAMEWORK, coordinator, address, context_id, grace, labels, token_file)

    async def run(
        self, agent: Agent[Any], input: str | list[Any], *, execution: BegunExecution | None = None, **kwargs: Any
    ) -> RunResult:
        """``Runner.run`` as one turn; at the trip its task is cancelled and
        :class:`TurnInterrupted` raised, ``history`` = the input, then each interrupted
        call and its output (what else the turn produced is lost with ``Runner.run``'s
        task: use :meth:`run_streamed` to keep it)."""
        async with self._settings.open(execution) as turn:

            async def history() -> list[Any]:
                return _complete(turn, ItemHelpers.input_to_new_input_list(input))

            return await run_turn(turn, Runner.run(_with_tools(agent), input, **kwargs), history=history)

    def run_streamed(
        self, agent: Agent[Any], input: str | list[Any], *, execution: BegunExecution | None = None, **kwargs: Any
    ) -> StreamedTurn:
        """``Runner.run_streamed`` as one turn: iterate ``stream_events()`` (which begins the
        turn); at the trip ``result.cancel("immediate")``, then :class:`TurnInterrupted` at the
        end of the events, ``history`` = ``result.to_input_list()`` with the interrupted calls."""
        return StreamedTurn(self, agent, input, execution, kwargs)


class StreamedTurn:
    """What :meth:`InterruptibleRunner.run_streamed` returns."""

    def __init__(
        self,
        runner: InterruptibleRunner,
        agent: Agent[Any],
        input: str | list[Any],
        execution: BegunExecution | None,
        kwargs: dict[str, Any],
    ) -> None:
        self._runner = runner
        self._agent = agent
        self._input = input
        self._execution = execution
        self._kwargs = kwargs
        #: The SDK's streamed result, once ``stream_events()`` has begun.
        self.result: RunResultStreaming | None = None

    async def stream_events(self) -> AsyncIterator[Any]:
        async with self._runner._settings.open(self._execution) as turn:
            result = self.result = Runner.run_streamed(_with_tools(self._agent), self._input, **self._kwargs)
            turn.on_trip(lambda: result.cancel("immediate"))
            async for event in result.stream_events():
                yield event
            if turn.interrupted:
                await turn.settle()
                raise turn.interrupted_error(_complete(turn, result.to_input_list()))


# -- MCP -------------------------------------------------------------------------------


def bridge_params(
    params: Mapping[str, Any],
    *,
    token_file: str | None = None,
    bridge: str = "interrupt-sidecar",
    options: Sequence[str] = (),
) -> dict[str, Any]:
    """``MCPServerStdio(params=...)`` with the server run behind ``interrupt-sidecar mcp --``.

    ``token_file``: the bridge follows the turn whose token is written there
    (``InterruptibleRunner(..., token_file=...)`` writes each turn's)."""
    rewritten = dict(params)
    rewritten["command"], rewritten["args"] = bridge_stdio(
        str(params["command"]), list(params.get("args") or ()), bridge=bridge, options=options
    )
    if token_file is not None:
        rewritten["env"] = {**dict(params.get("env") or {}), "INTERRUPT_SIDECAR_TOKEN_FILE": token_file}
    return rewritten
