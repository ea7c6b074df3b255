"""attach_after_trip, Python: see README.md beside this file."""

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, emit

run = attach(behavior=InterruptBehavior.COOPERATIVE, tool_name=TOOL_NAME)
reason = run.signal.reason
emit("attached", cancelled=run.signal.is_cancelled, reason=reason.name if reason else None)
run.unwind(ToolOutcome.INTERRUPTED)
