/** stale_execution, TypeScript: see README.md beside this file. */

import { InterruptBehavior, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, aborted, emit, fail, main, waitFor, waitGo } from "../driverlib";

main(async () => {
  const staleToken = process.env["CONFORMANCE_STALE_TOKEN"] ?? fail("CONFORMANCE_STALE_TOKEN is not set");
  const behavior = InterruptBehavior.COOPERATIVE;
  const stale = await attach({ behavior, toolName: TOOL_NAME, token: staleToken });
  const current = await attach({ behavior, toolName: TOOL_NAME }); // INTERRUPT_SIDECAR_TOKEN
  emit("attached", { stale_cancelled: stale.signal.aborted, current_cancelled: current.signal.aborted });
  await waitFor(aborted(stale.signal), "the stale execution's cancel");
  emit("stale_cancelled", { reason: stale.cancellation?.reason });
  await waitGo();
  emit("current", { cancelled: current.signal.aborted });
  await waitFor(aborted(current.signal), "the current execution's cancel");
  emit("current_cancelled", { reason: current.cancellation?.reason });
  await Promise.all([stale.close(), current.close()]); // both aborted: unwound INTERRUPTED
});
