/**
 * One `ToolChannelService.Attach` stream: the handshake, the reader, and the requests that
 * wait for the daemon's acknowledgement.
 *
 * The reader never runs tool code that could hold it up: a cancel aborts the signal (whose
 * listeners must be quick), `run_terminator` goes to the terminator runner, and answers
 * settle the pending requests. grpc-js buffers writes in order, so writes need no lock.
 *
 * When `attached` grants a cancel doorbell (see `doorbell.ts`), the stream opens it too: the
 * cancel is taken from whichever of the two brings it first and the other copy is dropped,
 * so `onCancel` runs once. The doorbell is closed with the stream.
 */

import { debuglog } from "node:util";

import { credentials, type ClientDuplexStream, type ServiceError, type StatusObject } from "@grpc/grpc-js";

import * as pb from "../gen/interrupt/v1/interrupt";
import { DoorbellConnection } from "./doorbell";
import { ConnectionLost, DeadlineExceeded, SidecarError, errorFor, errorFromRpc } from "./errors";
import { cancellationFromPb, durationFromMs, outcomeToPb, type Cancellation, type ToolOutcome } from "./types";

/** What a registration asks the daemon to do at the trip. */
export type TerminatorSpec =
  | { readonly kind: "callback" }
  | { readonly kind: "process_group"; readonly pgid: number; readonly signal: number; readonly killAfterMs?: number };

/** Where a run's registrations go: the daemon (this stream) or nowhere (no-op mode). */
export interface RegistrarBackend {
  register(terminatorId: string, spec: TerminatorSpec): Promise<void>;
  unregister(terminatorId: string): Promise<void>;
}

type Answer = "registered" | "unregistered";

interface Pending {
  readonly answer: Answer;
  resolve(): void;
  reject(error: SidecarError): void;
}

/** The answer to hello, and the cancel that follows it when the tool attached after the trip. */
export interface Handshake {
  readonly attached: pb.Attached;
  readonly cancel?: Cancellation;
}

/** What the reader hands on, after the handshake. */
export interface StreamHandlers {
  /** Called at most once, with the cancel of whichever way (stream or doorbell) brought it first. */
  onCancel(cancellation: Cancellation): void;
  onRunTerminator(terminatorId: string): void;
}

/** Which way a cancel reached the tool. */
export type CancelPath = "stream" | "doorbell";

/** The client stays quiet unless `NODE_DEBUG=interrupt-sidecar`. */
export const debug = debuglog("interrupt-sidecar");

/** The client end of one tool's Attach stream. */
export class ToolStream implements RegistrarBackend {
  private readonly client: pb.ToolChannelServiceClient;
  private readonly call: ClientDuplexStream<pb.ToolMessage, pb.SidecarMessage>;
  private readonly inbox: pb.SidecarMessage[] = [];
  private wake: (() => void) | undefined;
  private handlers: StreamHandlers | undefined;
  private readonly pending = new Map<string, Pending[]>();
  private rpcError: ServiceError | undefined;
  private endError: SidecarError | undefined;
  private readonly endedPromise: Promise<void>;
  private markEnded!: () => void;
  private handshaking = true;
  /** Set once the tool is done with the stream: its end is then expected, not news. */
  private finishing = false;
  private closed = false;
  /** The doorbell granted in `attached`, opened by {@link start}. */
  private doorbellGrant: pb.Doorbell | undefined;
  private doorbellConnection: DoorbellConnection | undefined;
  /** Which way the cancel came first: once set, a cancel coming the other way is the same one again. */
  private cancelPathValue: CancelPath | undefined;
  /**
   * Callback terminators the daemon acknowledged (and has not acknowledged unregistering),
   * and those it has asked to run. At the trip the daemon asks, on this stream and after its
   * cancel, for every one it holds: when the doorbell brought the cancel first, the run can
   * be ending while those requests are still on their way (see {@link runsAsked}).
   */
  private readonly callbacksHeld = new Set<string>();
  private readonly runsAskedIds = new Set<string>();
  /** Woken on each `run_terminator` and when the stream ends or closes: {@link runsAsked} looks again. */
  private readonly runAskedWaiters: (() => void)[] = [];

  constructor(
    private readonly address: string,
    private readonly requestTimeoutMs: number | undefined,
  ) {
    this.endedPromise = new Promise((resolve) => (this.markEnded = resolve));
    this.client = new pb.ToolChannelServiceClient(address, credentials.createInsecure());
    this.call = this.client.attach();
    this.call.on("data", (message: pb.SidecarMessage) => this.received(message));
    // Also keeps an error status from being an unhandled 'error' event; 'status' always follows.
    this.call.on("error", (error: ServiceError) => (this.rpcError = error));
    this.call.on("status", (status: StatusObject) => this.statusReceived(status));
  }

