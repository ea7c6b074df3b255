/**
 * `@interrupt-sidecar/client/adapters/ai-sdk`: the Vercel AI SDK (`ai`) adapter.
 *
 * ```ts
 * import { generateText } from "ai";
 * import { runTurn } from "@interrupt-sidecar/client/adapters/ai-sdk";
 *
 * const result = await runTurn({ contextId: "main", graceMs: 500 }, (turn) =>
 *   generateText({ model, prompt, tools: turn.tools(tools), abortSignal: turn.abortSignal }),
 * ); // rejects with TurnInterrupted once the turn tripped and its tool calls unwound
 * ```
 *
 * What it does, as the Python adapters (`interrupt_sidecar_client.adapters`) do:
 *
 * 1. a turn is an execution (begun on the daemon's coordinator, or one the runtime began),
 *    attached as a COOPERATIVE tool named `ai-sdk:turn` whose `AbortSignal` is the one the
 *    `generateText` / `streamText` call gets: the daemon's trip is the SDK's own cancel;
 * 2. every tool call runs attached COOPERATIVE with the tool's name and call id; the tool's
 *    `abortSignal` aborts at the trip, and its promise **resolves at the trip** with a
 *    text saying it was interrupted and why. That matters: `generateText` with an aborted
 *    signal stays pending until the tool's promise settles (issue 30's measurement), so a
 *    tool that ignores its signal would hold the whole call;
 * 3. a tool call of a tripped turn is refused without running;
 * 4. {@link spawn} inside a tool starts a child in a process group of its own, registered
 *    with the daemon (EXTERNALLY_TERMINATED, `<tool>:process`), which kills the whole tree
 *    at the trip, `setsid` descendants included.
 *
 * This module never imports `ai`: the tools are wrapped by their shape (`execute(input,
 * options)`), so the client loads without the SDK and the SDK's version is the user's.
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { renameSync, writeFileSync } from "node:fs";

import { credentials, type ServiceError } from "@grpc/grpc-js";

import * as pb from "../../gen/interrupt/v1/interrupt";
import { resolveAddress } from "../config";
import { CancelledExecution } from "../errors";
import { type ChildExit, type ManagedProcess, type SpawnGroupOptions } from "../process";
import { ToolRun, attach } from "../run";
import { InterruptBehavior, ToolOutcome, type Cancellation } from "../types";

/** The framework's name: the turn's tool is `ai-sdk:turn`, its execution labelled `framework=ai-sdk`. */
export const FRAMEWORK = "ai-sdk";

/** How long past twice the grace the adapter waits for tool calls to unwind before it gives up on them. */
export const UNWIND_MARGIN_MS = 1_000;

/** What the model is told about a tool call the interrupt stopped (or refused): the Python adapters' text. */
export function interruptedText(cancellation: Cancellation | undefined, started: boolean): string {
  let why: string = cancellation?.reason ?? "UNKNOWN";
  if (cancellation?.detail) {
    why += `: ${cancellation.detail}`;
  }
  return started
    ? `Interrupted (${why}): the turn was interrupted and this tool call was stopped before it finished.`
    : `Interrupted (${why}): the turn was interrupted, so this tool call was not run.`;
}

/** A tool call of an interrupted turn: stopped while it ran, or refused (`started` false). */
export interface InterruptedCall {
  readonly name: string;
  readonly callId: string;
  readonly input: unknown;
  readonly started: boolean;
  readonly text: string;
}

/** A message of the SDK's `ModelMessage` shape (the adapter builds them without importing `ai`). */
export type HistoryMessage =
  | { role: "assistant"; content: { type: "tool-call"; toolCallId: string; toolName: string; input: unknown }[] }
  | {
      role: "tool";
      content: { type: "tool-result"; toolCallId: string; toolName: string; output: { type: "error-text"; value: string } }[];
    };

