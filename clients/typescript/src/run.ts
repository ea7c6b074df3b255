/** The tool side: attach to an execution, get its AbortSignal, register terminators, unwind. */

import { constants as osConstants } from "node:os";
import { readFileSync } from "node:fs";

import { resolveTool } from "./config";
import { AlreadyExists, CancelledExecution, ConnectionLost, FailedPrecondition, InvalidArgument, NotFound, cancelledExecutionOf } from "./errors";
import { spawnProcessGroup, type ManagedProcess, type SpawnGroupOptions } from "./process";
import { debug, ToolStream, type RegistrarBackend, type TerminatorSpec } from "./stream";
import type { ProcessGroupOptions, Terminator, TerminatorCallback } from "./terminator";
import {
  InterruptBehavior,
  InterruptReason,
  ToolOutcome,
  behaviorToPb,
  durationMs,
  mayRegisterCallbacks,
  mayRegisterProcessGroups,
  reasonFromPb,
  receivesCancel,
  type Cancellation,
} from "./types";

/**
 * How long closing a run waits for the daemon to end the stream after the tool half-closed
 * it; and, after the trip, before that, for the daemon's `run_terminator` of every callback
 * terminator it holds (see {@link ToolRun.close}).
 */
export const CLOSE_TIMEOUT_MS = 2_000;
/**
 * How long one running (promise-returning) terminator holds up the next one, at most; and
 * how long closing a run waits for the terminators asked for so far to report their results.
 */
export const SEQUENTIAL_WINDOW_MS = 250;

/** Options of {@link attach}. */
export interface AttachOptions {
  /** How the tool takes an interrupt. Default `NON_INTERRUPTIBLE`. */
  readonly behavior?: InterruptBehavior;
  /** Shown in the daemon's events and metrics. */
  readonly toolName?: string;
  /** The agent's id of this tool call, if any. */
  readonly toolCallId?: string;
  /** The daemon: `unix:///abs/path.sock` or `HOST:PORT`. Default `INTERRUPT_SIDECAR_ADDRESS`, else the daemon's default socket. */
  readonly address?: string;
  /** The execution's attach token. Default `INTERRUPT_SIDECAR_TOKEN`; without one the run is no-op. */
  readonly token?: string;
  /** The pid the daemon records (default `process.pid`). */
  readonly pid?: number;
  /** Time limit of the attach handshake and of each registrar request, in ms. Default 10 000. */
  readonly timeoutMs?: number;
  /**
   * Ask the daemon for the cancel doorbell: a raw unix socket on which it rings the cancel
   * ahead of the stream (the same cancel, only earlier; the signal aborts once either way).
   * Default: yes, unless `INTERRUPT_SIDECAR_DOORBELL` is `0` (or `false`, `no`, `off`).
   * Only ever asked over a `unix:` address and for behaviours that receive the cancel:
   * `true` does not force it elsewhere.
   */
  readonly doorbell?: boolean;
}

/** Runs callback terminators off the stream reader, one after the other, in the order asked. */
class TerminatorRunner {
  private readonly queue: string[] = [];
  private working = false;
  /** Runs asked for whose result has not been reported yet (queued, or started and pending). */
  private unsettled = 0;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly lookup: (terminatorId: string) => TerminatorCallback | undefined,
    private readonly report: (terminatorId: string, error: string) => void,
  ) {}

  submit(terminatorId: string): void {
    this.unsettled++;
    this.queue.push(terminatorId);
    if (!this.working) {
      this.working = true;
      void this.work();
    }
  }

  private async work(): Promise<void> {
    try {
      for (let id = this.queue.shift(); id !== undefined; id = this.queue.shift()) {
        await this.start(id);
      }
    } finally {
      this.working = false;
    }
  }

  /**
   * Wait (at most `windowMs`) until every run asked for so far has started and its result
   * has been reported. Ending a run half-closes the stream next, after which a result could
   * no longer be written: work that stops at the trip leaves while its terminators (a
   * promise that takes 100 ms, say) are still running.
   */
  async settle(windowMs: number): Promise<void> {
    if (this.unsettled === 0) {
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idleWaiters.push(resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, windowMs))),
    ]);
    clearTimeout(timer);
  }

  /** Report one run's result (grpc-js writes it ahead of a later half-close), and wake settle(). */
  private reported(terminatorId: string, error: string): void {
    this.report(terminatorId, error);
    if (--this.unsettled === 0) {
      for (const wake of this.idleWaiters.splice(0)) {
        wake();
      }
    }
  }

  private async start(terminatorId: string): Promise<void> {
    const callback = this.lookup(terminatorId);
    if (callback === undefined) {
      this.reported(terminatorId, `terminator ${JSON.stringify(terminatorId)} is not registered by this tool`);
      return;
    }
    let result: unknown;
    try {
      result = callback();
    } catch (error) {
      debug("terminator %s failed: %s", terminatorId, describe(error));
      this.reported(terminatorId, describe(error));
      return;
    }
    if (!isThenable(result)) {
      this.reported(terminatorId, "");
      return;
    }
    const settled = Promise.resolve(result).then(
      () => this.reported(terminatorId, ""),
      (error: unknown) => {
        debug("terminator %s failed: %s", terminatorId, describe(error));
        this.reported(terminatorId, describe(error));
      },
    );
    // A terminator that hangs holds up the next one by this much only; it finishes on its own.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, SEQUENTIAL_WINDOW_MS)))]);
    clearTimeout(timer);
  }
}

