"""In-memory stand-ins for the domain's ports: a recording effects sink and a manual clock."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from interrupt_sidecar.domain.execution import Execution, Terminator, ToolRun
from interrupt_sidecar.domain.types import Instant, Trip


@dataclass
class ManualClock:
    mono_ns: int = 1_000_000_000
    wall_ns: int = 1_700_000_000_000_000_000

    def now(self) -> Instant:
        return Instant(self.mono_ns, self.wall_ns)

    def advance(self, ns: int) -> None:
        self.mono_ns += ns
        self.wall_ns += ns


@dataclass
class RecordingEffects:
    """Records every effect in order; thread-safe so concurrent tests can use it."""

    log: list[tuple[str, object]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _add(self, kind: str, item: object) -> None:
        with self._lock:
            self.log.append((kind, item))

    def begun(self, execution: Execution) -> None:
        self._add("begun", execution.execution_id)

    def tripped(self, execution: Execution, trip: Trip) -> None:
        self._add("tripped", (execution.execution_id, trip.reason))

    def run_terminator(self, terminator: Terminator, trip: Trip) -> None:
        self._add("run", terminator.terminator_id)

    def tool_attached(self, tool: ToolRun) -> None:
        self._add("attached", tool.tool_id)

    def tool_unwound(self, tool: ToolRun, latency_ns: int | None) -> None:
        self._add("unwound", (tool.tool_id, latency_ns))

    def tool_detached(self, tool: ToolRun) -> None:
        self._add("detached", tool.tool_id)

    def ended(self, execution: Execution) -> None:
        self._add("ended", execution.execution_id)

    def of(self, kind: str) -> list[object]:
        with self._lock:
            return [item for k, item in self.log if k == kind]
