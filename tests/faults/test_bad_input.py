"""Bad input, systematically: Hypothesis builds every request message from its descriptor
(random field values, unknown enum numbers, huge and empty strings, odd unicode in ids and
labels, absurd durations, oversized messages) and sends it to a real daemon.

Every answer is OK or one of the documented status codes, with a message; the daemon never
crashes, and a health check passes after each input. The count tried is printed (``-s``).

Two fields are tamed, because the daemon acts on them outside itself: ``remote_parent``
(it would dial the address) is dropped, and a process group's ``pgid`` is one that cannot
exist or is refused (a random one could name another program's group on this machine, and
the daemon kills registered groups at shutdown).
"""

from __future__ import annotations

import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor as d
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess, start_daemon

#: What the docs promise an error can be (README "Errors"; docs/operations-faults.md).
DOCUMENTED = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
SAFE_PGIDS = [0, 1, -5, 2**31 - 1, 99_999_999]
TRIED = {"inputs": 0}
EXAMPLES = 150

ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=300),
    st.sampled_from(["", " ", "\x00", "a" * 5000, "\u202e", "exec-../..", "é" * 70, "🙂" * 64, "a.b/c-d_e"]),
)
INTS32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, 1, -1, 2**31 - 1, -(2**31)]))
INTS64 = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, 1, -1, 10**18, -(10**18)]))
UINTS = st.integers(0, 2**32 - 1)


def message_of(descriptor: d.Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    """Any message of this type, built field by field from its descriptor."""
    from google.protobuf import message_factory

    cls = message_factory.GetMessageClass(descriptor)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for f in descriptor.fields:
        strategy = _field(f, depth)
        if strategy is not None:
            fields[f.name] = strategy

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        message = cls()
        for name, strategy in fields.items():
            if draw(st.booleans()):
                _set(message, descriptor.fields_by_name[name], draw(strategy))
        return message

    return build()


def _scalar(f: d.FieldDescriptor, depth: int) -> st.SearchStrategy[Any] | None:
    if f.type == d.FieldDescriptor.TYPE_MESSAGE:
        if depth > 2 or f.message_type is None:
            return None
        return message_of(f.message_type, depth + 1)
    if f.type == d.FieldDescriptor.TYPE_STRING:
        return ODD_TEXT
    if f.type == d.FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if f.type == d.FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if f.type == d.FieldDescriptor.TYPE_ENUM:
        return INTS32  # unknown enum numbers included
    if f.type in (d.FieldDescriptor.TYPE_INT64, d.FieldDescriptor.TYPE_SINT64, d.FieldDescriptor.TYPE_SFIXED64):
        return INTS64
    if f.type in (d.FieldDescriptor.TYPE_UINT32, d.FieldDescriptor.TYPE_FIXED32):
        return UINTS
    if f.type in (d.FieldDescriptor.TYPE_UINT64, d.FieldDescriptor.TYPE_FIXED64):
        return st.integers(0, 2**64 - 1)
    if f.type in (d.FieldDescriptor.TYPE_DOUBLE, d.FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, width=32)
    return INTS32


def _field(f: d.FieldDescriptor, depth: int) -> st.SearchStrategy[Any] | None:
    if f.name == "remote_parent":
        return None  # the daemon would dial it
    if f.name == "pgid":
        return st.sampled_from(SAFE_PGIDS)
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        keys, values = _scalar(key, depth), _scalar(value, depth)
        assert keys is not None and values is not None
        return st.dictionaries(keys, values, max_size=70)
    inner = _scalar(f, depth)
    if inner is None:
        return None
    if f.is_repeated:
        return st.lists(inner, max_size=5)
    return inner


def _set(message: Message, f: d.FieldDescriptor, value: Any) -> None:
    target = getattr(message, f.name)
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        for k, v in value.items():
            if f.message_type.fields_by_name["value"].message_type is not None:
                target[k].CopyFrom(v)
            else:
                target[k] = v
    elif f.is_repeated:
        if f.message_type is not None:
            for v in value:
                target.add().CopyFrom(v)
        else:
            target.extend(value)
    elif f.message_type is not None:
        target.CopyFrom(value)
    else:
        setattr(message, f.name, value)


class Target:
    def __init__(self, daemon: DaemonProcess) -> None:
        self.daemon = daemon
        self.channel = grpc.insecure_channel(daemon.address)
        self.stub = pb_grpc.CoordinatorServiceStub(self.channel)
        self.tools = pb_grpc.ToolChannelServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        live = self.stub.BeginExecution(pb.BeginExecutionRequest(execution_id="fuzz-live", context_id="fuzz"))
        self.token = live.attach_token

    def healthy(self) -> None:
        assert self.daemon.process.poll() is None, f"the daemon died:\n{self.daemon.stderr}"
        status = self.health.Check(health_pb2.HealthCheckRequest(), timeout=10).status
        assert status == health_pb2.HealthCheckResponse.SERVING
        assert "Traceback" not in self.daemon.stderr, self.daemon.stderr


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    with tempfile.TemporaryDirectory(prefix="isb-", dir="/tmp") as directory:
        daemon = start_daemon(Path(directory))
        made = Target(daemon)
        try:
            yield made
        finally:
            made.channel.close()
            assert daemon.stop(signal.SIGTERM) == 0, daemon.stderr
            print(f"\nbad input: {TRIED['inputs']} generated requests tried")


def _documented(err: grpc.RpcError) -> None:
    code = err.code()
    assert code in DOCUMENTED, f"{code}: {err.details()}"
    assert err.details(), "an error without a message"


UNARY = ["BeginExecution", "Interrupt", "EndExecution", "KeepAlive", "GetExecution", "ListExecutions"]
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    database=None,
)


