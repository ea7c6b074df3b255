"""1. Delivery to one tool: ``Interrupt`` → the tool's client has the ``cancel``.

Over the unix socket and TCP, the daemon on the default loop and on uvloop, back-to-back
("busy") and with 50–150 ms of quiet before each interrupt ("idle"). Beside it, in the
same run and on the same loop: the bare grpc.aio push and (unix socket) the raw asyncio
push. Also the daemon-internal part: ``Cancel.tripped_at`` → received. Over the unix socket
the daemon is measured twice: a tool that reads its cancel from the stream, and one that
asks for the cancel doorbell (the cancel counts when the doorbell rings).
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from bench import stats
from bench.clients import DaemonTarget, GrpcFloorTarget, RawFloorTarget, Sample, Target
from bench.context import Context
from bench.procs import Server, start_daemon, start_floor


async def measure(target: Target, trials: int, warmup: int, idle: bool, rng: random.Random) -> list[Sample]:
    """``warmup`` unrecorded trials, then ``trials`` recorded ones. Each trial sets up a fresh
    attached stream (and, for the daemon, a fresh execution: a signal trips once), then
    fires; in idle mode the server is left quiet for 50–150 ms before each recorded trigger
    (warm-up trials run back-to-back)."""
    samples: list[Sample] = []
    for i in range(warmup + trials):
        trial = await target.setup()
        if idle and i >= warmup:
            await asyncio.sleep(rng.uniform(0.05, 0.15))
        sample = await trial.fire()
        await trial.finish()
        if i >= warmup:
            samples.append(sample)
    return samples


def ms(samples: list[Sample]) -> list[float]:
    return [s.latency_ns / 1e6 for s in samples]


async def measure_repeats(
    ctx: Context, server: Server, target: Target, trials: int, idle: bool, rng: random.Random, repeat_index: int
) -> tuple[list[Sample], float]:
    warmup = ctx.options.warmup if repeat_index == 0 else max(1, ctx.options.warmup // 5)
    cpu0 = server.cpu()
    samples = await measure(target, trials, warmup, idle, rng)
    cpu = server.cpu() - cpu0
    return samples, cpu / (warmup + trials)


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    rng = random.Random(7)
    out: dict[str, Any] = {}
    for loop in o.loops:
        daemon = start_daemon(loop)
        floor = start_floor("grpc", loop)
        raw = start_floor("raw", loop, tcp=False)
        try:
            for transport in o.transports:
                for mode in o.modes:
                    key = f"{transport}/{loop}/{mode}"
                    trials = o.trials if mode == "busy" else o.idle_trials
                    targets: dict[str, tuple[Server, Target]] = {
                        "daemon": (daemon, DaemonTarget(daemon.address(transport))),
                        "grpc_floor": (floor, GrpcFloorTarget(floor.address(transport))),
                    }
                    if transport == "unix":
                        targets["daemon_doorbell"] = (daemon, DaemonTarget(daemon.address("unix"), doorbell=True))
                        targets["raw_floor"] = (raw, RawFloorTarget(raw.address("unix")))
                    got: dict[str, list[list[Sample]]] = {name: [] for name in targets}
                    cpu: dict[str, list[float]] = {name: [] for name in targets}
                    ctx.log(f"delivery {key}: {o.repeats} x {trials} trials per target")
                    for r in range(o.repeats):  # interleaved, so drift hits every target alike
                        for name, (server, target) in targets.items():
                            samples, per_op = await measure_repeats(ctx, server, target, trials, mode == "idle", rng, r)
                            got[name].append(samples)
                            cpu[name].append(per_op)
                    for _, target in targets.values():
                        await target.close()
                    entry: dict[str, Any] = {"unit": "ms", "trials_per_repeat": trials}
                    for name, repeats in got.items():
                        entry[name] = stats.combine([ms(s) for s in repeats])
                        entry[name]["server_cpu_ms_per_trial"] = 1e3 * sorted(cpu[name])[len(cpu[name]) // 2]
                        ctx.samples[f"delivery {key} {name}"] = [x for s in repeats for x in ms(s)]
                    entry["daemon_internal"] = stats.combine(
                        [[(s.internal_ns or 0) / 1e6 for s in repeats] for repeats in got["daemon"]]
                    )
                    entry["ratio_to_grpc_floor"] = stats.ratio(entry["daemon"], entry["grpc_floor"])
                    if "daemon_doorbell" in entry:
                        entry["doorbell_internal"] = stats.combine(
                            [[(s.internal_ns or 0) / 1e6 for s in repeats] for repeats in got["daemon_doorbell"]]
                        )
                        entry["doorbell_ratio_to_grpc_floor"] = stats.ratio(
                            entry["daemon_doorbell"], entry["grpc_floor"]
                        )
                    if "raw_floor" in entry:
                        entry["ratio_to_raw_floor"] = stats.ratio(entry["daemon"], entry["raw_floor"])
                    out[key] = entry
                    d, f = entry["daemon"], entry["grpc_floor"]
                    bell = entry.get("daemon_doorbell")
                    ctx.log(
                        f"  daemon p50 {d['p50']:.3f} p99 {d['p99']:.3f} | floor p50 {f['p50']:.3f} "
                        f"p99 {f['p99']:.3f} | ratio p50 {entry['ratio_to_grpc_floor']['p50']:.2f}"
                        + (f" | doorbell p50 {bell['p50']:.3f} p99 {bell['p99']:.3f}" if bell else "")
                    )
        finally:
            for server in (daemon, floor, raw):
                server.stop()
    return out
