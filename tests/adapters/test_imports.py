"""No framework is imported unless the user imports its adapter (the start-up paths stay as they are)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import start_daemon

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "agents", "openai", "crewai", "claude_agent_sdk", "mcp")


@pytest.mark.timeout(60)
def test_the_client_and_the_adapters_package_import_no_framework() -> None:
    code = (
        "import sys, interrupt_sidecar_client, interrupt_sidecar_client.aio, interrupt_sidecar_client.adapters\n"
        "from interrupt_sidecar_client import Coordinator, attach\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]", result.stdout


@pytest.mark.timeout(60)
def test_the_claude_adapter_imports_no_sdk_and_not_the_turn_machinery() -> None:
    """Claude Code starts the bash-hook before every Bash command: it must stay cheap."""
    code = (
        "import sys, interrupt_sidecar_client.adapters.claude\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}"
        " or m == 'interrupt_sidecar_client.adapters._turn'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]", result.stdout


@pytest.mark.timeout(60)
def test_the_daemon_starts_without_importing_a_framework() -> None:
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as directory:
        daemon = start_daemon(Path(directory), env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert daemon.stop() == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in daemon.stderr_lines if "import time:" in line}
    assert "interrupt_sidecar" in imported, "importtime output expected"
    assert imported.isdisjoint(FRAMEWORKS), sorted(imported & set(FRAMEWORKS))
