"""docs/adapters.md: each framework's example runs, with the framework's fake model, against a real daemon."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.testing import ScriptedModel, function_call
from interrupt_sidecar_client import InterruptReason, aio
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from tests.conftest import DaemonProcess
from tests.docs.blocks import docblock


def load(name: str, text: str, tmp_path: Path) -> ModuleType:
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def interrupt_once_running(address: str, tools: int) -> None:
    """Interrupt context "main" once the turn, the tool call and its process have attached."""
    async with aio.AsyncCoordinator(address) as coordinator:
        for _ in range(2000):
            running = [e for e in await coordinator.list(context_id="main") if e.attached_tools >= tools]
            if running:
                await coordinator.interrupt(running[0].execution_id, reason=InterruptReason.USER_SIGINT)
                return
            await asyncio.sleep(0.01)
    raise AssertionError("the example's tool never attached")


async def run_example(chat: Any, model: Any, address: str) -> str:
    out = io.StringIO()
    interrupter = asyncio.ensure_future(interrupt_once_running(address, tools=3))
    with contextlib.redirect_stdout(out):
        await asyncio.wait_for(chat(model, address), 30)
    await interrupter
    return out.getvalue()


class ToolCallingFakeModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeModel:
        return self


@pytest.mark.timeout(60)
async def test_the_langgraph_example_answers_the_interrupted_call(daemon: DaemonProcess, tmp_path: Path) -> None:
    example = load("adapters_langgraph", docblock("adapters-langgraph").text, tmp_path)
    call = {"name": "shell", "args": {"command": "sleep 60"}, "id": "call-1", "type": "tool_call"}
    model = ToolCallingFakeModel(messages=iter([AIMessage(content="", tool_calls=[call])]))
    printed = await run_example(example.chat, model, daemon.address)
    assert printed.startswith("Interrupted (USER_SIGINT)"), printed


@pytest.mark.timeout(60)
async def test_the_openai_agents_example_answers_the_interrupted_call(
    daemon: DaemonProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-offline")
    set_tracing_disabled(True)
    example = load("adapters_openai_agents", docblock("adapters-openai-agents").text, tmp_path)
    model = ScriptedModel([[function_call("shell", {"command": "sleep 60"}, call_id="call-1")]])
    printed = await run_example(example.chat, model, daemon.address)
    assert printed.startswith("Interrupted (USER_SIGINT)"), printed
