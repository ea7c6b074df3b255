"""register_after_trip, Python: see README.md beside this file."""

import threading

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, emit, wait_for

# interrupt_worker=False: this driver checks the terminator, not the worker interruption
# (the idiom scenario covers that), so the main thread is left alone.
run = attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name=TOOL_NAME, interrupt_worker=False)
emit("attached", cancelled=run.signal.is_cancelled)
wait_for(run.signal.event, "the cancel")
assert run.signal.reason is not None
emit("cancelled", reason=run.signal.reason.name)
ran = threading.Event()
run.registrar.register(ran.set, terminator_id="late")
wait_for(ran, "the late terminator to run")
emit("terminator_ran", terminator_id="late")
run.unwind(ToolOutcome.INTERRUPTED)
