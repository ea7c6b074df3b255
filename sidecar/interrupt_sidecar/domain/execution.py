"""One execution (an agent turn or a task): its signal, its tools, its terminators."""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable
from typing import Protocol

from interrupt_sidecar.domain.signal import CancellationSignal
from interrupt_sidecar.domain.types import Clock, Instant, InterruptBehavior, InterruptReason, ToolOutcome, Trip
from interrupt_sidecar.errors import AlreadyExists, FailedPrecondition, ResourceExhausted
from interrupt_sidecar.record import Record, init_field

log = logging.getLogger(__name__)


class CallbackSpec(Record):
    """A terminator the tool runs itself when told to (``run_terminator``)."""

    __slots__ = ()


class ProcessGroupSpec(Record):
    """A terminator the daemon runs itself: signal a process group, SIGKILL later."""

    __slots__ = ("kill_after_ns", "pgid", "signal")
    pgid: int
    signal: int
    #: None means the execution's grace.
    kill_after_ns: int | None

    def __init__(self, pgid: int, signal: int, kill_after_ns: int | None) -> None:
        init_field(self, "pgid", pgid)
        init_field(self, "signal", signal)
        init_field(self, "kill_after_ns", kill_after_ns)


TerminatorSpec = CallbackSpec | ProcessGroupSpec


def ensure_behavior_allows(tool: ToolRun, spec: TerminatorSpec) -> None:
    """Raise FailedPrecondition when ``tool``'s behaviour may not register ``spec``."""
    if isinstance(spec, ProcessGroupSpec):
        if not tool.behavior.may_register_process_groups:
            raise FailedPrecondition(
                f"{tool.label} declared {tool.behavior.name}: only EXTERNALLY_TERMINATED tools "
                "may register process-group terminators"
            )
    elif not tool.behavior.may_register_callbacks:
        raise FailedPrecondition(
            f"{tool.label} declared {tool.behavior.name}: only THREAD_INTERRUPT and "
            "EXTERNALLY_TERMINATED tools may register terminators"
        )


class Terminator:
    """A way to stop a tool, registered by it: a callback it runs, or a process group."""

    # A plain class: a dataclass compiles its methods at import, on the way to "ready".
    __slots__ = ("identity", "registered_at", "spec", "terminator_id", "tool")

    def __init__(
        self,
        tool: ToolRun,
        terminator_id: str,
        spec: TerminatorSpec,
        identity: object = None,
        registered_at: Instant | None = None,
    ) -> None:
        self.tool = tool
        self.terminator_id = terminator_id
        self.spec = spec
        #: What the OS edge pinned about the target at registration (process groups).
        self.identity = identity
        #: When it was registered: a process group registered after the trip gets its
        #: kill_after (or the grace) from then, one registered before from the trip.
        self.registered_at = registered_at


class ToolSink(Protocol):
    """Where a tool's messages go (its stream's outbox). Must not block."""

    def send_cancel(self, trip: Trip, grace_deadline: Instant) -> None: ...

    def cancel_written(self) -> Awaitable[None]:
        """Done once the cancel has been handed to the transport, or the stream has ended."""
        ...

    def send_run_terminator(self, terminator_id: str) -> None: ...


class ExecutionEffects(Protocol):
    """The port through which the domain's decisions leave it.

    Implementations must not block: every call happens on the trip path.
    """

    def begun(self, execution: Execution) -> None: ...

    def tripped(self, execution: Execution, trip: Trip) -> None: ...

    def run_terminator(self, terminator: Terminator, trip: Trip) -> None: ...

    def tool_attached(self, tool: ToolRun) -> None: ...

    def tool_unwound(self, tool: ToolRun, latency_ns: int | None) -> None: ...

    def tool_detached(self, tool: ToolRun) -> None: ...

    def ended(self, execution: Execution) -> None: ...


class RemoteParent(Record):
    """A parent execution in another daemon: this execution trips when it trips or ends."""

    __slots__ = (
        "address",
        "credential",
        "execution_id",
        "keep_running_when_unreachable",
        "tls",
        "unreachable_after_ns",
    )
    address: str
    execution_id: str
    #: Bearer token for that daemon's coordinator role ("" when it needs none). A secret: never shown.
    credential: str
    #: Unreachable for longer than this → HOLDER_LOST (None: the daemon's default).
    unreachable_after_ns: int | None
    keep_running_when_unreachable: bool
    tls: bool

    def __init__(
        self,
        address: str,
        execution_id: str,
        credential: str = "",
        unreachable_after_ns: int | None = None,
        keep_running_when_unreachable: bool = False,
        tls: bool = False,
    ) -> None:
        init_field(self, "address", address)
        init_field(self, "execution_id", execution_id)
        init_field(self, "credential", credential)
        init_field(self, "unreachable_after_ns", unreachable_after_ns)
        init_field(self, "keep_running_when_unreachable", keep_running_when_unreachable)
        init_field(self, "tls", tls)

    def __repr__(self) -> str:
        # Every field but the credential: a repr ends up in logs and tracebacks.
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name != "credential")
        return f"RemoteParent({shown})"

    def as_dict(self) -> dict[str, object]:
        """Every field, the credential included (for the owner-only journal: recovery reads it back)."""
        return {name: getattr(self, name) for name in self.__slots__}


