"""The agent's side: the bridge's own stdin and stdout, whatever they are.

Hosts give pipes (asyncio's pipe transports: non-blocking, flow-controlled). A person
trying the bridge by hand may give a terminal (a character device: a pipe transport too)
or redirect to and from files, which pipe transports refuse: those are read on a thread
and written with plain ``write`` (a regular file never blocks for long).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from typing import Protocol


class AgentOutput(Protocol):
    def write(self, data: bytes) -> None: ...

    def is_closing(self) -> bool: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


class _FileOutput:
    """Blocking writes to a regular file (or anything a pipe transport refuses)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._closed:
            try:
                view = view[os.write(self._fd, view) :]
            except OSError:
                self._closed = True

    def is_closing(self) -> bool:
        return self._closed

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self._closed = True

    async def wait_closed(self) -> None:
        return None


async def open_stdio(limit: int) -> tuple[asyncio.StreamReader, AgentOutput]:
    """The agent's messages (fd 0, as a StreamReader) and where the bridge answers (fd 1)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", closefd=False))
    except ValueError:
        _read_on_a_thread(loop, reader)
    output: AgentOutput
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", closefd=False)
        )
        output = asyncio.StreamWriter(transport, protocol, None, loop)
    except ValueError:
        output = _FileOutput(1)
    return reader, output


def _read_on_a_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    def pump() -> None:
        while True:
            try:
                chunk = os.read(0, 65536)
            except OSError:
                chunk = b""
            with contextlib.suppress(RuntimeError):  # the loop closed: the bridge is gone
                if not chunk:
                    loop.call_soon_threadsafe(reader.feed_eof)
                    return
                loop.call_soon_threadsafe(reader.feed_data, chunk)

    threading.Thread(target=pump, name="mcp-agent-stdin", daemon=True).start()
