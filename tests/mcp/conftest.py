"""Fixtures of the MCP bridge tests: a daemon, and turns on it with a token file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DaemonProcess
from tests.mcp.support import NODE_MODULES, SHELL_VENV, Turns


@pytest.fixture(scope="session", autouse=True)
def third_party_installed() -> None:
    missing = [p for p in (NODE_MODULES, SHELL_VENV / "bin" / "mcp-shell-server") if not p.exists()]
    if missing:
        pytest.fail(f"the MCP test servers are not installed ({missing}): run `make mcp-test-deps`")


@pytest.fixture
def turns(daemon: DaemonProcess, tmp_path: Path) -> Iterator[Turns]:
    t = Turns(daemon, tmp_path)
    try:
        yield t
    finally:
        t.close()
