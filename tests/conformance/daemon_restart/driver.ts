/** daemon_restart, TypeScript: see README.md beside this file. */

import { InterruptBehavior, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, emit, main, refusalCode, waitGo } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.THREAD_INTERRUPT, toolName: TOOL_NAME });
  emit("attached", { cancelled: run.signal.aborted });
  await waitGo(); // meanwhile the daemon is SIGKILLed and a new one started on the same socket
  const code = await refusalCode(() => run.registerTerminator(() => undefined, "after_restart"));
  emit("after_restart", { error_code: code, cancelled: run.signal.aborted });
  await run.close(); // never rejects for a dead daemon
});
