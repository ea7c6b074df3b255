/**
 * The cancel doorbell: asked for over unix sockets, opted out of with INTERRUPT_SIDECAR_DOORBELL,
 * its cancel delivered once whichever way comes first, its connection closed with the run.
 *
 * Two daemons: a fake one (a grpc-js server and a doorbell socket this file drives), which can
 * ring the doorbell and never send the stream's cancel — the only way to prove that the cancel
 * really came through the doorbell — or misbehave; and the real one (`interrupt-sidecar serve`,
 * skipped without it, as in daemon.test.ts), for the protocol as the daemon speaks it.
 */

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { after, afterEach, before, beforeEach, describe, it, mock } from "node:test";

import { Server, ServerCredentials, credentials, type ServerDuplexStream, type ServiceError } from "@grpc/grpc-js";

import * as pb from "../gen/interrupt/v1/interrupt";
import { setTimeout as sleep } from "node:timers/promises";

import { DOORBELL_ENV, InterruptBehavior, ToolRun, attach, withRun, type Cancellation } from "../src";
import { CLOSE_TIMEOUT_MS } from "../src/run";
import { resolveDoorbell } from "../src/config";
import { MAX_FRAME } from "../src/doorbell";

/** Every wait of this file gives up after this long (tests are bounded by their own timeouts too). */
const WAIT_MS = 5_000;
const TEST = { timeout: 15_000 };

/** `promise`, or a rejection naming `what` after {@link WAIT_MS}. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`)), WAIT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Poll `condition` every few ms until it holds, or fail after {@link WAIT_MS}. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!condition()) {
    if (Date.now() > deadline) {
      assert.fail(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Resolves when `signal` aborts (at once if it has). */
function aborted(signal: AbortSignal): Promise<void> {
  return signal.aborted ? Promise.resolve() : once(signal, "abort").then(() => undefined);
}

/** The run's Attach stream (attached runs only). */
function streamOf(run: ToolRun) {
  const stream = run.toolStream;
  assert.ok(stream !== undefined, "the run is attached");
  return stream;
}

/** The doorbell's bytes for `cancel`: a 4-byte big-endian length, then the message. */
function frame(cancel: pb.Cancel): Buffer {
  const body = pb.Cancel.encode(cancel).finish();
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length);
  return Buffer.concat([header, body]);
}

const TRIPPED_AT = new Date("2030-01-02T03:04:05.678Z");
const GRACE_DEADLINE = new Date("2030-01-02T03:04:06.178Z");
const CANCEL: pb.Cancel = {
  reason: pb.InterruptReason.INTERRUPT_REASON_NOW_PRIORITY_INPUT,
  detail: "the user typed",
  trippedAt: TRIPPED_AT,
  graceDeadline: GRACE_DEADLINE,
};
const EXPECTED: Cancellation = { reason: "NOW_PRIORITY_INPUT", detail: "the user typed", trippedAt: TRIPPED_AT, graceDeadline: GRACE_DEADLINE };

describe("doorbell configuration", () => {
  const saved = process.env[DOORBELL_ENV];
  afterEach(() => {
    if (saved === undefined) delete process.env[DOORBELL_ENV];
    else process.env[DOORBELL_ENV] = saved;
  });

  it("asks over unix sockets unless INTERRUPT_SIDECAR_DOORBELL opts out", () => {
    delete process.env[DOORBELL_ENV];
    assert.equal(resolveDoorbell(undefined, "unix:///run/s.sock"), true);
    assert.equal(resolveDoorbell(undefined, "unix:/run/s.sock"), true);
    for (const off of ["0", "false", "no", "off", "OFF", " False "]) {
      process.env[DOORBELL_ENV] = off;
      assert.equal(resolveDoorbell(undefined, "unix:///run/s.sock"), false, off);
    }
    for (const on of ["1", "true", "auto", ""]) {
      process.env[DOORBELL_ENV] = on;
      assert.equal(resolveDoorbell(undefined, "unix:///run/s.sock"), true, on);
    }
  });

  it("takes the option over the environment, and never asks over TCP", () => {
    process.env[DOORBELL_ENV] = "0";
    assert.equal(resolveDoorbell(true, "unix:///run/s.sock"), true);
    delete process.env[DOORBELL_ENV];
    assert.equal(resolveDoorbell(false, "unix:///run/s.sock"), false);
    assert.equal(resolveDoorbell(undefined, "127.0.0.1:50051"), false);
    assert.equal(resolveDoorbell(true, "dns:///localhost:50051"), false);
  });
});

