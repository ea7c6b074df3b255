/**
 * One root error for everything the sidecar refuses or cannot do, mapped at the gRPC boundary.
 *
 * {@link SidecarError} carries the gRPC status code; each subclass names one. A refused
 * `Attach` (the stream ends with a status) and a refused request on the stream (a
 * `ChannelError` message) map to the same classes.
 *
 * {@link CancelledExecution} is deliberately *not* a `SidecarError`: it is how a tool learns
 * it was cancelled (the run's `signal.reason`), not a failure of the sidecar, so code that
 * falls back on `instanceof SidecarError` (daemon unreachable, say) never swallows it.
 */

import { status as Status, type ServiceError } from "@grpc/grpc-js";

import type { Cancellation, InterruptReason } from "./types";

/** The canonical name of a gRPC status code number (`9` → `"FAILED_PRECONDITION"`). */
export function statusName(code: number): string {
  return (Status as unknown as Record<number, string | undefined>)[code] ?? `STATUS_${code}`;
}

/**
 * Root of every error the client raises about the sidecar. `code` is the gRPC status
 * number (`codeName` its canonical name); `terminatorId` names the terminator concerned,
 * when there is one (else "").
 */
export class SidecarError extends Error {
  /** The gRPC status code number the daemon answered with (UNKNOWN for the root class). */
  readonly code: Status;
  /** The terminator the refusal concerns, or "". */
  readonly terminatorId: string;

  constructor(message: string, options: { code?: Status; terminatorId?: string; cause?: unknown } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.code = options.code ?? (new.target as unknown as { readonly CODE?: Status }).CODE ?? Status.UNKNOWN;
    this.terminatorId = options.terminatorId ?? "";
  }

  /** The canonical name of {@link code}, e.g. `"FAILED_PRECONDITION"`. */
  get codeName(): string {
    return statusName(this.code);
  }

  override get name(): string {
    return this.constructor.name;
  }

  override toString(): string {
    return `${this.name}: ${this.message} (${this.codeName})`;
  }
}

/** The request was malformed: a field missing, out of range or too large (INVALID_ARGUMENT). */
export class InvalidArgument extends SidecarError {
  static readonly CODE = Status.INVALID_ARGUMENT;
}

/** The execution, attach token or process group does not exist, or has ended (NOT_FOUND). */
export class NotFound extends SidecarError {
  static readonly CODE = Status.NOT_FOUND;
}

/** An execution or terminator with that id exists already (ALREADY_EXISTS). */
export class AlreadyExists extends SidecarError {
  static readonly CODE = Status.ALREADY_EXISTS;
}

/** Well-formed but not allowed now: the behaviour forbids it, or the run has unwound (FAILED_PRECONDITION). */
export class FailedPrecondition extends SidecarError {
  static readonly CODE = Status.FAILED_PRECONDITION;
}

/** The credential (the attach token's secret) does not grant this (PERMISSION_DENIED). */
export class PermissionDenied extends SidecarError {
  static readonly CODE = Status.PERMISSION_DENIED;
}

/** No credential was presented: an empty attach token (UNAUTHENTICATED). */
export class Unauthenticated extends SidecarError {
  static readonly CODE = Status.UNAUTHENTICATED;
}

/** A limit of the daemon was reached: executions, tools, terminators, unread messages (RESOURCE_EXHAUSTED). */
export class ResourceExhausted extends SidecarError {
  static readonly CODE = Status.RESOURCE_EXHAUSTED;
}

/** The daemon could not be reached at the configured address (UNAVAILABLE). */
export class Unavailable extends SidecarError {
  static readonly CODE = Status.UNAVAILABLE;
}

/** The tool's stream to the daemon ended before the tool's run did (UNAVAILABLE). */
export class ConnectionLost extends Unavailable {}

/** The daemon did not answer in time (DEADLINE_EXCEEDED). */
export class DeadlineExceeded extends SidecarError {
  static readonly CODE = Status.DEADLINE_EXCEEDED;
}

type ErrorClass = new (message: string, options?: { code?: Status; terminatorId?: string; cause?: unknown }) => SidecarError;

const BY_CODE: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  [Status.INVALID_ARGUMENT, InvalidArgument],
  [Status.NOT_FOUND, NotFound],
  [Status.ALREADY_EXISTS, AlreadyExists],
  [Status.FAILED_PRECONDITION, FailedPrecondition],
  [Status.PERMISSION_DENIED, PermissionDenied],
  [Status.UNAUTHENTICATED, Unauthenticated],
  [Status.RESOURCE_EXHAUSTED, ResourceExhausted],
  [Status.UNAVAILABLE, Unavailable],
  [Status.DEADLINE_EXCEEDED, DeadlineExceeded],
]);

/** The error for a gRPC status code number: the subclass that names it, else a plain {@link SidecarError}. */
export function errorFor(code: number, message: string, terminatorId = ""): SidecarError {
  const known = statusName(code) !== `STATUS_${code}`;
  const cls = BY_CODE.get(code) ?? SidecarError;
  return new cls(known ? message : `${message} [status ${code}]`, {
    code: known ? (code as Status) : Status.UNKNOWN,
    terminatorId,
  });
}

/** Map a failed call (a grpc-js `ServiceError`) to the hierarchy; `what` says what was being done. */
export function errorFromRpc(error: ServiceError | Error, what: string): SidecarError {
  const code = typeof (error as Partial<ServiceError>).code === "number" ? (error as ServiceError).code : Status.UNKNOWN;
  const details = (error as Partial<ServiceError>).details ?? error.message;
  const mapped = errorFor(code, `${what}: ${details || "no details"}`);
  Object.defineProperty(mapped, "cause", { value: error, enumerable: false, configurable: true, writable: true });
  return mapped;
}

/**
 * The execution a tool runs in was cancelled: the `reason` of the run's aborted `signal`.
 *
 * `fetch(url, { signal })`, `child_process.spawn(..., { signal })`, `timers/promises` and
 * every other `AbortSignal` consumer reject or stop with this very object, so
 * `error instanceof CancelledExecution` (or {@link isCancelledExecution}) tells the
 * interrupt apart from failures, and `error.reason` says why.
 */
export class CancelledExecution extends Error {
  /** What tripped the execution. */
  readonly cancellation: Cancellation;

  constructor(cancellation: Cancellation, message?: string) {
    super(message ?? `execution cancelled: ${cancellation.reason}${cancellation.detail ? ` (${cancellation.detail})` : ""}`);
    this.cancellation = cancellation;
  }

  override get name(): string {
    return "CancelledExecution";
  }

  /** Why the execution was cancelled, e.g. `"USER_SIGINT"`. */
  get reason(): InterruptReason {
    return this.cancellation.reason;
  }

  /** The free-text detail of the interrupt (may be empty). */
  get detail(): string {
    return this.cancellation.detail;
  }
}

/**
 * The {@link CancelledExecution} behind an error: the error itself, or the `cause` of an
 * `AbortError` (Node's `timers/promises`, `events.once`, `child_process`, streams reject
 * with an `AbortError` whose `cause` is the signal's reason; `fetch` rejects with the
 * reason itself). Undefined for anything else.
 */
export function cancelledExecutionOf(error: unknown): CancelledExecution | undefined {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (isCancelledExecution(current)) {
      return current;
    }
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}

/** True for a {@link CancelledExecution}, also one from another copy of this package. */
export function isCancelledExecution(error: unknown): error is CancelledExecution {
  return (
    error instanceof CancelledExecution ||
    (error instanceof Error && error.name === "CancelledExecution" && "cancellation" in error)
  );
}
