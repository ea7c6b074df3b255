/**
 * The Vercel AI SDK adapter against a real daemon (`interrupt-sidecar serve` on a temporary
 * unix socket, as test/daemon.test.ts starts it) with the real `ai` package and its offline
 * `MockLanguageModelV4` (`ai/test`): the interrupt stops an async tool (its abortSignal
 * aborts) and a tool's process tree (a setsid grandchild included, checked in /proc), the SDK
 * call returns within the grace plus a margin, the model's history shows the interrupted
 * result, a tool call of the tripped turn is refused, and the next turn works — for
 * `generateText` and `streamText`.
 *
 * `ai` is ESM only: this CommonJS test loads it with `import()` (the adapter itself never does).
 */

import assert from "node:assert/strict";
import { spawn as spawnChild, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";

import { credentials, type ServiceError } from "@grpc/grpc-js";

import * as pb from "../gen/interrupt/v1/interrupt";
import { TurnInterrupted, bridgeStdio, interruptedText, runTurn, spawn, type Turn } from "../src/adapters/ai-sdk";
import { InterruptReason } from "../src";

type AI = typeof import("ai", { with: { "resolution-mode": "import" } });
type AITest = typeof import("ai/test", { with: { "resolution-mode": "import" } });

const ROOT = path.resolve(__dirname, "..", "..", "..", "..");
const BIN = process.env["INTERRUPT_SIDECAR_BIN"] ?? path.join(ROOT, ".venv", "bin", "interrupt-sidecar");
const skip = existsSync(BIN) ? false : `no daemon to test against (${BIN} is missing)`;
const GRACE_MS = 500;
/** The SDK call returns within the grace plus this (the tool answers at the trip; the margin is for a loaded machine). */
const MARGIN_MS = 1_500;

let daemon: ChildProcess | undefined;
let directory = "";
let address = "";
let coordinator: pb.CoordinatorServiceClient;
let ai: AI;
let aiTest: AITest;

function interrupt(executionId: string): Promise<pb.InterruptResponse> {
  return new Promise((resolve, reject) => {
    coordinator.interrupt(
      pb.InterruptRequest.fromPartial({ target: { $case: "executionId", executionId }, reason: pb.InterruptReason.INTERRUPT_REASON_USER_SIGINT, detail: "Esc" }),
      (error: ServiceError | null, response: pb.InterruptResponse) => (error ? reject(error) : resolve(response)),
    );
  });
}

/** A promise with its resolver: a latch the test waits on instead of sleeping. */
function latch<T = undefined>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function stat(pid: number): { ppid: number; state: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0]!, ppid: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

/** True while the process exists and is no zombie (zombies wait for a reaper, not for us). */
function alive(pid: number): boolean {
  const s = stat(pid);
  return s !== undefined && s.state !== "Z";
}

function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((candidate) => stat(candidate)?.ppid === pid);
}

