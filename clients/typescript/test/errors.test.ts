import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { status } from "@grpc/grpc-js";

import {
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
} from "../src";

describe("errorFor", () => {
  const cases: [number, new (...args: never[]) => SidecarError, string][] = [
    [status.INVALID_ARGUMENT, InvalidArgument, "INVALID_ARGUMENT"],
    [status.NOT_FOUND, NotFound, "NOT_FOUND"],
    [status.ALREADY_EXISTS, AlreadyExists, "ALREADY_EXISTS"],
    [status.FAILED_PRECONDITION, FailedPrecondition, "FAILED_PRECONDITION"],
    [status.PERMISSION_DENIED, PermissionDenied, "PERMISSION_DENIED"],
    [status.UNAUTHENTICATED, Unauthenticated, "UNAUTHENTICATED"],
    [status.RESOURCE_EXHAUSTED, ResourceExhausted, "RESOURCE_EXHAUSTED"],
    [status.UNAVAILABLE, Unavailable, "UNAVAILABLE"],
    [status.DEADLINE_EXCEEDED, DeadlineExceeded, "DEADLINE_EXCEEDED"],
  ];
  for (const [code, cls, name] of cases) {
    it(`maps ${name} to ${cls.name}`, () => {
      const error = errorFor(code, "refused", "t1");
      assert.ok(error instanceof cls);
      assert.ok(error instanceof SidecarError);
      assert.equal(error.code, code);
      assert.equal(error.codeName, name);
      assert.equal(error.terminatorId, "t1");
      assert.equal(error.name, cls.name);
      assert.equal(error.message, "refused");
    });
  }

  it("keeps other known codes on the root class", () => {
    const error = errorFor(status.INTERNAL, "boom");
    assert.equal(error.constructor, SidecarError);
    assert.equal(error.codeName, "INTERNAL");
  });

  it("reports an unknown code number as UNKNOWN and keeps the number", () => {
    const error = errorFor(99, "odd");
    assert.equal(error.codeName, "UNKNOWN");
    assert.match(error.message, /\[status 99\]/);
  });

  it("gives subclasses their own code without an explicit one", () => {
    assert.equal(new FailedPrecondition("x").codeName, "FAILED_PRECONDITION");
    assert.equal(new ConnectionLost("x").codeName, "UNAVAILABLE");
    assert.ok(new ConnectionLost("x") instanceof Unavailable);
    assert.equal(statusName(9), "FAILED_PRECONDITION");
  });
});

describe("CancelledExecution", () => {
  it("carries the reason and detail and is no SidecarError", () => {
    const error = new CancelledExecution({ reason: "USER_SIGINT", detail: "Ctrl+C" });
    assert.equal(error.reason, "USER_SIGINT");
    assert.equal(error.detail, "Ctrl+C");
    assert.equal(error.name, "CancelledExecution");
    assert.equal(error.message, "execution cancelled: USER_SIGINT (Ctrl+C)");
    assert.ok(!(error instanceof SidecarError));
    assert.ok(isCancelledExecution(error));
    assert.ok(!isCancelledExecution(new Error("x")));
  });

  it("is found behind the AbortError of Node's own consumers", async () => {
    const controller = new AbortController();
    controller.abort(new CancelledExecution({ reason: "NOW_PRIORITY_INPUT", detail: "" }));
    const { setTimeout: sleep } = await import("node:timers/promises");
    await assert.rejects(sleep(10_000, undefined, { signal: controller.signal }), (error: unknown) => {
      assert.equal((error as Error).name, "AbortError");
      assert.equal(cancelledExecutionOf(error)?.reason, "NOW_PRIORITY_INPUT");
      return true;
    });
    assert.equal(cancelledExecutionOf(new Error("x")), undefined);
    assert.equal(cancelledExecutionOf(controller.signal.reason), controller.signal.reason);
  });
});
