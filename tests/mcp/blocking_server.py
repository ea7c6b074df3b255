"""An MCP server of our own, on the official Python SDK's FastMCP (mcp 1.x, the version
mcp-shell-server pulls in): its *sync* tools run inline on the event loop, so a call to
``block`` stops the server from answering anything, ``ping`` included, until it returns.
"""

from __future__ import annotations

import os
import time

from mcp.server.fastmcp import FastMCP

server = FastMCP("blocking")


@server.tool()
def block(seconds: float, started: str) -> str:
    """Block the whole server (a sync tool) for ``seconds``, once the file ``started`` is written."""
    with open(started, "w") as f:
        f.write("blocking\n")
    time.sleep(seconds)
    return "done"


@server.tool()
def pid() -> str:
    """The server's process id (tells a restarted server from the first one)."""
    return str(os.getpid())


if __name__ == "__main__":
    server.run("stdio")
