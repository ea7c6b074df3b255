"""cancel_delivered, Python: see README.md beside this file."""

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, emit, wait_for

run = attach(behavior=InterruptBehavior.COOPERATIVE, tool_name=TOOL_NAME)
emit("attached", cancelled=run.signal.is_cancelled)
wait_for(run.signal.event, "the cancel")
assert run.signal.reason is not None
emit("cancelled", reason=run.signal.reason.name, detail=run.signal.detail)
run.unwind(ToolOutcome.INTERRUPTED)
