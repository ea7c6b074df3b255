/**
 * Start a child in a process group of its own and register the group as a terminator.
 *
 * At the trip the daemon signals the whole group (the child and everything it spawned that
 * stayed in the group), then SIGKILLs it after `killAfterMs`. Closing the helper unregisters
 * the group; if the child is still running then, the group is SIGKILLed so a tool never
 * leaves it behind. Only EXTERNALLY_TERMINATED tools may register groups.
 */

import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { once } from "node:events";

import { NotFound } from "./errors";
import { debug } from "./stream";
import type { ProcessGroupOptions, Terminator } from "./terminator";

/**
 * What the process helper needs of the run it registers groups with (`ToolRun` is
 * one). The run builds on this module, so the helper names it by this shape instead of
 * importing it.
 */
export interface GroupRegistrar {
  /** Throws (FailedPrecondition) when the run may not register a terminator of this kind now. */
  checkRegistration(kind: Terminator["kind"]): void;
  registerProcessGroup(pgid: number, options?: ProcessGroupOptions): Promise<Terminator>;
  unregisterTerminator(terminator: Terminator | string): Promise<void>;
}

/** How a child ended: its exit code, or the signal that killed it. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Options of {@link spawnProcessGroup}: `child_process.spawn`'s (less `detached`), plus the terminator's. */
export interface SpawnGroupOptions extends Omit<SpawnOptions, "detached"> {
  /** What the daemon does at the trip: the signal (default SIGTERM), `killAfterMs`, the terminator id. */
  readonly terminator?: ProcessGroupOptions;
}

/** Signal a whole process group; a group that is gone already is not an error. */
export function killProcessGroup(pgid: number, signal: NodeJS.Signals | number = "SIGKILL"): void {
  try {
    process.kill(-pgid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") {
      throw error;
    }
  }
}

/**
 * A child running in its own process group, registered with the daemon.
 * `await proc.wait()` for its exit (the group is then unregistered); `await proc.close()`
 * (or `await using`) unregisters it and SIGKILLs the group if the child still runs.
 */
export class ManagedProcess {
  /** Resolves when the child has exited (and Node has reaped it). */
  readonly exited: Promise<ChildExit>;
  private exit: ChildExit | undefined;
  private terminatorValue: Terminator | undefined;

  /** @internal Use {@link spawnProcessGroup}. */
  constructor(
    /** The `child_process` child. */
    readonly child: ChildProcess,
    private readonly run: GroupRegistrar,
  ) {
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  /** The child's pid. */
  get pid(): number {
    return this.child.pid!;
  }

  /** The child's process group: its pid, since it leads the group. */
  get pgid(): number {
    return this.child.pid!;
  }

  /** The process-group terminator (undefined once released, or if the child exited before registration). */
  get terminator(): Terminator | undefined {
    return this.terminatorValue;
  }

  /** True while the child has not exited. */
  get running(): boolean {
    return this.exit === undefined;
  }

  /** Wait for the child to exit, then unregister its group. */
  async wait(): Promise<ChildExit> {
    const exit = await this.exited;
    await this.release();
    return exit;
  }

  /** Signal the child's whole group now (default SIGKILL; a no-op once it is gone). */
  killGroup(signal: NodeJS.Signals | number = "SIGKILL"): void {
    killProcessGroup(this.pgid, signal);
  }

  /** Unregister the group (idempotent; quiet once the run has ended). */
  async release(): Promise<void> {
    const terminator = this.terminatorValue;
    this.terminatorValue = undefined;
    if (terminator !== undefined) {
      try {
        await this.run.unregisterTerminator(terminator);
      } catch (error) {
        debug("unregistering process group %d: %s", this.pgid, String(error));
      }
    }
  }

  /** Unregister the group, SIGKILL it if the child still runs, and wait for the child. */
  async close(): Promise<void> {
    try {
      await this.release();
    } finally {
      if (this.running) {
        this.killGroup("SIGKILL");
      }
      await this.exited;
    }
  }

  /** `await using proc = await spawnProcessGroup(...)` closes it at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** @internal */
  setTerminator(terminator: Terminator): void {
    this.terminatorValue = terminator;
  }
}

/**
 * Spawn `command` with `detached: true` — a new session, so the child leads a process group
 * of its own — and register that group with the daemon as a process-group terminator.
 * Resolves once the daemon has acknowledged the registration.
 *
 * Refuses (FailedPrecondition) before starting anything unless the run is
 * EXTERNALLY_TERMINATED. When the registration fails, the group is SIGKILLed and the error
 * rethrown. In no-op mode the child is started and nothing is registered with anybody.
 */
export async function spawnProcessGroup(
  run: GroupRegistrar,
  command: string,
  args: readonly string[] = [],
  options: SpawnGroupOptions = {},
): Promise<ManagedProcess> {
  run.checkRegistration("process_group"); // refuse before starting anything
  const { terminator: groupOptions, ...spawnOptions } = options;
  const child = spawn(command, args, { ...spawnOptions, detached: true });
  const managed = new ManagedProcess(child, run);
  await once(child, "spawn"); // rejects with the spawn error (ENOENT, EACCES, ...)
  try {
    managed.setTerminator(await run.registerProcessGroup(managed.pgid, groupOptions));
  } catch (error) {
    if (error instanceof NotFound && !managed.running) {
      debug("child %d exited before its group could be registered", managed.pid);
      return managed;
    }
    managed.killGroup("SIGKILL");
    await managed.exited;
    throw error;
  }
  return managed;
}
