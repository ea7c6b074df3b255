/** process_group, TypeScript: see README.md beside this file. */

import { InterruptBehavior, ToolOutcome, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, aborted, emit, main, waitFor } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.EXTERNALLY_TERMINATED, toolName: TOOL_NAME });
  // spawn(..., { detached: true }) in a group of its own, registered with the daemon.
  const child = await run.spawn("sleep", ["300"], { stdio: "ignore" });
  emit("started", { pid: child.pid, pgid: child.pgid });
  await waitFor(aborted(run.signal), "the cancel");
  emit("cancelled", { reason: run.cancellation?.reason });
  await waitFor(child.wait(), "the child to exit"); // the daemon signals the group; the tool does nothing
  emit("child_exited");
  await run.unwound(ToolOutcome.INTERRUPTED);
  await run.close();
});
