"""The MCP server process: started, fed, read line by line, killed with its whole tree.

The server's stdin/stdout are pipes to the bridge; its stderr is the bridge's (the host
logs it as it would the server's). It stays in the bridge's process group, so a host that
signals the group it started (the Python SDK's close) reaches the server too; the bridge
signals the tree itself anyway (see :mod:`interrupt_sidecar.mcp.processes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Collection, Sequence

from interrupt_sidecar.mcp import processes

log = logging.getLogger(__name__)

#: The largest line the bridge reads (an MCP message with an embedded file can be large).
LINE_LIMIT = 256 * 1024 * 1024


class ServerProcess:
    """One incarnation of the server. ``on_line`` gets every line it writes (without the
    newline); ``on_exit`` is called once, when its stdout ends and the process is reaped."""

    def __init__(
        self,
        argv: Sequence[str],
        on_line: Callable[[bytes], None],
        on_exit: Callable[[ServerProcess, int], None],
    ) -> None:
        self.argv = list(argv)
        self._on_line = on_line
        self._on_exit = on_exit
        self._process: asyncio.subprocess.Process | None = None
        self._pump: asyncio.Task[None] | None = None
        #: Set when the bridge killed it on purpose (probe failed, scope "server", shutdown).
        self.killed_by_bridge = False

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Start the server; raises OSError when it cannot be executed."""
        self._process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
        )
        self._pump = asyncio.create_task(self._read(), name=f"mcp-server-{self._process.pid}")

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        while True:
            try:
                raw = await stdout.readline()
            except ValueError:  # a line over LINE_LIMIT: the stream cannot be resynchronized
                log.error("the server wrote a line over %d bytes; stopping it", LINE_LIMIT)
                await self.kill_tree(0.0)
                break
            if not raw:
                break
            self._on_line(raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw)
        code = await self._process.wait()
        self._on_exit(self, code)

    def send(self, data: bytes) -> bool:
        """Write one line to the server; False when it cannot take it any more."""
        if self._process is None or self._process.stdin is None or self._process.stdin.is_closing():
            return False
        try:
            self._process.stdin.write(data)
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            return False
        return True

    async def drain(self) -> None:
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, RuntimeError):
                await self._process.stdin.drain()

    def close_stdin(self) -> None:
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError, RuntimeError):
                self._process.stdin.close()

    async def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or None when it is still running after ``timeout`` s."""
        if self._process is None:
            return None
        try:
            return await asyncio.wait_for(self._process.wait(), timeout)
        except TimeoutError:
            return None

    async def exited(self) -> None:
        """Until the reader has seen the end of its stdout and reported the exit."""
        if self._pump is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._pump)

    async def kill_tree(self, kill_after: float, keep: Collection[int] = ()) -> processes.KillReport:
        """Stop the server and everything below it: SIGTERM, SIGKILL after ``kill_after`` s.
        ``keep``: pids of other servers of the bridge (a restarted one may already run)."""
        if self._process is None:
            self.killed_by_bridge = True
            return processes.KillReport()
        # Killed by the bridge only if it was still running: a server that had exited by
        # itself (reaped, its code known) ended the session, even when its reader has not
        # reported the exit yet because a descendant still holds its stdout. Marking it
        # killed would lose its exit code, which is the bridge's (docs/mcp.md).
        if self._process.returncode is None:
            self.killed_by_bridge = True
        # Its tree is taken first: once the server is gone, its orphans are the bridge's
        # children, indistinguishable by parentage from a new server's.
        members = {(p.pid, p.start) for p in processes.tree(self._process.pid)}
        if self._process.returncode is None:
            # The server itself first (by its pid: unreaped, it cannot be a stranger), so it
            # cannot fork more while its descendants are being stopped.
            with contextlib.suppress(ProcessLookupError):
                self._process.terminate()
            if await self.wait(kill_after) is None:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
                await self.wait()
        rest = await processes.kill_family(os.getpid(), members, keep=keep, kill_after=kill_after)
        rest.found += 1
        return rest
