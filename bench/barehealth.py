"""The start-up and idle floor: a bare grpc.aio server serving only ``grpc.health.v1``.

``python -m bench.barehealth --listen ADDRESS [--listen ...] [--loop uvloop|asyncio]``
prints ``ready ADDRESS...`` once serving, like the daemon, and stops on SIGTERM. It
imports nothing but what such a server needs (asyncio, grpc, grpc_health, the loop), so
its start-up, RSS and idle wake-ups are what any daemon on this grpcio pays before its
own work. Arguments are read by hand: argparse would be a cost the floor need not pay.
"""

from __future__ import annotations

import asyncio
import signal
import sys

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc


async def serve(listen: list[str]) -> None:
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    for address in listen:
        server.add_insecure_port(address)
    await server.start()
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    print(f"ready {' '.join(listen)}", flush=True)
    await stop.wait()
    await server.stop(0)


def main(argv: list[str]) -> int:
    listen = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--listen"]
    loop = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--loop"), "uvloop")
    if not listen:
        print("usage: python -m bench.barehealth --listen ADDRESS [--loop uvloop|asyncio]", file=sys.stderr)
        return 2
    if loop == "uvloop":
        import uvloop

        uvloop.run(serve(listen))
    else:
        asyncio.run(serve(listen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
