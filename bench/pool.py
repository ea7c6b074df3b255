"""The controller's side of the tool workers (``bench.worker``) and of the trigger: the
daemon's ``CoordinatorService`` or the bare floor's ``Trip``, behind one interface."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
import uuid
from collections import defaultdict
from typing import Any

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench.clients import channel
from bench.floor import WIRE, pad, unpad
from bench.procs import ROOT

TIMEOUT_S = 300.0


class Trigger:
    """Begin / trip / end, for the daemon (``target="daemon"``), the bare floor
    (``"floor"``: the key is made here, only the trip is a call) or the wire floor
    (``"floor_wire"``: the daemon's three unary calls, as bytes of the same sizes)."""

    def __init__(self, target: str, address: str) -> None:
        self.target = target
        self.channel = channel(address)
        self.coordinator = pb_grpc.CoordinatorServiceStub(self.channel)
        self.floor_trip: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary("/bench.Floor/Trip")
        self.floor_begin: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary(
            "/bench.Floor/Begin"
        )
        self.floor_end: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary("/bench.Floor/End")
        self.ids: dict[str, str] = {}

    async def begin(self) -> tuple[str, str]:
        """A new key (and, for the daemon, a new execution and its attach token)."""
        if self.target == "floor":
            return uuid.uuid4().hex, ""
        if self.target == "floor_wire":
            begun_bytes = await self.floor_begin(pad(b"", WIRE["begin_request"]))
            return unpad(begun_bytes).decode(), ""
        begun = await self.coordinator.BeginExecution(pb.BeginExecutionRequest())
        self.ids[begun.execution_id] = begun.execution_id
        return begun.execution_id, begun.attach_token

    async def trip(self, key: str) -> None:
        if self.target == "daemon":
            await self.coordinator.Interrupt(
                pb.InterruptRequest(execution_id=key, reason=pb.INTERRUPT_REASON_USER_SIGINT)
            )
        elif self.target == "floor_wire":
            await self.floor_trip(pad(key.encode(), WIRE["interrupt_request"]))
        else:
            await self.floor_trip(key.encode())

    async def end(self, key: str) -> None:
        if self.target == "daemon":
            await self.coordinator.EndExecution(pb.EndExecutionRequest(execution_id=key))
            self.ids.pop(key, None)
        elif self.target == "floor_wire":
            await self.floor_end(pad(key.encode(), WIRE["end_request"]))

    async def close(self) -> None:
        await self.channel.close()


class Pool:
    """``count`` worker processes; attachments are spread over them."""

    def __init__(self, target: str, address: str, count: int, per_connection: int, doorbell: bool = False) -> None:
        self.target, self.address, self.count, self.per_connection = target, address, count, per_connection
        self.doorbell = doorbell
        self.procs: list[asyncio.subprocess.Process] = []
        self.readers: list[asyncio.Task[None]] = []
        self.waiting: dict[tuple[str, str], list[asyncio.Future[dict[str, Any]]]] = defaultdict(list)
        self.inbox: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        self.errors: list[str] = []
        self._next = itertools.cycle(range(count))

    async def start(self) -> None:
        for _ in range(self.count):
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bench.worker",
                "--target",
                self.target,
                "--address",
                self.address,
                "--tools-per-connection",
                str(self.per_connection),
                *(["--doorbell"] if self.doorbell else []),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                cwd=ROOT,
                limit=2**26,
            )
            self.procs.append(proc)
            self.readers.append(asyncio.create_task(self._read(proc)))
        await asyncio.gather(*(self._expect("ready", "") for _ in range(self.count)))

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            message = json.loads(line)
            slot = (message["op"], message.get("key", ""))
            if message["op"] == "error":
                self.errors.append(message["message"])
                print(f"worker {proc.pid}: {message['message']}", file=sys.stderr)
                for (_, key), waiters in self.waiting.items():
                    if key == message.get("key"):
                        for fut in waiters:
                            if not fut.done():
                                fut.set_exception(RuntimeError(f"worker {proc.pid}: {message['message']}"))
                continue
            if waiters := self.waiting.get(slot, []):
                fut = waiters.pop(0)
                if not fut.done():
                    fut.set_result(message)
            else:
                self.inbox[slot].append(message)

    def _expect(self, op: str, key: str) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        slot = (op, key)
        if self.inbox.get(slot):
            fut.set_result(self.inbox[slot].pop(0))
        else:
            self.waiting[slot].append(fut)
        return fut

    def _send(self, index: int, **command: Any) -> None:
        stdin = self.procs[index].stdin
        assert stdin is not None
        stdin.write((json.dumps(command) + "\n").encode())

    def split(self, n: int) -> dict[int, int]:
        """n tools over the workers, as evenly as possible (small n: the next workers in turn)."""
        shares: dict[int, int] = defaultdict(int)
        for _ in range(n):
            shares[next(self._next)] += 1
        return shares

    async def attach(self, key: str, token: str, n: int) -> AttachedGroup:
        shares = self.split(n)
        for index, share in shares.items():
            self._send(index, op="attach", key=key, token=token, n=share)
        await asyncio.wait_for(asyncio.gather(*(self._expect("attached", key) for _ in shares)), TIMEOUT_S)
        return AttachedGroup(self, key, list(shares))

    async def close(self) -> None:
        for index, proc in enumerate(self.procs):
            if proc.returncode is None:
                self._send(index, op="quit")
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()  # by its PID
                await proc.wait()
        for reader in self.readers:
            reader.cancel()


class AttachedGroup:
    def __init__(self, pool: Pool, key: str, workers: list[int]) -> None:
        self.pool, self.key, self.workers = pool, key, workers
        self.recv = [pool._expect("recv", key) for _ in workers]
        self.closed = [pool._expect("closed", key) for _ in workers]

    async def received(self) -> list[int]:
        """CLOCK_MONOTONIC of every tool's cancel read (all workers)."""
        messages = await asyncio.wait_for(asyncio.gather(*self.recv), TIMEOUT_S)
        return [ns for m in messages for ns in m["ns"]]

    async def wait_closed(self) -> None:
        await asyncio.wait_for(asyncio.gather(*self.closed), TIMEOUT_S)

    async def detach(self) -> None:
        for index in self.workers:
            self.pool._send(index, op="detach", key=self.key)
        await self.wait_closed()
        for fut in self.recv:
            fut.cancel()
        for fut in self.recv:
            slot = ("recv", self.key)
            if fut in self.pool.waiting.get(slot, []):
                self.pool.waiting[slot].remove(fut)


def now_ns() -> int:
    return time.monotonic_ns()
