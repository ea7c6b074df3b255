"""A tool-client process for fan-out, load and memory: ``python -m bench.worker``.

It holds many Attach streams, written with the raw generated stubs (as a tool in any
language would talk to the daemon) or the generic bytes stubs of the bare grpc floor
(``--target floor``: the key, then half-close) or of its wire variant (``floor_wire``: a
``hello``-sized first message, an ``unwound``-sized one before the half-close),
spread over gRPC channels of ``--tools-per-connection`` streams each (one connection per
tool by default: each tool is its own process in real use). Commands arrive as JSON lines
on stdin, answers leave as JSON lines on stdout:

* ``{"op": "attach", "key": K, "token": T, "n": N}`` → opens N streams and answers
  ``{"op": "attached", "key": K}`` once the server acknowledged every one (``attached`` /
  ``ready``). When each of them has read its cancel it answers
  ``{"op": "recv", "key": K, "ns": [CLOCK_MONOTONIC of each read]}``, closes them (an
  ``unwound``, then half-close) and answers ``{"op": "closed", "key": K}``.
* ``{"op": "detach", "key": K}`` → closes the streams untripped (``unwound``, half-close),
  answers ``closed`` once each has ended.
* ``{"op": "quit"}``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import time
from typing import Any

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench.clients import CHANNEL_OPTIONS, _Outgoing, read_doorbell, ring_doorbell
from bench.floor import ATTACHED, READY, WIRE, pad, run

TIMEOUT_S = 120.0
UNWOUND = pad(b"", WIRE["unwound"])


class _Conn:
    def __init__(self, address: str, target: str) -> None:
        self.channel = grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)
        self.used = 0
        if target == "daemon":
            self.attach: Any = pb_grpc.ToolChannelServiceStub(self.channel).Attach
        else:
            self.attach = self.channel.stream_stream("/bench.Floor/Attach")


class _Stream:
    def __init__(self, conn: _Conn) -> None:
        self.conn = conn
        self.out = _Outgoing()
        self.call: Any = conn.attach(self.out.messages())
        #: The cancel doorbell (reader, writer), when the worker asks for one.
        self.bell: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None


class Worker:
    def __init__(self, address: str, target: str, per_connection: int, doorbell: bool = False) -> None:
        self.address, self.target, self.per_connection = address, target, per_connection
        self.doorbell = doorbell
        self.conns: list[_Conn] = []
        self.groups: dict[str, list[_Stream]] = {}
        self.detached: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()

    def say(self, **message: Any) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def _conn(self) -> _Conn:
        for conn in self.conns:
            if conn.used < self.per_connection:
                conn.used += 1
                return conn
        conn = _Conn(self.address, self.target)
        conn.used = 1
        self.conns.append(conn)
        return conn

    async def _open(self, token: str, key: str) -> _Stream:
        stream = _Stream(self._conn())
        if self.target == "daemon":
            hello = pb.Hello(
                attach_token=token,
                tool_name="bench",
                behavior=pb.INTERRUPT_BEHAVIOR_COOPERATIVE,
                doorbell=self.doorbell,
            )
            stream.out.queue.put_nowait(pb.ToolMessage(hello=hello))
            first = await asyncio.wait_for(stream.call.read(), TIMEOUT_S)
            assert isinstance(first, pb.SidecarMessage) and first.HasField("attached"), first
            if self.doorbell:
                assert first.attached.HasField("doorbell"), "the daemon granted no doorbell"
                stream.bell = await ring_doorbell(first.attached.doorbell)
        elif self.target == "floor_wire":
            stream.out.queue.put_nowait(pad(key.encode(), WIRE["hello"]))
            first = await asyncio.wait_for(stream.call.read(), TIMEOUT_S)
            assert first == ATTACHED, first
        else:
            stream.out.queue.put_nowait(key.encode())
            first = await asyncio.wait_for(stream.call.read(), TIMEOUT_S)
            assert first == READY, first
        return stream

    async def _close(self, stream: _Stream, tripped: bool) -> None:
        if self.target == "daemon":
            outcome = pb.TOOL_OUTCOME_INTERRUPTED if tripped else pb.TOOL_OUTCOME_COMPLETED
            stream.out.queue.put_nowait(pb.ToolMessage(unwound=pb.Unwound(outcome=outcome)))
        elif self.target == "floor_wire":
            stream.out.queue.put_nowait(UNWOUND)
        stream.out.queue.put_nowait(None)
        try:
            while await asyncio.wait_for(stream.call.read(), TIMEOUT_S) is not grpc.aio.EOF:
                pass
        except (grpc.aio.AioRpcError, TimeoutError):
            stream.call.cancel()
        await self._finish_close(stream)

    async def _finish_close(self, stream: _Stream) -> None:
        stream.conn.used -= 1
        if stream.bell is not None:
            stream.bell[1].close()

    async def attach(self, key: str, token: str, n: int) -> None:
        # Open in batches so thousands of handshakes do not all time out together.
        streams: list[_Stream] = []
        for start in range(0, n, 200):
            streams += await asyncio.gather(*(self._open(token, key) for _ in range(start, min(n, start + 200))))
        self.groups[key] = streams
        self.say(op="attached", key=key)
        received: list[int] = []

        async def wait_one(stream: _Stream) -> bool:
            # With a doorbell the cancel counts when it rings; the stream's copy must follow.
            rung = stream.bell is not None and await read_doorbell(stream.bell[0]) is not None
            if rung:
                received.append(time.monotonic_ns())
            message = await stream.call.read()
            if not rung:
                received.append(time.monotonic_ns())
            return message is not grpc.aio.EOF

        got = await asyncio.gather(*(wait_one(s) for s in streams))
        if key in self.detached:  # closed untripped: every read saw the end of its stream
            self.detached.discard(key)
            for stream in streams:
                await self._finish_close(stream)
            self.say(op="closed", key=key)
            return
        if not all(got):
            raise RuntimeError(f"{got.count(False)} stream(s) ended before the cancel")
        self.say(op="recv", key=key, ns=received)
        await asyncio.gather(*(self._close(s, tripped=True) for s in streams))
        self.groups.pop(key, None)
        self.say(op="closed", key=key)

    def detach(self, key: str) -> None:
        """Close the group's streams untripped; the group's ``attach`` task answers ``closed``."""
        self.detached.add(key)
        for stream in self.groups.pop(key, []):
            if self.target == "daemon":
                unwound = pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED)
                stream.out.queue.put_nowait(pb.ToolMessage(unwound=unwound))
            elif self.target == "floor_wire":
                stream.out.queue.put_nowait(UNWOUND)
            stream.out.queue.put_nowait(None)

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2**24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        self.say(op="ready")
        while line := await reader.readline():
            command = json.loads(line)
            op = command["op"]
            if op == "attach":
                key = command["key"]
                task = asyncio.create_task(self.attach(key, command.get("token", ""), command["n"]))
                self.tasks.add(task)
                task.add_done_callback(functools.partial(self._done, key=key))
            elif op == "detach":
                self.detach(command["key"])
            elif op == "quit":
                break
        for conn in self.conns:
            await conn.channel.close()

    def _done(self, task: asyncio.Task[None], *, key: str) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.say(op="error", key=key, message=repr(task.exception()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    parser.add_argument("--target", choices=["daemon", "floor", "floor_wire"], required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--tools-per-connection", type=int, default=1)
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    parser.add_argument("--doorbell", action="store_true", help="daemon: ask each stream for a cancel doorbell")
    args = parser.parse_args(argv)
    worker = Worker(args.address, args.target, args.tools_per_connection, args.doorbell)
    run(worker.serve, args.loop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
