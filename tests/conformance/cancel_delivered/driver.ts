/** cancel_delivered, TypeScript: see README.md beside this file. */

import { CancelledExecution, InterruptBehavior, ToolOutcome, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, aborted, emit, main, waitFor } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.COOPERATIVE, toolName: TOOL_NAME });
  emit("attached", { cancelled: run.signal.aborted });
  await waitFor(aborted(run.signal), "the cancel");
  const cancelled = run.signal.reason as CancelledExecution;
  emit("cancelled", { reason: cancelled.reason, detail: cancelled.detail });
  await run.unwound(ToolOutcome.INTERRUPTED);
  await run.close();
});
