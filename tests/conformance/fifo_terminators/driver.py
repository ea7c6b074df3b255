"""fifo_terminators, Python: see README.md beside this file."""

import functools
import threading

from interrupt_sidecar_client import InterruptBehavior, ToolOutcome, attach

from tests.conformance.driverlib import TOOL_NAME, emit, wait_for

IDS = ["first", "second", "third"]
run = attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name=TOOL_NAME, interrupt_worker=False)
order: list[str] = []
all_ran = threading.Event()


def terminator(terminator_id: str) -> None:
    order.append(terminator_id)
    if len(order) == len(IDS):
        all_ran.set()


for terminator_id in IDS:
    run.registrar.register(functools.partial(terminator, terminator_id), terminator_id=terminator_id)
emit("registered", terminator_ids=IDS)
wait_for(all_ran, "all three terminators")
emit("terminators_ran", order=order)
run.unwind(ToolOutcome.INTERRUPTED)
