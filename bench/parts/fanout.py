"""2. Fan-out: one execution with N attached tools (spread over worker processes):
``Interrupt`` → the last tool has its cancel. Beside it the bare grpc.aio floor with the
same streams, workers and connections, the unary ``Trip`` pushing to each stream's queue.
The daemon is measured twice: tools that take the cancel from their stream, and tools that
ask for the cancel doorbell (each tool's cancel counts when the first copy arrives)."""

from __future__ import annotations

import asyncio
from typing import Any

from bench import stats
from bench.context import Context
from bench.pool import Pool, Trigger, now_ns
from bench.procs import Server, start_daemon, start_floor


async def one_trial(trigger: Trigger, pool: Pool, n: int) -> tuple[float, float, list[float]]:
    """(last tool ms, Interrupt answered ms, every tool's ms) for one trip to n tools."""
    key, token = await trigger.begin()
    group = await pool.attach(key, token, n)
    await asyncio.sleep(0.02)  # let the attach traffic settle
    fired = now_ns()
    await trigger.trip(key)
    answered = now_ns()
    received = await group.received()
    await group.wait_closed()
    await trigger.end(key)
    each = [(ns - fired) / 1e6 for ns in received]
    return max(each), (answered - fired) / 1e6, each


async def measure(
    ctx: Context, server: Server, target: str, address: str, n: int, trials: int, doorbell: bool = False
) -> tuple[list[float], list[float], list[float], float]:
    o = ctx.options
    trigger = Trigger(target, address)
    pool = Pool(target, address, o.workers, o.tools_per_connection, doorbell)
    await pool.start()
    last: list[float] = []
    answered: list[float] = []
    each: list[float] = []
    try:
        await one_trial(trigger, pool, n)  # warm-up: connections opened, code paths hot
        cpu0 = server.cpu()
        for _ in range(trials):
            a, b, c = await one_trial(trigger, pool, n)
            last.append(a)
            answered.append(b)
            each += c
        cpu = (server.cpu() - cpu0) / trials
    finally:
        await pool.close()
        await trigger.close()
    return last, answered, each, cpu


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    loop = o.loops[0]
    out: dict[str, Any] = {"loop": loop, "workers": o.workers, "tools_per_connection": o.tools_per_connection}
    daemon = start_daemon(loop, tcp=False)
    floor = start_floor("grpc", loop, tcp=False)
    try:
        for n in o.fanout_sizes:
            trials = o.fanout_trials.get(n, 5)
            ctx.log(f"fan-out {n} tools: {o.repeats} x {trials} trials per target ({loop})")
            sides = (
                ("daemon", daemon, "daemon", False),
                ("daemon_doorbell", daemon, "daemon", True),
                ("grpc_floor", floor, "floor", False),
            )
            got: dict[str, list[list[float]]] = {name: [] for name, *_ in sides}
            answers: dict[str, list[list[float]]] = {name: [] for name, *_ in sides}
            cpu: dict[str, list[float]] = {name: [] for name, *_ in sides}
            for _ in range(o.repeats):
                for name, server, target, doorbell in sides:
                    last, answered, each, per_trip = await measure(
                        ctx, server, target, server.address("unix"), n, trials, doorbell
                    )
                    got[name].append(last)
                    answers[name].append(answered)
                    cpu[name].append(per_trip)
                    ctx.samples.setdefault(f"fanout {n} {name} each tool", []).extend(each)
            entry: dict[str, Any] = {"unit": "ms", "tools": n, "trials_per_repeat": trials}
            for name in got:
                entry[name] = stats.combine(got[name])
                entry[name]["rpc_answered"] = stats.combine(answers[name])
                entry[name]["server_cpu_ms_per_trip"] = 1e3 * sorted(cpu[name])[len(cpu[name]) // 2]
                ctx.samples[f"fanout {n} {name}"] = [x for r in got[name] for x in r]
            entry["ratio_to_grpc_floor"] = stats.ratio(entry["daemon"], entry["grpc_floor"])
            entry["doorbell_ratio_to_grpc_floor"] = stats.ratio(entry["daemon_doorbell"], entry["grpc_floor"])
            out[str(n)] = entry
            d, b, f = entry["daemon"], entry["daemon_doorbell"], entry["grpc_floor"]
            ctx.log(
                f"  daemon p50 {d['p50']:.2f} p99 {d['p99']:.2f} | doorbell p50 {b['p50']:.2f} p99 {b['p99']:.2f} "
                f"| floor p50 {f['p50']:.2f} p99 {f['p99']:.2f}"
            )
    finally:
        daemon.stop()
        floor.stop()
    return out
