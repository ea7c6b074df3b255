/**
 * Against a real daemon: `interrupt-sidecar serve` on a temporary unix socket. The daemon
 * comes from INTERRUPT_SIDECAR_BIN, else the repository's .venv (`make install` at the
 * root); without either these tests are skipped.
 */

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";

import { credentials, type ServiceError } from "@grpc/grpc-js";

import * as pb from "../gen/interrupt/v1/interrupt";
import {
  CancelledExecution,
  FailedPrecondition,
  InterruptBehavior,
  NotFound,
  PermissionDenied,
  ToolOutcome,
  Unauthenticated,
  Unavailable,
  attach,
  cancelledExecutionOf,
  withRun,
} from "../src";

const ROOT = path.resolve(__dirname, "..", "..", "..", "..");
const BIN = process.env["INTERRUPT_SIDECAR_BIN"] ?? path.join(ROOT, ".venv", "bin", "interrupt-sidecar");
const skip = existsSync(BIN) ? false : `no daemon to test against (${BIN} is missing)`;

let daemon: ChildProcess | undefined;
let directory = "";
let address = "";
let coordinator: pb.CoordinatorServiceClient;

function unary<Req, Res>(method: (request: Req, callback: (error: ServiceError | null, response: Res) => void) => unknown, request: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(coordinator, request, (error: ServiceError | null, response: Res) => (error ? reject(error) : resolve(response)));
  });
}

async function begin(): Promise<{ executionId: string; attachToken: string }> {
  return unary(coordinator.beginExecution, pb.BeginExecutionRequest.fromPartial({}));
}

async function interrupt(executionId: string, reason: pb.InterruptReason, detail = ""): Promise<pb.InterruptResponse> {
  return unary(coordinator.interrupt, pb.InterruptRequest.fromPartial({ target: { $case: "executionId", executionId }, reason, detail }));
}

/** Events of an execution, collected from the moment of the call (the watch starts at once). */
function watch(executionId: string): { events: pb.ExecutionEvent[]; until(kind: string): Promise<pb.ExecutionEvent>; stop(): void } {
  const events: pb.ExecutionEvent[] = [];
  const call = coordinator.watchExecution(pb.WatchExecutionRequest.fromPartial({ executionId }));
  const waiters: [string, (event: pb.ExecutionEvent) => void][] = [];
  call.on("data", (event: pb.ExecutionEvent) => {
    events.push(event);
    for (const [kind, resolve] of waiters) {
      if (event.event?.$case === kind) resolve(event);
    }
  });
  call.on("error", () => undefined);
  return {
    events,
    until: (kind) =>
      new Promise((resolve) => {
        const seen = events.find((event) => event.event?.$case === kind);
        if (seen) resolve(seen);
        else waiters.push([kind, resolve]);
      }),
    stop: () => call.cancel(),
  };
}

