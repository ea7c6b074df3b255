"""docs/adapters.md's CrewAI example runs, with a scripted ``BaseLLM``, against a real daemon.

Runs in build/crewai-venv (crewai needs mcp<2), from tests/adapters/test_crewai_venv.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
from pathlib import Path
from types import ModuleType

import pytest
from interrupt_sidecar_client import InterruptReason, aio

from tests.adapters.test_crewai import ScriptedLLM, offline, tool_call
from tests.conftest import DaemonProcess
from tests.docs.blocks import docblock

__all__ = ["offline"]  # the autouse fixture: telemetry off, outbound connections refused


# As in test_adapters.py, which cannot be imported here (it imports LangChain and the Agents SDK).
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


@pytest.mark.timeout(60)
async def test_the_crewai_example_answers_the_interrupted_call(daemon: DaemonProcess, tmp_path: Path) -> None:
    example = load("adapters_crewai", docblock("adapters-crewai").text, tmp_path)
    llm = ScriptedLLM([tool_call("shell", '{"command": "sleep 60"}'), "too late"])
    out = io.StringIO()
    interrupter = asyncio.ensure_future(interrupt_once_running(daemon.address, tools=3))
    with contextlib.redirect_stdout(out):
        await asyncio.wait_for(asyncio.to_thread(example.chat, llm, daemon.address), 30)
    await interrupter
    assert out.getvalue().splitlines()[-1].startswith("Interrupted (USER_SIGINT)"), out.getvalue()
    assert len(llm.sent) == 1
