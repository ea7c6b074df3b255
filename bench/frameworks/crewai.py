"""CrewAI with a scripted ``BaseLLM``: ``Task.cancel()`` on ``Crew.akickoff`` (CrewAI has no
cancel API) against ``InterruptibleCrew.akickoff``, with a sync and an async tool.

Runs in build/crewai-venv (crewai needs mcp<2); the part starts it with that venv's python,
HOME in a fresh directory and CrewAI's telemetry and tracing off."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from bench.frameworks import common


def _llm() -> Any:
    from crewai.llms.base_llm import BaseLLM
    from pydantic import Field

    class ScriptedLLM(BaseLLM):
        """Answers the first call with a call of the tool, then with the final text."""

        replies: list[Any] = Field(default_factory=list)

        def supports_function_calling(self) -> bool:
            return True

        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            return self.replies.pop(0)

        async def acall(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            return self.call(messages, *args, **kwargs)

    call = {"id": "call-1", "type": "function", "function": {"name": "build", "arguments": '{"target": "all"}'}}
    return ScriptedLLM(model="scripted", replies=[[call], "done"])


def _tool(kind: str, adapter: bool, tree: common.Tree) -> Any:
    from crewai.tools import BaseTool
    from interrupt_sidecar_client.adapters import crewai

    class Build(BaseTool):
        name: str = "build"
        description: str = "Run the build."

        def _run(self, target: str) -> str:
            return tree.run(crewai.popen if adapter else None)

    class BuildAsync(BaseTool):
        name: str = "build"
        description: str = "Run the build."

        async def _run(self, target: str) -> str:
            return await tree.arun(crewai.create_subprocess_exec if adapter else None)

    tool = Build() if kind == "sync" else BuildAsync()
    return crewai.interruptible_tool(tool) if adapter else tool


def _start(kind: str, adapter: bool) -> common.Start:
    async def start(t: common.Trial) -> tuple[asyncio.Future[Any], Callable[[], Awaitable[object]]]:
        from crewai import Agent, Crew, Task
        from interrupt_sidecar_client.adapters.crewai import InterruptibleCrew

        tools = [_tool(kind, adapter, t.tree)]
        agent = Agent(role="builder", goal="build it", backstory="a builder", llm=_llm(), tools=tools, max_iter=3)
        crew = Crew(agents=[agent], tasks=[Task(description="build it", expected_output="a build", agent=agent)])
        if not adapter:
            task = asyncio.ensure_future(crew.akickoff(inputs={}))

            async def cancel() -> None:
                task.cancel()

            return task, cancel
        wrapped = InterruptibleCrew(crew, coordinator=t.coordinator, context_id=t.context_id, grace=t.config.grace_s)
        return asyncio.ensure_future(wrapped.akickoff({})), t.interrupt

    return start


if __name__ == "__main__":
    common.main(common.own_and_adapter(_start), ("crewai",))