/** No sidecar: registrations are checked and kept, and never run (the signal never trips). */
class NoopBackend implements RegistrarBackend {
  async register(_terminatorId: string, spec: TerminatorSpec): Promise<void> {
    if (spec.kind === "process_group") {
      checkLocalGroup(spec.pgid);
    }
  }

  async unregister(_terminatorId: string): Promise<void> {}
}

/**
 * One tool run attached to an execution (or running without a sidecar: no-op mode).
 *
 * `signal` is a standard `AbortSignal`: it aborts when the execution trips, with a
 * {@link CancelledExecution} as its `reason`, so `fetch(url, { signal: run.signal })`,
 * `child_process.spawn(cmd, args, { signal: run.signal })` and `timers/promises` stop by
 * themselves. End the run with {@link close} (or `await using run = await attach(...)`).
 */
export class ToolRun {
  private readonly controller = new AbortController();
  private cancellationValue: Cancellation | undefined;
  /** Live terminators, in registration order (the order the daemon runs them in). */
  private readonly live = new Map<string, Terminator>();
  /** Callables of callback terminators; kept after unwound until close (late run_terminator). */
  private readonly callbacks = new Map<string, TerminatorCallback>();
  private nextId = 1;
  private unwoundPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;
  private readonly runner: TerminatorRunner;

  /** @internal Use {@link attach}. */
  constructor(
    /** The behaviour the tool declared. */
    readonly behavior: InterruptBehavior,
    private readonly backend: RegistrarBackend,
    private readonly stream: ToolStream | undefined,
    /** The daemon's address, when attached. */
    readonly address: string | undefined,
    /** The execution attached to (undefined when not attached). */
    readonly executionId: string | undefined,
    /** The id the daemon gave this tool run (undefined when not attached). */
    readonly toolId: string | undefined,
    /** How long after the trip the tool has to unwind before it counts as a grace overrun, in ms. */
    readonly graceMs: number | undefined,
  ) {
    this.runner = new TerminatorRunner(
      (id) => this.callbacks.get(id),
      (id, error) => this.stream?.reportResult(id, error),
    );
  }

  /** The execution's cancellation signal: aborts once, at the trip, with a {@link CancelledExecution} reason. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** What tripped the execution (undefined while not cancelled). */
  get cancellation(): Cancellation | undefined {
    return this.cancellationValue;
  }

  /** True when attached to a sidecar; false in no-op mode. */
  get attached(): boolean {
    return this.stream !== undefined;
  }

  /** @internal The Attach stream (undefined in no-op mode): which way the cancel came, the doorbell. */
  get toolStream(): ToolStream | undefined {
    return this.stream;
  }

  /** True once the run was reported unwound (the registrar is then closed). */
  get isUnwound(): boolean {
    return this.unwoundPromise !== undefined;
  }

  /** Throws the signal's {@link CancelledExecution} if the execution was cancelled. */
  checkpoint(): void {
    this.controller.signal.throwIfAborted();
  }