/**
 * The `generateText` / `streamText` call of a turn was stopped because its execution tripped.
 * `calls`: the tool calls stopped or refused; `messages`: the assistant's tool calls and their
 * interrupted results as `ModelMessage`s, to append to the conversation of the next turn.
 */
export class TurnInterrupted extends CancelledExecution {
  constructor(
    cancellation: Cancellation,
    readonly executionId: string,
    readonly calls: readonly InterruptedCall[],
    /** Why the SDK's call ended: its rejection (usually the abort), or undefined when it resolved. */
    override readonly cause?: unknown,
  ) {
    super(cancellation);
  }

  override get name(): string {
    return "TurnInterrupted";
  }

  get messages(): HistoryMessage[] {
    if (this.calls.length === 0) return [];
    return [
      {
        role: "assistant",
        content: this.calls.map((call) => ({ type: "tool-call", toolCallId: call.callId, toolName: call.name, input: call.input })),
      },
      {
        role: "tool",
        content: this.calls.map((call) => ({
          type: "tool-result",
          toolCallId: call.callId,
          toolName: call.name,
          output: { type: "error-text", value: call.text },
        })),
      },
    ];
  }
}

/** An execution the runtime began (its `BeginExecutionResponse`, or the two fields that matter). */
export interface BegunExecution {
  readonly executionId: string;
  readonly attachToken: string;
}

export interface TurnOptions {
  /** The daemon (default: `INTERRUPT_SIDECAR_ADDRESS`, else the default socket). */
  readonly address?: string;
  /** Follow this execution instead of beginning one; the runtime ends it. */
  readonly execution?: BegunExecution;
  /** The begun execution's context, for `interrupt-sidecar interrupt --context`. */
  readonly contextId?: string;
  /** The begun execution's grace (default: the daemon's, 500 ms). */
  readonly graceMs?: number;
  /** More labels of the begun execution (`framework=ai-sdk` is always set). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Write the turn's attach token here (atomically) for MCP servers behind `interrupt-sidecar mcp` ({@link bridgeStdio}). */
  readonly tokenFile?: string;
}

interface CallRecord {
  readonly name: string;
  readonly callId: string;
  readonly input: unknown;
  readonly started: boolean;
  interrupted: boolean;
  /** Settles when the tool's body has (the tool call's promise may have resolved at the trip before). */
  settled: Promise<void>;
}

interface CallScope {
  readonly turn: Turn;
  readonly name: string;
  readonly callId: string;
}

const CALL = new AsyncLocalStorage<CallScope>();

/** The shape of an AI SDK tool the adapter needs: `execute(input, { toolCallId, abortSignal, ... })`. */
export interface ToolLike {
  // `any`: the SDK's tools are generic in their input and options; a narrower type would reject them.
  execute?: (input: any, options: any) => unknown;
}

/** One agent turn: an execution, the signal the SDK call gets, the tool calls it ran. */
export class Turn {
  private readonly records: CallRecord[] = [];

  /** @internal Use {@link openTurn} or {@link runTurn}. */
  constructor(
    readonly executionId: string,
    /** @internal */ readonly address: string,
    /** @internal */ readonly token: string,
    private readonly run: ToolRun,
    /** The execution's grace. */
    readonly graceMs: number,
  ) {}

  /** Pass as `generateText({ abortSignal })` / `streamText({ abortSignal })`: aborts at the trip, `reason` a `CancelledExecution`. */
  get abortSignal(): AbortSignal {
    return this.run.signal;
  }

  get interrupted(): boolean {
    return this.run.signal.aborted;
  }

  get cancellation(): Cancellation | undefined {
    return this.run.cancellation;
  }

  /**
   * The tools, each `execute` wrapped so the call is a COOPERATIVE tool of this turn; the
   * rest of each tool (schema, description, `toModelOutput`, ...) is kept as it is.
   */
  tools<T extends Record<string, ToolLike>>(tools: T): T {
    const wrapped: Record<string, ToolLike> = {};
    for (const [name, tool] of Object.entries(tools)) {
      const execute = tool.execute;
      wrapped[name] =
        execute === undefined ? tool : { ...tool, execute: (input: unknown, options: unknown) => this.call(name, input, options, execute) };
    }
    return wrapped as T;
  }

