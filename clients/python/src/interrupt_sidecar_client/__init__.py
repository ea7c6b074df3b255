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
