/** Where the daemon is, and the capability to attach: explicit options first, then the environment. */

import * as os from "node:os";
import * as path from "node:path";

/** The environment variable naming the daemon's address. */
export const ADDRESS_ENV = "INTERRUPT_SIDECAR_ADDRESS";
/** The environment variable holding the execution's attach token. */
export const TOKEN_ENV = "INTERRUPT_SIDECAR_TOKEN";
/** The environment variable that opts out of the cancel doorbell: `0` (or `false`, `no`, `off`). */
export const DOORBELL_ENV = "INTERRUPT_SIDECAR_DOORBELL";
/** The values of {@link DOORBELL_ENV} that opt out (compared case-insensitively), as in the Python client. */
const DOORBELL_OFF: ReadonlySet<string> = new Set(["0", "false", "no", "off"]);

function env(name: string): string | undefined {
  const value = (process.env[name] ?? "").trim();
  return value === "" ? undefined : value;
}

/**
 * Where `interrupt-sidecar serve` listens without `--listen`, by the daemon's own rule:
 * `$XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock`, else `/tmp/interrupt-sidecar-$UID/sidecar.sock`.
 */
export function defaultAddress(): string {
  const runtimeDir = env("XDG_RUNTIME_DIR");
  const base =
    runtimeDir !== undefined
      ? path.join(runtimeDir, "interrupt-sidecar")
      : `/tmp/interrupt-sidecar-${process.getuid?.() ?? os.userInfo().uid}`;
  return `unix://${path.join(base, "sidecar.sock")}`;
}

/** The daemon address: the argument, else `INTERRUPT_SIDECAR_ADDRESS`, else the daemon's default socket. */
export function resolveAddress(address?: string): string {
  if (address) {
    return address;
  }
  return env(ADDRESS_ENV) ?? defaultAddress();
}

/** True for a `unix:` address (`unix:///abs/path.sock` or `unix:/abs/path.sock`). */
export function isUnixAddress(address: string): boolean {
  return address.startsWith("unix:");
}

/**
 * Whether to ask for the cancel doorbell: the argument, else `INTERRUPT_SIDECAR_DOORBELL`
 * (`0`, `false`, `no` or `off` opt out), else yes; never off a unix socket.
 *
 * The doorbell is a unix socket path on the daemon's host. Only a `unix:` address says the
 * daemon is on this host: over TCP the path could name nothing here, or another daemon's socket.
 */
export function resolveDoorbell(doorbell: boolean | undefined, address: string): boolean {
  if (!isUnixAddress(address)) {
    return false;
  }
  if (doorbell !== undefined) {
    return doorbell;
  }
  const value = env(DOORBELL_ENV);
  return value === undefined || !DOORBELL_OFF.has(value.toLowerCase());
}

/** What a tool needs to attach. */
export interface ToolConfig {
  readonly address: string;
  readonly token: string;
  /** Ask for the cancel doorbell (the daemon grants it only to behaviours that receive the cancel). */
  readonly doorbell: boolean;
}

/**
 * The attach configuration of a tool, or undefined when no sidecar is configured (no-op mode).
 *
 * The token is what makes a process a tool of some execution: without one the tool runs
 * unchanged (an address alone is normal, e.g. any process in a pod with a sidecar). An
 * explicit `token: ""` is sent as is, so the daemon refuses it (UNAUTHENTICATED).
 */
export function resolveTool(address?: string, token?: string, doorbell?: boolean): ToolConfig | undefined {
  const resolvedToken = token !== undefined ? token : env(TOKEN_ENV);
  if (resolvedToken === undefined) {
    return undefined;
  }
  const resolvedAddress = resolveAddress(address);
  return { address: resolvedAddress, token: resolvedToken, doorbell: resolveDoorbell(doorbell, resolvedAddress) };
}
