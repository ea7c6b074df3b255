"""6. Memory: the server's RSS idle, per attached idle stream at 1,000 and 5,000 streams,
and after they detach (fragmentation). With the most streams attached it also times
single-tool delivery (busy), the tail a full garbage collection of that heap would show.
Then two rounds of churned turns (a delivery trial each: for the daemon an execution whose
tool is cancelled), RSS after each: growth in the second round, once the daemon's memory
of ended executions is full, is memory that a long-running daemon would keep on losing.
Both the daemon and the bare grpc.aio floor, each a fresh process; streams are held by
worker processes, executions (keys) of 250 tools each."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from bench import stats
from bench.clients import DaemonTarget, GrpcFloorTarget, Target
from bench.context import Context
from bench.parts.delivery import measure, ms
from bench.pool import AttachedGroup, Pool, Trigger
from bench.procs import Server, start_daemon, start_floor

PER_EXECUTION = 250
SETTLE_S = 1.0


async def one(ctx: Context, name: str, server: Server, target: str, loop: str) -> dict[str, Any]:
    o = ctx.options
    address = server.address("unix")
    probe: Target = DaemonTarget(address) if target == "daemon" else GrpcFloorTarget(address)
    await measure(probe, 50, 0, False, random.Random(1))  # code paths and allocator warm
    await asyncio.sleep(SETTLE_S)
    entry: dict[str, Any] = {"rss_idle_kb": server.rss() / 1024, "streams": {}}
    trigger = Trigger(target, address)
    pool = Pool(target, address, o.workers, o.tools_per_connection)
    await pool.start()
    groups: list[tuple[str, AttachedGroup]] = []
    attached = 0
    try:
        for size in o.memory_streams:
            while attached < size:
                n = min(PER_EXECUTION, size - attached)
                key, token = await trigger.begin()
                groups.append((key, await pool.attach(key, token, n)))
                attached += n
            await asyncio.sleep(SETTLE_S)
            rss = server.rss() / 1024
            entry["streams"][str(size)] = {
                "rss_kb": rss,
                "kb_per_stream": (rss - entry["rss_idle_kb"]) / size,
            }
            ctx.log(
                f"  {name}: {size} idle streams, RSS {rss / 1024:.1f} MiB, "
                f"{(rss - entry['rss_idle_kb']) / size:.1f} KB/stream"
            )
        tail_trials = max(20, o.trials // 5)
        samples = await measure(probe, tail_trials, 5, False, random.Random(2))
        entry["delivery_with_streams_attached"] = stats.combine([ms(samples)])
        entry["delivery_with_streams_attached"]["streams"] = attached
        ctx.samples[f"memory tail {name}"] = ms(samples)
        for key, group in groups:
            await group.detach()
            await trigger.end(key)
        await asyncio.sleep(2 * SETTLE_S)
        entry["rss_after_detach_kb"] = server.rss() / 1024
        entry["retained_kb_per_detached_stream"] = (entry["rss_after_detach_kb"] - entry["rss_idle_kb"]) / attached
        entry["churn"] = await churn(ctx, name, server, probe)
    finally:
        await probe.close()
        await pool.close()
        await trigger.close()
    return entry


async def churn(ctx: Context, name: str, server: Server, probe: Target) -> dict[str, Any]:
    """RSS after each of two rounds of ``memory_turns`` back-to-back turns. The daemon
    remembers its last 4,096 ended executions, so with the default 5,000 that memory is
    full before the second round starts, and what the second round adds is growth per turn."""
    turns = ctx.options.memory_turns
    rss_kb = []
    for _ in range(2):
        await measure(probe, turns, 0, False, random.Random(3))
        await asyncio.sleep(SETTLE_S)
        rss_kb.append(server.rss() / 1024)
    growth = (rss_kb[1] - rss_kb[0]) / turns
    ctx.log(f"  {name}: RSS {rss_kb[0] / 1024:.1f} MiB after {turns} turns, {rss_kb[1] / 1024:.1f} after {turns} more")
    return {"turns_per_round": turns, "rss_after_rounds_kb": rss_kb, "kb_per_turn_second_round": growth}


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    loop = o.loops[0]
    ctx.log(f"memory: streams {o.memory_streams} ({loop})")
    out: dict[str, Any] = {"loop": loop, "tools_per_connection": o.tools_per_connection, "unit": "KB (RSS)"}
    for name, target in (("daemon", "daemon"), ("grpc_floor", "floor")):
        server = start_daemon(loop, tcp=False) if target == "daemon" else start_floor("grpc", loop, tcp=False)
        try:
            out[name] = await one(ctx, name, server, target, loop)
        finally:
            server.stop()
    return out
