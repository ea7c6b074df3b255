"""LangChain ``create_agent`` (langgraph) with ``GenericFakeChatModel``: ``Task.cancel()`` on
``ainvoke`` against ``InterruptibleGraph.ainvoke``, with a sync and an async tool."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bench.frameworks import common


def _agent(tools: list[Any]) -> Any:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    class ToolCallingFakeModel(GenericFakeChatModel):
        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeModel:
            return self

    call = {"name": tools[0].name, "args": {"target": "all"}, "id": "call-1", "type": "tool_call"}
    model = ToolCallingFakeModel(messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage("done")]))
    return create_agent(model, tools=tools)


def _tool(kind: str, adapter: bool, tree: common.Tree) -> Any:
    from interrupt_sidecar_client.adapters import langgraph
    from langchain_core.tools import tool

    if kind == "sync":

        @tool
        def build(target: str) -> str:
            """Run the build."""
            return tree.run(langgraph.popen if adapter else None)

        return build

    @tool
    async def build_async(target: str) -> str:
        """Run the build."""
        return await tree.arun(langgraph.create_subprocess_exec if adapter else None)

    return build_async


def _start(kind: str, adapter: bool) -> common.Start:
    async def start(t: common.Trial) -> tuple[asyncio.Future[Any], Callable[[], Awaitable[object]]]:
        from interrupt_sidecar_client.adapters.langgraph import InterruptibleGraph, interruptible_tools
        from langchain_core.messages import HumanMessage

        tool = _tool(kind, adapter, t.tree)
        state = {"messages": [HumanMessage("build it")]}
        if not adapter:
            task = asyncio.ensure_future(_agent([tool]).ainvoke(state))

            async def cancel() -> None:
                task.cancel()

            return task, cancel
        graph = InterruptibleGraph(
            _agent(interruptible_tools([tool])),
            coordinator=t.coordinator,
            context_id=t.context_id,
            grace=t.config.grace_s,
        )
        return asyncio.ensure_future(graph.ainvoke(state)), t.interrupt

    return start


if __name__ == "__main__":
    common.main(common.own_and_adapter(_start), ("langchain", "langchain-core", "langgraph"))
