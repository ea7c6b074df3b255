"""process_group, Python: see README.md beside this file."""

import subprocess

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, WAIT, emit, fail, wait_for

run = attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, tool_name=TOOL_NAME)
with run.registrar.popen(["sleep", "300"]) as child:
    pid = child.process.pid
    emit("started", pid=pid, pgid=pid)  # start_new_session: the child leads its own group
    wait_for(run.signal.event, "the cancel")
    assert run.signal.reason is not None
    emit("cancelled", reason=run.signal.reason.name)
    try:
        child.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        fail(f"the child {pid} was still running {WAIT}s after the cancel")
    emit("child_exited")
run.unwind(ToolOutcome.INTERRUPTED)
