"""3. Under load: 1,000 tools attached across 250 executions (4 each, spread over the
worker processes) while interrupts arrive at 100/s on random executions. Per interrupt:
``Interrupt`` → the last of its tools has the cancel. A tripped execution is replaced by
a fresh one with 4 new tools (churn, as turns end and begin). Same for two floors:

* ``grpc_floor``, the bare grpc.aio floor of the other parts: its trigger makes a key
  locally and its streams only open (key → ``ready``) and close, so per interrupt it
  pays one unary call and the streams' open, cancel and close;
* ``grpc_floor_wire``, the same server with ``--wire``: per interrupt it also receives
  the begin and end calls and every stream's ``hello``/``attached`` and ``unwound``, as
  bytes of the daemon's messages' sizes answered with no logic. Against it the ratio
  measures the daemon's logic, not the protocol's messages; against the bare floor, both.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from bench import stats
from bench.context import Context
from bench.pool import AttachedGroup, Pool, Trigger, now_ns
from bench.procs import Server, start_daemon, start_floor


async def measure(ctx: Context, server: Server, target: str, rng: random.Random) -> tuple[list[float], float, int]:
    o = ctx.options
    address = server.address("unix")
    per_execution = max(1, o.load_tools // o.load_executions)
    trigger = Trigger(target, address)
    pool = Pool(target, address, o.workers, o.tools_per_connection)
    await pool.start()
    live: dict[str, AttachedGroup] = {}
    latencies: list[float] = []
    skipped = 0
    tasks: set[asyncio.Task[None]] = set()

    async def add() -> None:
        key, token = await trigger.begin()
        live[key] = await pool.attach(key, token, per_execution)

    async def interrupt(key: str, group: AttachedGroup) -> None:
        fired = now_ns()
        await trigger.trip(key)
        received = await group.received()
        latencies.append((max(received) - fired) / 1e6)
        await group.wait_closed()
        await trigger.end(key)
        await add()

    try:
        for start in range(0, o.load_executions, 25):
            await asyncio.gather(*(add() for _ in range(start, min(o.load_executions, start + 25))))
        await asyncio.sleep(0.5)
        cpu0 = server.cpu()
        began = time.monotonic()
        count = int(o.load_seconds * o.load_rate)
        for i in range(count):
            delay = began + i / o.load_rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if not live:
                skipped += 1
                continue
            key = rng.choice(list(live))
            task = asyncio.create_task(interrupt(key, live.pop(key)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)
        cpu = (server.cpu() - cpu0) / max(1, len(latencies))
        for key, group in list(live.items()):
            await group.detach()
            await trigger.end(key)
    finally:
        for task in tasks:
            task.cancel()
        await pool.close()
        await trigger.close()
    return latencies, cpu, skipped


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    loop = o.loops[0]
    ctx.log(
        f"load: {o.load_tools} tools / {o.load_executions} executions, {o.load_rate:g}/s for "
        f"{o.load_seconds:g}s, {o.repeats} repeats per target ({loop})"
    )
    rng = random.Random(5)
    daemon = start_daemon(loop, tcp=False)
    floor = start_floor("grpc", loop, tcp=False)
    wire = start_floor("grpc", loop, tcp=False, wire=True)
    sides = (("daemon", daemon, "daemon"), ("grpc_floor", floor, "floor"), ("grpc_floor_wire", wire, "floor_wire"))
    got: dict[str, list[list[float]]] = {name: [] for name, _, _ in sides}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in sides}
    skipped = 0
    try:
        for _ in range(o.repeats):
            for name, server, target in sides:
                latencies, per_op, missed = await measure(ctx, server, target, rng)
                got[name].append(latencies)
                cpu[name].append(per_op)
                skipped += missed
    finally:
        daemon.stop()
        floor.stop()
        wire.stop()
    out: dict[str, Any] = {
        "unit": "ms",
        "loop": loop,
        "tools": o.load_tools,
        "executions": o.load_executions,
        "rate_per_s": o.load_rate,
        "seconds": o.load_seconds,
        "skipped_no_live_execution": skipped,
    }
    for name in got:
        out[name] = stats.combine(got[name])
        out[name]["server_cpu_ms_per_interrupt"] = 1e3 * sorted(cpu[name])[len(cpu[name]) // 2]
        ctx.samples[f"load {name}"] = [x for r in got[name] for x in r]
    cpu_key = "server_cpu_ms_per_interrupt"
    for floor_name in ("grpc_floor", "grpc_floor_wire"):
        suffix = floor_name.removeprefix("grpc_floor")
        out[f"ratio_to_grpc_floor{suffix}"] = stats.ratio(out["daemon"], out[floor_name])
        out[f"cpu_ratio_to_grpc_floor{suffix}"] = out["daemon"][cpu_key] / max(1e-9, out[floor_name][cpu_key])
    ctx.log(
        f"  daemon p50 {out['daemon']['p50']:.2f} p99 {out['daemon']['p99']:.2f} cpu {out['daemon'][cpu_key]:.2f} | "
        f"floor p99 {out['grpc_floor']['p99']:.2f} cpu {out['grpc_floor'][cpu_key]:.2f} | "
        f"wire floor p99 {out['grpc_floor_wire']['p99']:.2f} cpu {out['grpc_floor_wire'][cpu_key]:.2f}"
    )
    return out
