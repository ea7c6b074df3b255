"""The public surface: the export lists are pinned, enums mirror the proto, errors map codes."""

from __future__ import annotations

import types

import grpc
import interrupt_sidecar_client
import interrupt_sidecar_client.aio
import pytest
from interrupt_sidecar_client import (
    AlreadyExists,
    DeadlineExceeded,
    FailedPrecondition,
    InterruptBehavior,
    InterruptReason,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    SidecarError,
    ToolOutcome,
    Unauthenticated,
    Unavailable,
)
from interrupt_sidecar_client._errors import error_for
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

pytestmark = pytest.mark.timeout(30)

SYNC_API = {
    "NOOP_SIGNAL",
    "AlreadyExists",
    "BegunExecution",
    "Cancellation",
    "CancellationSignal",
    "CancellationSource",
    "CancelledExecution",
    "ConnectionLost",
    "Coordinator",
    "DeadlineExceeded",
    "EventKind",
    "ExecutionEvent",
    "ExecutionInfo",
    "FailedPrecondition",
    "InterruptBehavior",
    "InterruptOutcome",
    "InterruptReason",
    "InvalidArgument",
    "ManagedProcess",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "SidecarError",
    "SidecarInterruptController",
    "Terminator",
    "TerminatorKind",
    "TerminatorRegistrar",
    "ThreadInterrupted",
    "ToolOutcome",
    "ToolRun",
    "Unauthenticated",
    "Unavailable",
    "attach",
}
ASYNC_API = {
    "NOOP_SIGNAL",
    "AsyncCoordinator",
    "AsyncManagedProcess",
    "AsyncTerminatorRegistrar",
    "AsyncToolRun",
    "CancellationSignal",
    "CancellationSource",
    "CancelledExecution",
    "InterruptBehavior",
    "InterruptReason",
    "SidecarError",
    "Terminator",
    "TerminatorKind",
    "ToolOutcome",
    "attach",
}


@pytest.mark.parametrize(
    ("module", "names"), [(interrupt_sidecar_client, SYNC_API), (interrupt_sidecar_client.aio, ASYNC_API)]
)
def test_export_lists_are_pinned(module: types.ModuleType, names: set[str]) -> None:
    exported = set(vars(module)["__all__"])
    assert exported == names
    for name in exported:
        assert getattr(module, name) is not None
        public = getattr(module, name)
        if callable(public):
            assert public.__doc__, f"{name} has no docstring"


@pytest.mark.parametrize(
    ("enum", "prefix", "proto"),
    [
        (InterruptReason, "INTERRUPT_REASON_", pb.InterruptReason),
        (InterruptBehavior, "INTERRUPT_BEHAVIOR_", pb.InterruptBehavior),
        (ToolOutcome, "TOOL_OUTCOME_", pb.ToolOutcome),
    ],
)
def test_enums_mirror_the_proto(enum: type[InterruptReason], prefix: str, proto: object) -> None:
    wire = {name.removeprefix(prefix): number for name, number in proto.items() if not name.endswith("UNSPECIFIED")}  # type: ignore[attr-defined]
    assert {member.name: member.value for member in enum} == wire


def test_reasons_are_in_the_design_order() -> None:
    assert [reason.name for reason in InterruptReason] == [
        "USER_SIGINT",
        "NOW_PRIORITY_INPUT",
        "BUDGET_EXCEEDED",
        "PARENT_CANCELLED",
        "TASK_CANCELLED",
        "SYSTEM_SHUTDOWN",
        "LEASE_LOST",
        "SESSION_RELEASED",
        "HOLDER_LOST",
    ]
    assert f"{InterruptReason.USER_SIGINT}" == "USER_SIGINT" and int(InterruptReason.USER_SIGINT) == 1


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgument),
        (grpc.StatusCode.NOT_FOUND, NotFound),
        (grpc.StatusCode.ALREADY_EXISTS, AlreadyExists),
        (grpc.StatusCode.FAILED_PRECONDITION, FailedPrecondition),
        (grpc.StatusCode.PERMISSION_DENIED, PermissionDenied),
        (grpc.StatusCode.UNAUTHENTICATED, Unauthenticated),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, ResourceExhausted),
        (grpc.StatusCode.UNAVAILABLE, Unavailable),
        (grpc.StatusCode.DEADLINE_EXCEEDED, DeadlineExceeded),
    ],
)
def test_status_codes_map_to_one_class_each(code: grpc.StatusCode, error: type[SidecarError]) -> None:
    by_status = error_for(code, "why")
    by_number = error_for(code.value[0], "why", terminator_id="t-1")
    assert type(by_status) is type(by_number) is error
    assert by_status.code is by_number.code is code
    assert by_number.terminator_id == "t-1"
    assert str(by_status) == f"why ({code.name})"


def test_unknown_codes_keep_the_root_class_and_the_number() -> None:
    internal = error_for(grpc.StatusCode.INTERNAL, "boom")
    assert type(internal) is SidecarError and internal.code is grpc.StatusCode.INTERNAL
    unheard_of = error_for(99, "from the future")
    assert type(unheard_of) is SidecarError and "99" in str(unheard_of)
