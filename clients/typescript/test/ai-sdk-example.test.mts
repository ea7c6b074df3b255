// docs/adapters.md's TypeScript example, run: the block between the markers below is the
// docs' block (a test checks they are the same text, the import path aside), run against a
// real daemon with ai's MockLanguageModelV4. An ES module, as the SDK is: `ai` is ESM only.
import assert from "node:assert/strict";
import { spawn as spawnChild, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { MockLanguageModelV4 } from "ai/test";

import * as pb from "../gen/interrupt/v1/interrupt.js";

// -- docs example begins --
import { generateText, jsonSchema, stepCountIs, tool, type LanguageModel, type ModelMessage } from "ai";
import { TurnInterrupted, runTurn, spawn } from "../src/adapters/ai-sdk.js";

const tools = {
  shell: tool({
    description: "Run a shell command.",
    inputSchema: jsonSchema<{ command: string }>({ type: "object", properties: { command: { type: "string" } }, required: ["command"] }),
    execute: async ({ command }) => {
      const child = await spawn("sh", ["-c", command], { stdio: "ignore" }); // its own process group, killed at the trip
      const { code, signal } = await child.wait();
      return `exit ${code ?? signal}`;
    },
  }),
};

export async function chat(model: LanguageModel, address: string, messages: ModelMessage[]): Promise<string> {
  try {
    const result = await runTurn({ address, contextId: "main", graceMs: 500 }, (turn) =>
      generateText({ model, messages, tools: turn.tools(tools), stopWhen: stepCountIs(5), abortSignal: turn.abortSignal }),
    );
    messages.push(...result.response.messages);
    return result.text;
  } catch (error) {
    if (!(error instanceof TurnInterrupted)) throw error;
    messages.push(...error.messages); // each stopped tool call and its interrupted result
    return error.calls[0]?.text ?? error.message;
  }
}
// -- docs example ends --

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..", "..", "..");
const BIN = process.env["INTERRUPT_SIDECAR_BIN"] ?? path.join(ROOT, ".venv", "bin", "interrupt-sidecar");
const skip = existsSync(BIN) ? false : `no daemon to test against (${BIN} is missing)`;

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** Pids of live (non-zombie) processes whose command line is exactly `argv`. */
function processesRunning(argv: string[]): number[] {
  const wanted = argv.join("\0") + "\0";
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z" && readFileSync(`/proc/${name}/cmdline`, "utf8") === wanted;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function poll(what: string, deadlineMs: number, done: () => boolean): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe("docs/adapters.md: the AI SDK example", { skip, timeout: 60_000 }, () => {
  let daemon: ChildProcess;
  let directory = "";
  let address = "";

  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), "isd-ai-doc-"));
    address = `unix://${path.join(directory, "s.sock")}`;
    daemon = spawnChild(BIN, ["serve", "--listen", address, "--metrics-listen", "", "--doorbell", "auto"], { stdio: ["ignore", "pipe", "ignore"] });
    const ready = await new Promise<string>((resolve, reject) => {
      createInterface({ input: daemon.stdout! }).once("line", resolve);
      daemon.once("exit", (code) => reject(new Error(`the daemon exited with ${code}`)));
    });
    assert.match(ready, /^ready /);
  });

  after(async () => {
    if (daemon.exitCode === null) {
      daemon.kill("SIGTERM");
      await once(daemon, "exit");
    }
    rmSync(directory, { recursive: true, force: true });
  });

  it("is the docs' block", () => {
    const docs = readFileSync(path.join(ROOT, "docs", "adapters.md"), "utf8");
    const block = /<!-- illustrative: [^\n]*ai-sdk-example[^\n]*-->\n```ts\n([\s\S]*?)```/.exec(docs)?.[1];
    assert.ok(block !== undefined, "no TypeScript example in docs/adapters.md");
    const source = readFileSync(path.join(HERE, "..", "..", "test", "ai-sdk-example.test.mts"), "utf8");
    const tested = /\/\/ -- docs example begins --\n([\s\S]*?)\/\/ -- docs example ends --\n/.exec(source)![1]!;
    assert.equal(block, tested.replace('"../src/adapters/ai-sdk.js"', '"@interrupt-sidecar/client/adapters/ai-sdk"'));
  });

  it("stops the shell's tree at the interrupt, tells the model, and the next turn works", async () => {
    const tree = ["sleep", "3131"];
    const model = new MockLanguageModelV4({
      doGenerate: [
        {
          content: [{ type: "tool-call", toolCallId: "call-1", toolName: "shell", input: JSON.stringify({ command: "sleep 3131 & setsid sleep 3131 & wait" }) }],
          finishReason: { unified: "tool-calls", raw: undefined },
          usage,
          warnings: [],
        },
        { content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] },
      ],
    });
    const messages: ModelMessage[] = [{ role: "user", content: "run the tests" }];
    const answer = chat(model, address, messages);
    await poll("both sleeps", 10_000, () => processesRunning(tree).length === 2);
    // The agent runtime's interrupt: the turn's context, as `interrupt-sidecar interrupt --context main` does.
    const coordinator = new pb.CoordinatorServiceClient(address, (await import("@grpc/grpc-js")).credentials.createInsecure());
    try {
      await new Promise((resolve, reject) =>
        coordinator.interrupt(
          pb.InterruptRequest.fromPartial({ target: { $case: "contextId", contextId: "main" }, reason: pb.InterruptReason.INTERRUPT_REASON_USER_SIGINT, detail: "Esc" }),
          (error, response) => (error ? reject(error) : resolve(response)),
        ),
      );
    } finally {
      coordinator.close();
    }
    const text = "Interrupted (USER_SIGINT: Esc): the turn was interrupted and this tool call was stopped before it finished.";
    assert.equal(await answer, text);
    await poll("the tree to be gone", 3_000, () => processesRunning(tree).length === 0);
    assert.deepEqual(messages.at(-1), {
      role: "tool",
      content: [{ type: "tool-result", toolCallId: "call-1", toolName: "shell", output: { type: "error-text", value: text } }],
    });
    // The next turn: a new execution, untouched by the trip (the mock's second answer).
    messages.push({ role: "user", content: "never mind" });
    assert.equal(await chat(model, address, messages), "ok");
  });
});