@pytest.mark.parametrize("method", UNARY)
def test_unary_requests(target: Target, method: str) -> None:
    descriptor = pb.DESCRIPTOR.services_by_name["CoordinatorService"].methods_by_name[method].input_type

    @FUZZ
    @given(request=message_of(descriptor))
    def check(request: Message) -> None:
        TRIED["inputs"] += 1
        try:
            getattr(target.stub, method)(request, timeout=10)
        except grpc.RpcError as err:
            _documented(err)
        target.healthy()

    check()


def test_watch_requests(target: Target) -> None:
    @FUZZ
    @given(request=message_of(pb.WatchExecutionRequest.DESCRIPTOR))
    def check(request: Message) -> None:
        TRIED["inputs"] += 1
        call = target.stub.WatchExecution(request, timeout=10)  # type: ignore[arg-type]
        try:
            next(call)  # the snapshot, or the error
        except grpc.RpcError as err:
            _documented(err)
        finally:
            call.cancel()
        target.healthy()

    check()


def test_attach_streams(target: Target) -> None:
    hello_with_token = st.builds(
        lambda h: h,
        message_of(pb.Hello.DESCRIPTOR),
    )

    @st.composite
    def streams(draw: st.DrawFn) -> list[pb.ToolMessage]:
        messages: list[pb.ToolMessage] = draw(st.lists(message_of(pb.ToolMessage.DESCRIPTOR), min_size=1, max_size=4))  # type: ignore[arg-type]
        if draw(st.booleans()):
            # A valid hello first, so the later messages reach past the token check.
            hello = draw(hello_with_token)
            hello.attach_token = target.token
            messages.insert(0, pb.ToolMessage(hello=hello))
        return messages

    @FUZZ
    @given(messages=streams())
    def check(messages: list[pb.ToolMessage]) -> None:
        TRIED["inputs"] += 1
        call = target.tools.Attach(iter(messages), timeout=3)
        received: list[pb.SidecarMessage] = []

        def read() -> None:
            try:
                for message in call:
                    received.append(message)
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    _documented(err)

        reader = threading.Thread(target=read)
        reader.start()
        reader.join(5)
        call.cancel()
        reader.join(5)
        for message in received:
            if message.HasField("error"):
                assert grpc.StatusCode(_code(message.error.code)) in DOCUMENTED, message
                assert message.error.message
        target.healthy()

    check()


def _code(number: int) -> tuple[int, str]:
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code.value
    raise AssertionError(f"not a status code: {number}")


def test_oversized_messages(target: Target) -> None:
    huge = pb.BeginExecutionRequest(labels={f"k{i}": "v" * 256 for i in range(1_000)})
    with pytest.raises(grpc.RpcError) as err:
        target.stub.BeginExecution(huge, timeout=10)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    TRIED["inputs"] += 1
    target.healthy()
