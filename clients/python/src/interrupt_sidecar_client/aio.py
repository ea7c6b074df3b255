"""The asyncio API of interrupt-sidecar: the core the blocking API delegates to.

Tools::

    from interrupt_sidecar_client import InterruptBehavior, aio

    async with aio.attach(behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name="fetch") as run:
        await fetch(url)  # cancelled at the trip; the block raises CancelledExecution

Agents use :class:`AsyncCoordinator`. The shared types (enums, errors, the signal) are
re-exported here so one import is enough.
"""

from interrupt_sidecar_client._coordinator import AsyncCoordinator
from interrupt_sidecar_client._errors import CancelledExecution, SidecarError
from interrupt_sidecar_client._process import AsyncManagedProcess
from interrupt_sidecar_client._registrar import AsyncTerminatorRegistrar
from interrupt_sidecar_client._signal import NOOP_SIGNAL, CancellationSignal, CancellationSource
from interrupt_sidecar_client._terminator import Terminator, TerminatorKind
from interrupt_sidecar_client._tool import AsyncToolRun, attach
from interrupt_sidecar_client._types import InterruptBehavior, InterruptReason, ToolOutcome

__all__ = [
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
]
