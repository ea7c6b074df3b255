"""4. Kill: trip → process tree gone (reaped), for a polite process, a SIGTERM-ignoring one
(SIGKILL time minus grace expiry) and a 10-process tree, beside a bare ``os.killpg`` +
``waitpid`` (and a pidfd wait) of the same trees, and a bare grpc.aio server's unary call
that runs ``os.killpg`` (the same gRPC delivery in the path as the daemon's ``Interrupt``).
Runs in ``bench.killworker``, a child subreaper, so every member of every tree is reaped
(and timed) by the same thread."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from bench import stats
from bench.context import Context
from bench.procs import ROOT, start_daemon, start_floor


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    loop = o.loops[0]
    daemon = start_daemon(loop, tcp=False)
    floor = start_floor("grpc", loop, tcp=False)
    ctx.log(f"kill: {o.repeats} x {o.kill_trials} trials per tree and target ({loop}, grace {o.kill_grace_ms} ms)")
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.killworker",
            "--address",
            daemon.address("unix"),
            "--daemon-pid",
            str(daemon.pid),
            "--trials",
            str(o.kill_trials),
            "--repeats",
            str(o.repeats),
            "--grace-ms",
            str(o.kill_grace_ms),
            "--floor-address",
            floor.address("unix"),
            stdout=asyncio.subprocess.PIPE,
            cwd=ROOT,
        )
        stdout, _ = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"bench.killworker exited {proc.returncode}")
    finally:
        daemon.stop()
        floor.stop()
    raw: dict[str, Any] = json.loads(stdout)
    out: dict[str, Any] = {"loop": loop, "grace_ms": o.kill_grace_ms, "reaper_realtime": raw.pop("reaper_realtime")}
    for kind, got in raw.items():
        entry: dict[str, Any] = {"unit": "ms", "trials_per_repeat": got["trials"]}

        def figure(side: str, field: str, got: dict[str, Any] = got) -> dict[str, Any]:
            return stats.combine([[row[field] for row in rows] for rows in got[side]])

        entry["daemon"] = figure("daemon", "trip_to_reaped")
        entry["daemon_reported_gone"] = figure("daemon", "daemon_reported_gone")
        entry["daemon_cancel_to_tool"] = figure("daemon", "trip_to_cancel")
        entry["daemon_call_to_trip"] = figure("daemon", "call_to_trip")
        entry["daemon_call_to_signalled"] = figure("daemon", "call_to_signalled")
        entry["floor_killpg_waitpid"] = figure("floor", "trip_to_reaped")
        entry["floor_killpg_pidfd"] = figure("floor", "trip_to_pidfd")
        entry["ratio_to_floor"] = stats.ratio(entry["daemon"], entry["floor_killpg_waitpid"])
        if got["grpc_floor"]:
            entry["floor_grpc_killpg"] = figure("grpc_floor", "trip_to_reaped")
            entry["floor_grpc_call_to_handler"] = figure("grpc_floor", "call_to_handler")
            entry["ratio_to_grpc_floor"] = stats.ratio(entry["daemon"], entry["floor_grpc_killpg"])
        entry["daemon_cpu_ms_per_kill"] = 1e3 * sorted(got["daemon_cpu_s"])[len(got["daemon_cpu_s"]) // 2]
        if kind == "ignores_term":
            entry["daemon_sigkill_after_grace"] = figure("daemon", "grace_expiry_to_reaped")
            entry["floor_sigkill_after_grace"] = figure("floor", "grace_expiry_to_reaped")
        for side in ("daemon", "floor", "grpc_floor"):
            if got[side]:
                ctx.samples[f"kill {kind} {side}"] = [row["trip_to_reaped"] for rows in got[side] for row in rows]
        out[kind] = entry
        shown = [("daemon", "daemon"), ("killpg", "floor_killpg_waitpid"), ("grpc+killpg", "floor_grpc_killpg")]
        figures = [f"{name} p50 {entry[k]['p50']:.2f} p99 {entry[k]['p99']:.2f}" for name, k in shown if k in entry]
        ctx.log(f"  {kind}: " + " | ".join(figures))
    return out
