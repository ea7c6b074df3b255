/** Where the daemon is, and the capability to attach: explicit options first, then the environment. */

import * as os from "node:os";
import * as path from "node:path";

/** The environment variable naming the daemon's address. */
export const ADDRESS_ENV = "INTERRUPT_SIDECAR_ADDRESS";
/** The environment variable holding the execution's attach token. */
export const TOKEN_ENV = "INTERRUPT_SIDECAR_TOKEN";

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

/** What a tool needs to attach. */
export interface ToolConfig {
  readonly address: string;
  readonly token: string;
}

/**
 * The attach configuration of a tool, or undefined when no sidecar is configured (no-op mode).
 *
 * The token is what makes a process a tool of some execution: without one the tool runs
 * unchanged (an address alone is normal, e.g. any process in a pod with a sidecar). An
 * explicit `token: ""` is sent as is, so the daemon refuses it (UNAUTHENTICATED).
 */
export function resolveTool(address?: string, token?: string): ToolConfig | undefined {
  const resolvedToken = token !== undefined ? token : env(TOKEN_ENV);
  if (resolvedToken === undefined) {
    return undefined;
  }
  return { address: resolveAddress(address), token: resolvedToken };
}
