/** attach_after_trip, TypeScript: see README.md beside this file. */

import { InterruptBehavior, ToolOutcome, attach, isCancelledExecution } from "@interrupt-sidecar/client";

import { TOOL_NAME, emit, main } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.COOPERATIVE, toolName: TOOL_NAME });
  const reason: unknown = run.signal.reason; // the signal as it is when attach has returned
  emit("attached", { cancelled: run.signal.aborted, reason: isCancelledExecution(reason) ? reason.reason : null });
  await run.unwound(ToolOutcome.INTERRUPTED);
  await run.close();
});
