"""Python client of interrupt-sidecar: the blocking API, and the types both APIs share.

Tools attach to the execution they run in and get its cancellation signal::

    from interrupt_sidecar_client import InterruptBehavior, attach

    with attach(behavior=InterruptBehavior.COOPERATIVE, tool_name="grep") as run:
        for path in paths:
            if run.signal.is_cancelled:
                return f"grep interrupted: {run.signal.reason.name}"
            scan(path)

Agents begin, interrupt, end and watch executions with :class:`Coordinator`. The asyncio
API (the core that this one delegates to) is :mod:`interrupt_sidecar_client.aio`.
"""

import logging as _logging
from typing import TYPE_CHECKING

# The names below are imported on first use (PEP 562), not here: a process that needs only
# the generated code (``interrupt_sidecar_client._proto``, e.g. the daemon) or one name
# must not pay for the whole client (grpc.aio, every module of it) at start-up.
if TYPE_CHECKING:
    from interrupt_sidecar_client._controller import SidecarInterruptController
    from interrupt_sidecar_client._errors import (
        AlreadyExists,
        CancelledExecution,
        ConnectionLost,
        DeadlineExceeded,
        FailedPrecondition,
        InvalidArgument,
        NotFound,
        PermissionDenied,
        ResourceExhausted,
        SidecarError,
        ThreadInterrupted,
        Unauthenticated,
        Unavailable,
    )
    from interrupt_sidecar_client._process import ManagedProcess
    from interrupt_sidecar_client._signal import NOOP_SIGNAL, CancellationSignal, CancellationSource
    from interrupt_sidecar_client._sync_coordinator import Coordinator
    from interrupt_sidecar_client._sync_tool import TerminatorRegistrar, ToolRun, attach
    from interrupt_sidecar_client._terminator import Terminator, TerminatorKind
    from interrupt_sidecar_client._types import (
        BegunExecution,
        Cancellation,
        EventKind,
        ExecutionEvent,
        ExecutionInfo,
        InterruptBehavior,
        InterruptOutcome,
        InterruptReason,
        ToolOutcome,
    )

_LAZY = {
    "SidecarInterruptController": "interrupt_sidecar_client._controller",
    "AlreadyExists": "interrupt_sidecar_client._errors",
    "CancelledExecution": "interrupt_sidecar_client._errors",
    "ConnectionLost": "interrupt_sidecar_client._errors",
    "DeadlineExceeded": "interrupt_sidecar_client._errors",
    "FailedPrecondition": "interrupt_sidecar_client._errors",
    "InvalidArgument": "interrupt_sidecar_client._errors",
    "NotFound": "interrupt_sidecar_client._errors",
    "PermissionDenied": "interrupt_sidecar_client._errors",
    "ResourceExhausted": "interrupt_sidecar_client._errors",
    "SidecarError": "interrupt_sidecar_client._errors",
    "ThreadInterrupted": "interrupt_sidecar_client._errors",
    "Unauthenticated": "interrupt_sidecar_client._errors",
    "Unavailable": "interrupt_sidecar_client._errors",
    "ManagedProcess": "interrupt_sidecar_client._process",
    "Terminator": "interrupt_sidecar_client._terminator",
    "TerminatorKind": "interrupt_sidecar_client._terminator",
    "NOOP_SIGNAL": "interrupt_sidecar_client._signal",
    "CancellationSignal": "interrupt_sidecar_client._signal",
    "CancellationSource": "interrupt_sidecar_client._signal",
    "Coordinator": "interrupt_sidecar_client._sync_coordinator",
    "TerminatorRegistrar": "interrupt_sidecar_client._sync_tool",
    "ToolRun": "interrupt_sidecar_client._sync_tool",
    "attach": "interrupt_sidecar_client._sync_tool",
    "BegunExecution": "interrupt_sidecar_client._types",
    "Cancellation": "interrupt_sidecar_client._types",
    "EventKind": "interrupt_sidecar_client._types",
    "ExecutionEvent": "interrupt_sidecar_client._types",
    "ExecutionInfo": "interrupt_sidecar_client._types",
    "InterruptBehavior": "interrupt_sidecar_client._types",
    "InterruptOutcome": "interrupt_sidecar_client._types",
    "InterruptReason": "interrupt_sidecar_client._types",
    "ToolOutcome": "interrupt_sidecar_client._types",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
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
]

__version__ = "0.1.0"

# A library logs, the application decides where it goes: without this, Python's last-resort
# handler would print the client's warnings to a tool's stderr (often its output).
_logging.getLogger(__name__).addHandler(_logging.NullHandler())
