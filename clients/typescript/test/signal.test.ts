// The order a trip keeps, pinned: the same guarantee as the other clients' signals (waiters
// wake after the listeners registered before the trip), given here by the platform, since an
// AbortSignal dispatches "abort" synchronously, inside abort().
import assert from "node:assert/strict";
import { once } from "node:events";
import { describe, it } from "node:test";

import { InterruptBehavior, InterruptReason, attach } from "../src";

describe("the signal's trip", { timeout: 10_000 }, () => {
  it("runs every abort listener before any code awaiting the signal resumes", async () => {
    // No token: a no-op run, tripped by hand as the stream reader would trip it.
    const run = await attach({ behavior: InterruptBehavior.COOPERATIVE });
    const order: string[] = [];
    // Awaiting since before the listeners were added: a promise continuation, a microtask,
    // which cannot run before abort() has returned.
    const woken = once(run.signal, "abort").then(() => [...order]);
    run.signal.addEventListener("abort", () => order.push(`first ${run.cancellation?.reason}`));
    run.signal.addEventListener("abort", () => order.push(`second aborted=${run.signal.aborted}`));
    run.trip({ reason: InterruptReason.USER_SIGINT, detail: "" });
    order.push("trip returned");
    assert.deepEqual(await woken, ["first USER_SIGINT", "second aborted=true", "trip returned"]);

    // Unlike the other clients' listeners, one added after the trip never runs: the
    // platform's rule. Check signal.aborted first.
    let late = 0;
    run.signal.addEventListener("abort", () => late++);
    run.trip({ reason: InterruptReason.NOW_PRIORITY_INPUT, detail: "" }); // single-shot: nothing
    assert.equal(late, 0);
    assert.equal(run.cancellation?.reason, InterruptReason.USER_SIGINT);
    await run.close();
  });
});
