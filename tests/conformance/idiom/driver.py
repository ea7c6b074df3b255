"""idiom, Python: see README.md beside this file.

Python's idiom is the signal's ``checkpoint()``, which raises ``CancelledExecution``
carrying the reason, and ``await signal.wait()`` on any event loop.
"""

import asyncio

from interrupt_sidecar_client import CancelledExecution, InterruptBehavior, ToolOutcome, aio

from tests.conformance.driverlib import TOOL_NAME, WAIT, emit, fail


async def main() -> None:
    async with aio.attach(behavior=InterruptBehavior.COOPERATIVE, tool_name=TOOL_NAME) as run:
        run.signal.checkpoint()  # not cancelled yet: returns
        emit("before", cancelled=False)
        try:
            async with asyncio.timeout(WAIT):
                await run.signal.wait()
        except TimeoutError:
            fail("timed out waiting for the cancel")
        try:
            run.signal.checkpoint()
        except CancelledExecution as cancelled:
            reason = cancelled.reason
            emit("after", cancelled=True, reason=reason.name if reason else None)
        else:
            fail("checkpoint() returned after the cancel")
        await run.unwind(ToolOutcome.INTERRUPTED)


asyncio.run(main())
