"""single_shot, Python: see README.md beside this file."""

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, emit, wait_for, wait_go

run = attach(behavior=InterruptBehavior.COOPERATIVE, tool_name=TOOL_NAME)
notifications: list[int] = []
run.signal.on_cancel(lambda: notifications.append(1))
emit("attached", cancelled=run.signal.is_cancelled)
wait_for(run.signal.event, "the cancel")
assert run.signal.reason is not None
emit("cancelled", reason=run.signal.reason.name)
wait_go()
emit("final", reason=run.signal.reason.name, notifications=len(notifications))
run.unwind(ToolOutcome.INTERRUPTED)
