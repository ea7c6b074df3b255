/** leave_at_trip, TypeScript: see README.md beside this file. */

import { setTimeout as sleep } from "node:timers/promises";

import { InterruptBehavior, cancelledExecutionOf, withRun } from "@interrupt-sidecar/client";

import { TOOL_NAME, WAIT_MS, aborted, emit, fail, main, waitFor } from "../driverlib";

main(async () => {
  try {
    // The README's way: withRun reports unwound (INTERRUPTED for the run's own cancel) and
    // closes the run once the body has thrown.
    await withRun({ behavior: InterruptBehavior.THREAD_INTERRUPT, toolName: TOOL_NAME }, async (run) => {
      await run.registerTerminator(async () => {
        await sleep(100); // still running when the work has already ended
        throw new Error("the child would not stop");
      }, "slow_failing");
      emit("registered", { terminator_id: "slow_failing" });
      // The work: it leaves at once when the trip aborts the signal, without waiting for the terminator.
      await waitFor(aborted(run.signal), "the cancel");
      run.checkpoint(); // throws the CancelledExecution
    });
    fail(`the trip did not interrupt the work within ${WAIT_MS} ms`);
  } catch (error) {
    const cancelled = cancelledExecutionOf(error);
    if (cancelled === undefined) {
      throw error;
    }
    emit("ended", { reason: cancelled.reason });
  }
});