class ExecutionLimits(Record):
    """How many tools an execution takes, and terminators a tool."""

    __slots__ = ("max_terminators_per_tool", "max_tools")
    max_tools: int
    max_terminators_per_tool: int

    def __init__(self, max_tools: int = 10_000, max_terminators_per_tool: int = 1_024) -> None:
        init_field(self, "max_tools", max_tools)
        init_field(self, "max_terminators_per_tool", max_terminators_per_tool)


class ToolRun:
    """One attached tool's run, and its terminator registrar.

    The registrar is *closed* once the tool reports unwound, its stream detaches,
    or the execution ends; registering after that is a FAILED_PRECONDITION.
    """

    # A plain class: a dataclass compiles its methods at import, on the way to "ready".
    __slots__ = (
        "attached_at",
        "behavior",
        "detached",
        "execution",
        "outcome",
        "overran",
        "pid",
        "sink",
        "terminators",
        "tool_call_id",
        "tool_id",
        "tool_name",
        "unwound_at",
    )

    def __init__(
        self,
        execution: Execution,
        tool_id: str,
        tool_name: str,
        tool_call_id: str,
        behavior: InterruptBehavior,
        pid: int,
        attached_at: Instant,
        sink: ToolSink | None = None,
    ) -> None:
        self.execution = execution
        self.tool_id = tool_id
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id
        self.behavior = behavior
        self.pid = pid
        self.attached_at = attached_at
        self.unwound_at: Instant | None = None
        self.outcome = ToolOutcome.UNSPECIFIED
        self.detached = False
        self.overran = False
        #: Set by the transport at attach: where cancel and run_terminator go.
        self.sink = sink
        self.terminators: dict[str, Terminator] = {}

    @property
    def closed(self) -> bool:
        return self.unwound_at is not None or self.detached or self.execution.ended

    @property
    def label(self) -> str:
        return f"tool {self.tool_name or self.tool_id!r} ({self.tool_id})"


