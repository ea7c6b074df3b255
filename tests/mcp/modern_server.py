"""An MCP server of our own on the official Python SDK 2.x (``MCPServer``), which speaks the
stateless 2026-07-28 revision as well as the handshake era. ``run`` awaits a subprocess the
way many async tools do: when the call is cancelled the coroutine stops, but asyncio does
not kill the subprocess, so the process outlives the cancel.
"""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("modern")


@server.tool()
async def run(argv: list[str]) -> str:
    """Run ``argv`` and return its exit code."""
    process = await asyncio.create_subprocess_exec(*argv)
    return str(await process.wait())


@server.tool()
async def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    server.run("stdio")