  /** @internal The trip: called by the stream reader (and at attach time). */
  trip(cancellation: Cancellation): void {
    if (this.controller.signal.aborted) {
      return; // single-shot: the first cancellation stays
    }
    this.cancellationValue = cancellation;
    this.controller.abort(new CancelledExecution(cancellation));
  }

  /** @internal Run a callback terminator the daemon asked for. */
  runTerminator(terminatorId: string): void {
    this.runner.submit(terminatorId);
  }

  /**
   * Register a callback terminator (THREAD_INTERRUPT and EXTERNALLY_TERMINATED only). Resolves
   * once the daemon has acknowledged it. At the trip — at once if registered after it — the
   * daemon sends `run_terminator`, the client calls `callback` and reports its result.
   *
   * Rejects with {@link FailedPrecondition} (behaviour forbids it, or the run has unwound),
   * {@link AlreadyExists} (duplicate id), {@link InvalidArgument}, or {@link ConnectionLost}
   * (UNAVAILABLE) when the daemon is gone.
   */
  async registerTerminator(callback: TerminatorCallback, terminatorId?: string): Promise<Terminator> {
    if (typeof callback !== "function") {
      throw new TypeError("a callback terminator must be a function");
    }
    this.checkRegistration("callback");
    const terminator: Terminator = { terminatorId: this.newId("callback", terminatorId), kind: "callback" };
    this.callbacks.set(terminator.terminatorId, callback);
    await this.add(terminator, { kind: "callback" });
    return terminator;
  }

  /**
   * Register a process group the daemon signals itself at the trip (EXTERNALLY_TERMINATED
   * only): `signal` (SIGTERM) at once, SIGKILL after `killAfterMs` (the execution's grace).
   * See {@link spawnProcessGroup} for the usual way: start a child in a group of its own.
   */
  async registerProcessGroup(pgid: number, options: ProcessGroupOptions = {}): Promise<Terminator> {
    if (!Number.isInteger(pgid)) {
      throw new InvalidArgument(`a process group id must be an integer, got ${pgid}`);
    }
    this.checkRegistration("process_group");
    const signal = signalNumber(options.signal ?? "SIGTERM");
    const terminator: Terminator = {
      terminatorId: this.newId(`pgid-${pgid}`, options.terminatorId),
      kind: "process_group",
      pgid,
    };
    await this.add(terminator, {
      kind: "process_group",
      pgid,
      signal,
      ...(options.killAfterMs !== undefined ? { killAfterMs: options.killAfterMs } : {}),
    });
    return terminator;
  }

  /**
   * Spawn a child in a process group of its own and register the group (EXTERNALLY_TERMINATED
   * only); see {@link spawnProcessGroup}.
   */
  spawn(command: string, args: readonly string[] = [], options: SpawnGroupOptions = {}): Promise<ManagedProcess> {
    return spawnProcessGroup(this, command, args, options);
  }

  /** Unregister a terminator. Idempotent: unknown ids and a closed run are no-ops. */
  async unregisterTerminator(terminator: Terminator | string): Promise<void> {
    const terminatorId = typeof terminator === "string" ? terminator : terminator.terminatorId;
    if (!this.live.delete(terminatorId)) {
      return;
    }
    this.callbacks.delete(terminatorId);
    if (this.isUnwound) {
      return; // the daemon dropped every terminator of the run already
    }
    try {
      await this.backend.unregister(terminatorId);
    } catch (error) {
      if (!(error instanceof FailedPrecondition || error instanceof ConnectionLost)) {
        throw error;
      }
      debug("unregistering %s: %s", terminatorId, describe(error));
    }
  }

  /**
   * Report the run's end (`unwound`) with its outcome. The registrar closes: later
   * registrations are refused with {@link FailedPrecondition}; the stream stays open until
   * {@link close}, so terminators the daemon asked for before it read this still run and
   * report their results (close() waits for them).
   * Idempotent: the first outcome counts. Reporting fails quietly when the daemon is gone.
   */
  unwound(outcome: ToolOutcome = ToolOutcome.COMPLETED, detail = ""): Promise<void> {
    this.unwoundPromise ??= (async () => {
      this.live.clear();
      if (this.stream !== undefined) {
        try {
          await this.stream.unwound(outcome, detail);
        } catch (error) {
          debug("could not report unwound to the sidecar: %s", describe(error));
        }
      }
    })();
    return this.unwoundPromise;
  }

