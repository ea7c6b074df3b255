"""CrewAI: a crew's kickoff tied to an execution, its tool calls attached.

::

    from interrupt_sidecar_client.adapters.crewai import InterruptibleCrew, TurnInterrupted, interruptible_tools

    agent = Agent(role="coder", goal="...", backstory="...", llm=llm, tools=interruptible_tools([shell]))
    crew = InterruptibleCrew(Crew(agents=[agent], tasks=[task]), context_id="main")
    try:
        output = crew.kickoff(inputs)
    except TurnInterrupted as stopped:
        ...  # stopped.history: a tool message per interrupted call, for the next turn

CrewAI has no cancel API (crewAIInc/crewAI#727, #1343, #3445); its one timeout,
``max_execution_time``, fires only when the tool returns, and the agent then goes on to a
second model call. The adapter maps the trip onto what Python itself offers:

* :meth:`InterruptibleCrew.kickoff` (and :meth:`~InterruptibleCrew.kickoff_async`, which
  runs it in a worker thread as CrewAI's own ``kickoff_async`` does): the kickoff thread is
  attached THREAD_INTERRUPT and interrupted at the trip;
* :meth:`InterruptibleCrew.akickoff`: the task running ``Crew.akickoff`` is cancelled;
* each tool call (a ``BaseTool`` or ``@tool`` passed through :func:`interruptible_tools`)
  runs attached: a sync body THREAD_INTERRUPT in the worker thread CrewAI runs it in, an
  async one COOPERATIVE in a task the adapter cancels, its subprocesses in process groups
  the daemon kills (:func:`popen`, :func:`create_subprocess_exec`);
* a before-model-call hook refuses every model call of a tripped turn, so the agent never
  goes on to a second model call after the trip (what ``max_execution_time`` lets it do).

Requires ``crewai`` (``pip install 'interrupt-sidecar-client[crewai]'``).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar, cast

from crewai import Crew
from crewai.hooks.dispatch import HookAborted
from crewai.hooks.llm_hooks import LLMCallHookContext, register_before_llm_call_hook
from crewai.tools import BaseTool
from crewai.tools import tool as as_tool
from crewai.tools.base_tool import Tool

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
    run_blocking_turn,
    run_turn,
)

__all__ = [
    "InterruptedCall",
    "InterruptibleCrew",
    "TurnInterrupted",
    "bridge_server",
    "create_subprocess_exec",
    "current_turn",
    "interruptible_tool",
    "interruptible_tools",
    "open_turn",
    "popen",
]

FRAMEWORK = "crewai"
M = TypeVar("M")

# -- tools -----------------------------------------------------------------------------

#: CrewAI calls a tool as ``tool.run(**arguments)``: the model's call id never reaches the
#: tool, so each call gets an id of its own, unique within the process.
_IDS = itertools.count(1)


def _call_id(name: str) -> str:
    return f"{name}-{next(_IDS)}"


def _text(call: InterruptedCall) -> str:
    return call.text


def _is_async(tool: BaseTool) -> bool:
    """An async CrewAI tool: ``@tool`` on an ``async def``, or a ``BaseTool`` whose ``_run`` is
    ``async def`` (CrewAI's executor calls ``tool.run`` for both, which ``asyncio.run``s the body)."""
    func = getattr(tool, "func", None)
    if isinstance(tool, Tool) and inspect.iscoroutinefunction(func):
        return True
    return inspect.iscoroutinefunction(type(tool)._run)


class _Interruptible:
    """Mixed into a copy of the user's tool class: every ``run``/``arun`` runs attached.

    A class of its own per tool class (not a wrapper tool), so CrewAI still sees the tool's
    own name, schema, ``result_as_answer`` and caching.
    """

    def run(self, *args: Any, **kwargs: Any) -> Any:
        tool = cast(Any, self)
        name: str = tool.name
        call_id = _call_id(name)
        if _is_async(tool):
            # CrewAI's native tool calls reach every tool through ``run`` in a worker thread,
            # where its own ``run`` would ``asyncio.run`` the coroutine: do the same, with the
            # body in a task the adapter cancels at the trip (COOPERATIVE).
            async def body() -> Any:
                arguments = kwargs if args else tool._validate_kwargs(kwargs)
                limit_error = tool._claim_usage()
                if limit_error:
                    return limit_error
                result = tool._run(*args, **arguments)
                return await result if inspect.isawaitable(result) else result

            return asyncio.run(call_async(name, call_id, body, _text))
        parent = cast(Any, super())
        return call_sync(name, call_id, lambda: parent.run(*args, **kwargs), _text)

    async def arun(self, *args: Any, **kwargs: Any) -> Any:
        name = cast(BaseTool, self).name
        parent = cast(Any, super())
        return await call_async(name, _call_id(name), lambda: parent.arun(*args, **kwargs), _text)


_CLASSES: dict[type[BaseTool], type[BaseTool]] = {}


def interruptible_tool(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    """A copy of ``tool`` (a CrewAI ``BaseTool``, or a function ``@tool`` would take) whose
    calls are attached to the current turn: sync bodies THREAD_INTERRUPT, async ones COOPERATIVE."""
    base = tool if isinstance(tool, BaseTool) else cast(BaseTool, as_tool(tool))
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
    """:func:`interruptible_tool` for each tool: pass the result to ``Agent(tools=...)``."""
    return [interruptible_tool(tool) for tool in tools]


# -- the model calls of a tripped turn ---------------------------------------------------

_HOOK_LOCK = threading.Lock()
_HOOKED = False


def _refuse_model_call(context: LLMCallHookContext) -> None:
    """CrewAI's before-model-call hook: a tripped turn makes no further model call.

    CrewAI copies the context into the loop and worker threads of a kickoff, so the turn is
    visible here; outside a turn (or in a turn still running) the call goes on."""
    turn = current_turn()
    if turn is not None and turn.interrupted:
        raise HookAborted("the turn was interrupted", source=FRAMEWORK)


def _install_hook() -> None:
    global _HOOKED
    with _HOOK_LOCK:
        if not _HOOKED:
            register_before_llm_call_hook(_refuse_model_call)
            _HOOKED = True


# -- the turn --------------------------------------------------------------------------


def _history(turn: Turn) -> list[dict[str, Any]]:
    """A tool message per interrupted call, in CrewAI's (OpenAI-style) message shape."""
    return [
        {"role": "tool", "tool_call_id": call.call_id, "name": call.name, "content": call.text}
        for call in turn.interrupted_calls()
    ]


class InterruptibleCrew:
    """A ``Crew`` whose ``kickoff`` / ``kickoff_async`` / ``akickoff`` each run as one execution.

    Each call begins an execution (with ``coordinator``, or one made for ``address``) and
    ends it, or follows ``execution=`` (begun by the agent runtime, which ends it). At the
    trip the call raises :class:`TurnInterrupted` once its tool calls have unwound.
    """

    def __init__(
        self,
        crew: Crew,
        *,
        coordinator: AsyncCoordinator | None = None,
        address: str | None = None,
        context_id: str = "",
        grace: timedelta | float | None = None,
        labels: Mapping[str, str] | None = None,
        token_file: str | None = None,
    ) -> None:
        self.crew = crew
        self._settings = TurnSettings(FRAMEWORK, coordinator, address, context_id, grace, labels, token_file)
        _install_hook()

    def kickoff(self, inputs: dict[str, Any] | None = None, *, execution: BegunExecution | None = None) -> Any:
        """``Crew.kickoff`` as one turn, blocking: the calling thread runs the crew and is the
        one interrupted at the trip (THREAD_INTERRUPT), then :class:`TurnInterrupted` once the
        tool calls have unwound and their process trees are reported gone."""
        return run_blocking_turn(self._settings, execution, lambda: self.crew.kickoff(inputs=inputs), history=_history)

    async def kickoff_async(
        self, inputs: dict[str, Any] | None = None, *, execution: BegunExecution | None = None
    ) -> Any:
        """:meth:`kickoff` in a worker thread (CrewAI's own ``kickoff_async`` is
        ``asyncio.to_thread(kickoff)``): the trip interrupts that thread."""
        return await asyncio.to_thread(self.kickoff, inputs, execution=execution)

    async def akickoff(self, inputs: dict[str, Any] | None = None, *, execution: BegunExecution | None = None) -> Any:
        """``Crew.akickoff`` (CrewAI's native async kickoff) as one turn: at the trip its task
        is cancelled, then :class:`TurnInterrupted`."""
        async with self._settings.open(execution) as turn:

            async def history() -> list[Any]:
                return _history(turn)

            return await run_turn(turn, self.crew.akickoff(inputs=inputs), history=history)


# -- MCP -------------------------------------------------------------------------------


def bridge_server(
    server: M,
    *,
    token_file: str | None = None,
    bridge: str = "interrupt-sidecar",
    options: Sequence[str] = (),
) -> M:
    """A copy of a stdio MCP server's config with the server run behind
    ``interrupt-sidecar mcp --``: CrewAI's ``crewai.mcp.MCPServerStdio`` (``Agent(mcps=[...])``)
    or the ``mcp`` SDK's ``StdioServerParameters`` (crewai-tools' ``MCPServerAdapter``).

    ``token_file``: the bridge follows the turn whose token is written there
    (``InterruptibleCrew(..., token_file=...)`` writes each turn's)."""
    model = cast(Any, server)
    command, args = bridge_stdio(str(model.command), list(model.args or ()), bridge=bridge, options=options)
    update: dict[str, Any] = {"command": command, "args": args}
    if token_file is not None:
        update["env"] = {**dict(model.env or {}), "INTERRUPT_SIDECAR_TOKEN_FILE": token_file}
    return cast(M, model.model_copy(update=update))
