"""non_interruptible, Python: see README.md beside this file."""

from interrupt_sidecar_client import attach

from tests.conformance.driverlib import TOOL_NAME, emit, refusal_code, wait_go

run = attach(tool_name=TOOL_NAME)  # no behaviour declared: NON_INTERRUPTIBLE
emit("attached", cancelled=run.signal.is_cancelled)
code = refusal_code(lambda: run.registrar.register(lambda: None, terminator_id="refused"))
emit("register", refused=True, code=code)
wait_go()
emit("final", cancelled=run.signal.is_cancelled)
run.unwind()