// -- a fake daemon ---------------------------------------------------------------------------

type AttachCall = ServerDuplexStream<pb.ToolMessage, pb.SidecarMessage>;

/** One tool's connection to the fake doorbell: what it wrote, and whether it was closed. */
interface BellConnection {
  readonly socket: net.Socket;
  readonly token: Promise<string>;
  readonly closed: Promise<void>;
}

/**
 * A grpc-js server speaking the tool side of the protocol as scripted by `onHello`, and a
 * doorbell socket whose connections `onToken` answers. It acknowledges registrations, keeps
 * every hello, and ends a stream the tool half-closes. It never closes a doorbell connection
 * by itself: what closes one is the client.
 */
class FakeDaemon {
  readonly directory = mkdtempSync(path.join(tmpdir(), "isd-ts-bell-"));
  readonly bellPath = path.join(this.directory, "bell.sock");
  readonly hellos: pb.Hello[] = [];
  readonly calls: AttachCall[] = [];
  readonly bells: BellConnection[] = [];
  /** What to answer a hello with (the default: attached, with a doorbell when asked). */
  onHello: (call: AttachCall, hello: pb.Hello) => void = (call, hello) => call.write(this.attached(hello));
  /** End a stream the tool half-closes, as the daemon does (false: leave it open). */
  endOnHalfClose = true;
  /** What to do once a doorbell connection wrote its token (the default: ring the cancel). */
  onToken: (socket: net.Socket, token: string) => void = (socket) => socket.write(frame(CANCEL));
  /** Called with every tool message after the fake handled it (the default: nothing more). */
  onMessage: (call: AttachCall, message: pb.ToolMessage) => void = () => undefined;
  /** What the tools wrote, in order: each message's case (`terminatorResult:<id>:<error>`), and `half-close`. */
  readonly transcript: string[] = [];
  address = "";
  private readonly server = new Server();
  private readonly bell = net.createServer((socket) => this.bellConnected(socket));

  /** `attached`, with a doorbell grant of the token `bell-token-<n>` when the hello asked. */
  attached(hello: pb.Hello, fields: Partial<pb.Attached> = {}): pb.SidecarMessage {
    const doorbell = hello.doorbell ? { path: this.bellPath, token: `bell-token-${this.hellos.length}`.padEnd(32, "0") } : undefined;
    return {
      message: {
        $case: "attached",
        attached: pb.Attached.fromPartial({ executionId: "exec-1", toolId: `tool-${this.hellos.length}`, grace: { seconds: 0, nanos: 500_000_000 }, doorbell, ...fields }),
      },
    };
  }

