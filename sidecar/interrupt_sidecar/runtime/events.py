"""Execution events, as the runtime records them (the services layer puts them on the wire)."""

from __future__ import annotations

from dataclasses import dataclass

from interrupt_sidecar.domain.types import Instant, InterruptBehavior, InterruptReason, ToolOutcome


@dataclass(frozen=True, slots=True)
class Tripped:
    reason: InterruptReason
    detail: str
    tripped_at: Instant
    grace_deadline: Instant


@dataclass(frozen=True, slots=True)
class ToolAttached:
    tool_id: str
    tool_name: str
    tool_call_id: str
    behavior: InterruptBehavior
    pid: int


@dataclass(frozen=True, slots=True)
class ToolUnwound:
    tool_id: str
    tool_name: str
    outcome: ToolOutcome
    behavior: InterruptBehavior
    latency_ns: int | None


@dataclass(frozen=True, slots=True)
class ToolDetached:
    tool_id: str
    tool_name: str
    unwound: bool


@dataclass(frozen=True, slots=True)
class GraceOverrun:
    tool_id: str
    tool_name: str
    behavior: InterruptBehavior
    grace_ns: int


@dataclass(frozen=True, slots=True)
class ProcessGroupSignalled:
    tool_id: str
    terminator_id: str
    pgid: int
    signal: int
    escalation: bool


@dataclass(frozen=True, slots=True)
class ProcessGroupGone:
    tool_id: str
    terminator_id: str
    pgid: int
    latency_ns: int


@dataclass(frozen=True, slots=True)
class TerminatorFailed:
    tool_id: str
    terminator_id: str
    message: str


@dataclass(frozen=True, slots=True)
class Ended:
    ended_at: Instant


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


@dataclass(frozen=True, slots=True)
class ExecutionEvent:
    execution_id: str
    sequence: int
    at: Instant
    payload: EventPayload