  /**
   * Run one tool call as a COOPERATIVE tool of this turn (what {@link tools} does): refused
   * when the turn has tripped; at the trip its `abortSignal` aborts and the result is the
   * interrupted text at once, while the body unwinds on its own ({@link settle} waits for it).
   */
  async call(name: string, input: unknown, options: unknown, execute: (input: unknown, options: unknown) => unknown): Promise<unknown> {
    const sdkOptions = (options ?? {}) as { toolCallId?: string; abortSignal?: AbortSignal };
    const callId = sdkOptions.toolCallId ?? "";
    if (this.interrupted) {
      return this.refuse(name, callId, input);
    }
    const run = await attach({
      behavior: InterruptBehavior.COOPERATIVE,
      toolName: name,
      toolCallId: callId,
      address: this.address,
      token: this.token,
    });
    if (run.signal.aborted) {
      // Tripped while attaching: the body never starts.
      await run.close();
      return this.refuse(name, callId, input);
    }
    let settle!: () => void;
    const record: CallRecord = { name, callId, input, started: true, interrupted: false, settled: new Promise((resolve) => (settle = resolve)) };
    this.records.push(record);
    // The SDK's signal (the turn's, and its own timeouts) and this call's: the body stops at either.
    const signal = AbortSignal.any(sdkOptions.abortSignal === undefined ? [run.signal] : [sdkOptions.abortSignal, run.signal]);
    const body = (async () => CALL.run({ turn: this, name, callId }, () => execute(input, { ...sdkOptions, abortSignal: signal })))();
    // The body's end is reported when it comes, whether or not the call already answered.
    void body.then(
      async () => {
        // Ended after the trip (its signal may not have aborted yet): an interrupted call.
        if (this.interrupted && !run.signal.aborted) await run.unwound(ToolOutcome.INTERRUPTED);
        await run.close(); // INTERRUPTED if the signal aborted, else COMPLETED
        settle();
      },
      async () => {
        if (!run.signal.aborted) await run.unwound(this.interrupted ? ToolOutcome.INTERRUPTED : ToolOutcome.FAILED);
        await run.close();
        settle();
      },
    );
    // The trip reaches the turn's attachment and this call's each on its own stream, in
    // either order: whichever aborts first is the trip for this call (a body that follows
    // the SDK's signal may otherwise return before this call's own signal has aborted).
    const tripped = new Promise<typeof TRIPPED>((resolve) => {
      for (const source of [run.signal, this.abortSignal]) {
        if (source.aborted) resolve(TRIPPED);
        else source.addEventListener("abort", () => resolve(TRIPPED), { once: true });
      }
    });
    let outcome: unknown;
    try {
      outcome = await Promise.race([body, tripped]);
    } catch (error) {
      if (!this.interrupted && !run.signal.aborted) throw error;
      outcome = TRIPPED; // the body threw because of the trip (its signal's abort)
    }
    if (outcome === TRIPPED || this.interrupted || run.signal.aborted) {
      // Whatever a body returned after the trip never reaches the model: the turn is stopping.
      record.interrupted = true;
      return interruptedText(run.cancellation ?? this.cancellation, true);
    }
    return outcome;
  }

  private refuse(name: string, callId: string, input: unknown): string {
    this.records.push({ name, callId, input, started: false, interrupted: true, settled: Promise.resolve() });
    return interruptedText(this.cancellation, false);
  }

  /** The tool calls the interrupt stopped or refused, in the order they began. */
  interruptedCalls(): InterruptedCall[] {
    return this.records
      .filter((record) => record.interrupted)
      .map((record) => ({
        name: record.name,
        callId: record.callId,
        input: record.input,
        started: record.started,
        text: interruptedText(this.cancellation, record.started),
      }));
  }

