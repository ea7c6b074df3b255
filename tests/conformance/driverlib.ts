/** What the TypeScript drivers share: the runner conversation of PROTOCOL.md. */

import { createInterface } from "node:readline";

import { SidecarError } from "@interrupt-sidecar/client";

export const TOOL_NAME = "conformance-typescript";
/** Every wait of a driver gives up after this long. */
export const WAIT_MS = 10_000;

/** Print one step as a JSON line (stdout is synchronous for pipes on Linux). */
export function emit(step: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ step, ...fields })}\n`);
}

/** Print an error step and exit 1. */
export function fail(message: string): never {
  emit("error", { message });
  process.exit(1);
}

/** `promise`, or an error step after {@link WAIT_MS}. */
export async function waitFor<T>(promise: Promise<T>, what: string): Promise<T> {
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

/** Resolves when `signal` aborts (at once if it has). */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
    } else {
      signal.addEventListener("abort", () => resolve(), { once: true });
    }
  });
}

/** Wait until the runner sends `go` on stdin. */
export async function waitGo(): Promise<void> {
  const lines = createInterface({ input: process.stdin });
  try {
    const line = await waitFor(
      new Promise<string>((resolve) => {
        lines.once("line", resolve);
        lines.once("close", () => resolve("<end of input>"));
      }),
      "'go' on stdin",
    );
    if (line.trim() !== "go") {
      fail(`expected 'go' on stdin, got ${JSON.stringify(line)}`);
    }
  } finally {
    lines.close();
  }
}

/** Run a registration that must be refused; the gRPC code name it was refused with. */
export async function refusalCode(register: () => Promise<unknown>): Promise<string> {
  try {
    await waitFor(register(), "the registration's answer");
  } catch (error) {
    if (error instanceof SidecarError) {
      return error.codeName;
    }
    throw error;
  }
  return fail("the registration was accepted");
}

/** Run a driver: exit 0 when `body` is done, or print an error step and exit 1. */
export function main(body: () => Promise<void>): void {
  body().then(
    () => process.exit(0),
    (error: unknown) => fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error)),
  );
}
