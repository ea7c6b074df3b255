/**
 * Value types of the tool side. Enums are string constants (their proto names without the
 * prefix: `"USER_SIGINT"`), so they print and compare as themselves; protos stay at the edge.
 */

import * as pb from "../gen/interrupt/v1/interrupt";

/**
 * Why an execution was cancelled (`interrupt.v1.InterruptReason`). For observation only
 * (messages, logs): behaviour depends on "cancelled", never on the reason.
 */
export const InterruptReason = {
  USER_SIGINT: "USER_SIGINT",
  NOW_PRIORITY_INPUT: "NOW_PRIORITY_INPUT",
  BUDGET_EXCEEDED: "BUDGET_EXCEEDED",
  PARENT_CANCELLED: "PARENT_CANCELLED",
  TASK_CANCELLED: "TASK_CANCELLED",
  SYSTEM_SHUTDOWN: "SYSTEM_SHUTDOWN",
  LEASE_LOST: "LEASE_LOST",
  SESSION_RELEASED: "SESSION_RELEASED",
  HOLDER_LOST: "HOLDER_LOST",
} as const;
/** One of the nine {@link InterruptReason} names. */
export type InterruptReason = (typeof InterruptReason)[keyof typeof InterruptReason];

/**
 * How a tool takes an interrupt, declared once when it attaches (`interrupt.v1.InterruptBehavior`).
 * `NON_INTERRUPTIBLE` is the default.
 */
export const InterruptBehavior = {
  /** Not sent the cancel; may not register terminators. For short atomic work. */
  NON_INTERRUPTIBLE: "NON_INTERRUPTIBLE",
  /** Sent the cancel: the run's signal aborts; no terminators. */
  COOPERATIVE: "COOPERATIVE",
  /** Sent the cancel: the run's signal aborts (JavaScript's way to interrupt work); callback terminators. */
  THREAD_INTERRUPT: "THREAD_INTERRUPT",
  /** Sent the cancel; callback and process-group terminators (the daemon kills the groups). */
  EXTERNALLY_TERMINATED: "EXTERNALLY_TERMINATED",
} as const;
/** One of the four {@link InterruptBehavior} names. */
export type InterruptBehavior = (typeof InterruptBehavior)[keyof typeof InterruptBehavior];

/** How a tool's run ended, as the tool reports it (`interrupt.v1.ToolOutcome`). */
export const ToolOutcome = {
  /** The work finished normally. */
  COMPLETED: "COMPLETED",
  /** The work stopped early because of the cancel. */
  INTERRUPTED: "INTERRUPTED",
  /** The work failed for a reason of its own. */
  FAILED: "FAILED",
} as const;
/** One of the three {@link ToolOutcome} names. */
export type ToolOutcome = (typeof ToolOutcome)[keyof typeof ToolOutcome];

/** What a tripped signal holds: the first reason, and what came with it. */
export interface Cancellation {
  readonly reason: InterruptReason;
  /** The free-text detail the agent gave (may be empty). */
  readonly detail: string;
  /** When the execution tripped (unknown for a tool that only saw it at attach time). */
  readonly trippedAt?: Date;
  /** Report unwound before this, or the tool counts as a grace overrun. */
  readonly graceDeadline?: Date;
}

/** True for the behaviours the daemon sends the cancel to. */
export function receivesCancel(behavior: InterruptBehavior): boolean {
  return behavior !== InterruptBehavior.NON_INTERRUPTIBLE;
}

/** True when the behaviour may register callback terminators. */
export function mayRegisterCallbacks(behavior: InterruptBehavior): boolean {
  return behavior === InterruptBehavior.THREAD_INTERRUPT || behavior === InterruptBehavior.EXTERNALLY_TERMINATED;
}

/** True when the behaviour may register process-group terminators. */
export function mayRegisterProcessGroups(behavior: InterruptBehavior): boolean {
  return behavior === InterruptBehavior.EXTERNALLY_TERMINATED;
}

const REASON_BY_NUMBER: ReadonlyMap<number, InterruptReason> = new Map(
  Object.values(InterruptReason).map((name) => [pb.interruptReasonFromJSON(`INTERRUPT_REASON_${name}`), name]),
);

/** The reason for a wire number; undefined for UNSPECIFIED or a reason newer than this client. */
export function reasonFromPb(value: pb.InterruptReason): InterruptReason | undefined {
  return REASON_BY_NUMBER.get(value);
}

/** The wire number of a reason. */
export function reasonToPb(reason: InterruptReason): pb.InterruptReason {
  const value = pb.interruptReasonFromJSON(`INTERRUPT_REASON_${reason}`);
  if (value === pb.InterruptReason.UNRECOGNIZED) {
    throw new TypeError(`unknown interrupt reason ${JSON.stringify(reason)}`);
  }
  return value;
}

/** The wire number of a behaviour. */
export function behaviorToPb(behavior: InterruptBehavior): pb.InterruptBehavior {
  const value = pb.interruptBehaviorFromJSON(`INTERRUPT_BEHAVIOR_${behavior}`);
  if (value === pb.InterruptBehavior.UNRECOGNIZED || value === pb.InterruptBehavior.INTERRUPT_BEHAVIOR_UNSPECIFIED) {
    throw new TypeError(`unknown interrupt behavior ${JSON.stringify(behavior)}`);
  }
  return value;
}

/** The wire number of an outcome. */
export function outcomeToPb(outcome: ToolOutcome): pb.ToolOutcome {
  const value = pb.toolOutcomeFromJSON(`TOOL_OUTCOME_${outcome}`);
  if (value === pb.ToolOutcome.UNRECOGNIZED || value === pb.ToolOutcome.TOOL_OUTCOME_UNSPECIFIED) {
    throw new TypeError(`unknown tool outcome ${JSON.stringify(outcome)}`);
  }
  return value;
}

/** The cancellation a `cancel` message carries. */
export function cancellationFromPb(cancel: pb.Cancel): Cancellation {
  return {
    // The daemon refuses unset reasons, so 0 (or a reason newer than this client) is not
    // expected; keep the cancel, which is what matters, under a generic reason.
    reason: reasonFromPb(cancel.reason) ?? InterruptReason.USER_SIGINT,
    detail: cancel.detail,
    ...(cancel.trippedAt !== undefined ? { trippedAt: cancel.trippedAt } : {}),
    ...(cancel.graceDeadline !== undefined ? { graceDeadline: cancel.graceDeadline } : {}),
  };
}

/** Milliseconds of a protobuf Duration (undefined when unset). */
export function durationMs(duration: { seconds: number; nanos: number } | undefined): number | undefined {
  return duration === undefined ? undefined : duration.seconds * 1000 + duration.nanos / 1e6;
}

/** A protobuf Duration of milliseconds. */
export function durationFromMs(ms: number): { seconds: number; nanos: number } {
  if (!Number.isFinite(ms) || ms < 0) {
    throw new RangeError(`a duration must be a finite, non-negative number of milliseconds, got ${ms}`);
  }
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}
