/** idiom, TypeScript: see README.md beside this file. The tool sees a plain AbortSignal. */

import { InterruptBehavior, ToolOutcome, attach, isCancelledExecution } from "@interrupt-sidecar/client";

import { TOOL_NAME, WAIT_MS, emit, fail, main } from "../driverlib";

/** Tool code that knows nothing of the sidecar: waits on the signal's abort event. */
function untilAborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no abort within ${WAIT_MS} ms`)), WAIT_MS);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.COOPERATIVE, toolName: TOOL_NAME });
  const signal: AbortSignal = run.signal;
  emit("before", { cancelled: signal.aborted });
  const reason = await untilAborted(signal);
  if (!isCancelledExecution(reason)) {
    fail(`signal.reason is not a CancelledExecution: ${String(reason)}`);
  }
  emit("after", { cancelled: signal.aborted, reason: reason.reason });
  await run.unwound(ToolOutcome.INTERRUPTED);
  await run.close();
});
