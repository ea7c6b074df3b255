"""7. The peer a user has today: a tool that polls a flag every 100 ms (the
cooperative-cancellation seed's model). Trip → detection, with the trip at a random
phase of each poller's period. Many pollers run at once (one asyncio task each, started
at random phases); each trial sets the flag at a random moment and every poller reports
when it saw it."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from bench import stats
from bench.context import Context

PERIOD_S = 0.100
POLLERS = 50


async def trial(rng: random.Random) -> list[float]:
    flag = False
    seen: list[int] = []

    async def poller(phase: float) -> None:
        await asyncio.sleep(phase)
        while not flag:
            await asyncio.sleep(PERIOD_S)
        seen.append(time.monotonic_ns())

    tasks = [asyncio.create_task(poller(rng.uniform(0, PERIOD_S))) for _ in range(POLLERS)]
    await asyncio.sleep(PERIOD_S + rng.uniform(0, PERIOD_S))
    flag = True
    tripped = time.monotonic_ns()
    await asyncio.gather(*tasks)
    return [(ns - tripped) / 1e6 for ns in seen]


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    rounds = max(1, o.poller_trials // POLLERS)
    ctx.log(f"poller: {o.repeats} x {rounds * POLLERS} detections (100 ms period)")
    rng = random.Random(3)
    repeats = []
    for _ in range(o.repeats):
        samples: list[float] = []
        for _ in range(rounds):
            samples += await trial(rng)
        repeats.append(samples)
    ctx.samples["poller"] = [x for r in repeats for x in r]
    return {"unit": "ms", "period_ms": PERIOD_S * 1e3, "poller": stats.combine(repeats)}