/** `interrupt-sidecar serve` on a unix socket in a fresh directory, once it says "ready". */
async function startDaemon(): Promise<{ process: ChildProcess; directory: string; address: string }> {
  const directory = mkdtempSync(path.join(tmpdir(), "isd-ts-"));
  const address = `unix://${path.join(directory, "s.sock")}`;
  // --doorbell auto whatever the environment says: the daemon reads INTERRUPT_SIDECAR_DOORBELL
  // too, and a tool's opt-out (`0`) is no value it accepts.
  const child = spawn(BIN, ["serve", "--listen", address, "--metrics-listen", "", "--doorbell", "auto"], { stdio: ["ignore", "pipe", "ignore"] });
  const lines = createInterface({ input: child.stdout! });
  const ready = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the daemon exited with ${code}`)));
  });
  assert.match(ready, /^ready /);
  return { process: child, directory, address };
}

/** True while a non-zombie process of the group exists (zombies wait for a reaper, not for us). */
function groupAlive(pgid: number): boolean {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z") return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

describe("against a real daemon", { skip, timeout: 60_000 }, () => {
  before(async () => {
    const started = await startDaemon();
    ({ directory, address } = started);
    daemon = started.process;
    coordinator = new pb.CoordinatorServiceClient(address, credentials.createInsecure());
  });

  after(() => {
    coordinator?.close();
    daemon?.kill("SIGTERM");
    rmSync(directory, { recursive: true, force: true });
  });

  it("aborts the signal with the reason and detail, and AbortSignal consumers stop", async () => {
    const turn = await begin();
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.COOPERATIVE, toolName: "ts-test" });
    assert.equal(run.attached, true);
    assert.equal(run.executionId, turn.executionId);
    assert.equal(run.graceMs, 500);
    const waiting = sleep(30_000, undefined, { signal: run.signal });
    // Expect the rejection before interrupting: the cancel and the Interrupt's answer travel
    // on different streams, and the daemon writes the cancel first, so `waiting` may reject
    // before `interrupt` resolves (and would be an unhandled rejection until then).
    const rejected = assert.rejects(waiting, (error: unknown) => {
      const cancelled = cancelledExecutionOf(error);
      assert.ok(cancelled instanceof CancelledExecution);
      assert.equal(cancelled, run.signal.reason);
      assert.equal(cancelled.reason, "USER_SIGINT");
      assert.equal(cancelled.detail, "Ctrl+C");
      return true;
    });
    await interrupt(turn.executionId, pb.InterruptReason.INTERRUPT_REASON_USER_SIGINT, "Ctrl+C");
    await rejected;
    assert.equal(run.cancellation?.reason, "USER_SIGINT");
    assert.ok(run.cancellation?.trippedAt instanceof Date);
    assert.throws(() => run.checkpoint(), CancelledExecution);
    await run.close();
  });

  it("reports unwound with the outcome the tool gives", async () => {
    const turn = await begin();
    const events = watch(turn.executionId);
    await events.until("snapshot");
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.COOPERATIVE, toolName: "ts-test" });
    await run.unwound(ToolOutcome.FAILED, "it broke");
    await run.close();
    const unwound = await events.until("toolUnwound");
    assert.equal(unwound.event?.$case === "toolUnwound" && unwound.event.toolUnwound.outcome, pb.ToolOutcome.TOOL_OUTCOME_FAILED);
    events.stop();
  });

  it("withRun reports INTERRUPTED for the run's own cancel", async () => {
    const turn = await begin();
    const events = watch(turn.executionId);
    await events.until("snapshot");
    const body = withRun({ address, token: turn.attachToken, behavior: InterruptBehavior.COOPERATIVE }, async (run) => {
      await sleep(30_000, undefined, { signal: run.signal });
    });
    await events.until("toolAttached");
    // Expected before interrupting: the body may reject before the Interrupt's answer arrives.
    const rejected = assert.rejects(body, (error: unknown) => cancelledExecutionOf(error)?.reason === "TASK_CANCELLED");
    await interrupt(turn.executionId, pb.InterruptReason.INTERRUPT_REASON_TASK_CANCELLED);
    await rejected;
    const unwound = await events.until("toolUnwound");
    assert.equal(unwound.event?.$case === "toolUnwound" && unwound.event.toolUnwound.outcome, pb.ToolOutcome.TOOL_OUTCOME_INTERRUPTED);
    events.stop();
  });

  it("runs terminators in order; a failing or hanging one holds up no other", async () => {
    const turn = await begin();
    const events = watch(turn.executionId);
    await events.until("snapshot");
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.THREAD_INTERRUPT });
    const order: string[] = [];
    await run.registerTerminator(() => {
      order.push("throws");
      throw new Error("nope");
    }, "throws");
    await run.registerTerminator(() => {
      order.push("hangs");
      return new Promise(() => undefined);
    }, "hangs");
    const last = new Promise<void>((resolve) => {
      void run.registerTerminator(() => {
        order.push("last");
        resolve();
      }, "last");
    });
    await sleep(50);
    const started = Date.now();
    await interrupt(turn.executionId, pb.InterruptReason.INTERRUPT_REASON_USER_SIGINT);
    await last;
    assert.ok(Date.now() - started < 2_000);
    assert.deepEqual(order, ["throws", "hangs", "last"]);
    const failed = await events.until("terminatorFailed");
    assert.equal(failed.event?.$case === "terminatorFailed" && failed.event.terminatorFailed.terminatorId, "throws");
    events.stop();
    await run.close();
  });

  it("runs a terminator registered after the trip at once", async () => {
    const turn = await begin();
    await interrupt(turn.executionId, pb.InterruptReason.INTERRUPT_REASON_BUDGET_EXCEEDED);
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.THREAD_INTERRUPT });
    assert.equal(run.signal.aborted, true);
    assert.equal(run.cancellation?.reason, "BUDGET_EXCEEDED");
    await new Promise<void>((resolve) => void run.registerTerminator(resolve, "late"));
    await run.close();
  });

  it("lets the daemon kill a spawned process group", async () => {
    const turn = await begin();
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.EXTERNALLY_TERMINATED });
    // A shell that ignores SIGTERM, with a grandchild in the same group: SIGKILL follows.
    const child = await run.spawn("sh", ["-c", "trap '' TERM; echo ready; sleep 300 & wait"], {
      stdio: ["ignore", "pipe", "ignore"],
      terminator: { killAfterMs: 200 },
    });
    await once(createInterface({ input: child.child.stdout! }), "line"); // the trap is set
    await interrupt(turn.executionId, pb.InterruptReason.INTERRUPT_REASON_USER_SIGINT);
    const exit = await child.wait();
    assert.equal(exit.signal, "SIGKILL");
    for (let i = 0; groupAlive(child.pgid) && i < 100; i++) {
      await sleep(20);
    }
    assert.equal(groupAlive(child.pgid), false);
    await run.close();
  });

  it("refuses registrations after unwound with FAILED_PRECONDITION", async () => {
    const turn = await begin();
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.EXTERNALLY_TERMINATED });
    await run.unwound();
    await assert.rejects(run.registerTerminator(() => undefined), { name: "FailedPrecondition", codeName: "FAILED_PRECONDITION" });
    await run.close();
  });

  it("surfaces the daemon's refusals of a registration", async () => {
    const turn = await begin();
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.EXTERNALLY_TERMINATED });
    await assert.rejects(run.registerProcessGroup(1), { name: "InvalidArgument" });
    await assert.rejects(run.registerProcessGroup(2 ** 22 + 7), NotFound);
    await run.close();
  });

  it("maps a refused attach to typed errors", async () => {
    const turn = await begin();
    await assert.rejects(attach({ address, token: "" }), Unauthenticated);
    const [prefix, , secret] = turn.attachToken.split(".");
    await assert.rejects(attach({ address, token: `${prefix}.0000000000000000.${secret}` }), (error: unknown) => error instanceof NotFound || error instanceof PermissionDenied);
    await assert.rejects(attach({ address, token: `${turn.attachToken}x` }), PermissionDenied);
    await assert.rejects(attach({ address: `unix://${path.join(directory, "none.sock")}`, token: "t" }), Unavailable);
  });

  it("refuses registrations once the execution has ended, without tripping the signal", async () => {
    const turn = await begin();
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.THREAD_INTERRUPT });
    await unary(coordinator.endExecution, pb.EndExecutionRequest.fromPartial({ executionId: turn.executionId }));
    await assert.rejects(run.registerTerminator(() => undefined), FailedPrecondition);
    assert.equal(run.signal.aborted, false);
    await run.close();
  });

  it("reports UNAVAILABLE, and does not trip, when the daemon dies under the tool", async () => {
    const own = await startDaemon();
    try {
      const client = new pb.CoordinatorServiceClient(own.address, credentials.createInsecure());
      const turn = await new Promise<pb.BeginExecutionResponse>((resolve, reject) =>
        client.beginExecution(pb.BeginExecutionRequest.fromPartial({}), (error, response) => (error ? reject(error) : resolve(response))),
      );
      client.close();
      const run = await attach({ address: own.address, token: turn.attachToken, behavior: InterruptBehavior.THREAD_INTERRUPT });
      own.process.kill("SIGKILL");
      await once(own.process, "exit");
      await assert.rejects(run.registerTerminator(() => undefined), (error: unknown) => {
        assert.ok(error instanceof Unavailable, String(error));
        assert.equal(error.codeName, "UNAVAILABLE");
        return true;
      });
      assert.equal(run.signal.aborted, false);
      await run.close(); // never rejects for a dead daemon
    } finally {
      own.process.kill("SIGKILL");
      rmSync(own.directory, { recursive: true, force: true });
    }
  });
});
