"""An agent that speaks raw JSON-RPC to the bridge, for tests that need every byte in hand
(races, close sequences): it records every message the bridge sends it."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable, Sequence
from typing import Any

from tests.mcp.support import within

PROTOCOL = "2025-11-25"


class RawAgent:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.received: list[dict[str, Any]] = []
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, argv: Sequence[str], env: dict[str, str]) -> RawAgent:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            data = json.loads(line)
            async with self._changed:
                self.received.extend(data if isinstance(data, list) else [data])
                self._changed.notify_all()

    def send(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    async def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 15.0) -> dict[str, Any]:
        async def find() -> dict[str, Any]:
            async with self._changed:
                while True:
                    for message in self.received:
                        if predicate(message):
                            return message
                    await self._changed.wait()

        return await within(find(), timeout)

    async def answer(self, request_id: Any, timeout: float = 15.0) -> dict[str, Any]:
        return await self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def answers(self, request_id: Any) -> list[dict[str, Any]]:
        return [m for m in self.received if m.get("id") == request_id and "method" not in m]

    async def handshake(self, request_id: Any = 0) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "raw-agent", "version": "1"},
                },
            }
        )
        answer = await self.answer(request_id)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, request_id: Any, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> None:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    async def close(self, how: str = "stdin") -> int:
        """End the session: ``stdin`` closes the bridge's stdin; ``sigterm`` signals its pid only."""
        if how == "stdin":
            assert self.process.stdin is not None
            self.process.stdin.close()
        elif self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        code = await within(self.process.wait(), 15.0)
        await within(self._reader, 5.0)
        return code

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self._reader.cancel()