  /** Wait (at most `timeoutMs`, by default twice the grace plus a margin) until every tool call's body has settled. */
  async settle(timeoutMs = this.graceMs * 2 + UNWIND_MARGIN_MS): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    try {
      await Promise.race([Promise.all(this.records.map((record) => record.settled)), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** @internal */
  interruptedError(cause?: unknown): TurnInterrupted {
    return new TurnInterrupted(this.cancellation!, this.executionId, this.interruptedCalls(), cause);
  }

  /** @internal */
  get toolRun(): ToolRun {
    return this.run;
  }
}

const TRIPPED: unique symbol = Symbol("tripped");

/** The turn whose tool call is running in this async context, if any. */
export function currentCall(): { readonly turn: Turn; readonly name: string; readonly callId: string } | undefined {
  return CALL.getStore();
}

// -- the turn ------------------------------------------------------------------------

function unary<Req, Res>(
  client: pb.CoordinatorServiceClient,
  method: (request: Req, callback: (error: ServiceError | null, response: Res) => void) => unknown,
  request: Req,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    method.call(client, request, (error: ServiceError | null, response: Res) => (error ? reject(error) : resolve(response)));
  });
}

async function begin(coordinator: pb.CoordinatorServiceClient, options: TurnOptions): Promise<BegunExecution> {
  const graceMs = options.graceMs;
  return unary(
    coordinator,
    coordinator.beginExecution,
    pb.BeginExecutionRequest.fromPartial({
      contextId: options.contextId ?? "",
      grace: graceMs === undefined ? undefined : { seconds: Math.floor(graceMs / 1000), nanos: Math.round((graceMs % 1000) * 1e6) },
      labels: { framework: FRAMEWORK, ...(options.labels ?? {}) },
    }),
  );
}

function writeToken(path: string, token: string): void {
  // The bridge re-reads the file when it changes: write it whole and rename, so it never reads half a token.
  const temporary = `${path}.tmp`;
  writeFileSync(temporary, token);
  renameSync(temporary, path);
}

/**
 * Run `body(turn)` — the `generateText` / `streamText` call and whatever consumes it — as
 * one turn: begin an execution (ended after) or follow `options.execution`.
 *
 * Resolves with the body's value when the turn did not trip. Once it tripped, waits for the
 * tool calls still unwinding and rejects with {@link TurnInterrupted}, whether the SDK's call
 * rejected (the abort) or resolved: a result of a stopped turn never looks like success.
 */
export async function runTurn<R>(options: TurnOptions, body: (turn: Turn) => Promise<R> | R): Promise<R> {
  const address = resolveAddress(options.address);
  let coordinator: pb.CoordinatorServiceClient | undefined;
  let execution = options.execution;
  if (execution === undefined) {
    coordinator = new pb.CoordinatorServiceClient(address, credentials.createInsecure());
    try {
      execution = await begin(coordinator, options);
    } catch (error) {
      coordinator.close();
      throw error;
    }
  }
  try {
    if (options.tokenFile !== undefined) {
      writeToken(options.tokenFile, execution.attachToken);
    }
    const run = await attach({ behavior: InterruptBehavior.COOPERATIVE, toolName: `${FRAMEWORK}:turn`, address, token: execution.attachToken });
    const turn = new Turn(execution.executionId, address, execution.attachToken, run, run.graceMs ?? 500);
    let failed = false;
    try {
      let value: R;
      try {
        value = await body(turn);
      } catch (error) {
        if (!turn.interrupted) {
          failed = true;
          throw error;
        }
        await turn.settle();
        throw turn.interruptedError(error);
      }
      if (turn.interrupted) {
        await turn.settle();
        throw turn.interruptedError();
      }
      return value;
    } finally {
      if (failed) await run.unwound(ToolOutcome.FAILED);
      await run.close(); // INTERRUPTED when tripped, else COMPLETED
    }
  } finally {
    if (coordinator !== undefined) {
      try {
        await unary(coordinator, coordinator.endExecution, pb.EndExecutionRequest.fromPartial({ executionId: execution.executionId }));
      } finally {
        coordinator.close();
      }
    }
  }
}

// -- subprocesses ----------------------------------------------------------------------

/** A child of {@link spawn}: the client's `ManagedProcess`, and the attachment it is registered through. */
export interface CallProcess {
  readonly process: ManagedProcess;
  /** Resolves with the child's exit once it has exited and its registration is released. */
  wait(): Promise<ChildExit>;
  /** SIGKILL the group if the child still runs, release it, end the attachment. */
  close(): Promise<void>;
}

/**
 * Inside a tool call of a turn: spawn `command` in a process group of its own, registered
 * with the daemon as an EXTERNALLY_TERMINATED tool named `<tool>:process` with the call's
 * id. At the trip the daemon signals the group and every descendant that left it (`setsid`),
 * SIGKILL after `terminator.killAfterMs` (default: the grace); the tool does nothing — its
 * `wait()` returns when the child is gone. Outside a turn the child still gets its own group
 * (attached with the environment's token, or no-op without one).
 */
export async function spawn(command: string, args: readonly string[] = [], options: SpawnGroupOptions = {}): Promise<CallProcess> {
  const scope = CALL.getStore();
  const run = await attach(
    scope === undefined
      ? { behavior: InterruptBehavior.EXTERNALLY_TERMINATED }
      : {
          behavior: InterruptBehavior.EXTERNALLY_TERMINATED,
          toolName: `${scope.name}:process`,
          toolCallId: scope.callId,
          address: scope.turn.address,
          token: scope.turn.token,
        },
  );
  let managed: ManagedProcess;
  try {
    managed = await run.spawn(command, args, options);
  } catch (error) {
    await run.unwound(ToolOutcome.FAILED);
    await run.close();
    throw error;
  }
  // The attachment lives as long as the child: released and closed once it has exited (at
  // the trip, once the daemon has killed it). Never SIGKILL the leader here at the trip:
  // that could orphan a setsid grandchild before the daemon has seen it.
  const ended = managed.exited.then(async (exit) => {
    await managed.release();
    await run.close();
    return exit;
  });
  return {
    process: managed,
    wait: () => ended,
    close: async () => {
      if (managed.running && !run.signal.aborted) managed.killGroup("SIGKILL");
      await ended;
    },
  };
}

// -- MCP -------------------------------------------------------------------------------

/** A stdio MCP server's config: `@ai-sdk/mcp`'s `Experimental_StdioMCPTransport` options (or any `{ command, args, env }`). */
export interface StdioServerConfig {
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

export interface BridgeOptions {
  /** The bridge follows the turn whose token is written there (`runTurn({ tokenFile })` writes each turn's). */
  readonly tokenFile?: string;
  /** The bridge's command (default `interrupt-sidecar`). */
  readonly bridge?: string;
  /** Options of `interrupt-sidecar mcp`, before `--` (e.g. `["--scope", "turn"]`). */
  readonly options?: readonly string[];
}

/**
 * The same stdio MCP server config, run behind `interrupt-sidecar mcp -- COMMAND ARGS...`
 * (other fields kept), with `INTERRUPT_SIDECAR_TOKEN_FILE` in its `env` when `tokenFile` is given.
 */
export function bridgeStdio<C extends StdioServerConfig>(config: C, options: BridgeOptions = {}): C & { command: string; args: string[] } {
  const rewritten = {
    ...config,
    command: options.bridge ?? "interrupt-sidecar",
    args: ["mcp", ...(options.options ?? []), "--", config.command, ...(config.args ?? [])],
  };
  if (options.tokenFile !== undefined) {
    return { ...rewritten, env: { ...(config.env ?? {}), INTERRUPT_SIDECAR_TOKEN_FILE: options.tokenFile } };
  }
  return rewritten;
}
