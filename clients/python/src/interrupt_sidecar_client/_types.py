"""Value types shared by the tool side and the agent side.

Enum values equal the wire's numbers, so ``int(InterruptReason.USER_SIGINT)`` is the
proto's ``INTERRUPT_REASON_USER_SIGINT``. Everything the client hands back to callers is
a plain Python value (enums, ``datetime``, ``timedelta``); protos stay at the edge.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar, cast

from google.protobuf import duration_pb2, timestamp_pb2

from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2

__all__ = [
    "BegunExecution",
    "Cancellation",
    "EventKind",
    "ExecutionEvent",
    "ExecutionInfo",
    "InterruptBehavior",
    "InterruptOutcome",
    "InterruptReason",
    "ToolOutcome",
]


class _NamedIntEnum(enum.IntEnum):
    """An IntEnum (the wire's number) that prints as its name: ``f"interrupted: {reason}"``."""

    def __str__(self) -> str:
        return self.name

    def __format__(self, format_spec: str) -> str:
        return format(self.name, format_spec)


class InterruptReason(_NamedIntEnum):
    """Why an execution was cancelled (``interrupt.v1.InterruptReason``).

    For observation only (messages, logs): behaviour depends on "cancelled", never on
    the reason. The wire's ``UNSPECIFIED`` has no member: every interrupt says why.
    """

    USER_SIGINT = 1
    NOW_PRIORITY_INPUT = 2
    BUDGET_EXCEEDED = 3
    PARENT_CANCELLED = 4
    TASK_CANCELLED = 5
    SYSTEM_SHUTDOWN = 6
    LEASE_LOST = 7
    SESSION_RELEASED = 8
    HOLDER_LOST = 9


class InterruptBehavior(_NamedIntEnum):
    """How a tool takes an interrupt, declared once when it attaches (``interrupt.v1.InterruptBehavior``).

    ``NON_INTERRUPTIBLE`` is the default (the wire's unset value means the same).
    """

    #: Not sent the cancel; may not register terminators. For short atomic work.
    NON_INTERRUPTIBLE = 1
    #: Sent the cancel; the tool polls or awaits its signal and returns early. No terminators.
    COOPERATIVE = 2
    #: Sent the cancel; the client interrupts the tool's worker (see ``attach``). Callback terminators.
    THREAD_INTERRUPT = 3
    #: Sent the cancel; callback and process-group terminators (the daemon kills the groups).
    EXTERNALLY_TERMINATED = 4

    @property
    def receives_cancel(self) -> bool:
        """True for the behaviours the daemon sends the cancel to."""
        return self is not InterruptBehavior.NON_INTERRUPTIBLE

    @property
    def may_register_callbacks(self) -> bool:
        """True when callback terminators may be registered."""
        return self in (InterruptBehavior.THREAD_INTERRUPT, InterruptBehavior.EXTERNALLY_TERMINATED)

    @property
    def may_register_process_groups(self) -> bool:
        """True when process-group terminators may be registered."""
        return self is InterruptBehavior.EXTERNALLY_TERMINATED


class ToolOutcome(_NamedIntEnum):
    """How a tool's run ended, as the tool reports it (``interrupt.v1.ToolOutcome``)."""

    COMPLETED = 1
    INTERRUPTED = 2
    FAILED = 3


class EventKind(enum.StrEnum):
    """The kind of an :class:`ExecutionEvent`: the name of the proto's ``event`` oneof field."""

    SNAPSHOT = "snapshot"
    TRIPPED = "tripped"
    TOOL_ATTACHED = "tool_attached"
    TOOL_UNWOUND = "tool_unwound"
    GRACE_OVERRUN = "grace_overrun"
    PROCESS_GROUP_SIGNALLED = "process_group_signalled"
    PROCESS_GROUP_GONE = "process_group_gone"
    ENDED = "ended"
    TOOL_DETACHED = "tool_detached"
    TERMINATOR_FAILED = "terminator_failed"
    #: A kind this client does not know (a newer daemon).
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Cancellation:
    """What a tripped signal holds: the first reason, and what came with it."""

    reason: InterruptReason
    detail: str = ""
    #: When the execution tripped (unknown for a tool that only saw it at attach time).
    tripped_at: datetime | None = None
    #: Report unwound before this, or the tool counts as a grace overrun.
    grace_deadline: datetime | None = None


@dataclass(frozen=True, slots=True)
class ExecutionInfo:
    """The observable state of one execution (``interrupt.v1.Execution``)."""

    execution_id: str
    cancelled: bool
    reason: InterruptReason | None
    tripped_at: datetime | None
    ended: bool
    parent_execution_id: str = ""
    context_id: str = ""
    detail: str = ""
    begun_at: datetime | None = None
    ended_at: datetime | None = None
    grace: timedelta | None = None
    budget: timedelta | None = None
    lease_ttl: timedelta | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    attached_tools: int = 0
    grace_overruns: int = 0


@dataclass(frozen=True, slots=True)
class BegunExecution:
    """What ``Coordinator.begin`` returns: the new execution and the capability to attach to it."""

    execution_id: str
    #: Hand this to the tool (``INTERRUPT_SIDECAR_TOKEN``); it is what lets it attach.
    attach_token: str = field(repr=False)
    execution: ExecutionInfo
    #: The daemon address the execution was begun on.
    address: str

    def tool_env(self) -> dict[str, str]:
        """The environment a tool process needs to attach: merge it into the child's ``env``."""
        return {"INTERRUPT_SIDECAR_ADDRESS": self.address, "INTERRUPT_SIDECAR_TOKEN": self.attach_token}


@dataclass(frozen=True, slots=True)
class InterruptOutcome:
    """The effect of ``Interrupt`` on one execution."""

    execution_id: str
    #: True only when this call tripped it; False when it had tripped already.
    tripped: bool
    #: The execution's effective reason: the first one it tripped with.
    reason: InterruptReason | None


@dataclass(frozen=True, slots=True)
class ExecutionEvent:
    """One thing that happened to an execution, from ``Coordinator.watch``.

    ``kind`` names the event; ``snapshot`` is set for ``EventKind.SNAPSHOT`` (always the
    first event of a watch); every detail is in ``proto`` (``interrupt.v1.ExecutionEvent``).
    """

    execution_id: str
    sequence: int
    occurred_at: datetime | None
    kind: EventKind
    snapshot: ExecutionInfo | None
    proto: interrupt_pb2.ExecutionEvent = field(repr=False)


# -- conversions at the proto edge --------------------------------------------

_E = TypeVar("_E", bound=enum.IntEnum)


def _enum_or_none(enum_type: type[_E], value: int) -> _E | None:
    try:
        return enum_type(value)
    except ValueError:  # 0 (unset) or a number newer than this client
        return None


def reason_from_pb(value: int) -> InterruptReason | None:
    return _enum_or_none(InterruptReason, value)


def reason_to_pb(reason: InterruptReason | int) -> interrupt_pb2.InterruptReason.ValueType:
    return cast(interrupt_pb2.InterruptReason.ValueType, int(InterruptReason(reason)))


def behavior_to_pb(behavior: InterruptBehavior | int) -> interrupt_pb2.InterruptBehavior.ValueType:
    return cast(interrupt_pb2.InterruptBehavior.ValueType, int(InterruptBehavior(behavior)))


def outcome_to_pb(outcome: ToolOutcome | int) -> interrupt_pb2.ToolOutcome.ValueType:
    return cast(interrupt_pb2.ToolOutcome.ValueType, int(ToolOutcome(outcome)))


def datetime_from_pb(message: timestamp_pb2.Timestamp, present: bool) -> datetime | None:
    return message.ToDatetime(tzinfo=UTC) if present else None


def timedelta_from_pb(message: duration_pb2.Duration, present: bool) -> timedelta | None:
    return message.ToTimedelta() if present else None


def duration_to_pb(value: timedelta | float | None) -> duration_pb2.Duration | None:
    """``None`` stays unset (the daemon's default); a number is seconds."""
    if value is None:
        return None
    if not isinstance(value, timedelta):
        value = timedelta(seconds=value)
    if value < timedelta(0):
        raise ValueError(f"a duration cannot be negative, got {value}")
    message = duration_pb2.Duration()
    message.FromTimedelta(value)
    return message


def execution_from_pb(message: interrupt_pb2.Execution) -> ExecutionInfo:
    return ExecutionInfo(
        execution_id=message.execution_id,
        cancelled=message.cancelled,
        reason=reason_from_pb(message.reason),
        tripped_at=datetime_from_pb(message.tripped_at, message.HasField("tripped_at")),
        ended=message.ended,
        parent_execution_id=message.parent_execution_id,
        context_id=message.context_id,
        detail=message.detail,
        begun_at=datetime_from_pb(message.begun_at, message.HasField("begun_at")),
        ended_at=datetime_from_pb(message.ended_at, message.HasField("ended_at")),
        grace=timedelta_from_pb(message.grace, message.HasField("grace")),
        budget=timedelta_from_pb(message.budget, message.HasField("budget")),
        lease_ttl=timedelta_from_pb(message.lease_ttl, message.HasField("lease_ttl")),
        labels=dict(message.labels),
        attached_tools=message.attached_tools,
        grace_overruns=message.grace_overruns,
    )


def event_from_pb(message: interrupt_pb2.ExecutionEvent) -> ExecutionEvent:
    which = message.WhichOneof("event")
    try:
        kind = EventKind(which) if which is not None else EventKind.UNKNOWN
    except ValueError:
        kind = EventKind.UNKNOWN
    return ExecutionEvent(
        execution_id=message.execution_id,
        sequence=message.sequence,
        occurred_at=datetime_from_pb(message.occurred_at, message.HasField("occurred_at")),
        kind=kind,
        snapshot=execution_from_pb(message.snapshot) if which == "snapshot" else None,
        proto=message,
    )


def cancellation_from_pb(message: interrupt_pb2.Cancel) -> Cancellation:
    return Cancellation(
        # The daemon refuses unset reasons, so 0 (or a reason newer than this client) is
        # not expected; keep the cancel, which is what matters, under a generic reason.
        reason=reason_from_pb(message.reason) or InterruptReason.USER_SIGINT,
        detail=message.detail,
        tripped_at=datetime_from_pb(message.tripped_at, message.HasField("tripped_at")),
        grace_deadline=datetime_from_pb(message.grace_deadline, message.HasField("grace_deadline")),
    )
