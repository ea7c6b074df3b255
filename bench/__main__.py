"""``python -m bench [--quick] [--parts ...] [--trials N] [--repeats R] ...``"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

from bench import procs, report
from bench.context import Context, Options

PARTS = (
    "delivery",
    "fanout",
    "load",
    "kill",
    "turns",
    "memory",
    "poller",
    "cascade",
    "footprint",
    "mcp",
    "hostile",
    "soak",
    "image",
    "adapters",
)
#: Run only when asked for by name (--parts): minutes each, and not ratios to a floor
#: (image: builds container images with podman; adapters: four frameworks' workers).
OPT_IN = ("hostile", "soak", "image", "adapters")


def parse(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(prog="python -m bench", description="The interrupt-sidecar benchmark suite.")
    p.add_argument("--quick", action="store_true", help="CI smoke: every part, few trials (< 60 s)")
    p.add_argument(
        "--parts",
        default=",".join(x for x in PARTS if x not in OPT_IN),
        help=f"comma-separated subset of {','.join(PARTS)} ({', '.join(OPT_IN)} only when named)",
    )
    p.add_argument(
        "--loops",
        default="uvloop,asyncio",
        help="daemon (and floor) event loops; the first one is used by the parts that run one loop",
    )
    p.add_argument("--transports", default="unix,tcp")
    p.add_argument("--modes", default="busy,idle")
    p.add_argument("--repeats", type=int, help="repeats per figure (median taken); default 3, quick 1")
    p.add_argument("--trials", type=int, help="busy delivery trials per repeat; default 1000, quick 40")
    p.add_argument("--idle-trials", type=int, help="idle delivery trials per repeat; default 150, quick 5")
    p.add_argument("--warmup", type=int, help="unrecorded trials before each delivery figure; default 100, quick 5")
    p.add_argument("--fanout-sizes", help="default 10,100,1000,5000; quick 10,100")
    p.add_argument("--fanout-trials", help="trials per repeat for each size, e.g. 10:200,100:100,1000:30,5000:8")
    p.add_argument("--workers", type=int, default=4, help="tool worker processes (default 4)")
    p.add_argument("--tools-per-connection", type=int, default=1, help="Attach streams per gRPC connection (default 1)")
    p.add_argument("--load-seconds", type=float, help="per repeat; default 10, quick 1")
    p.add_argument("--soak-seconds", type=float, help="the soak's length; default 1800, quick 60")
    p.add_argument("--soak-rate", type=float, help="the soak's interrupts per second; default 100, quick 20")
    p.add_argument("--soak-tools", type=int, help="tools attached at any moment in the soak; default 1000, quick 200")
    p.add_argument("--load-rate", type=float, default=100.0)
    p.add_argument("--load-tools", type=int, help="default 1000, quick 100")
    p.add_argument("--load-executions", type=int, help="default 250, quick 25")
    p.add_argument("--kill-trials", type=int, help="per tree and repeat; default 100, quick 5")
    p.add_argument("--kill-grace-ms", type=int, default=100)
    p.add_argument("--turn-seconds", type=float, help="per repeat; default 3, quick 0.3")
    p.add_argument("--memory-streams", help="default 1000,5000; quick 100,200")
    p.add_argument(
        "--memory-turns", type=int, help="turns in each of the memory part's two churn rounds; default 5000, quick 200"
    )
    p.add_argument("--poller-trials", type=int, help="detections per repeat; default 1000, quick 100")
    p.add_argument("--footprint-starts", type=int, help="fresh starts of each server; default 5, quick 2")
    p.add_argument("--footprint-trials", type=int, help="runs of each command; default 10, quick 3")
    p.add_argument("--footprint-idle-seconds", type=float, help="idle window for wake-ups and CPU; default 20, quick 2")
    p.add_argument("--mcp-trials", type=int, help="MCP interrupts per server and path; default 10, quick 1")
    p.add_argument("--adapters-trials", type=int, help="trials per framework row; default 5, quick 1")
    p.add_argument(
        "--adapters-window",
        type=float,
        help="seconds after the cancel at which the tool's processes are counted; default 5, quick 1",
    )
    p.add_argument(
        "--adapters-return-timeout",
        type=float,
        default=10.0,
        help="seconds after the cancel by which a framework call that has not returned 'did not return' (default 10)",
    )
    p.add_argument(
        "--profile", action="store_true", help="also profile the daemon with py-spy (needs the [bench] extra)"
    )
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--out", default=str(procs.ROOT / "bench" / "results"), help="output directory")
    p.add_argument(
        "--rerender",
        action="store_true",
        help="measure nothing: rewrite latest.md (and the profile summary) from the JSON in --out",
    )
    a = p.parse_args(argv)
    if a.rerender:
        rerender(Path(a.out))
        p.exit(0)
    q = a.quick

    def pick(value: Any, full: Any, quick: Any) -> Any:
        return value if value is not None else (quick if q else full)

    parts = [x for x in a.parts.split(",") if x]
    unknown = set(parts) - set(PARTS)
    if unknown:
        p.error(f"unknown parts: {', '.join(sorted(unknown))}")
    sizes = [int(x) for x in pick(a.fanout_sizes, "10,100,1000,5000", "10,100").split(",")]
    fan_trials = {10: 100, 100: 60, 1000: 15, 5000: 4} if not q else {10: 5, 100: 3}
    if a.fanout_trials:
        fan_trials.update({int(k): int(v) for k, v in (x.split(":") for x in a.fanout_trials.split(","))})
    return Options(
        quick=q,
        parts=parts,
        loops=a.loops.split(","),
        transports=a.transports.split(","),
        modes=a.modes.split(","),
        repeats=pick(a.repeats, 3, 1),
        trials=pick(a.trials, 1000, 40),
        idle_trials=pick(a.idle_trials, 150, 5),
        warmup=pick(a.warmup, 100, 5),
        fanout_sizes=sizes,
        fanout_trials=fan_trials,
        workers=a.workers,
        tools_per_connection=a.tools_per_connection,
        load_seconds=pick(a.load_seconds, 10.0, 1.0),
        load_rate=a.load_rate,
        load_tools=pick(a.load_tools, 1000, 100),
        load_executions=pick(a.load_executions, 250, 25),
        kill_trials=pick(a.kill_trials, 100, 5),
        kill_grace_ms=a.kill_grace_ms,
        turn_seconds=pick(a.turn_seconds, 3.0, 0.3),
        memory_streams=[int(x) for x in pick(a.memory_streams, "1000,5000", "100,200").split(",")],
        memory_turns=pick(a.memory_turns, 5000, 200),
        poller_trials=pick(a.poller_trials, 1000, 100),
        footprint_starts=pick(a.footprint_starts, 5, 2),
        footprint_trials=pick(a.footprint_trials, 10, 3),
        footprint_idle_seconds=pick(a.footprint_idle_seconds, 20.0, 2.0),
        mcp_trials=pick(a.mcp_trials, 10, 1),
        adapters_trials=pick(a.adapters_trials, 5, 1),
        adapters_window_s=pick(a.adapters_window, 5.0, 1.0),
        adapters_return_timeout_s=max(a.adapters_return_timeout, pick(a.adapters_window, 5.0, 1.0)),
        soak_seconds=pick(a.soak_seconds, 1800.0, 60.0),
        soak_rate=pick(a.soak_rate, 100.0, 20.0),
        soak_tools=pick(a.soak_tools, 1000, 200),
        soak_window_s=10.0 if q else 60.0,
        profile=a.profile,
        plots=not a.no_plots,
        out=a.out,
    )


def rerender(out: Path) -> None:
    import json

    from bench import profile as profiling

    results = json.loads((out / "latest.json").read_text())
    if results.get("profile"):
        for name in list(results["profile"]):
            if (out / f"profile-{name}.txt").exists():
                results["profile"][name] = profiling.summarize(out / f"profile-{name}.txt")
        results["profile"]["summary_md"] = profiling.render(
            {k: v for k, v in results["profile"].items() if isinstance(v, dict)}
        )
        results["profile"]["note"] = profiling.NOTE
    report.write(results, out)
    print((out / "latest.md").read_text())


async def run_parts(ctx: Context, seconds: dict[str, float]) -> dict[str, Any]:
    import importlib

    figures: dict[str, Any] = {}
    for name in ctx.options.parts:
        module = importlib.import_module(f"bench.parts.{name}")
        started = time.monotonic()
        figures[name] = await module.run(ctx)
        seconds[name] = round(time.monotonic() - started, 1)
    return figures


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # so every part's ``finally`` stops what it started


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    signal.signal(signal.SIGTERM, _interrupted)
    procs.raise_nofile()
    ctx = Context(options)
    machine = procs.machine_info()
    machine["host_busy_before"] = procs.host_busy_fraction(1.0)
    ctx.log(f"host CPU busy {100 * machine['host_busy_before']:.0f}% before the run; parts: {','.join(options.parts)}")
    started = time.monotonic()
    Path(options.out).mkdir(parents=True, exist_ok=True)
    part_seconds: dict[str, float] = {}
    figures = asyncio.run(run_parts(ctx, part_seconds))
    profile: dict[str, Any] | None = None
    if options.profile:
        from bench import profile as profiling

        profile = asyncio.run(profiling.run(ctx))
    machine["loadavg_end"] = os.getloadavg()
    machine["host_busy_after"] = procs.host_busy_fraction(1.0)
    results: dict[str, Any] = {
        "command": "python -m bench " + shlex.join(argv if argv is not None else sys.argv[1:]),
        "machine": machine,
        "options": vars(options) | {"fanout_trials": {str(k): v for k, v in options.fanout_trials.items()}},
        "seconds": time.monotonic() - started,
        "part_seconds": part_seconds,
        "figures": figures,
        "notes": ctx.notes,
    }
    if profile:
        results["profile"] = profile
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    if options.plots:
        results["plots"] = __import__("bench.plots").plots.draw(ctx, results, out)
    js, md = report.write(results, out)
    ctx.log(f"wrote {js} and {md}")
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
