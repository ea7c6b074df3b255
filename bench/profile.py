"""``--profile``: where the daemon spends its time on the measured paths.

py-spy (from the ``[bench]`` extra) attaches to a fresh daemon by PID (``--nonblocking``, so
the daemon is not paused) while one workload runs: single-tool delivery (busy), fan-out to
1,000 tools, polite kills, and the load part's steady interrupts (``--load-*`` options).
Each profile is summarised as the functions with the most samples on-CPU, self and
inclusive (frames under ``interrupt_sidecar/`` and the grpc/asyncio frames they sit on),
and kept in ``bench/results/profile-<workload>.txt`` (collapsed stacks, the input of
flamegraph tools)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.clients import DaemonTarget
from bench.context import Context
from bench.parts import delivery, fanout, load
from bench.procs import ROOT, Server, start_daemon

RATE = 400


NOTE = (
    "py-spy sees Python frames only: `Runner.run` (the event loop) and `Thread.run` (grpc's completion-queue "
    "poller thread) as *self* time stand for grpc's Cython/C core — reading, writing and (de)serialising "
    "messages — and the kernel."
)


def _py_spy() -> str | None:
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def summarize(collapsed: Path, top: int = 12) -> dict[str, Any]:
    self_counts: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [f for f in stack.split(";") if f]
        total += count
        if frames:
            self_counts[_short(frames[-1])] += count
        for frame in {_short(f) for f in frames}:
            inclusive[frame] += count
    # The entry-point frames (cli.py, __main__.py) are under everything: leave them out.
    ours = Counter(
        {
            f: c
            for f, c in inclusive.items()
            if "interrupt_sidecar/" in f and not f.endswith(("cli.py)", "__main__.py)"))
        }
    )
    return {
        "samples": total,
        "rate_hz": RATE,
        "top_self": [(f, round(100 * c / max(1, total), 1)) for f, c in self_counts.most_common(top)],
        "top_sidecar_inclusive": [(f, round(100 * c / max(1, total), 1)) for f, c in ours.most_common(top)],
    }


def render(summaries: dict[str, Any]) -> str:
    lines: list[str] = []
    for name, summary in summaries.items():
        lines += [f"**{name}** ({summary['samples']} samples at {RATE} Hz, on-CPU only)", ""]
        lines += ["| top self | % | top `interrupt_sidecar/` inclusive | % |", "|---|---|---|---|"]
        for (a, pa), (b, pb) in zip(summary["top_self"], summary["top_sidecar_inclusive"], strict=False):
            lines.append(f"| `{a}` | {pa} | `{b}` | {pb} |")
        lines.append("")
    return "\n".join(lines)


def _short(frame: str) -> str:
    # "function (path/to/file.py:123)" → "function (file.py)" relative to the repo or site-packages.
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in (f"{ROOT}/", "site-packages/", "python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


async def _workload(ctx: Context, name: str, daemon: Server) -> None:
    address = daemon.address("unix")
    if name == "delivery":
        target = DaemonTarget(address)
        await delivery.measure(target, 300 if ctx.options.quick else 1000, 20, False, random.Random(1))
        await target.close()
    elif name == "fanout1000":
        n = 100 if ctx.options.quick else 1000
        await fanout.measure(ctx, daemon, "daemon", address, n, 3 if ctx.options.quick else 8)
    elif name == "kill":
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.killworker", "--address", address, "--daemon-pid", str(daemon.pid),
            "--trials", "10" if ctx.options.quick else "60", "--repeats", "1", "--kinds", "polite", "tree10",
            stdout=asyncio.subprocess.DEVNULL, cwd=ROOT,
        )  # fmt: skip
        await proc.wait()
    elif name == "load":
        await load.measure(ctx, daemon, "daemon", random.Random(5))


async def run(ctx: Context) -> dict[str, Any]:
    spy = _py_spy()
    if spy is None:
        ctx.notes.append("profile skipped: py-spy is not installed (pip install -e '.[bench]')")
        return {}
    out_dir = Path(ctx.options.out)
    os.makedirs(out_dir, exist_ok=True)
    result: dict[str, Any] = {}
    for name in ("delivery", "fanout1000", "kill", "load"):
        daemon = start_daemon(ctx.options.loops[0], tcp=False)
        collapsed = out_dir / f"profile-{name}.txt"
        ctx.log(f"profile: {name} under py-spy ({RATE} Hz)")
        argv = [spy, "record", "--pid", str(daemon.pid), "--rate", str(RATE), "--format", "raw", "--nonblocking"]
        recorder = subprocess.Popen(  # noqa: ASYNC220 (returns at once; stopped below by its PID)
            [*argv, "--output", str(collapsed)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            await asyncio.sleep(1.0)  # py-spy attached
            await _workload(ctx, name, daemon)
        finally:
            recorder.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
            try:
                recorder.wait(30)
            except subprocess.TimeoutExpired:
                recorder.kill()
                recorder.wait(5)
            daemon.stop()
        if not collapsed.exists():
            ctx.notes.append(f"profile {name}: py-spy wrote nothing")
            continue
        result[name] = summarize(collapsed)
    result["summary_md"] = render(result)
    result["note"] = NOTE
    (out_dir / "profile.json").write_text(json.dumps(result, indent=1) + "\n")
    return result
