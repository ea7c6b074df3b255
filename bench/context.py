"""What every part gets: the options, a place for raw samples (for the plots) and logging."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Options:
    quick: bool
    parts: list[str]
    loops: list[str]
    transports: list[str]
    modes: list[str]
    repeats: int
    trials: int
    idle_trials: int
    warmup: int
    fanout_sizes: list[int]
    fanout_trials: dict[int, int]
    workers: int
    tools_per_connection: int
    load_seconds: float
    load_rate: float
    load_tools: int
    load_executions: int
    kill_trials: int
    kill_grace_ms: int
    turn_seconds: float
    memory_streams: list[int]
    memory_turns: int
    poller_trials: int
    footprint_starts: int
    footprint_trials: int
    footprint_idle_seconds: float
    mcp_trials: int
    adapters_trials: int
    adapters_window_s: float
    adapters_return_timeout_s: float
    soak_seconds: float
    soak_rate: float
    soak_tools: int
    soak_window_s: float
    profile: bool
    plots: bool
    out: str


@dataclass
class Context:
    options: Options
    #: Raw samples in ms by figure name, for the plots (not written to the JSON).
    samples: dict[str, list[float]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    notes: list[str] = field(default_factory=list)
    profiles: dict[str, Any] = field(default_factory=dict)

    def log(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:7.1f}s] {message}", file=sys.stderr, flush=True)
