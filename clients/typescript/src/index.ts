/**
 * The TypeScript client of interrupt-sidecar: a tool attaches to the execution (an agent
 * turn or task) it runs in and gets a standard `AbortSignal` that aborts the moment the
 * execution is interrupted, with the reason.
 *
 * ```ts
 * import { attach, InterruptBehavior } from "@interrupt-sidecar/client";
 *
 * const run = await attach({ behavior: InterruptBehavior.COOPERATIVE, toolName: "fetch" });
 * try {
 *   return await fetch(url, { signal: run.signal });
 * } finally {
 *   await run.close();
 * }
 * ```
 *
 * @packageDocumentation
 */

export { ADDRESS_ENV, DOORBELL_ENV, TOKEN_ENV, defaultAddress, resolveAddress } from "./config";
export {
  AlreadyExists,
  CancelledExecution,
  ConnectionLost,
  DeadlineExceeded,
  FailedPrecondition,
  InvalidArgument,
  NotFound,
  PermissionDenied,
  ResourceExhausted,
  SidecarError,
  Unauthenticated,
  Unavailable,
  cancelledExecutionOf,
  errorFor,
  isCancelledExecution,
  statusName,
} from "./errors";
export {
  ManagedProcess,
  killProcessGroup,
  spawnProcessGroup,
  type ChildExit,
  type GroupRegistrar,
  type SpawnGroupOptions,
} from "./process";
export { ToolRun, attach, withRun, type AttachOptions } from "./run";
export type { ProcessGroupOptions, Terminator, TerminatorCallback } from "./terminator";
export { InterruptBehavior, InterruptReason, ToolOutcome, type Cancellation } from "./types";
