/**
 * The tool's end of the cancel doorbell: a unix socket on which the daemon rings the cancel
 * ahead of the Attach stream.
 *
 * A tool that asked for it in hello gets a path and a one-time token in `attached`. It
 * connects, writes the token, and the daemon writes the cancel there the moment the
 * execution trips (at once, if it already has): a 4-byte big-endian length followed by a
 * serialized `interrupt.v1.Cancel`. A raw socket write reaches the tool well before the same
 * cancel on the stream, which still follows and stays authoritative: the doorbell only makes
 * the cancel earlier, so anything going wrong here (no socket, a hang-up without a frame, a
 * malformed frame) is only logged (`NODE_DEBUG=interrupt-sidecar`) and the stream's cancel
 * is used.
 *
 * The frame is decoded in the socket's 'data' listener, which hands the cancel on at once:
 * nothing has to be scheduled to deliver it, which is the point of the doorbell.
 */

import * as net from "node:net";
import { debuglog } from "node:util";

import * as pb from "../gen/interrupt/v1/interrupt";
import { cancellationFromPb, type Cancellation } from "./types";

// The same section as the stream's log (a separate function, to keep the modules acyclic).
const debug = debuglog("interrupt-sidecar");

/** The length prefix of a frame: 4 bytes, big-endian. */
const LENGTH_BYTES = 4;
/** A Cancel is a few dozen bytes (its detail is at most 1 KiB): a longer frame is garbage. */
export const MAX_FRAME = 64 * 1024;

/**
 * Where a doorbell connection is: not opened yet, connecting (the token is queued), open
 * (connected, the token written), or closed for good (its socket released).
 */
export type DoorbellState = "idle" | "connecting" | "open" | "closed";

/**
 * One tool run's doorbell connection, owned by its {@link ToolStream}.
 *
 * `onCancel` is called at most once, with the rung cancel. The socket is closed right after
 * the frame (nothing else is ever written), on a bad frame, when the daemon hangs up, and
 * by {@link close}. Nothing here throws: a doorbell that fails is a doorbell that did not ring.
 */
export class DoorbellConnection {
  /** The doorbell's unix socket path, as granted in `attached`. */
  readonly path: string;
  private readonly token: string;
  private socket: net.Socket | undefined;
  private buffered: Buffer = Buffer.alloc(0);
  private stateValue: DoorbellState = "idle";
  private closing = false;
  private rangValue = false;
  private markClosed!: () => void;
  /** Resolves once the connection is closed and its socket released (at once if it never opened). */
  readonly closed: Promise<void>;

  constructor(
    grant: pb.Doorbell,
    private readonly onCancel: (cancellation: Cancellation) => void,
  ) {
    this.path = grant.path;
    this.token = grant.token;
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
  }

  /** The connection's state. */
  get state(): DoorbellState {
    return this.stateValue;
  }

  /** True once a whole, valid cancel frame was read (and handed to `onCancel`). */
  get rang(): boolean {
    return this.rangValue;
  }

  /** Start connecting: returns at once, never throws. A second call does nothing. */
  open(): void {
    if (this.stateValue !== "idle" || this.closing) {
      return;
    }
    this.stateValue = "connecting";
    let socket: net.Socket;
    try {
      socket = net.createConnection({ path: this.path });
    } catch (error) {
      debug("no cancel doorbell at %s (%s); the stream's cancel will do", this.path, String(error));
      this.released();
      return;
    }
    this.socket = socket;
    // The stream decides how long a tool's process lives (an attached run keeps it alive);
    // its doorbell must never be what holds it up.
    socket.unref();
    socket.on("connect", () => {
      if (this.stateValue === "connecting") {
        this.stateValue = "open";
      }
    });
    socket.on("data", (chunk: Buffer) => this.received(chunk));
    socket.on("end", () => {
      if (!this.rangValue) {
        // The token was refused, the stream ended, or the daemon is stopping: the stream
        // says which, and carries the cancel if there is one.
        debug("the cancel doorbell at %s hung up without a cancel; the stream's cancel will do", this.path);
      }
      this.close();
    });
    // Connect refused, no such socket, a reset: 'close' follows, and the stream carries on.
    socket.on("error", (error: Error) =>
      debug("the cancel doorbell at %s failed (%s); the stream's cancel will do", this.path, error.message),
    );
    socket.on("close", () => this.released());
    // Queued until connected; the token is the only thing the tool ever writes.
    socket.write(this.token, "latin1");
  }

  /** Hang up, or stop connecting. Idempotent; the socket is released when {@link closed} resolves. */
  close(): void {
    this.closing = true;
    if (this.socket === undefined) {
      this.released();
    } else if (!this.socket.destroyed) {
      this.socket.destroy();
    }
  }

  private released(): void {
    this.closing = true;
    this.socket = undefined;
    this.buffered = Buffer.alloc(0);
    this.stateValue = "closed";
    this.markClosed();
  }

  private received(chunk: Buffer): void {
    if (this.closing) {
      return;
    }
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    if (this.buffered.length < LENGTH_BYTES) {
      return;
    }
    const length = this.buffered.readUInt32BE(0);
    if (length > MAX_FRAME) {
      debug("the cancel doorbell at %s sent a %d-byte frame; ignoring it for the stream's cancel", this.path, length);
      this.close();
      return;
    }
    const end = LENGTH_BYTES + length;
    if (this.buffered.length < end) {
      return;
    }
    const cancel = decodeCancel(this.buffered.subarray(LENGTH_BYTES, end), this.path);
    if (cancel === undefined) {
      this.close();
      return;
    }
    // The frame is the only thing the daemon ever writes: hang up before handing it on.
    this.rangValue = true;
    this.close();
    this.onCancel(cancellationFromPb(cancel));
  }
}

/**
 * The Cancel of a frame, or undefined for one the daemon cannot have sent. Protobuf decodes
 * many byte strings without complaint, and a cancel trips the run for good: the daemon always
 * sets the reason and the trip time, so a cancel without them is garbage, left to the stream.
 */
function decodeCancel(body: Uint8Array, path: string): pb.Cancel | undefined {
  let cancel: pb.Cancel;
  try {
    cancel = pb.Cancel.decode(body);
  } catch (error) {
    debug("the cancel doorbell at %s sent a malformed cancel (%s); ignoring it for the stream's", path, String(error));
    return undefined;
  }
  if (cancel.reason === pb.InterruptReason.INTERRUPT_REASON_UNSPECIFIED || cancel.trippedAt === undefined) {
    debug("the cancel doorbell at %s sent a cancel without a reason or trip time; ignoring it for the stream's", path);
    return undefined;
  }
  return cancel;
}
