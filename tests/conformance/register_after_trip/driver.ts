/** register_after_trip, TypeScript: see README.md beside this file. */

import { InterruptBehavior, ToolOutcome, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, aborted, emit, main, waitFor } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.THREAD_INTERRUPT, toolName: TOOL_NAME });
  emit("attached", { cancelled: run.signal.aborted });
  await waitFor(aborted(run.signal), "the cancel");
  emit("cancelled", { reason: run.cancellation?.reason });
  const ran = new Promise<string>((resolve) => {
    void run.registerTerminator(() => resolve("late"), "late");
  });
  emit("terminator_ran", { terminator_id: await waitFor(ran, "terminator 'late' to run") });
  await run.unwound(ToolOutcome.INTERRUPTED);
  await run.close();
});
