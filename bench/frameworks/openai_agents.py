"""The OpenAI Agents SDK with its ``agents.testing.ScriptedModel``: ``Runner.run_streamed``
cancelled with ``result.cancel("immediate")`` (and, for the async tool, ``"after_turn"``)
against ``InterruptibleRunner.run_streamed``, with a sync and an async function tool."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from bench.frameworks import common


def _tool(kind: str, adapter: bool, tree: common.Tree) -> Any:
    import agents
    from interrupt_sidecar_client.adapters import openai_agents

    # The adapter's function_tool is what lets the daemon interrupt a sync tool's thread.
    decorate: Callable[[Callable[..., Any]], Any] = openai_agents.function_tool if adapter else agents.function_tool
    if kind == "sync":

        @decorate
        def build(target: str) -> str:
            """Run the build."""
            return tree.run(openai_agents.popen if adapter else None)

        return build

    @decorate
    async def build_async(target: str) -> str:
        """Run the build."""
        return await tree.arun(openai_agents.create_subprocess_exec if adapter else None)

    return build_async


def _start(kind: str, path: str) -> common.Start:
    async def start(t: common.Trial) -> tuple[asyncio.Future[Any], Callable[[], Awaitable[object]]]:
        from agents import Agent, Runner
        from agents.testing import ScriptedModel, assistant_message, function_call
        from interrupt_sidecar_client.adapters.openai_agents import InterruptibleRunner

        tool = _tool(kind, path == "adapter", t.tree)
        model = ScriptedModel(
            [[function_call(tool.name, {"target": "all"}, call_id="call-1")], [assistant_message("ok")]]
        )
        agent = Agent(name="builder", model=model, tools=[tool])
        if path == "adapter":
            runner = InterruptibleRunner(coordinator=t.coordinator, context_id=t.context_id, grace=t.config.grace_s)
            events = runner.run_streamed(agent, "build it").stream_events()
            cancel: Callable[[], Awaitable[object]] = t.interrupt
        else:
            result = Runner.run_streamed(agent, "build it")
            events = result.stream_events()
            mode: Literal["immediate", "after_turn"] = "after_turn" if path == "own_after_turn" else "immediate"

            async def cancel() -> None:
                result.cancel(mode)

        async def consume() -> None:
            async for _ in events:
                pass

        return asyncio.ensure_future(consume()), cancel

    return start


if __name__ == "__main__":
    from agents import set_tracing_disabled

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-offline")  # never used: the model is scripted
    set_tracing_disabled(True)
    rows = [("sync", "own"), ("sync", "adapter"), ("async", "own"), ("async", "own_after_turn"), ("async", "adapter")]
    common.main({f"{kind}/{path}": _start(kind, path) for kind, path in rows}, ("openai-agents",))
