"""The floors our logic sits on, each a process of its own like the daemon.

``python -m bench.floor grpc --listen ADDR... --loop uvloop|asyncio``: a bare grpc.aio
server (the same grpcio) with three generic bytes methods:

* ``/bench.Floor/Attach`` (bidi): the first request is a key; the server answers
  ``ready`` and keeps the stream open; each stream has its own queue and writer, as a
  daemon stream has its outbox.
* ``/bench.Floor/Trip`` (unary): pushes one pre-serialized ``Cancel`` message to every
  stream opened with that key, then answers.
* ``/bench.Floor/Echo`` (unary): answers its request.
* ``/bench.Floor/Kill`` (unary): the request is ``b"PGID GRACE_MS"``; the handler stamps
  CLOCK_MONOTONIC, sends SIGTERM to the group (SIGKILL from a loop timer ``GRACE_MS``
  later if any member is left) and answers the stamp: the kill part's floor with the
  same gRPC call in its path as the daemon's ``Interrupt``.

``--wire`` makes it the *wire floor* of the load part: the same calls and stream messages,
of the same sizes, as a tool's and a coordinator's exchange with the daemon, answered with
pre-built bytes and no logic (see ``WIRE``):

* ``/bench.Floor/Begin`` (unary, as ``BeginExecution``): answers a fresh key padded with
  NULs to a ``BeginExecutionResponse``'s size; ``/bench.Floor/End`` (as ``EndExecution``):
  answers an ``EndExecutionResponse``-sized blob.
* ``Attach``: the first request is the key padded to a ``hello``'s size, the answer an
  ``attached``-sized blob; the tool's ``unwound`` before its half-close is read and dropped.
* ``Trip``: the request is the key padded to an ``InterruptRequest``'s size, the answer an
  ``InterruptResponse``-sized blob.

``python -m bench.floor raw --listen unix://PATH``: the floor without gRPC, a raw asyncio
unix-socket server. A ``P<key>\\n`` line on a connection makes it a push connection for
the key; a ``T<key>\\n`` line on another writes the same ``Cancel`` bytes
(length-prefixed) to every push connection of the key and answers ``k\\n``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import signal
import struct
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

READY = b"ready"


def cancel_bytes() -> bytes:
    """A realistic cancel message, as the daemon would write it."""
    now = Timestamp()
    now.GetCurrentTime()
    return pb.SidecarMessage(
        cancel=pb.Cancel(reason=pb.INTERRUPT_REASON_USER_SIGINT, tripped_at=now, grace_deadline=now)
    ).SerializeToString()


CANCEL = cancel_bytes()

#: Serialized sizes of the daemon's messages in the load part's exchange (execution ids
#: ``exec-`` + 32 hex digits, tokens of 65 characters, the tool named ``bench``), as a
#: daemon of this tree sends and receives them; ``tests/bench`` checks them against one.
WIRE = {
    "begin_request": 0,
    "begin_response": 169,
    "hello": 78,
    "attached": 63,
    "interrupt_request": 41,
    "interrupt_response": 45,
    "unwound": 4,
    "end_request": 39,
    "end_response": 97,
}
KEY_BYTES = 37  # "exec-" + 32 hex digits, as the daemon's execution ids


def pad(data: bytes, size: int) -> bytes:
    """``data`` followed by NULs up to ``size`` bytes (the wire floor's messages)."""
    return data.ljust(size, b"\0")


def unpad(data: bytes) -> bytes:
    return data.partition(b"\0")[0]


ATTACHED = pad(b"", WIRE["attached"])
INTERRUPTED = pad(b"", WIRE["interrupt_response"])
ENDED = pad(b"", WIRE["end_response"])


class GrpcFloor:
    def __init__(self, wire: bool = False) -> None:
        self.wire = wire
        self.groups: dict[bytes, set[asyncio.Queue[bytes | None]]] = {}

    async def attach(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        key = await anext(requests)
        if self.wire:
            key = unpad(key)
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        group = self.groups.setdefault(key, set())
        group.add(queue)

        async def drain() -> None:
            async for _ in requests:
                pass
            queue.put_nowait(None)

        reader = asyncio.create_task(drain())
        try:
            yield ATTACHED if self.wire else READY
            while (message := await queue.get()) is not None:
                yield message
        finally:
            reader.cancel()
            group.discard(queue)
            if not group:
                self.groups.pop(key, None)

    async def trip(self, key: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        if self.wire:
            key = unpad(key)
        for queue in self.groups.pop(key, ()):
            queue.put_nowait(CANCEL)
        return INTERRUPTED if self.wire else b""

    async def begin(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return pad(b"exec-" + secrets.token_hex(16).encode(), WIRE["begin_response"])

    async def end(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return ENDED

    async def echo(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return request

    async def kill(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        handled = time.monotonic_ns()
        pgid, grace_ms = (int(x) for x in request.split())
        os.killpg(pgid, signal.SIGTERM)
        asyncio.get_running_loop().call_later(grace_ms / 1e3, _kill_rest, pgid)
        return str(handled).encode()


def _kill_rest(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is gone: the usual case
        os.killpg(pgid, signal.SIGKILL)


async def serve_grpc(listen: list[str], wire: bool = False) -> None:
    floor = GrpcFloor(wire)
    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(
        "bench.Floor",
        {
            "Attach": grpc.stream_stream_rpc_method_handler(floor.attach),
            "Trip": grpc.unary_unary_rpc_method_handler(floor.trip),
            "Echo": grpc.unary_unary_rpc_method_handler(floor.echo),
            "Kill": grpc.unary_unary_rpc_method_handler(floor.kill),
            "Begin": grpc.unary_unary_rpc_method_handler(floor.begin),
            "End": grpc.unary_unary_rpc_method_handler(floor.end),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    ready = []
    for address in listen:
        port = server.add_insecure_port(address)
        ready.append(address if address.startswith("unix:") else f"{address.rsplit(':', 1)[0]}:{port}")
    await server.start()
    await _serve_until_term(" ".join(ready))
    await server.stop(0)


async def serve_raw(listen: list[str]) -> None:
    groups: dict[bytes, set[asyncio.StreamWriter]] = {}
    frame = struct.pack("!I", len(CANCEL)) + CANCEL

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pushed_key: bytes | None = None
        try:
            while line := await reader.readline():
                kind, key = line[:1], line[1:-1]
                if kind == b"P":
                    pushed_key = key
                    groups.setdefault(key, set()).add(writer)
                    writer.write(b"r\n")
                elif kind == b"T":
                    for w in groups.pop(key, ()):
                        w.write(frame)
                    writer.write(b"k\n")
        except ConnectionError:
            pass
        finally:
            if pushed_key is not None:
                groups.get(pushed_key, set()).discard(writer)
            writer.close()

    servers = []
    for address in listen:
        if not address.startswith("unix:"):
            continue  # the raw floor is measured over the unix socket only
        path = address.removeprefix("unix://")
        servers.append(await asyncio.start_unix_server(on_connection, path))
    await _serve_until_term(" ".join(a for a in listen if a.startswith("unix:")))
    for s in servers:
        s.close()


async def _serve_until_term(addresses: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    print(f"ready {addresses}", flush=True)
    await stop.wait()


def run(coro_factory: Callable[[], Coroutine[Any, Any, None]], loop: str) -> None:
    """Run on the chosen loop (``uvloop`` or ``asyncio``)."""
    if loop == "uvloop":
        import uvloop

        uvloop.run(coro_factory())
    else:
        asyncio.run(coro_factory())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor")
    parser.add_argument("kind", choices=["grpc", "raw"])
    parser.add_argument("--listen", action="append", required=True)
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="asyncio")
    parser.add_argument("--wire", action="store_true", help="grpc: the load part's wire floor (see WIRE)")
    args = parser.parse_args(argv)
    listen: list[str] = args.listen
    if args.kind == "grpc":
        run(lambda: serve_grpc(listen, args.wire), args.loop)
    else:
        run(lambda: serve_raw(listen), args.loop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
