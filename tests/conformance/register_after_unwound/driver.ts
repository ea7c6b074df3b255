/** register_after_unwound, TypeScript: see README.md beside this file. */

import { InterruptBehavior, ToolOutcome, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, emit, main, refusalCode } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.THREAD_INTERRUPT, toolName: TOOL_NAME });
  emit("attached", { cancelled: run.signal.aborted });
  await run.unwound(ToolOutcome.COMPLETED); // the stream stays open until close()
  const code = await refusalCode(() => run.registerTerminator(() => undefined, "too_late"));
  emit("register", { refused: true, code });
  await run.close();
});