  async start(address = `unix://${path.join(this.directory, "fake.sock")}`): Promise<void> {
    this.server.addService(pb.ToolChannelServiceService, { attach: (call: AttachCall) => this.attach(call) });
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(address, ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    this.address = address.startsWith("unix:") ? address : address.replace(/:0$/, `:${port}`);
    this.bell.listen(this.bellPath);
    await once(this.bell, "listening");
  }

  async stop(): Promise<void> {
    this.server.forceShutdown();
    for (const connection of this.bells) connection.socket.destroy();
    await new Promise((resolve) => this.bell.close(resolve));
    rmSync(this.directory, { recursive: true, force: true });
  }

  private attach(call: AttachCall): void {
    this.calls.push(call);
    call.on("error", () => undefined);
    call.on("end", () => {
      this.transcript.push("half-close");
      if (this.endOnHalfClose) call.end();
    });
    call.on("data", (message: pb.ToolMessage) => {
      const body = message.message;
      this.transcript.push(
        body?.$case === "terminatorResult" ? `terminatorResult:${body.terminatorResult.terminatorId}:${body.terminatorResult.error}` : `${body?.$case}`,
      );
      switch (body?.$case) {
        case "hello":
          this.hellos.push(body.hello);
          this.onHello(call, body.hello);
          break;
        case "registerTerminator":
          call.write({ message: { $case: "terminatorRegistered", terminatorRegistered: { terminatorId: body.registerTerminator.terminatorId } } });
          break;
        case "unregisterTerminator":
          call.write({ message: { $case: "terminatorUnregistered", terminatorUnregistered: { terminatorId: body.unregisterTerminator.terminatorId } } });
          break;
        default:
          break;
      }
      this.onMessage(call, message);
    });
  }

  private bellConnected(socket: net.Socket): void {
    socket.on("error", () => undefined);
    let got = "";
    const token = new Promise<string>((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        if (got.length >= 32) return;
        got += chunk.toString("latin1");
        if (got.length >= 32) {
          resolve(got);
          this.onToken(socket, got);
        }
      });
    });
    this.bells.push({ socket, token, closed: once(socket, "close").then(() => undefined) });
  }
}

