"""A done execution (ended, no kill in flight) has no more events, and the watch hub
forgets it, even when one of its tools reports or detaches after the end (an agent may
end its turn before every tool's stream has closed).

In-process: the real trip path, coordinator and watch hub."""

from __future__ import annotations

import pytest
from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec
from interrupt_sidecar.domain.types import InterruptBehavior, SystemClock, ToolOutcome
from interrupt_sidecar.osedge.process_groups import ProcessGroups
from interrupt_sidecar.runtime import events
from interrupt_sidecar.runtime.trip_path import TripPath
from interrupt_sidecar.runtime.watch import WatchHub

pytestmark = pytest.mark.timeout(10)


async def test_a_tool_that_reports_after_the_end_leaves_nothing_in_the_hub() -> None:
    clock = SystemClock()
    hub = WatchHub(clock)
    trip_path = TripPath(clock, ProcessGroups(), hub)
    coordinator = Coordinator(trip_path, clock, default_grace_ns=1_000_000_000)
    execution, _ = coordinator.begin(ExecutionSpec())
    execution_id = execution.execution_id
    tool = execution.attach(
        tool_id="late", tool_name="late", tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0
    )
    assert hub.last_sequence(execution_id) == 1  # ToolAttached
    coordinator.end(execution_id)
    assert trip_path.done(execution)
    assert hub.last_sequence(execution_id) == 0, "a done execution's numbering is dropped"

    execution.unwound(tool, ToolOutcome.COMPLETED)
    execution.detach(tool)
    assert hub.last_sequence(execution_id) == 0, "the hub took events of a done execution and remembers it again"
    # A callback terminator's failure reported after the end goes the same way.
    trip_path.publish(execution, events.TerminatorFailed(tool.tool_id, "cb", "it failed"))
    assert hub.last_sequence(execution_id) == 0

    watcher = hub.subscribe(execution_id, done=trip_path.done(execution))
    assert await watcher.next() is None
