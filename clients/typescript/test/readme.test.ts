// The README's complete tool, compiled and run in no-op mode (no token): it must type-check and work.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { once } from "node:events";
import { it } from "node:test";

import { InterruptBehavior, cancelledExecutionOf, withRun } from "../src";

async function fetchPage(url: string): Promise<string> {
  try {
    return await withRun({ behavior: InterruptBehavior.COOPERATIVE, toolName: "fetch" }, async (run) => {
      const response = await fetch(url, { signal: run.signal }); // aborts at the trip
      return await response.text();
    }); // reported unwound: COMPLETED, INTERRUPTED or FAILED
  } catch (error) {
    const cancelled = cancelledExecutionOf(error);
    if (cancelled) return `Fetch interrupted: ${cancelled.reason}`; // e.g. NOW_PRIORITY_INPUT
    throw error;
  }
}

it("runs the README's tool without a sidecar", async () => {
  delete process.env["INTERRUPT_SIDECAR_TOKEN"];
  const server = createServer((_, response) => response.end("hello"));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  try {
    assert.equal(await fetchPage(`http://127.0.0.1:${port}/`), "hello");
  } finally {
    server.close();
  }
});
