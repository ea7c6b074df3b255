/**
 * What a terminator is: the handle a registration returns, its options, and the callback.
 *
 * The bottom of the tool side: the run (`run.ts`) and the process helper (`process.ts`)
 * both speak these types, and this module imports neither, so their imports point one way
 * (run → process → terminator).
 */

/**
 * A callback terminator: called with no arguments when the execution trips (at once when
 * registered after the trip). It may return a promise, which the client awaits. It must be
 * idempotent and quick; a throw or rejection is reported to the daemon as this
 * terminator's failure and stops no other terminator.
 */
export type TerminatorCallback = () => unknown;

/** A registered terminator; pass it (or its id) to `ToolRun.unregisterTerminator`. */
export interface Terminator {
  readonly terminatorId: string;
  readonly kind: "callback" | "process_group";
  /** The process group, for process-group terminators. */
  readonly pgid?: number;
}

/** Options of `ToolRun.registerProcessGroup`. */
export interface ProcessGroupOptions {
  /** Sent to the group at the trip (a name such as `"SIGTERM"` or a number). Default SIGTERM. */
  readonly signal?: NodeJS.Signals | number;
  /** SIGKILL follows after this many milliseconds. Default: the execution's grace. */
  readonly killAfterMs?: number;
  /** The terminator's id (default `pgid-<pgid>-<n>`). */
  readonly terminatorId?: string;
}
