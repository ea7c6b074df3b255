/**
 * refused_on_the_wire, TypeScript: see README.md beside this file. It speaks the protocol
 * with the generated stubs (`@interrupt-sidecar/client/proto`), because the client's
 * `registerTerminator` refuses these registrations itself without asking the daemon.
 */

import { statusName } from "@interrupt-sidecar/client";
import * as pb from "@interrupt-sidecar/client/proto";

import { TOOL_NAME, emit, fail, main, waitFor } from "../driverlib";

type Ended = { readonly ended: true; readonly error?: Error };

/** One Attach stream whose answers queue up, so every read is a bounded wait. */
class Stream {
  private readonly call: ReturnType<pb.ToolChannelServiceClient["attach"]>;
  private readonly queued: (pb.SidecarMessage | Ended)[] = [];
  private waiting: ((next: pb.SidecarMessage | Ended) => void) | undefined;

  constructor(client: pb.ToolChannelServiceClient) {
    this.call = client.attach();
    this.call.on("data", (message: pb.SidecarMessage) => this.push(message));
    this.call.on("error", (error: Error) => this.push({ ended: true, error }));
    this.call.on("end", () => this.push({ ended: true }));
  }

  private push(next: pb.SidecarMessage | Ended): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting !== undefined) {
      waiting(next);
    } else {
      this.queued.push(next);
    }
  }

  private next(what: string): Promise<pb.SidecarMessage | Ended> {
    const queued = this.queued.shift();
    if (queued !== undefined) {
      return Promise.resolve(queued);
    }
    return waitFor(new Promise((resolve) => (this.waiting = resolve)), what);
  }

  send(message: pb.ToolMessage["message"]): void {
    this.call.write({ message });
  }

  async receive(what: string): Promise<pb.SidecarMessage> {
    const next = await this.next(what);
    if ("ended" in next) {
      return fail(`the stream ended (${next.error?.message ?? "no error"}) before ${what}`);
    }
    return next;
  }

  register(terminatorId: string): void {
    this.send({ $case: "registerTerminator", registerTerminator: { terminatorId, kind: { $case: "callback", callback: {} } } });
  }

  /** The answer to registering `terminatorId` must be the daemon's error. */
  async expectRefusal(terminatorId: string): Promise<void> {
    const answer = (await this.receive(`the answer to registering ${terminatorId}`)).message;
    if (answer?.$case === "terminatorRegistered") {
      fail(`the daemon accepted the registration of ${terminatorId}`);
    }
    if (answer?.$case !== "error") {
      fail(`expected an error for ${terminatorId}, got ${answer?.$case ?? "an empty message"}`);
    }
    emit("refused", {
      terminator_id: answer.error.terminatorId,
      code: statusName(answer.error.code),
      message: answer.error.message,
    });
  }

  /** Half-close, and wait for the daemon to end the stream. */
  async close(): Promise<void> {
    this.call.end();
    const next = await this.next("the end of the stream after the half-close");
    if (!("ended" in next)) {
      fail(`unexpected message before the stream ended: ${next.message?.$case ?? "empty"}`);
    }
    if (next.error !== undefined) {
      fail(`the stream ended with an error: ${next.error.message}`);
    }
  }
}

async function attach(client: pb.ToolChannelServiceClient, behavior: pb.InterruptBehavior): Promise<Stream> {
  const stream = new Stream(client);
  stream.send({
    $case: "hello",
    hello: {
      attachToken: process.env.INTERRUPT_SIDECAR_TOKEN ?? "",
      toolName: TOOL_NAME,
      toolCallId: "",
      behavior,
      pid: process.pid,
      doorbell: false,
    },
  });
  const answer = await stream.receive("attached");
  if (answer.message?.$case !== "attached") {
    fail(`expected attached, got ${answer.message?.$case ?? "an empty message"}`);
  }
  emit("attached", { behavior: pb.interruptBehaviorToJSON(behavior).replace(/^INTERRUPT_BEHAVIOR_/, "") });
  return stream;
}

main(async () => {
  const client = new pb.ToolChannelServiceClient(process.env.INTERRUPT_SIDECAR_ADDRESS ?? "", pb.credentials.createInsecure());
  try {
    let stream = await attach(client, pb.InterruptBehavior.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE);
    stream.register("refused");
    await stream.expectRefusal("refused");
    await stream.close();

    stream = await attach(client, pb.InterruptBehavior.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED);
    stream.register("accepted");
    const answer = (await stream.receive("the answer to registering accepted")).message;
    if (answer?.$case !== "terminatorRegistered") {
      fail(`the daemon did not accept the registration of accepted: ${answer?.$case ?? "an empty message"}`);
    }
    emit("registered", { terminator_id: answer.terminatorRegistered.terminatorId });
    // No wait in between: unwound has no answer, and the daemon reads a stream in order.
    stream.send({ $case: "unwound", unwound: { outcome: pb.ToolOutcome.TOOL_OUTCOME_COMPLETED, detail: "" } });
    stream.register("too_late");
    await stream.expectRefusal("too_late");
    await stream.close();
  } finally {
    client.close();
  }
});
