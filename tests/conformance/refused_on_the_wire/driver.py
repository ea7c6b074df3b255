"""refused_on_the_wire, Python: see README.md beside this file.

The generated stubs (``interrupt_sidecar_client._proto``) on a plain gRPC channel: the
client library's guarded API would refuse these registrations without asking the daemon.
"""

from __future__ import annotations

import os
import queue
import threading

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conformance.driverlib import TOOL_NAME, WAIT, emit, fail

CODE_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}


class Stream:
    """One Attach stream: messages go out through a queue, answers come back through another."""

    def __init__(self, stub: pb_grpc.ToolChannelServiceStub) -> None:
        self._out: queue.Queue[pb.ToolMessage | None] = queue.Queue()
        self._in: queue.Queue[pb.SidecarMessage | grpc.RpcError | None] = queue.Queue()
        self._call = stub.Attach(iter(self._out.get, None))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for message in self._call:
                self._in.put(message)
        except grpc.RpcError as error:
            self._in.put(error)
        self._in.put(None)

    def send(self, message: pb.ToolMessage) -> None:
        self._out.put(message)

    def receive(self, what: str) -> pb.SidecarMessage:
        try:
            got = self._in.get(timeout=WAIT)
        except queue.Empty:
            fail(f"no answer within {WAIT:g}s: expected {what}")
        if not isinstance(got, pb.SidecarMessage):
            fail(f"the stream ended ({got}) before {what}")
        return got

    def close(self) -> None:
        """Half-close, and wait for the daemon to end the stream."""
        self._out.put(None)
        try:
            got = self._in.get(timeout=WAIT)
        except queue.Empty:
            fail(f"the daemon did not end the stream within {WAIT:g}s of the half-close")
        if isinstance(got, grpc.RpcError):
            fail(f"the stream ended with an error: {got}")
        if got is not None:
            fail(f"unexpected message before the stream ended: {got}")


def attach(stub: pb_grpc.ToolChannelServiceStub, behavior: pb.InterruptBehavior.ValueType) -> Stream:
    stream = Stream(stub)
    hello = pb.Hello(
        attach_token=os.environ["INTERRUPT_SIDECAR_TOKEN"], tool_name=TOOL_NAME, behavior=behavior, pid=os.getpid()
    )
    stream.send(pb.ToolMessage(hello=hello))
    answer = stream.receive("attached")
    if answer.WhichOneof("message") != "attached":
        fail(f"expected attached, got {answer}")
    name = pb.InterruptBehavior.Name(behavior).removeprefix("INTERRUPT_BEHAVIOR_")
    emit("attached", behavior=name)
    return stream


def register(stream: Stream, terminator_id: str) -> None:
    request = pb.RegisterTerminator(terminator_id=terminator_id, callback=pb.CallbackTerminator())
    stream.send(pb.ToolMessage(register_terminator=request))


def expect_refusal(stream: Stream, terminator_id: str) -> None:
    answer = stream.receive(f"the answer to registering {terminator_id!r}")
    kind = answer.WhichOneof("message")
    if kind == "terminator_registered":
        fail(f"the daemon accepted the registration of {terminator_id!r}")
    if kind != "error":
        fail(f"expected an error for {terminator_id!r}, got {answer}")
    error = answer.error
    emit(
        "refused",
        terminator_id=error.terminator_id,
        code=CODE_NAMES.get(error.code, str(error.code)),
        message=error.message,
    )


def main() -> None:
    with grpc.insecure_channel(os.environ["INTERRUPT_SIDECAR_ADDRESS"]) as channel:
        stub = pb_grpc.ToolChannelServiceStub(channel)

        stream = attach(stub, pb.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE)
        register(stream, "refused")
        expect_refusal(stream, "refused")
        stream.close()

        stream = attach(stub, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED)
        register(stream, "accepted")
        answer = stream.receive("the answer to registering 'accepted'")
        if answer.WhichOneof("message") != "terminator_registered":
            fail(f"the daemon did not accept 'accepted': {answer}")
        emit("registered", terminator_id=answer.terminator_registered.terminator_id)
        # No wait in between: unwound has no answer, and the daemon reads a stream in order.
        stream.send(pb.ToolMessage(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED)))
        register(stream, "too_late")
        expect_refusal(stream, "too_late")
        stream.close()


main()
