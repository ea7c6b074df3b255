"""5. Turn throughput: ``BeginExecution`` + ``EndExecution`` pairs per second from 1 and 8
concurrent callers (coroutines on one channel). Floor: two bare grpc.aio unary echoes per
turn, the same way. Each is run for a fixed time after a warm-up; repeats interleave."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench.clients import channel
from bench.context import Context
from bench.procs import Server, start_daemon, start_floor

CALLERS = (1, 8)


async def rate(turn: Callable[[], Awaitable[None]], callers: int, seconds: float) -> tuple[float, int]:
    """Turns per second over ``seconds`` with ``callers`` concurrent callers."""
    stop_at = time.monotonic() + seconds
    counts = [0] * callers

    async def caller(i: int) -> None:
        while time.monotonic() < stop_at:
            await turn()
            counts[i] += 1

    started = time.monotonic()
    await asyncio.gather(*(caller(i) for i in range(callers)))
    return sum(counts) / (time.monotonic() - started), sum(counts)


def _daemon_turn(stub: pb_grpc.CoordinatorServiceAsyncStub) -> Callable[[], Awaitable[None]]:
    async def turn() -> None:
        begun = await stub.BeginExecution(pb.BeginExecutionRequest())
        await stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))

    return turn


def _floor_turn(echo: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]) -> Callable[[], Awaitable[None]]:
    payload = b"x" * 16  # about the size of an EndExecutionRequest

    async def turn() -> None:
        await echo(payload)
        await echo(payload)

    return turn


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    out: dict[str, Any] = {"unit": "turns/s", "seconds_per_repeat": o.turn_seconds}
    for loop in o.loops:
        daemon = start_daemon(loop, tcp=False)
        floor = start_floor("grpc", loop, tcp=False)
        dch, fch = channel(daemon.address("unix")), channel(floor.address("unix"))
        targets: dict[str, tuple[Server, Callable[[], Awaitable[None]]]] = {
            "daemon": (daemon, _daemon_turn(pb_grpc.CoordinatorServiceStub(dch))),
            "unary_floor": (floor, _floor_turn(fch.unary_unary("/bench.Floor/Echo"))),
        }
        try:
            for callers in CALLERS:
                ctx.log(f"turns {loop} {callers} callers: {o.repeats} x {o.turn_seconds:g}s per target")
                got: dict[str, list[float]] = {k: [] for k in targets}
                cpu: dict[str, list[float]] = {k: [] for k in targets}
                for r in range(o.repeats):
                    for name, (server, turn) in targets.items():
                        if r == 0:
                            await rate(turn, callers, min(1.0, o.turn_seconds / 2))  # warm-up
                        cpu0 = server.cpu()
                        per_s, count = await rate(turn, callers, o.turn_seconds)
                        got[name].append(per_s)
                        cpu[name].append((server.cpu() - cpu0) / max(1, count))
                entry: dict[str, Any] = {}
                for name in targets:
                    entry[name] = {
                        "turns_per_s": statistics.median(got[name]),
                        "per_repeat": got[name],
                        "server_cpu_us_per_turn": 1e6 * statistics.median(cpu[name]),
                    }
                entry["ratio_to_unary_floor"] = entry["daemon"]["turns_per_s"] / entry["unary_floor"]["turns_per_s"]
                out[f"{loop}/{callers}"] = entry
                ctx.log(
                    f"  daemon {entry['daemon']['turns_per_s']:.0f}/s | floor {entry['unary_floor']['turns_per_s']:.0f}"
                    f"/s | ratio {entry['ratio_to_unary_floor']:.2f}"
                )
        finally:
            await dch.close()
            await fch.close()
            daemon.stop()
            floor.stop()
    return out
