/** fifo_terminators, TypeScript: see README.md beside this file. */

import { InterruptBehavior, ToolOutcome, attach } from "@interrupt-sidecar/client";

import { TOOL_NAME, emit, main, waitFor } from "../driverlib";

main(async () => {
  const run = await attach({ behavior: InterruptBehavior.THREAD_INTERRUPT, toolName: TOOL_NAME });
  const ids = ["first", "second", "third"];
  const order: string[] = [];
  let allRan!: () => void;
  const ran = new Promise<void>((resolve) => (allRan = resolve));
  for (const id of ids) {
    // Each resolves once the daemon has acknowledged it, before the next is registered.
    await run.registerTerminator(() => {
      order.push(id);
      if (order.length === ids.length) {
        allRan();
      }
    }, id);
  }
  emit("registered", { terminator_ids: ids });
  await waitFor(ran, "all three terminators to run");
  emit("terminators_ran", { order });
  await run.unwound(ToolOutcome.INTERRUPTED);
  await run.close();
});
