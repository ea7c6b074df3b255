"""daemon_restart, Python: see README.md beside this file."""

import contextlib

from interrupt_sidecar_client import InterruptBehavior, SidecarError, attach

from tests.conformance.driverlib import TOOL_NAME, emit, refusal_code, wait_go

run = attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name=TOOL_NAME, interrupt_worker=False)
emit("attached", cancelled=run.signal.is_cancelled)
wait_go()
code = refusal_code(lambda: run.registrar.register(lambda: None, terminator_id="after_restart"))
emit("after_restart", error_code=code, cancelled=run.signal.is_cancelled)
with contextlib.suppress(SidecarError):
    run.unwind()  # the stream died with the old daemon; nothing to report to