  /** True once the daemon (or the network) ended the stream. */
  get ended(): boolean {
    return this.endError !== undefined;
  }

  /** How the cancel reached this tool first (undefined while it has not). */
  get cancelPath(): CancelPath | undefined {
    return this.cancelPathValue;
  }

  /** The doorbell connection, once opened (undefined when none was granted or it was not needed). */
  get doorbell(): DoorbellConnection | undefined {
    return this.doorbellConnection;
  }

  // -- handshake -------------------------------------------------------------------------

  /** Send hello and read `attached` (and the cancel that follows it when already tripped). */
  async handshake(hello: pb.Hello, timeoutMs: number | undefined, expectCancel: boolean): Promise<Handshake> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      if (timeoutMs !== undefined) {
        timer = setTimeout(
          () => reject(new DeadlineExceeded(`attach to the sidecar at ${this.address}: no answer to hello within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }
    });
    try {
      return await Promise.race([this.readHandshake(hello, expectCancel), deadline]);
    } catch (error) {
      this.close();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private async readHandshake(hello: pb.Hello, expectCancel: boolean): Promise<Handshake> {
    this.call.write({ message: { $case: "hello", hello } });
    const first = await this.next();
    if (first.message?.$case !== "attached") {
      throw this.refusal(first);
    }
    const attached = first.message.attached;
    this.doorbellGrant = attached.doorbell;
    if (attached.cancelled && expectCancel) {
      // The daemon sends the cancel right after attached to an interruptible tool; reading
      // it here means the run starts with its full cancellation (reason and detail).
      const second = await this.next();
      if (second.message?.$case === "cancel") {
        // The caller trips the run with it: the doorbell could only ring the same cancel
        // again, so start() does not open it.
        this.cancelPathValue = "stream";
        return { attached, cancel: cancellationFromPb(second.message.cancel) };
      }
      this.inbox.unshift(second);
    }
    return { attached };
  }

  private next(): Promise<pb.SidecarMessage> {
    return new Promise((resolve, reject) => {
      const poll = (): void => {
        const message = this.inbox.shift();
        if (message !== undefined) {
          this.wake = undefined;
          resolve(message);
        } else if (this.endError !== undefined) {
          this.wake = undefined;
          reject(this.endError);
        } else {
          this.wake = poll;
        }
      };
      poll();
    });
  }

  private refusal(message: pb.SidecarMessage): SidecarError {
    if (message.message?.$case === "error") {
      return errorFor(message.message.error.code, `attach refused: ${message.message.error.message}`);
    }
    return new SidecarError(`attach: expected 'attached' from the daemon, got ${message.message?.$case ?? "an empty message"}`);
  }

  // -- reading -----------------------------------------------------------------------------

  /**
   * Hand every later message to `handlers` (and the ones that arrived during the handshake),
   * and open the doorbell if one was granted. Connecting does not wait: the stream is read
   * meanwhile, and whichever brings the cancel first delivers it.
   */
  start(handlers: StreamHandlers): void {
    this.handlers = handlers;
    this.handshaking = false;
    for (const message of this.inbox.splice(0)) {
      this.dispatch(message);
    }
    const grant = this.doorbellGrant;
    if (grant === undefined || this.cancelPathValue !== undefined || this.closed || this.endError !== undefined) {
      return; // none granted, the cancel is already in, or the stream is over (the daemon hung up the doorbell)
    }
    if (grant.path === "" || grant.token === "") {
      debug("ignoring an incomplete cancel doorbell grant (path %j)", grant.path);
      return;
    }
    this.doorbellConnection = new DoorbellConnection(grant, (cancellation) => this.takeCancel(cancellation, "doorbell"));
    this.doorbellConnection.open();
  }

  /** Hand the first cancel to `onCancel`; the copy that comes the other way is dropped. */
  private takeCancel(cancellation: Cancellation, path: CancelPath): void {
    if (this.cancelPathValue !== undefined) {
      debug("dropping the %s's copy of the cancel (the %s brought it first)", path, this.cancelPathValue);
      return;
    }
    this.cancelPathValue = path;
    if (path === "stream") {
      this.doorbellConnection?.close(); // it could only ring what the stream has just said
    }
    this.handlers?.onCancel(cancellation);
  }

  private received(message: pb.SidecarMessage): void {
    if (this.handshaking) {
      this.inbox.push(message);
      this.wake?.();
      return;
    }
    this.dispatch(message);
  }

  private statusReceived(status: StatusObject): void {
    const handshaking = this.handshaking;
    const what = handshaking ? `attach to the sidecar at ${this.address}` : "the tool's stream to the sidecar ended";
    if (this.rpcError !== undefined && !(this.finishing && this.rpcError.code === 1 /* CANCELLED by us */)) {
      this.endError = errorFromRpc(this.rpcError, what);
    } else {
      this.endError = new ConnectionLost(
        handshaking
          ? `attach to the sidecar at ${this.address}: the daemon closed the stream (${status.details || "no details"})`
          : "the tool's stream to the sidecar has ended",
      );
    }
    if (!this.finishing && !handshaking) {
      debug("the tool stream to the sidecar at %s ended: %s", this.address, this.endError.message);
    }
    // The daemon hangs up the doorbell when the stream ends: it can no longer ring.
    this.doorbellConnection?.close();
    this.failPending(this.endError);
    this.markEnded();
    this.wake?.();
    this.pokeRunAsked(); // nothing more will be asked: runsAsked() stops waiting
  }

  private dispatch(message: pb.SidecarMessage): void {
    const body = message.message;
    switch (body?.$case) {
      case "cancel":
        this.takeCancel(cancellationFromPb(body.cancel), "stream");
        break;
      case "runTerminator":
        this.runsAskedIds.add(body.runTerminator.terminatorId);
        this.pokeRunAsked();
        this.handlers?.onRunTerminator(body.runTerminator.terminatorId);
        break;
      case "terminatorRegistered":
        this.settle(body.terminatorRegistered.terminatorId, "registered");
        break;
      case "terminatorUnregistered":
        this.settle(body.terminatorUnregistered.terminatorId, "unregistered");
        break;
      case "error": {
        const refusal = body.error;
        const error = errorFor(refusal.code, refusal.message, refusal.terminatorId);
        if (!refusal.terminatorId || !this.settle(refusal.terminatorId, undefined, error)) {
          debug("the sidecar refused a request of this tool: %s", error.toString());
        }
        break;
      }
      default: // attached again, or a message newer than this client
        debug("ignoring sidecar message %s", body?.$case);
    }
  }

  /** Settle the oldest pending request for the terminator (of kind `answer`; any kind for errors). */
  private settle(terminatorId: string, answer: Answer | undefined, error?: SidecarError): boolean {
    const waiting = this.pending.get(terminatorId);
    const index = waiting?.findIndex((pending) => answer === undefined || pending.answer === answer) ?? -1;
    if (waiting === undefined || index < 0) {
      return false;
    }
    const [pending] = waiting.splice(index, 1);
    if (waiting.length === 0) {
      this.pending.delete(terminatorId);
    }
    if (error === undefined) {
      pending!.resolve();
    } else {
      pending!.reject(error);
    }
    return true;
  }

  private failPending(error: SidecarError): void {
    const all = [...this.pending.values()].flat();
    this.pending.clear();
    for (const pending of all) {
      pending.reject(error);
    }
  }

  // -- writing -----------------------------------------------------------------------------

  private write(message: pb.ToolMessage): Promise<void> {
    if (this.endError !== undefined) {
      return Promise.reject(this.endError);
    }
    return new Promise((resolve, reject) => {
      this.call.write(message, (error: Error | null | undefined) => {
        if (error) {
          reject(this.endError ?? new ConnectionLost("the tool's stream to the sidecar has ended", { cause: error }));
        } else {
          resolve();
        }
      });
    });
  }

  private async request(message: pb.ToolMessage, terminatorId: string, answer: Answer): Promise<void> {
    if (this.endError !== undefined) {
      throw this.endError;
    }
    let timer: NodeJS.Timeout | undefined;
    const acknowledged = new Promise<void>((resolve, reject) => {
      const pending: Pending = { answer, resolve, reject };
      const waiting = this.pending.get(terminatorId);
      if (waiting === undefined) {
        this.pending.set(terminatorId, [pending]);
      } else {
        waiting.push(pending);
      }
      if (this.requestTimeoutMs !== undefined) {
        timer = setTimeout(() => {
          const list = this.pending.get(terminatorId);
          const index = list?.indexOf(pending) ?? -1;
          if (list !== undefined && index >= 0) {
            list.splice(index, 1);
            if (list.length === 0) {
              this.pending.delete(terminatorId);
            }
          }
          reject(
            new DeadlineExceeded(
              `the sidecar did not answer for terminator ${JSON.stringify(terminatorId)} within ${this.requestTimeoutMs} ms`,
              { terminatorId },
            ),
          );
        }, this.requestTimeoutMs);
      }
    });
    try {
      await Promise.all([this.write(message), acknowledged]);
    } finally {
      clearTimeout(timer);
    }
  }

  async register(terminatorId: string, spec: TerminatorSpec): Promise<void> {
    const kind: pb.RegisterTerminator["kind"] =
      spec.kind === "callback"
        ? { $case: "callback", callback: {} }
        : {
            $case: "processGroup",
            processGroup: {
              pgid: spec.pgid,
              signal: spec.signal,
              killAfter: spec.killAfterMs === undefined ? undefined : durationFromMs(spec.killAfterMs),
            },
          };
    await this.request({ message: { $case: "registerTerminator", registerTerminator: { terminatorId, kind } } }, terminatorId, "registered");
    if (spec.kind === "callback") {
      this.callbacksHeld.add(terminatorId); // the daemon holds it now: the trip asks for it
    }
  }

  async unregister(terminatorId: string): Promise<void> {
    await this.request({ message: { $case: "unregisterTerminator", unregisterTerminator: { terminatorId } } }, terminatorId, "unregistered");
    // A run the daemon asked for before it read this unregistration has been read already
    // (the stream keeps the daemon's order); a later registration under the id runs anew.
    this.callbacksHeld.delete(terminatorId);
    this.runsAskedIds.delete(terminatorId);
  }

  /**
   * After the trip: wait (at most `timeoutMs`) until the daemon has asked to run every
   * callback terminator it holds for this tool, or the stream has ended (or was closed).
   *
   * The daemon asks for each of them at the trip, after the cancel, on this stream. The
   * doorbell's copy of the cancel comes ahead of all that: the signal aborts, and work that
   * stops at the abort can reach the end of its run before those `run_terminator` messages
   * have been read. Once the stream is half-closed their results could no longer be
   * reported, so ending a run waits for them here first.
   */
  async runsAsked(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let expired = false;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        expired = true;
        resolve();
      }, timeoutMs);
    });
    try {
      while (!expired && !this.closed && this.endError === undefined && !this.allRunsAsked()) {
        await Promise.race([new Promise<void>((resolve) => this.runAskedWaiters.push(resolve)), deadline]);
      }
    } finally {
      clearTimeout(timer);
    }
    if (expired) {
      const missing = [...this.callbacksHeld].filter((id) => !this.runsAskedIds.has(id));
      debug("ending the run without run_terminator for %j after %d ms", missing, timeoutMs);
    }
  }

  /** callbacksHeld ⊆ runsAsked: the daemon asked for every callback terminator it holds. */
  private allRunsAsked(): boolean {
    for (const id of this.callbacksHeld) {
      if (!this.runsAskedIds.has(id)) {
        return false;
      }
    }
    return true;
  }

  private pokeRunAsked(): void {
    for (const wake of this.runAskedWaiters.splice(0)) {
      wake();
    }
  }

  /** Tell the daemon how a callback terminator went (best-effort once the stream has ended). */
  reportResult(terminatorId: string, error: string): void {
    this.write({ message: { $case: "terminatorResult", terminatorResult: { terminatorId, error } } }).catch((failure: unknown) =>
      debug("could not report the result of terminator %s: %s", terminatorId, String(failure)),
    );
  }

  /** Report the run unwound; the stream stays open (the daemon refuses later registrations). */
  async unwound(outcome: ToolOutcome, detail: string): Promise<void> {
    await this.write({ message: { $case: "unwound", unwound: { outcome: outcomeToPb(outcome), detail } } });
  }

  // -- the end -------------------------------------------------------------------------------

  /**
   * Half-close, give the daemon `timeoutMs` to end the stream, then drop it (and the
   * doorbell: resolves once its socket is released). Idempotent.
   */
  async finish(timeoutMs: number): Promise<void> {
    this.finishing = true;
    if (!this.closed && this.endError === undefined) {
      this.call.end();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.endedPromise, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    }
    this.close();
    await this.doorbellConnection?.closed;
  }

  /** Drop the stream, the doorbell and the channel at once. Idempotent. */
  close(): void {
    this.finishing = true;
    if (this.closed) {
      return;
    }
    this.closed = true;
    this.doorbellConnection?.close();
    this.call.cancel();
    this.failPending(new ConnectionLost("the tool's stream to the sidecar was closed"));
    this.pokeRunAsked(); // nothing more can be read
    this.client.close();
  }
}