  /**
   * End the run: report `unwound` if not done yet (INTERRUPTED when the signal aborted,
   * else COMPLETED), let the terminators the daemon asks for run and report their results,
   * then close the stream and the channel. After the trip that waits (at most
   * {@link CLOSE_TIMEOUT_MS}) for the daemon to ask for every callback terminator it
   * acknowledged, then (at most {@link SEQUENTIAL_WINDOW_MS}) for their results.
   * Idempotent; never rejects for a dead daemon.
   */
  close(): Promise<void> {
    this.closePromise ??= (async () => {
      const interrupted = this.controller.signal.aborted && receivesCancel(this.behavior);
      await this.unwound(interrupted ? ToolOutcome.INTERRUPTED : ToolOutcome.COMPLETED);
      if (this.stream !== undefined) {
        if (this.controller.signal.aborted) {
          // The trip asks for every callback terminator, on the stream behind its cancel.
          // The doorbell brings the cancel ahead of all that, so work that stops at the
          // abort gets here before those run_terminator messages are read: half-closing
          // now would lose their results (the daemon reads results after unwound, but not
          // after the half-close). Wait for them to be asked for, or for the stream's end.
          await this.stream.runsAsked(CLOSE_TIMEOUT_MS);
        }
        // Terminators asked for so far (one may still be running) report their results first.
        await this.runner.settle(SEQUENTIAL_WINDOW_MS);
      }
      await this.stream?.finish(CLOSE_TIMEOUT_MS);
      this.callbacks.clear();
    })();
    return this.closePromise;
  }

  /** `await using run = await attach(...)` closes the run at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** @internal Refuse locally what the daemon would refuse too. */
  checkRegistration(kind: Terminator["kind"]): void {
    if (this.isUnwound) {
      throw new FailedPrecondition(
        "the terminator registrar is closed (the tool's run has unwound); terminators can only be registered during the run",
      );
    }
    if (kind === "process_group" && !mayRegisterProcessGroups(this.behavior)) {
      throw new FailedPrecondition(
        `the tool declared ${this.behavior}: only EXTERNALLY_TERMINATED tools may register process-group terminators`,
      );
    }
    if (kind === "callback" && !mayRegisterCallbacks(this.behavior)) {
      throw new FailedPrecondition(
        `the tool declared ${this.behavior}: only THREAD_INTERRUPT and EXTERNALLY_TERMINATED tools may register terminators`,
      );
    }
  }

  private newId(prefix: string, requested: string | undefined): string {
    if (requested === undefined) {
      for (;;) {
        const candidate = `${prefix}-${this.nextId++}`;
        if (!this.live.has(candidate)) {
          return candidate;
        }
      }
    }
    if (requested === "") {
      throw new InvalidArgument("a terminator id cannot be empty");
    }
    if (this.live.has(requested)) {
      throw new AlreadyExists(`terminator ${JSON.stringify(requested)} is already registered`, { terminatorId: requested });
    }
    return requested;
  }

  private async add(terminator: Terminator, spec: TerminatorSpec): Promise<void> {
    this.live.set(terminator.terminatorId, terminator);
    try {
      await this.backend.register(terminator.terminatorId, spec);
    } catch (error) {
      this.live.delete(terminator.terminatorId);
      this.callbacks.delete(terminator.terminatorId);
      throw error;
    }
  }

  /** @internal */
  toString(): string {
    const where = this.attached ? `execution ${this.executionId}` : "no sidecar";
    const state = this.cancellationValue ? `cancelled: ${this.cancellationValue.reason}` : "not cancelled";
    return `ToolRun(${this.behavior}, ${where}, ${state})`;
  }
}

/**
 * Attach this tool run to its execution.
 *
 * `address`/`token` default to `INTERRUPT_SIDECAR_ADDRESS`/`INTERRUPT_SIDECAR_TOKEN`.
 * Without a token the run is *no-op*: its signal never aborts, its registrar accepts what
 * the behaviour allows and never runs it, so the tool runs unchanged outside an agent.
 * A tool that attaches after the trip gets a signal that is already aborted.
 *
 * Rejects with a {@link SidecarError} subclass when the daemon refuses the attach
 * (Unauthenticated, InvalidArgument, NotFound, PermissionDenied) or cannot be reached
 * (Unavailable; DeadlineExceeded after `timeoutMs`).
 */