class Execution:
    """An agent turn or a task: one single-shot signal and what hangs off it.

    Every mutation takes ``_lock``; effects are called after it is released so a
    slow effect can never hold up another caller. Registration order of
    terminators is kept across all tools of the execution (``_terminators`` is
    insertion-ordered), which is the order they run in at the trip.
    """

    def __init__(
        self,
        *,
        execution_id: str,
        context_id: str,
        parent_execution_id: str,
        labels: dict[str, str],
        grace_ns: int,
        budget_ns: int | None,
        lease_ttl_ns: int | None,
        clock: Clock,
        effects: ExecutionEffects,
        limits: ExecutionLimits,
    ) -> None:
        self.execution_id = execution_id
        self.context_id = context_id
        self.parent_execution_id = parent_execution_id
        self.labels = labels
        self.grace_ns = grace_ns
        self.budget_ns = budget_ns
        self.lease_ttl_ns = lease_ttl_ns
        self.signal = CancellationSignal()
        self._clock = clock
        self._effects = effects
        self._limits = limits
        self._lock = threading.Lock()
        self.begun_at = clock.now()
        self.ended_at: Instant | None = None
        self.lease_deadline: Instant | None = self.begun_at.plus(lease_ttl_ns) if lease_ttl_ns else None
        self.tools: dict[str, ToolRun] = {}
        self._terminators: dict[tuple[str, str], Terminator] = {}
        # True once the trip has taken its snapshot of terminators: from then on
        # a registration runs at once instead of waiting for a trip that is past.
        self._terminators_fired = False
        self.grace_overruns = 0
        #: Open WatchExecution(hold=true) streams. When the last one goes while the
        #: execution is live and untripped, its holder (the agent) is lost.
        self.holders = 0
        #: True once any holder held it: a held execution restored after a restart
        #: must see its holder come back.
        self.held = False
        #: The attach token's id and secret digest (set by the coordinator; journaled).
        self.token_id = ""
        self.token_digest = b""
        #: The agent session and scheduled task it belongs to (targets of Interrupt).
        self.session_id = ""
        self.task_id = ""
        #: A parent owned by another daemon (watched by the federation layer), or None.
        self.remote_parent: RemoteParent | None = None

    # -- state ---------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @property
    def trip_info(self) -> Trip | None:
        return self.signal.trip_info

    @property
    def attached_tools(self) -> int:
        return sum(1 for t in self.tools.values() if not t.detached)

    def attached(self) -> list[ToolRun]:
        """The tools attached now (the ``attached_tools`` of them), in attach order."""
        with self._lock:
            return [t for t in self.tools.values() if not t.detached]

    def grace_deadline_for(self, tool: ToolRun) -> Instant | None:
        """When ``tool`` must have unwound: trip + grace, or for a tool that
        attached after the trip, its attach + grace (it could not know sooner)."""
        trip = self.trip_info
        if trip is None:
            return None
        start = trip.at if tool.attached_at.mono_ns <= trip.at.mono_ns else tool.attached_at
        return start.plus(self.grace_ns)

    # -- the trip ------------------------------------------------------------

    def trip(self, reason: InterruptReason, detail: str, at: Instant | None = None) -> tuple[bool, Trip]:
        """Trip the signal; only the first call has any effect.

        Order on the winning call: the signal's own listeners, then the effects'
        ``tripped`` (cancel messages to tools), then terminators in registration
        order. Returns (tripped by this call, the effective trip). ``at`` backdates
        the trip (a trip restored from the journal keeps its original moment).
        """
        won, trip = self.signal.trip(reason, detail, at if at is not None else self._clock.now())
        if not won:
            return False, trip
        self._effects.tripped(self, trip)
        with self._lock:
            self._terminators_fired = True
            to_run = list(self._terminators.values())
        for terminator in to_run:
            self._run(terminator, trip)
        return True, trip

    def _run(self, terminator: Terminator, trip: Trip) -> None:
        # A failing terminator must not delay or stop any other.
        try:
            self._effects.run_terminator(terminator, trip)
        except Exception:
            log.exception("terminator %s of %s failed", terminator.terminator_id, terminator.tool.label)

    # -- tools ---------------------------------------------------------------

    def attach(
        self,
        *,
        tool_id: str,
        tool_name: str,
        tool_call_id: str,
        behavior: InterruptBehavior,
        pid: int,
        sink: ToolSink | None = None,
    ) -> ToolRun:
        with self._lock:
            if self.ended:
                raise FailedPrecondition(f"execution {self.execution_id!r} has ended; begin a new one to attach tools")
            if len(self.tools) >= self._limits.max_tools:
                raise ResourceExhausted(
                    f"execution {self.execution_id!r} already has {self._limits.max_tools} tools attached"
                )
            tool = ToolRun(
                execution=self,
                tool_id=tool_id,
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                behavior=behavior,
                pid=pid,
                attached_at=self._clock.now(),
                sink=sink,
            )
            self.tools[tool_id] = tool
        self._effects.tool_attached(tool)
        return tool

    def register(self, tool: ToolRun, terminator_id: str, spec: TerminatorSpec, identity: object = None) -> Terminator:
        """Register a terminator. Runs it at once when the trip is already past.

        Raises FailedPrecondition when the tool's behaviour does not allow it or
        its run has closed, AlreadyExists for a live duplicate id.
        """
        ensure_behavior_allows(tool, spec)
        with self._lock:
            if tool.closed:
                raise FailedPrecondition(
                    f"{tool.label} has closed its run (unwound, detached or execution ended); "
                    "terminators can only be registered during the run"
                )
            if terminator_id in tool.terminators:
                raise AlreadyExists(f"terminator {terminator_id!r} is already registered by {tool.label}")
            if len(tool.terminators) >= self._limits.max_terminators_per_tool:
                raise ResourceExhausted(
                    f"{tool.label} has {self._limits.max_terminators_per_tool} terminators registered; "
                    "unregister some first"
                )
            terminator = Terminator(tool, terminator_id, spec, identity, self._clock.now())
            run_now = self._terminators_fired
            if not run_now:
                tool.terminators[terminator_id] = terminator
                self._terminators[(tool.tool_id, terminator_id)] = terminator
        if run_now:
            trip = self.trip_info
            assert trip is not None  # _terminators_fired is only set after the trip
            self._run(terminator, trip)
        return terminator

    def unregister(self, tool: ToolRun, terminator_id: str) -> bool:
        """Idempotent: True when something was removed."""
        with self._lock:
            removed = tool.terminators.pop(terminator_id, None)
            self._terminators.pop((tool.tool_id, terminator_id), None)
        return removed is not None

    def unwound(self, tool: ToolRun, outcome: ToolOutcome) -> int | None:
        """The tool's run ended: close its registrar. Returns the unwind latency
        in ns (from the trip, or from attach for a late attacher), or None when
        the execution had not tripped."""
        with self._lock:
            if tool.unwound_at is not None:
                raise FailedPrecondition(f"{tool.label} already reported unwound")
            now = self._clock.now()
            tool.unwound_at = now
            tool.outcome = outcome
            self._drop_terminators(tool, keep_process_groups=False)
            trip = self.trip_info
            latency = None
            if trip is not None:
                start = max(trip.at.mono_ns, tool.attached_at.mono_ns)
                latency = max(0, now.mono_ns - start)
        self._effects.tool_unwound(tool, latency)
        return latency

    def detach(self, tool: ToolRun) -> None:
        """The tool's stream closed. Callback terminators can no longer be
        delivered and go; process-group terminators of a tool that did not
        report unwound stay until the execution ends, so a crashed tool's
        processes are still killed at the trip."""
        with self._lock:
            if tool.detached:
                return
            tool.detached = True
            # Nothing is sent to a detached tool; dropping the sink also breaks the
            # tool <-> stream reference cycle, so both are freed when the stream ends.
            tool.sink = None
            self._drop_terminators(tool, keep_process_groups=tool.unwound_at is None)
        self._effects.tool_detached(tool)

    def _drop_terminators(self, tool: ToolRun, *, keep_process_groups: bool) -> None:
        for terminator_id, terminator in list(tool.terminators.items()):
            if keep_process_groups and isinstance(terminator.spec, ProcessGroupSpec):
                continue
            del tool.terminators[terminator_id]
            self._terminators.pop((tool.tool_id, terminator_id), None)

    def overrun_tools(self, now: Instant) -> list[ToolRun]:
        """Mark and return the interruptible tools whose grace ran out without an
        unwound report. Each tool is reported at most once."""
        overran: list[ToolRun] = []
        with self._lock:
            for tool in self.tools.values():
                # A detached tool's run is over (its processes, if any, are the
                # process-group escalation's business), so it cannot overrun.
                if tool.overran or tool.closed or not tool.behavior.receives_cancel:
                    continue
                deadline = self.grace_deadline_for(tool)
                if deadline is not None and deadline.mono_ns <= now.mono_ns:
                    tool.overran = True
                    overran.append(tool)
            self.grace_overruns += len(overran)
        return overran

    def process_group_terminators(self, tool: ToolRun | None = None) -> list[Terminator]:
        with self._lock:
            return [
                t
                for t in self._terminators.values()
                if isinstance(t.spec, ProcessGroupSpec) and (tool is None or t.tool is tool)
            ]

    # -- holders -------------------------------------------------------------

    def hold(self) -> None:
        """A holder's stream opened. Refused once the execution has ended."""
        with self._lock:
            if self.ended:
                raise FailedPrecondition(f"execution {self.execution_id!r} has ended; there is nothing to hold")
            self.holders += 1
            self.held = True

    def release(self) -> bool:
        """A holder's stream closed. True when that was the last holder of a live,
        untripped execution: its holder is lost and the caller trips it."""
        with self._lock:
            self.holders -= 1
            return self.holders == 0 and not self.ended and not self.signal.cancelled

    # -- lease and end -------------------------------------------------------

    def renew_lease(self) -> Instant | None:
        with self._lock:
            if self.ended:
                raise FailedPrecondition(f"execution {self.execution_id!r} has ended; its lease cannot be renewed")
            if self.lease_ttl_ns is None:
                return None
            self.lease_deadline = self._clock.now().plus(self.lease_ttl_ns)
            return self.lease_deadline

    def forget(self) -> None:
        """The coordinator no longer keeps this ended execution: let go of its tools.

        An execution and its tools point at each other. Kept for a while after it
        ends, the pair lives long enough to reach the collector's oldest generation,
        which the daemon collects rarely (full passes are long), so once dropped such
        cycles would pile up as garbage: every ended execution with its tools. Clearing
        the tools here lets reference counting free them at once.
        """
        with self._lock:
            assert self.ended, "only an ended execution is forgotten"
            self.tools.clear()
            self._terminators.clear()

    def end(self) -> bool:
        """Close every registrar. Idempotent: True for the call that ended it."""
        with self._lock:
            if self.ended:
                return False
            self.ended_at = self._clock.now()
            self._terminators.clear()
            for tool in self.tools.values():
                tool.terminators.clear()
        self._effects.ended(self)
        return True
