/** non_interruptible, TypeScript: see README.md beside this file. */

import { ToolOutcome, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, emit, main, refusalCode, waitGo } from "../driverlib";

main(async () => {
  const run = await attach({ toolName: TOOL_NAME }); // no behaviour: NON_INTERRUPTIBLE
  emit("attached", { cancelled: run.signal.aborted });
  const code = await refusalCode(() => run.registerTerminator(() => undefined, "refused"));
  emit("register", { refused: true, code });
  await waitGo();
  emit("final", { cancelled: run.signal.aborted });
  await run.unwound(ToolOutcome.COMPLETED);
  await run.close();
});
