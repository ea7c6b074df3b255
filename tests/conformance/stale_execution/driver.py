"""stale_execution, Python: see README.md beside this file."""

import os

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, emit, wait_for, wait_go

stale = attach(behavior=InterruptBehavior.COOPERATIVE, tool_name=TOOL_NAME, token=os.environ["CONFORMANCE_STALE_TOKEN"])
current = attach(behavior=InterruptBehavior.COOPERATIVE, tool_name=TOOL_NAME)
emit("attached", stale_cancelled=stale.signal.is_cancelled, current_cancelled=current.signal.is_cancelled)
wait_for(stale.signal.event, "the stale execution's cancel")
assert stale.signal.reason is not None
emit("stale_cancelled", reason=stale.signal.reason.name)
wait_go()
emit("current", cancelled=current.signal.is_cancelled)
wait_for(current.signal.event, "the current execution's cancel")
assert current.signal.reason is not None
emit("current_cancelled", reason=current.signal.reason.name)
stale.unwind(ToolOutcome.INTERRUPTED)
current.unwind(ToolOutcome.INTERRUPTED)