async function poll<T>(what: string, deadlineMs: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** What a tripped turn's tools saw. */
interface Probe {
  waitStarted: ReturnType<typeof latch>;
  waitAborted: ReturnType<typeof latch<unknown>>;
  shellPids: ReturnType<typeof latch<number[]>>;
}

/** An async tool waiting on its abortSignal, and a shell tool whose tree is `sleep & setsid sleep`. */
function trippingTools(probe: Probe) {
  return {
    wait: ai.tool({
      description: "wait until aborted",
      inputSchema: ai.jsonSchema<{ seconds: number }>({ type: "object", properties: { seconds: { type: "number" } } }),
      execute: async (_input, { abortSignal }) => {
        probe.waitStarted.resolve(undefined);
        await once(abortSignal!, "abort").catch(() => undefined);
        probe.waitAborted.resolve(abortSignal!.reason);
        return "finished after the abort (never shown to the model)";
      },
    }),
    shell: ai.tool({
      description: "run a shell command",
      inputSchema: ai.jsonSchema<{ command: string }>({ type: "object", properties: { command: { type: "string" } } }),
      execute: async ({ command }) => {
        const child = await spawn("sh", ["-c", command], { stdio: "ignore" });
        const sh = child.process.pid;
        // Both sleeps started: the plain one (in the group) and the setsid one (a session of its own).
        const sleeps = await poll("the two sleeps", 5_000, () => {
          const found = childrenOf(sh);
          return found.length >= 2 ? found : undefined;
        });
        probe.shellPids.resolve([sh, ...sleeps]);
        const exit = await child.wait();
        return `exit ${exit.code ?? exit.signal}`;
      },
    }),
  };
}

const TREE = "sleep 30 & setsid sleep 31 & wait";
const TOOL_CALLS = [
  { type: "tool-call" as const, toolCallId: "call-wait", toolName: "wait", input: JSON.stringify({ seconds: 30 }) },
  { type: "tool-call" as const, toolCallId: "call-shell", toolName: "shell", input: JSON.stringify({ command: TREE }) },
];

/** The checks every tripped turn gets, whichever SDK call it ran. */
async function checkTripped(stopped: unknown, probe: Probe, elapsedMs: number, pids: number[], limitMs = GRACE_MS + MARGIN_MS): Promise<TurnInterrupted> {
  assert.ok(stopped instanceof TurnInterrupted, `expected TurnInterrupted, got ${String(stopped)}`);
  assert.equal(stopped.reason, InterruptReason.USER_SIGINT);
  assert.equal(stopped.detail, "Esc");
  assert.ok(elapsedMs < limitMs, `the turn took ${elapsedMs} ms after the trip`);
  // The async tool's own abortSignal aborted, with the daemon's reason.
  const reason = await probe.waitAborted.promise;
  assert.equal((reason as { reason?: string }).reason, InterruptReason.USER_SIGINT);
  // The whole tree is gone, the setsid grandchild included.
  await poll("the tool's processes to be gone", 3_000, () => (pids.every((pid) => !alive(pid)) ? true : undefined));
  const text = interruptedText({ reason: InterruptReason.USER_SIGINT, detail: "Esc" }, true);
  assert.equal(text, "Interrupted (USER_SIGINT: Esc): the turn was interrupted and this tool call was stopped before it finished.");
  const byId = new Map(stopped.calls.map((call) => [call.callId, call]));
  for (const id of ["call-wait", "call-shell"]) {
    assert.equal(byId.get(id)?.started, true, id);
    assert.equal(byId.get(id)?.text, text, id);
  }
  // The refused call (made after the trip) says it was not run.
  assert.equal(byId.get("call-late")?.started, false);
  assert.equal(byId.get("call-late")?.text, interruptedText({ reason: InterruptReason.USER_SIGINT, detail: "Esc" }, false));
  // What the model is given for the next turn: each call and its interrupted result.
  const results = stopped.messages.flatMap((message) => (message.role === "tool" ? message.content : []));
  assert.deepEqual(
    results.filter((part) => ["call-wait", "call-shell"].includes(part.toolCallId)).map((part) => [part.toolCallId, part.output]),
    [
      ["call-wait", { type: "error-text", value: text }],
      ["call-shell", { type: "error-text", value: text }],
    ],
  );
  return stopped;
}

/** A tool call of the tripped turn (as the SDK would make it, through the wrapped tools) is refused without running. */
async function callAfterTrip(turn: Turn, tools: ReturnType<typeof trippingTools>): Promise<void> {
  let ran = false;
  const late = turn.tools({ ...tools, wait: { ...tools.wait, execute: async (_input: unknown, _options: unknown) => ((ran = true), "ran") } });
  const answer = await late.wait.execute!({ seconds: 1 }, { toolCallId: "call-late", messages: [], context: undefined });
  assert.equal(ran, false);
  assert.match(String(answer), /^Interrupted \(USER_SIGINT: Esc\): the turn was interrupted, so this tool call was not run\.$/);
}

/** A turn after the tripped one: a tool call and the model's answer, untouched by the trip. */
async function nextTurnWorks(kind: "generate" | "stream"): Promise<void> {
  const echo = {
    echo: ai.tool({
      description: "echo",
      inputSchema: ai.jsonSchema<{ text: string }>({ type: "object", properties: { text: { type: "string" } } }),
      execute: async ({ text }, { abortSignal }) => `${text} (aborted: ${abortSignal?.aborted})`,
    }),
  };
  const call = { type: "tool-call" as const, toolCallId: "call-echo", toolName: "echo", input: JSON.stringify({ text: "hi" }) };
  const result = await runTurn({ address, graceMs: GRACE_MS }, async (turn) => {
    if (kind === "generate") {
      const model = new aiTest.MockLanguageModelV4({
        doGenerate: [
          { content: [call], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] },
          { content: [{ type: "text", text: "all done" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] },
        ],
      });
      const out = await ai.generateText({ model, prompt: "again", tools: turn.tools(echo), stopWhen: ai.stepCountIs(3), abortSignal: turn.abortSignal });
      return { text: out.text, steps: out.steps };
    }
    const model = new aiTest.MockLanguageModelV4({
      doStream: [
        { stream: aiTest.convertArrayToReadableStream([call, { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage }]) },
        {
          stream: aiTest.convertArrayToReadableStream([
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "all done" },
            { type: "text-end", id: "t" },
            { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
          ]),
        },
      ],
    });
    const out = ai.streamText({ model, prompt: "again", tools: turn.tools(echo), stopWhen: ai.stepCountIs(3), abortSignal: turn.abortSignal });
    return { text: await out.text, steps: await out.steps };
  });
  assert.equal(result.text, "all done");
  const outputs = result.steps.flatMap((step) => step.toolResults.map((part) => part.output));
  assert.deepEqual(outputs, ["hi (aborted: false)"]);
}

describe("the AI SDK adapter against a real daemon", { skip, timeout: 120_000 }, () => {
  before(async () => {
    ai = await import("ai");
    aiTest = await import("ai/test");
    directory = mkdtempSync(path.join(tmpdir(), "isd-ai-"));
    address = `unix://${path.join(directory, "s.sock")}`;
    daemon = spawnChild(BIN, ["serve", "--listen", address, "--metrics-listen", "", "--doorbell", "auto"], { stdio: ["ignore", "pipe", "ignore"] });
    const lines = createInterface({ input: daemon.stdout! });
    const ready = await new Promise<string>((resolve, reject) => {
      lines.once("line", resolve);
      daemon!.once("exit", (code) => reject(new Error(`the daemon exited with ${code}`)));
    });
    assert.match(ready, /^ready /);
    coordinator = new pb.CoordinatorServiceClient(address, credentials.createInsecure());
  });

  after(async () => {
    coordinator?.close();
    if (daemon !== undefined && daemon.exitCode === null) {
      daemon.kill("SIGTERM");
      await once(daemon, "exit");
    }
    rmSync(directory, { recursive: true, force: true });
  });

  it("generateText: the trip stops the async tool and the process tree, the call returns, the next turn works", { timeout: 30_000 }, async () => {
    const probe: Probe = { waitStarted: latch(), waitAborted: latch<unknown>(), shellPids: latch<number[]>() };
    // A tool that ignores its abortSignal: without the adapter, generateText would stay
    // pending until this promise settled (issue 30); with it, the call answers at the trip.
    const release = latch();
    const stubbornStarted = latch();
    const tools = {
      ...trippingTools(probe),
      stubborn: ai.tool({
        description: "ignores its abortSignal",
        inputSchema: ai.jsonSchema<object>({ type: "object", properties: {} }),
        execute: async () => {
          stubbornStarted.resolve(undefined);
          await release.promise;
          return "too late";
        },
      }),
    };
    const stubbornCall = { type: "tool-call" as const, toolCallId: "call-stubborn", toolName: "stubborn", input: "{}" };
    const model = new aiTest.MockLanguageModelV4({
      doGenerate: [
        { content: [...TOOL_CALLS, stubbornCall], finishReason: { unified: "tool-calls", raw: undefined }, usage, warnings: [] },
        { content: [{ type: "text", text: "should not be reached" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] },
      ],
    });
    let tripped = 0;
    let sdkReturnedMs = Infinity;
    let pids: number[] = [];
    const steps: { content: { type: string; toolCallId?: string; output?: unknown }[] }[] = [];
    const stopped = await runTurn({ address, graceMs: GRACE_MS }, async (turn) => {
      const call = ai.generateText({
        model,
        prompt: "run it",
        tools: turn.tools(tools),
        stopWhen: ai.stepCountIs(3),
        abortSignal: turn.abortSignal,
        onStepFinish: (step) => void steps.push(step),
      });
      call.catch(() => undefined); // awaited below; not unhandled meanwhile
      await Promise.all([probe.waitStarted.promise, stubbornStarted.promise]);
      pids = await probe.shellPids.promise;
      tripped = Date.now();
      await interrupt(turn.executionId);
      try {
        return await call;
      } finally {
        sdkReturnedMs = Date.now() - tripped;
        await callAfterTrip(turn, tools);
      }
    }).then(
      () => assert.fail("the turn resolved after the trip"),
      (error: unknown) => error,
    );
    try {
      // generateText itself returned within the grace plus the margin, the stubborn tool still running.
      assert.ok(sdkReturnedMs < GRACE_MS + MARGIN_MS, `generateText took ${sdkReturnedMs} ms after the trip`);
      // runTurn waited for the stubborn body at most twice the grace plus UNWIND_MARGIN_MS.
      await checkTripped(stopped, probe, Date.now() - tripped, pids, 2 * GRACE_MS + 1_000 + MARGIN_MS);
      assert.equal((stopped as TurnInterrupted).calls.find((call) => call.callId === "call-stubborn")?.started, true);
      // The SDK rejected with the abort's reason, after it finished the step: the step's
      // tool results are the interrupted texts (onStepFinish saw them), never an empty success.
      assert.equal(((stopped as TurnInterrupted).cause as { name?: string }).name, "CancelledExecution");
      const results = steps.flatMap((step) => step.content.filter((part) => part.type === "tool-result"));
      assert.deepEqual(
        results.map((part) => [part.toolCallId, part.output]),
        ["call-wait", "call-shell", "call-stubborn"].map((id) => [id, (stopped as TurnInterrupted).calls.find((call) => call.callId === id)!.text]),
      );
    } finally {
      release.resolve(undefined);
    }
    await nextTurnWorks("generate");
  });

  it("streamText: the same", { timeout: 30_000 }, async () => {
    const probe: Probe = { waitStarted: latch(), waitAborted: latch<unknown>(), shellPids: latch<number[]>() };
    const tools = trippingTools(probe);
    const model = new aiTest.MockLanguageModelV4({
      doStream: [
        {
          stream: aiTest.convertArrayToReadableStream([...TOOL_CALLS, { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage }]),
        },
      ],
    });
    let tripped = 0;
    let pids: number[] = [];
    const parts: { type: string }[] = [];
    const stopped = await runTurn({ address, graceMs: GRACE_MS }, async (turn) => {
      const result = ai.streamText({ model, prompt: "run it", tools: turn.tools(tools), stopWhen: ai.stepCountIs(3), abortSignal: turn.abortSignal });
      const consumed = (async () => {
        for await (const part of result.fullStream) parts.push(part);
      })();
      consumed.catch(() => undefined);
      await probe.waitStarted.promise;
      pids = await probe.shellPids.promise;
      tripped = Date.now();
      await interrupt(turn.executionId);
      try {
        await consumed;
        return parts;
      } finally {
        await callAfterTrip(turn, tools);
      }
    }).then(
      () => assert.fail("the turn resolved after the trip"),
      (error: unknown) => error,
    );
    await checkTripped(stopped, probe, Date.now() - tripped, pids);
    await nextTurnWorks("stream");
  });

  it("follows an execution the runtime began, and leaves it to the runtime", { timeout: 15_000 }, async () => {
    const begun = await new Promise<pb.BeginExecutionResponse>((resolve, reject) =>
      coordinator.beginExecution(pb.BeginExecutionRequest.fromPartial({}), (error: ServiceError | null, response: pb.BeginExecutionResponse) =>
        error ? reject(error) : resolve(response),
      ),
    );
    const id = await runTurn({ address, execution: begun }, async (turn) => turn.executionId);
    assert.equal(id, begun.executionId);
    // Still running: the runtime ends it.
    const ended = await new Promise<pb.EndExecutionResponse>((resolve, reject) =>
      coordinator.endExecution(pb.EndExecutionRequest.fromPartial({ executionId: id }), (error: ServiceError | null, response: pb.EndExecutionResponse) =>
        error ? reject(error) : resolve(response),
      ),
    );
    assert.equal(ended.execution?.executionId, id);
  });
});

describe("bridgeStdio", () => {
  it("runs a stdio MCP server behind interrupt-sidecar mcp, keeping the rest of its config", () => {
    const config = { type: "stdio", command: "npx", args: ["-y", "mcp-server-commands"], env: { PATH: "/usr/bin" }, cwd: "/srv" };
    assert.deepEqual(bridgeStdio(config, { tokenFile: "/run/agent/turn-token", options: ["--scope", "turn"] }), {
      type: "stdio",
      command: "interrupt-sidecar",
      args: ["mcp", "--scope", "turn", "--", "npx", "-y", "mcp-server-commands"],
      env: { PATH: "/usr/bin", INTERRUPT_SIDECAR_TOKEN_FILE: "/run/agent/turn-token" },
      cwd: "/srv",
    });
    assert.deepEqual(bridgeStdio({ command: "server" }, { bridge: "/opt/bin/interrupt-sidecar" }), {
      command: "/opt/bin/interrupt-sidecar",
      args: ["mcp", "--", "server"],
    });
    assert.deepEqual(config.args, ["-y", "mcp-server-commands"], "the input is not changed");
  });
});

describe("the adapter's packaging", () => {
  const SRC = path.resolve(__dirname, "..", "..", "src");

  function sources(directory: string): string[] {
    return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? sources(path.join(directory, entry.name)) : entry.name.endsWith(".ts") ? [path.join(directory, entry.name)] : [],
    );
  }

  it("is the subpath export @interrupt-sidecar/client/adapters/ai-sdk", () => {
    // The package resolves itself by name through its own "exports".
    assert.equal(require.resolve("@interrupt-sidecar/client/adapters/ai-sdk"), path.resolve(__dirname, "..", "src", "adapters", "ai-sdk.js"));
  });

  it("never imports the SDK, so the client loads without it (ai is an optional peer)", async () => {
    const ts = (await import("typescript")).default;
    const files = sources(SRC);
    assert.ok(files.some((file) => file.endsWith(path.join("adapters", "ai-sdk.ts"))), `the adapter is not in ${SRC}`);
    for (const file of files) {
      for (const { fileName } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
        assert.doesNotMatch(fileName, /^(ai|zod|@ai-sdk\/.*)(\/.*)?$/, `${file} imports ${fileName}`);
      }
    }
  });
});