describe("doorbell: against a fake daemon", { timeout: 60_000 }, () => {
  let fake: FakeDaemon;
  const saved = process.env[DOORBELL_ENV];

  beforeEach(async () => {
    delete process.env[DOORBELL_ENV];
    fake = new FakeDaemon();
    await fake.start();
  });

  afterEach(async () => {
    mock.restoreAll();
    if (saved === undefined) delete process.env[DOORBELL_ENV];
    else process.env[DOORBELL_ENV] = saved;
    await fake.stop();
  });

  it("takes the cancel from the doorbell when the stream never sends it, once", TEST, async () => {
    const trips = mock.method(ToolRun.prototype, "trip");
    const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.THREAD_INTERRUPT });
    assert.equal(fake.hellos[0]?.doorbell, true);
    let listeners = 0;
    run.signal.addEventListener("abort", () => listeners++);
    // Only the doorbell carries the cancel here: the fake writes nothing more on the stream.
    await within(aborted(run.signal), "the doorbell's cancel");
    assert.equal(streamOf(run).cancelPath, "doorbell");
    assert.deepEqual(run.cancellation, EXPECTED);
    assert.deepEqual(run.signal.reason.cancellation, EXPECTED);
    const bell = streamOf(run).doorbell!;
    assert.equal(bell.rang, true);
    assert.equal(await within(fake.bells[0]!.token, "the token"), "bell-token-1".padEnd(32, "0"));
    // Nothing else is ever written on it: the client hangs up once the frame is in.
    await within(bell.closed, "the doorbell's close after the frame");
    await within(fake.bells[0]!.closed, "the hang-up, seen by the daemon");

    // The same cancel on the stream now is a duplicate: dropped. A terminator run after it,
    // on the same ordered stream, shows that the reader has handled it.
    let ranAfter!: () => void;
    const ran = new Promise<void>((resolve) => (ranAfter = resolve));
    await within(run.registerTerminator(() => ranAfter(), "after"), "the daemon's acknowledgement");
    fake.calls[0]!.write({ message: { $case: "cancel", cancel: { ...CANCEL, detail: "a second copy" } } });
    fake.calls[0]!.write({ message: { $case: "runTerminator", runTerminator: { terminatorId: "after" } } });
    await within(ran, "the terminator after the stream's cancel");
    assert.equal(trips.mock.callCount(), 1, "the run tripped once");
    assert.equal(listeners, 1, "abort listeners ran once");
    assert.equal(streamOf(run).cancelPath, "doorbell");
    assert.deepEqual(run.cancellation, EXPECTED, "the first cancellation stays");
    await run.close();
  });

  it("takes the cancel from the stream when it comes first, and closes the doorbell", TEST, async () => {
    fake.onToken = () => undefined; // a doorbell that never rings
    const trips = mock.method(ToolRun.prototype, "trip");
    const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.COOPERATIVE });
    await until(() => fake.bells.length === 1, "the doorbell connection");
    await within(fake.bells[0]!.token, "the token");
    fake.calls[0]!.write({ message: { $case: "cancel", cancel: CANCEL } });
    await within(aborted(run.signal), "the stream's cancel");
    assert.equal(streamOf(run).cancelPath, "stream");
    assert.deepEqual(run.cancellation, EXPECTED);
    // The doorbell can only ring what the stream has said: the client hangs up at once.
    await within(fake.bells[0]!.closed, "the doorbell's hang-up");
    assert.equal(streamOf(run).doorbell!.rang, false);
    assert.equal(trips.mock.callCount(), 1);
    await run.close();
  });

  it("trips once when the execution had tripped at attach, without opening the doorbell", TEST, async () => {
    // The daemon's order: attached{cancelled}, then the cancel at once; a doorbell rings on connect.
    fake.onHello = (call, hello) => {
      call.write(fake.attached(hello, { cancelled: true, reason: CANCEL.reason }));
      call.write({ message: { $case: "cancel", cancel: CANCEL } });
    };
    const trips = mock.method(ToolRun.prototype, "trip");
    const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.THREAD_INTERRUPT });
    assert.equal(fake.hellos[0]?.doorbell, true);
    assert.equal(run.signal.aborted, true);
    assert.deepEqual(run.cancellation, EXPECTED);
    // A round trip on the stream: everything the fake sent before its answer has been read.
    await within(run.registerTerminator(() => undefined, "sync"), "the daemon's acknowledgement");
    assert.equal(streamOf(run).cancelPath, "stream");
    assert.equal(streamOf(run).doorbell, undefined, "the doorbell could only ring the same cancel again");
    assert.equal(fake.bells.length, 0);
    assert.equal(trips.mock.callCount(), 1);
    await run.close();
  });

  it("does not ask when opted out, for a NON_INTERRUPTIBLE tool, or over TCP", TEST, async () => {
    const asked = async (options: Parameters<typeof attach>[0]): Promise<boolean> => {
      const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.COOPERATIVE, ...options });
      const hello = fake.hellos.at(-1)!;
      assert.equal(streamOf(run).doorbell === undefined, !hello.doorbell);
      await run.close();
      return hello.doorbell;
    };
    assert.equal(await asked({}), true);
    process.env[DOORBELL_ENV] = "0";
    assert.equal(await asked({}), false);
    assert.equal(await asked({ doorbell: true }), true, "the option beats the environment");
    delete process.env[DOORBELL_ENV];
    assert.equal(await asked({ doorbell: false }), false);
    assert.equal(await asked({ behavior: InterruptBehavior.NON_INTERRUPTIBLE }), false);

    const tcp = new FakeDaemon();
    await tcp.start("127.0.0.1:0");
    try {
      const run = await attach({ address: tcp.address, token: "t", behavior: InterruptBehavior.COOPERATIVE, doorbell: true });
      assert.equal(tcp.hellos[0]?.doorbell, false);
      await run.close();
    } finally {
      await tcp.stop();
    }
  });

  it("closes the doorbell when the run ends", TEST, async () => {
    fake.onToken = () => undefined;
    const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.COOPERATIVE });
    await until(() => fake.bells.length === 1, "the doorbell connection");
    await within(fake.bells[0]!.token, "the token");
    const bell = streamOf(run).doorbell!;
    assert.equal(bell.state, "open");
    await within(run.close(), "the run's close");
    assert.equal(bell.state, "closed", "close() resolves once the doorbell's socket is released");
    await within(fake.bells[0]!.closed, "the hang-up, seen by the daemon");
    assert.equal(run.signal.aborted, false);
  });

  it("closes the doorbell when the daemon does not end the stream at close", TEST, async () => {
    fake.onToken = () => undefined;
    fake.endOnHalfClose = false; // close() then gives up on the stream after CLOSE_TIMEOUT_MS
    const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.COOPERATIVE });
    await until(() => fake.bells.length === 1, "the doorbell connection");
    await within(fake.bells[0]!.token, "the token");
    await within(run.close(), "the run's close");
    assert.equal(streamOf(run).doorbell!.state, "closed");
    await within(fake.bells[0]!.closed, "the hang-up, seen by the daemon");
  });

  it("closes the doorbell when the stream ends under the tool", TEST, async () => {
    fake.onToken = () => undefined;
    const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.COOPERATIVE });
    await until(() => fake.bells.length === 1, "the doorbell connection");
    await within(fake.bells[0]!.token, "the token");
    fake.calls[0]!.end(); // the daemon ends the stream; the fake keeps its doorbell end open
    await within(fake.bells[0]!.closed, "the client's hang-up");
    await within(streamOf(run).doorbell!.closed, "the client's doorbell close");
    assert.equal(run.signal.aborted, false);
    await run.close();
  });

  // The doorbell's cancel comes well ahead of the stream's run_terminator messages. Here the
  // fake holds them back until the tool has reported unwound — its work has ended by then —
  // so only a close() that waits for them, and for the result, reports it before half-closing.
  it("runs and reports a terminator the stream asks for only after the work has ended", TEST, async () => {
    fake.onMessage = (call, message) => {
      if (message.message?.$case === "unwound") {
        call.write({ message: { $case: "cancel", cancel: CANCEL } });
        call.write({ message: { $case: "runTerminator", runTerminator: { terminatorId: "slow_failing" } } });
      }
    };
    fake.onToken = () => undefined; // rung below, once the registration is in
    let ran = 0;
    const outcome = withRun({ address: fake.address, token: "t", behavior: InterruptBehavior.THREAD_INTERRUPT }, async (run) => {
      await run.registerTerminator(async () => {
        ran++;
        await sleep(100); // still running when the work has ended
        throw new Error("the child would not stop");
      }, "slow_failing");
      await until(() => fake.bells.length === 1, "the doorbell connection");
      await within(fake.bells[0]!.token, "the token");
      fake.bells[0]!.socket.write(frame(CANCEL));
      await within(aborted(run.signal), "the doorbell's cancel");
      assert.equal(streamOf(run).cancelPath, "doorbell");
      run.checkpoint(); // the work ends at once, as it should
    });
    await assert.rejects(within(outcome, "the run's end"), { name: "CancelledExecution" });
    assert.equal(ran, 1);
    const failed = "terminatorResult:slow_failing:Error: the child would not stop";
    assert.ok(fake.transcript.includes("half-close"), fake.transcript.join(", "));
    assert.deepEqual(fake.transcript.slice(-3), ["unwound", failed, "half-close"], "the result is written before the half-close");
  });

  it("does not wait at close for a callback terminator unregistered before the trip", TEST, async () => {
    let ranKept!: () => void;
    const keptRan = new Promise<void>((resolve) => (ranKept = resolve));
    fake.onToken = () => undefined; // rung below, once the registrations are in
    const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.THREAD_INTERRUPT });
    await run.registerTerminator(() => ranKept(), "kept");
    await run.registerTerminator(() => undefined, "dropped");
    await run.unregisterTerminator("dropped"); // acknowledged: the trip no longer asks for it
    await until(() => fake.bells.length === 1, "the doorbell connection");
    await within(fake.bells[0]!.token, "the token");
    fake.bells[0]!.socket.write(frame(CANCEL));
    await within(aborted(run.signal), "the doorbell's cancel");
    fake.calls[0]!.write({ message: { $case: "runTerminator", runTerminator: { terminatorId: "kept" } } });
    await within(keptRan, "terminator 'kept' to run");
    const started = Date.now();
    await within(run.close(), "the run's close");
    assert.ok(Date.now() - started < CLOSE_TIMEOUT_MS, `close() waited ${Date.now() - started} ms for a run nobody will ask for`);
    assert.deepEqual(fake.transcript.slice(-3), ["terminatorResult:kept:", "unwound", "half-close"]);
  });

  // Whatever the doorbell does wrong, the tool carries on and takes the stream's cancel.
  const broken: [string, (fake: FakeDaemon) => void][] = [
    ["no socket at the granted path", (f) => rmSync(f.bellPath)],
    ["a hang-up without a frame (a refused token)", (f) => (f.onToken = (socket) => socket.end())],
    ["half a frame, then a hang-up", (f) => (f.onToken = (socket) => socket.end(frame(CANCEL).subarray(0, 6)))],
    ["a frame that is not a Cancel", (f) => (f.onToken = (socket) => socket.write(Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff])))],
    ["a Cancel without a reason", (f) => (f.onToken = (socket) => socket.write(frame({ ...CANCEL, reason: 0 })))],
    // 0x20000 bytes announced: more than MAX_FRAME, so the client does not wait for them.
    ["a frame too long to be a Cancel", (f) => (f.onToken = (socket) => socket.write(Buffer.from([0, 2, 0, 0, 1, 2, 3])))],
  ];
  for (const [what, breakIt] of broken) {
    it(`falls back to the stream on ${what}`, TEST, async () => {
      assert.ok(MAX_FRAME < 0x20000);
      breakIt(fake);
      const trips = mock.method(ToolRun.prototype, "trip");
      const run = await attach({ address: fake.address, token: "t", behavior: InterruptBehavior.COOPERATIVE });
      const bell = streamOf(run).doorbell!;
      await within(bell.closed, "the failed doorbell's close");
      assert.equal(bell.rang, false);
      assert.equal(run.signal.aborted, false, "a broken doorbell trips nothing");
      fake.calls[0]!.write({ message: { $case: "cancel", cancel: CANCEL } });
      await within(aborted(run.signal), "the stream's cancel");
      assert.equal(streamOf(run).cancelPath, "stream");
      assert.deepEqual(run.cancellation, EXPECTED);
      assert.equal(trips.mock.callCount(), 1);
      await run.close();
    });
  }
});

