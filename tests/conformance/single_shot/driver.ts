/** single_shot, TypeScript: see README.md beside this file. */

import { InterruptBehavior, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, aborted, emit, fail, main, waitFor, waitGo } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.COOPERATIVE, toolName: TOOL_NAME });
  let notifications = 0;
  run.signal.addEventListener("abort", () => notifications++);
  emit("attached", { cancelled: run.signal.aborted });
  await waitFor(aborted(run.signal), "the cancel");
  emit("cancelled", { reason: run.cancellation?.reason });
  await waitGo();
  emit("final", { reason: run.cancellation?.reason ?? fail("the signal lost its cancellation"), notifications });
  await run.close();
});