export async function attach(options: AttachOptions = {}): Promise<ToolRun> {
  const behavior = options.behavior ?? InterruptBehavior.NON_INTERRUPTIBLE;
  const wireBehavior = behaviorToPb(behavior); // validates
  const config = resolveTool(options.address, options.token, options.doorbell);
  if (config === undefined) {
    return new ToolRun(behavior, new NoopBackend(), undefined, undefined, undefined, undefined, undefined);
  }
  const timeoutMs = options.timeoutMs ?? 10_000;
  const stream = new ToolStream(config.address, timeoutMs);
  const { attached, cancel } = await stream.handshake(
    {
      attachToken: config.token,
      toolName: options.toolName ?? "",
      toolCallId: options.toolCallId ?? "",
      behavior: wireBehavior,
      pid: options.pid ?? process.pid,
      // The daemon grants it only to behaviours it sends the cancel to; asking otherwise is noise.
      doorbell: config.doorbell && receivesCancel(behavior),
    },
    timeoutMs,
    receivesCancel(behavior),
  );
  const run = new ToolRun(
    behavior,
    stream,
    stream,
    config.address,
    attached.executionId,
    attached.toolId,
    durationMs(attached.grace),
  );
  if (cancel !== undefined) {
    run.trip(cancel);
  } else if (attached.cancelled) {
    // A NON_INTERRUPTIBLE tool is never sent the cancel, but sees the state it attached in.
    run.trip({ reason: reasonFromPb(attached.reason) ?? InterruptReason.USER_SIGINT, detail: "" });
  }
  stream.start({ onCancel: (c) => run.trip(c), onRunTerminator: (id) => run.runTerminator(id) });
  return run;
}

/**
 * Attach, run `body` with the run, and end the run with an outcome derived from how `body`
 * ended: COMPLETED; INTERRUPTED when it threw a {@link CancelledExecution} (or an `AbortError`
 * caused by one, or any `AbortError` after the trip), or returned after the cancel; FAILED for anything else it threw.
 * Call `run.unwound(...)` inside `body` to report something else.
 */
export async function withRun<T>(options: AttachOptions, body: (run: ToolRun) => Promise<T> | T): Promise<T> {
  const run = await attach(options);
  try {
    const result = await body(run);
    await run.close();
    return result;
  } catch (error) {
    const interrupted = cancelledExecutionOf(error) !== undefined || (run.signal.aborted && isAbortError(error));
    await run.unwound(interrupted ? ToolOutcome.INTERRUPTED : ToolOutcome.FAILED, describe(error));
    await run.close();
    throw error;
  }
}

function isAbortError(error: unknown): boolean {
  return error instanceof Error && error.name === "AbortError";
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** `Name: message` of an error, for reports to the daemon. */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    return error.message ? `${error.name}: ${error.message}` : error.name;
  }
  return String(error);
}

/** The number of a signal given by name or number. */
export function signalNumber(signal: NodeJS.Signals | number): number {
  if (typeof signal === "number") {
    return signal;
  }
  const value = (osConstants.signals as Record<string, number | undefined>)[signal];
  if (value === undefined) {
    throw new InvalidArgument(`unknown signal ${JSON.stringify(signal)}`);
  }
  return value;
}

/** This process's own process group (from /proc; undefined where there is none). */
function ownProcessGroup(): number | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[2]);
  } catch {
    return undefined;
  }
}

function checkLocalGroup(pgid: number): void {
  if (pgid <= 1) {
    throw new InvalidArgument(`process group ${pgid} is not a process group a tool may register (pgid must be > 1)`);
  }
  if (pgid === ownProcessGroup()) {
    throw new InvalidArgument(`process group ${pgid} is this process's own group; refusing to register it`);
  }
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") {
      throw new NotFound(`process group ${pgid} does not exist`);
    }
    // EPERM: it exists; whether it may be signalled shows at the trip.
  }
}
