"""The daemon never acts on a deadline early: a budget trips, a grace overruns and a SIGKILL
is sent only once its moment has come on the monotonic clock.

uvloop keeps its time in whole milliseconds and runs ``call_later`` callbacks up to a
millisecond before the delay they were given (here: in about 40% of calls, by up to
0.36 ms). In-process, on uvloop: the real trip path, coordinator and clock."""

from __future__ import annotations

import asyncio

import pytest
import uvloop
from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec
from interrupt_sidecar.domain.types import InterruptReason, SystemClock
from interrupt_sidecar.osedge.process_groups import ProcessGroups
from interrupt_sidecar.runtime.trip_path import TripPath
from interrupt_sidecar.runtime.watch import WatchHub

pytestmark = pytest.mark.timeout(30)

#: Budgets and graces of 5 ms plus a fraction of a millisecond each: uvloop rounds these.
FRACTIONS_US = [f * 37 % 1000 for f in range(40)]


def _runtime() -> tuple[TripPath, Coordinator, WatchHub]:
    clock = SystemClock()
    hub = WatchHub(clock)
    trip_path = TripPath(clock, ProcessGroups(), hub)
    return trip_path, Coordinator(trip_path, clock, default_grace_ns=1_000_000_000), hub


def test_a_budget_never_trips_before_it_runs_out() -> None:
    async def main() -> list[int]:
        _, coordinator, _ = _runtime()
        early_by_ns = []
        for fraction_us in FRACTIONS_US:
            budget_ns = 5_000_000 + fraction_us * 1_000
            execution, _ = coordinator.begin(ExecutionSpec(budget_ns=budget_ns))
            tripped = asyncio.get_running_loop().create_future()
            execution.signal.on_cancel(tripped.set_result)
            trip = await asyncio.wait_for(tripped, 5)
            assert trip.reason is InterruptReason.BUDGET_EXCEEDED
            early_by_ns.append(execution.begun_at.mono_ns + budget_ns - trip.at.mono_ns)
            coordinator.end(execution.execution_id)
        return early_by_ns

    early = [ns for ns in uvloop.run(main()) if ns > 0]
    assert not early, f"{len(early)} of {len(FRACTIONS_US)} budgets tripped early, by up to {max(early) / 1e3:.0f} us"