// -- the real daemon -------------------------------------------------------------------------

const ROOT = path.resolve(__dirname, "..", "..", "..", "..");
const BIN = process.env["INTERRUPT_SIDECAR_BIN"] ?? path.join(ROOT, ".venv", "bin", "interrupt-sidecar");
const skip = existsSync(BIN) ? false : `no daemon to test against (${BIN} is missing)`;

describe("doorbell: against a real daemon", { skip, timeout: 60_000 }, () => {
  let daemon: ChildProcess | undefined;
  let directory = "";
  let socketPath = "";
  let address = "";
  let coordinator: pb.CoordinatorServiceClient;
  const saved = process.env[DOORBELL_ENV];

  function unary<Req, Res>(method: (request: Req, callback: (error: ServiceError | null, response: Res) => void) => unknown, request: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      method.call(coordinator, request, (error: ServiceError | null, response: Res) => (error ? reject(error) : resolve(response)));
    });
  }
  const begin = (): Promise<pb.BeginExecutionResponse> => unary(coordinator.beginExecution, pb.BeginExecutionRequest.fromPartial({}));
  const interrupt = (executionId: string, reason: pb.InterruptReason, detail = ""): Promise<pb.InterruptResponse> =>
    unary(coordinator.interrupt, pb.InterruptRequest.fromPartial({ target: { $case: "executionId", executionId }, reason, detail }));

  before(async () => {
    directory = mkdtempSync(path.join(tmpdir(), "isd-ts-"));
    socketPath = path.join(directory, "s.sock");
    address = `unix://${socketPath}`;
    // --doorbell auto whatever the environment says (the daemon reads INTERRUPT_SIDECAR_DOORBELL too).
    daemon = spawn(BIN, ["serve", "--listen", address, "--metrics-listen", "", "--doorbell", "auto"], { stdio: ["ignore", "pipe", "ignore"] });
    const exited = once(daemon, "exit").then(([code]) => {
      throw new Error(`the daemon exited with ${code}`);
    });
    exited.catch(() => undefined);
    const [ready] = (await within(Promise.race([once(createInterface({ input: daemon.stdout! }), "line"), exited]), "the daemon's ready line")) as [string];
    assert.match(ready, /^ready /);
    coordinator = new pb.CoordinatorServiceClient(address, credentials.createInsecure());
  });

  after(() => {
    coordinator?.close();
    daemon?.kill("SIGTERM");
    rmSync(directory, { recursive: true, force: true });
  });

  beforeEach(() => delete process.env[DOORBELL_ENV]);

  afterEach(() => {
    mock.restoreAll();
    if (saved === undefined) delete process.env[DOORBELL_ENV];
    else process.env[DOORBELL_ENV] = saved;
  });

  it("grants the doorbell over unix and delivers the cancel once, the same as on the stream", TEST, async () => {
    const turn = await begin();
    const trips = mock.method(ToolRun.prototype, "trip");
    const bell = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.COOPERATIVE, toolName: "ts-bell" });
    process.env[DOORBELL_ENV] = "0";
    const plain = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.COOPERATIVE, toolName: "ts-plain" });
    assert.equal(streamOf(bell).doorbell?.path, `${socketPath}.doorbell`);
    assert.equal(streamOf(plain).doorbell, undefined, "opted out: not asked, not granted");
    await until(() => streamOf(bell).doorbell!.state === "open", "the doorbell connection");
    let listeners = 0;
    bell.signal.addEventListener("abort", () => listeners++);

    await interrupt(turn.executionId, pb.InterruptReason.INTERRUPT_REASON_NOW_PRIORITY_INPUT, "new input");
    await within(Promise.all([aborted(bell.signal), aborted(plain.signal)]), "both cancels");
    assert.equal(bell.cancellation?.reason, "NOW_PRIORITY_INPUT");
    assert.equal(bell.cancellation?.detail, "new input");
    assert.ok(bell.cancellation?.trippedAt instanceof Date);
    assert.ok(bell.cancellation?.graceDeadline instanceof Date);
    // The doorbell's cancel (or the stream's, had it come first) is the stream's cancel.
    assert.deepEqual(bell.cancellation, plain.cancellation);
    assert.equal(streamOf(plain).cancelPath, "stream");
    assert.ok(streamOf(bell).cancelPath !== undefined);

    // After close the stream's copy has been read too (the daemon sends it before ending
    // the stream): still one trip per run, one listener call.
    await bell.close();
    await plain.close();
    assert.equal(trips.mock.calls.filter((call) => call.this === bell).length, 1);
    assert.equal(listeners, 1);
    assert.equal(streamOf(bell).doorbell!.state, "closed");
  });

  it("trips once when the execution had tripped before the attach", TEST, async () => {
    const turn = await begin();
    await interrupt(turn.executionId, pb.InterruptReason.INTERRUPT_REASON_BUDGET_EXCEEDED, "spent");
    const trips = mock.method(ToolRun.prototype, "trip");
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.THREAD_INTERRUPT });
    assert.equal(run.signal.aborted, true);
    assert.equal(run.cancellation?.reason, "BUDGET_EXCEEDED");
    assert.equal(run.cancellation?.detail, "spent");
    await within(run.registerTerminator(() => undefined, "sync"), "the daemon's acknowledgement");
    await run.close();
    assert.equal(trips.mock.callCount(), 1);
    assert.equal(streamOf(run).cancelPath, "stream");
  });

  it("closes the doorbell connection when the run ends", TEST, async () => {
    const turn = await begin();
    const run = await attach({ address, token: turn.attachToken, behavior: InterruptBehavior.COOPERATIVE });
    const bell = streamOf(run).doorbell!;
    await until(() => bell.state === "open", "the doorbell connection");
    await run.close();
    assert.equal(bell.state, "closed");
    assert.equal(run.signal.aborted, false);
  });
});
