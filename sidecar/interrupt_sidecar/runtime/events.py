"""Execution events, as the runtime records them (the services layer puts them on the wire).

Each event is immutable once built: every subscriber of an execution shares it. The
classes are :class:`~interrupt_sidecar.record.Record` subclasses, not frozen
dataclasses: dataclasses compiled ~5 ms of methods for this module at every start.
"""

from __future__ import annotations

from interrupt_sidecar.domain.types import Instant, InterruptBehavior, InterruptReason, ToolOutcome
from interrupt_sidecar.record import Record, init_field


class Tripped(Record):
    """The execution tripped; tools have until ``grace_deadline`` to unwind."""

    __slots__ = ("detail", "grace_deadline", "reason", "tripped_at")
    reason: InterruptReason
    detail: str
    tripped_at: Instant
    grace_deadline: Instant

    def __init__(self, reason: InterruptReason, detail: str, tripped_at: Instant, grace_deadline: Instant) -> None:
        init_field(self, "reason", reason)
        init_field(self, "detail", detail)
        init_field(self, "tripped_at", tripped_at)
        init_field(self, "grace_deadline", grace_deadline)


class ToolAttached(Record):
    """A tool attached to the execution."""

    __slots__ = ("behavior", "pid", "tool_call_id", "tool_id", "tool_name")
    tool_id: str
    tool_name: str
    tool_call_id: str
    behavior: InterruptBehavior
    pid: int

    def __init__(self, tool_id: str, tool_name: str, tool_call_id: str, behavior: InterruptBehavior, pid: int) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "tool_name", tool_name)
        init_field(self, "tool_call_id", tool_call_id)
        init_field(self, "behavior", behavior)
        init_field(self, "pid", pid)


class ToolUnwound(Record):
    """A tool reported unwound (``latency_ns`` after the trip, when it was tripped)."""

    __slots__ = ("behavior", "latency_ns", "outcome", "tool_id", "tool_name")
    tool_id: str
    tool_name: str
    outcome: ToolOutcome
    behavior: InterruptBehavior
    latency_ns: int | None

    def __init__(
        self, tool_id: str, tool_name: str, outcome: ToolOutcome, behavior: InterruptBehavior, latency_ns: int | None
    ) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "tool_name", tool_name)
        init_field(self, "outcome", outcome)
        init_field(self, "behavior", behavior)
        init_field(self, "latency_ns", latency_ns)


class ToolDetached(Record):
    """A tool's stream ended (``unwound``: it had reported unwound first)."""

    __slots__ = ("tool_id", "tool_name", "unwound")
    tool_id: str
    tool_name: str
    unwound: bool

    def __init__(self, tool_id: str, tool_name: str, unwound: bool) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "tool_name", tool_name)
        init_field(self, "unwound", unwound)


class GraceOverrun(Record):
    """A tool did not report unwound within its grace."""

    __slots__ = ("behavior", "grace_ns", "tool_id", "tool_name")
    tool_id: str
    tool_name: str
    behavior: InterruptBehavior
    grace_ns: int

    def __init__(self, tool_id: str, tool_name: str, behavior: InterruptBehavior, grace_ns: int) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "tool_name", tool_name)
        init_field(self, "behavior", behavior)
        init_field(self, "grace_ns", grace_ns)


class ProcessGroupSignalled(Record):
    """A registered process group was sent ``signal`` (``escalation``: SIGKILL after kill_after)."""

    __slots__ = ("escalation", "pgid", "signal", "terminator_id", "tool_id")
    tool_id: str
    terminator_id: str
    pgid: int
    signal: int
    escalation: bool

    def __init__(self, tool_id: str, terminator_id: str, pgid: int, signal: int, escalation: bool) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "terminator_id", terminator_id)
        init_field(self, "pgid", pgid)
        init_field(self, "signal", signal)
        init_field(self, "escalation", escalation)


class ProcessGroupGone(Record):
    """Every process of a signalled group is gone, ``latency_ns`` after the trip."""

    __slots__ = ("latency_ns", "pgid", "terminator_id", "tool_id")
    tool_id: str
    terminator_id: str
    pgid: int
    latency_ns: int

    def __init__(self, tool_id: str, terminator_id: str, pgid: int, latency_ns: int) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "terminator_id", terminator_id)
        init_field(self, "pgid", pgid)
        init_field(self, "latency_ns", latency_ns)


class TerminatorFailed(Record):
    """A terminator failed: a tool's callback reported an error, or a group could not be killed."""

    __slots__ = ("message", "terminator_id", "tool_id")
    tool_id: str
    terminator_id: str
    message: str

    def __init__(self, tool_id: str, terminator_id: str, message: str) -> None:
        init_field(self, "tool_id", tool_id)
        init_field(self, "terminator_id", terminator_id)
        init_field(self, "message", message)


class Ended(Record):
    """The execution ended."""

    __slots__ = ("ended_at",)
    ended_at: Instant

    def __init__(self, ended_at: Instant) -> None:
        init_field(self, "ended_at", ended_at)


EventPayload = (
    Tripped
    | ToolAttached
    | ToolUnwound
    | ToolDetached
    | GraceOverrun
    | ProcessGroupSignalled
    | ProcessGroupGone
    | TerminatorFailed
    | Ended
)


class ExecutionEvent(Record):
    """One event of an execution, numbered in the order its watchers see them."""

    __slots__ = ("at", "execution_id", "payload", "sequence")
    execution_id: str
    sequence: int
    at: Instant
    payload: EventPayload

    def __init__(self, execution_id: str, sequence: int, at: Instant, payload: EventPayload) -> None:
        init_field(self, "execution_id", execution_id)
        init_field(self, "sequence", sequence)
        init_field(self, "at", at)
        init_field(self, "payload", payload)
