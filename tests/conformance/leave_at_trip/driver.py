"""leave_at_trip, Python: see README.md beside this file."""

import time

from interrupt_sidecar_client import CancelledExecution, InterruptBehavior, attach

from tests.conformance.driverlib import TOOL_NAME, WAIT, emit, fail


def slow_failing() -> None:
    time.sleep(0.1)  # still running when the work has already ended
    raise RuntimeError("the child would not stop")


try:
    # THREAD_INTERRUPT: the trip interrupts this thread, which leaves the block at once.
    with attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name=TOOL_NAME) as run:
        run.registrar.register(slow_failing, terminator_id="slow_failing")
        emit("registered", terminator_id="slow_failing")
        time.sleep(WAIT)
    fail(f"the trip did not interrupt the work within {WAIT}s")
except CancelledExecution as cancelled:
    reason = cancelled.reason
    emit("ended", reason=reason.name if reason is not None else None)
