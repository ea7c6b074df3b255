"""A stdio MCP server on the mcp 1.x SDK crewai brings (build/crewai-venv): one async tool
that writes a file once it has started, then waits."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp.server.fastmcp import FastMCP

server = FastMCP("waiter")


@server.tool()
async def wait(seconds: float, started: str) -> str:
    """Wait ``seconds``, once the file ``started`` is written."""
    # A few bytes to a local file before the wait: blocking the loop here blocks nothing else.
    Path(started).write_text("waiting\n")  # noqa: ASYNC240
    await asyncio.sleep(seconds)
    return "waited"


if __name__ == "__main__":
    server.run("stdio")
