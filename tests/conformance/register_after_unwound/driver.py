"""register_after_unwound, Python: see README.md beside this file.

The Python client closes its registrar when the run unwinds, so the refusal comes from the
client itself, with the daemon's code (PROTOCOL.md allows that).
"""

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, emit, refusal_code

run = attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name=TOOL_NAME, interrupt_worker=False)
emit("attached", cancelled=run.signal.is_cancelled)
run.unwind(ToolOutcome.COMPLETED)
code = refusal_code(lambda: run.registrar.register(lambda: None, terminator_id="too_late"))
emit("register", refused=True, code=code)
