// The Vercel AI SDK with its MockLanguageModelV4 (ai/test): generateText and streamText
// cancelled with their abortSignal's abort() against runTurn of the client's adapter
// (@interrupt-sidecar/client/adapters/ai-sdk, the built client in clients/typescript/dist).
//
// `node bench/frameworks/ai_sdk.mjs CONFIG_JSON`: the same trial as bench/frameworks/common.py
// (read it for the protocol), one JSON line per trial. `ai` and the client are loaded from
// the client's own node_modules (config.client), where its tests find them.
import { spawn as spawnChild } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";

const START_TIMEOUT_MS = 30_000;
const WIND_UP_MS = 10_000;

const config = JSON.parse(process.argv[2]);
const require = createRequire(path.join(config.client, "package.json"));
const ai = await import(pathToFileURL(require.resolve("ai")).href);
const { MockLanguageModelV4, convertArrayToReadableStream } = await import(pathToFileURL(require.resolve("ai/test")).href);
const { runTurn, spawn } = require(path.join(config.client, "dist/src/adapters/ai-sdk.js"));
const pb = require(path.join(config.client, "dist/gen/interrupt/v1/interrupt.js"));
const { credentials } = require("@grpc/grpc-js");

const coordinator = new pb.CoordinatorServiceClient(config.address, credentials.createInsecure());

function emit(line) {
  process.stdout.write(JSON.stringify(line) + "\n");
}

function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return !"ZX".includes(stat[stat.lastIndexOf(")") + 2]);
  } catch {
    return false;
  }
}

function interrupt(contextId) {
  const request = pb.InterruptRequest.fromPartial({
    target: { $case: "contextId", contextId },
    reason: pb.InterruptReason.INTERRUPT_REASON_USER_SIGINT,
    detail: "bench",
  });
  return new Promise((resolve, reject) =>
    coordinator.interrupt(request, (error, response) => {
      if (error) return reject(error);
      if (!response.outcomes.some((o) => o.tripped)) return reject(new Error(`the Interrupt of ${contextId} tripped nothing`));
      resolve(response);
    }),
  );
}

/** One trial's `sh -c "sleep N & setsid sleep M & wait"`, which writes its three pids. */
function tree(name) {
  const pidfile = path.join(config.workdir, `${name}.pids`);
  const [n, m] = [0, 1].map(() => (300 + Math.random()).toFixed(6));
  const script = config.script.replaceAll("{tmp}", `${pidfile}.tmp`).replaceAll("{pidfile}", pidfile).replace("{n}", n).replace("{m}", m);
  return {
    argv: ["sh", "-c", script],
    spawned: false,
    pids() {
      try {
        return readFileSync(pidfile, "utf8").split(/\s+/).filter(Boolean).map(Number);
      } catch {
        return undefined;
      }
    },
  };
}

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const finish = (unified) => ({ unified, raw: undefined });
const CALL = { type: "tool-call", toolCallId: "call-1", toolName: "build", input: JSON.stringify({ target: "all" }) };

function model(kind) {
  if (kind === "generate") {
    return new MockLanguageModelV4({
      doGenerate: [
        { content: [CALL], finishReason: finish("tool-calls"), usage, warnings: [] },
        { content: [{ type: "text", text: "done" }], finishReason: finish("stop"), usage, warnings: [] },
      ],
    });
  }
  const text = [
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "done" },
    { type: "text-end", id: "t" },
    { type: "finish", finishReason: finish("stop"), usage },
  ];
  return new MockLanguageModelV4({
    doStream: [
      { stream: convertArrayToReadableStream([CALL, { type: "finish", finishReason: finish("tool-calls"), usage }]) },
      { stream: convertArrayToReadableStream(text) },
    ],
  });
}

/** The tool: starts the tree and waits on it (the adapter's spawn registers its group first). */
function tools(t, adapter) {
  const inputSchema = ai.jsonSchema({ type: "object", properties: { target: { type: "string" } } });
  return {
    build: ai.tool({
      description: "Run the build.",
      inputSchema,
      execute: async () => {
        if (adapter) {
          const child = await spawn(t.argv[0], t.argv.slice(1), { stdio: "ignore" });
          t.spawned = true;
          const exit = await child.wait();
          return `exit ${exit.code ?? exit.signal}`;
        }
        const child = spawnChild(t.argv[0], t.argv.slice(1), { stdio: "ignore" });
        t.spawned = true;
        const [code, signal] = await once(child, "exit");
        return `exit ${code ?? signal}`;
      },
    }),
  };
}

/** Starts the SDK call (`abortSignal`: the caller's); the promise settles when the call returned. */
function sdkCall(kind, t, adapter, abortSignal, toolsFor = (x) => x) {
  const options = { model: model(kind), prompt: "build it", tools: toolsFor(tools(t, adapter)), stopWhen: ai.stepCountIs(3), abortSignal };
  if (kind === "generate") return ai.generateText(options);
  const result = ai.streamText(options);
  return (async () => {
    for await (const _ of result.fullStream);
  })();
}

function start(row, t, contextId) {
  const [kind, path_] = row.split("/");
  if (path_ === "own") {
    const controller = new AbortController();
    return { call: sdkCall(kind, t, false, controller.signal), cancel: async () => controller.abort() };
  }
  const call = runTurn({ address: config.address, contextId, graceMs: config.grace_s * 1e3 }, (turn) =>
    sdkCall(kind, t, true, turn.abortSignal, (x) => turn.tools(x)),
  );
  return { call, cancel: () => interrupt(contextId) };
}

/** Settles with true once `promise` has, or false after `ms`. */
function within(promise, ms) {
  return Promise.race([promise.then(() => true), sleep(Math.max(0, ms)).then(() => false)]);
}

async function trial(row, index) {
  const t = tree(`${row.replace("/", "-")}-${index}`);
  const { call, cancel } = start(row, t, `bench-${row}-${index}`);
  let returnedAt;
  let outcome = "did not return";
  const settled = call.then(
    () => ((returnedAt = performance.now()), (outcome = "returned")),
    (error) => ((returnedAt = performance.now()), (outcome = error?.name ?? String(error))),
  );
  const deadline = performance.now() + START_TIMEOUT_MS;
  let pids;
  while (!(t.spawned && (pids = t.pids()))) {
    if (returnedAt !== undefined || performance.now() > deadline) throw new Error(`the tool did not start its tree (${outcome})`);
    await sleep(5);
  }
  emit({ pids });
  const t0 = performance.now();
  await cancel();
  await within(settled, t0 + config.window_s * 1e3 - performance.now());
  await sleep(Math.max(0, t0 + config.window_s * 1e3 - performance.now()));
  const survivors = pids.filter(alive);
  await within(settled, t0 + config.return_timeout_s * 1e3 - performance.now());
  const returnedMs = returnedAt === undefined ? null : returnedAt - t0;
  const result = { row, trial: index, returned_ms: returnedMs, outcome, survivors: survivors.length, processes: pids.length, pids };
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  if (!(await within(settled, WIND_UP_MS))) result.outcome += " (still running after its tree was killed)";
  return result;
}

const aiPackage = JSON.parse(readFileSync(path.join(config.client, "node_modules", "ai", "package.json"), "utf8"));
emit({ versions: { ai: aiPackage.version, node: process.versions.node } });
try {
  for (let index = 0; index < config.trials; index++) {
    for (const row of config.rows) {
      try {
        emit(await trial(row, index));
      } catch (error) {
        emit({ row, trial: index, error: `${error?.name}: ${error?.message ?? error}` });
      }
    }
  }
} finally {
  coordinator.close();
}
