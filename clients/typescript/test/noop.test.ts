import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, it } from "node:test";

import { FailedPrecondition, InterruptBehavior, NotFound, ToolOutcome, attach, defaultAddress, withRun } from "../src";
import { resolveTool } from "../src/config";

const saved = { ...process.env };

beforeEach(() => {
  delete process.env["INTERRUPT_SIDECAR_TOKEN"];
  delete process.env["INTERRUPT_SIDECAR_ADDRESS"];
  delete process.env["INTERRUPT_SIDECAR_DOORBELL"];
});

afterEach(() => {
  process.env = { ...saved };
});

describe("configuration", () => {
  it("is no-op without a token, even with an address", () => {
    process.env["INTERRUPT_SIDECAR_ADDRESS"] = "unix:///nowhere.sock";
    assert.equal(resolveTool(), undefined);
  });

  it("takes the environment, explicit options first", () => {
    process.env["INTERRUPT_SIDECAR_TOKEN"] = "tok";
    process.env["INTERRUPT_SIDECAR_ADDRESS"] = "unix:///a.sock";
    assert.deepEqual(resolveTool(), { address: "unix:///a.sock", token: "tok", doorbell: true });
    assert.deepEqual(resolveTool("127.0.0.1:1", ""), { address: "127.0.0.1:1", token: "", doorbell: false });
  });

  it("defaults to the daemon's socket", () => {
    process.env["XDG_RUNTIME_DIR"] = "/run/user/7";
    assert.equal(defaultAddress(), "unix:///run/user/7/interrupt-sidecar/sidecar.sock");
    delete process.env["XDG_RUNTIME_DIR"];
    assert.equal(defaultAddress(), `unix:///tmp/interrupt-sidecar-${process.getuid!()}/sidecar.sock`);
  });
});

describe("no-op mode (no token)", () => {
  it("gives a signal that never aborts and is not attached", async () => {
    const run = await attach({ behavior: InterruptBehavior.COOPERATIVE });
    assert.equal(run.attached, false);
    assert.equal(run.signal.aborted, false);
    assert.equal(run.executionId, undefined);
    run.checkpoint();
    await run.close();
  });

  it("refuses what the behaviour forbids, like the daemon", async () => {
    const plain = await attach();
    assert.equal(plain.behavior, "NON_INTERRUPTIBLE");
    await assert.rejects(plain.registerTerminator(() => undefined), FailedPrecondition);
    const cooperative = await attach({ behavior: InterruptBehavior.COOPERATIVE });
    await assert.rejects(cooperative.registerTerminator(() => undefined), FailedPrecondition);
    const threads = await attach({ behavior: InterruptBehavior.THREAD_INTERRUPT });
    await assert.rejects(threads.registerProcessGroup(12345), FailedPrecondition);
    await assert.rejects(threads.spawn("true"), FailedPrecondition);
  });

  it("accepts terminators, never runs them, and closes the registrar at unwound", async () => {
    const run = await attach({ behavior: InterruptBehavior.THREAD_INTERRUPT });
    let ran = 0;
    const terminator = await run.registerTerminator(() => ran++);
    assert.equal(terminator.terminatorId, "callback-1");
    await assert.rejects(run.registerTerminator(() => ran++, "callback-1"), { name: "AlreadyExists" });
    await run.unregisterTerminator(terminator);
    await run.unregisterTerminator(terminator); // idempotent
    await run.unwound(ToolOutcome.COMPLETED);
    assert.equal(run.isUnwound, true);
    await assert.rejects(run.registerTerminator(() => ran++), FailedPrecondition);
    await run.close();
    assert.equal(ran, 0);
  });

  it("spawns a child in a group of its own", async () => {
    const run = await attach({ behavior: InterruptBehavior.EXTERNALLY_TERMINATED });
    const child = await run.spawn("sleep", ["30"], { stdio: "ignore" });
    assert.equal(child.pgid, child.pid);
    assert.ok(child.terminator !== undefined);
    assert.equal(child.running, true);
    await child.close(); // unregisters and SIGKILLs the still-running group
    assert.deepEqual(await child.exited, { code: null, signal: "SIGKILL" });
    await assert.rejects(run.registerProcessGroup(2 ** 22 + 7), NotFound);
    await run.close();
  });

  it("withRun returns the body's value and rethrows its errors", async () => {
    assert.equal(await withRun({}, () => 42), 42);
    await assert.rejects(
      withRun({}, () => {
        throw new Error("boom");
      }),
      /boom/,
    );
  });
});
