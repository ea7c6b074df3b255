"""Value types of the domain. Enum values equal the wire's numbers."""

from __future__ import annotations

import enum
import time
from typing import Protocol

from interrupt_sidecar.record import Record, init_field


class InterruptReason(enum.IntEnum):
    """Why an execution tripped. For observation only."""

    USER_SIGINT = 1
    NOW_PRIORITY_INPUT = 2
    BUDGET_EXCEEDED = 3
    PARENT_CANCELLED = 4
    TASK_CANCELLED = 5
    SYSTEM_SHUTDOWN = 6
    LEASE_LOST = 7
    SESSION_RELEASED = 8
    HOLDER_LOST = 9


class InterruptBehavior(enum.IntEnum):
    """How a tool takes an interrupt; decides what it is sent and may register."""

    NON_INTERRUPTIBLE = 1
    COOPERATIVE = 2
    THREAD_INTERRUPT = 3
    EXTERNALLY_TERMINATED = 4

    @property
    def receives_cancel(self) -> bool:
        return self is not InterruptBehavior.NON_INTERRUPTIBLE

    @property
    def may_register_callbacks(self) -> bool:
        return self in (InterruptBehavior.THREAD_INTERRUPT, InterruptBehavior.EXTERNALLY_TERMINATED)

    @property
    def may_register_process_groups(self) -> bool:
        return self is InterruptBehavior.EXTERNALLY_TERMINATED


class ToolOutcome(enum.IntEnum):
    """How a tool's run ended, as the tool reports it."""

    UNSPECIFIED = 0
    COMPLETED = 1
    INTERRUPTED = 2
    FAILED = 3


class Instant(Record):
    """A moment on both clocks: monotonic for durations, wall for people."""

    __slots__ = ("mono_ns", "wall_ns")
    mono_ns: int
    wall_ns: int

    def __init__(self, mono_ns: int, wall_ns: int) -> None:
        init_field(self, "mono_ns", mono_ns)
        init_field(self, "wall_ns", wall_ns)

    def plus(self, ns: int) -> Instant:
        return Instant(self.mono_ns + ns, self.wall_ns + ns)


class Clock(Protocol):
    def now(self) -> Instant: ...


class SystemClock:
    """The host's clocks. ``CLOCK_MONOTONIC`` is shared by every process on the host,
    so a tool may compare its own monotonic readings with the daemon's."""

    def now(self) -> Instant:
        return Instant(time.monotonic_ns(), time.time_ns())


class Trip(Record):
    """What a signal holds once tripped: the first reason, and when."""

    __slots__ = ("at", "detail", "reason")
    reason: InterruptReason
    detail: str
    at: Instant

    def __init__(self, reason: InterruptReason, detail: str, at: Instant) -> None:
        init_field(self, "reason", reason)
        init_field(self, "detail", detail)
        init_field(self, "at", at)
