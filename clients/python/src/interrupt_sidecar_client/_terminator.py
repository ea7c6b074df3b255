"""What a terminator is: its kinds, the handle a registration returns, and what goes on the wire.

The bottom of the tool side: the registrar (``_registrar``), the stream that forwards
registrations to the daemon (``_stream``) and the managed-process helper (``_process``)
all speak these types, and this module imports none of them, so their imports point one way.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

__all__ = [
    "CallbackSpec",
    "ProcessGroupSpec",
    "RegistrarBackend",
    "Terminator",
    "TerminatorCallback",
    "TerminatorKind",
    "TerminatorSpec",
]

#: A callback terminator: called with no arguments. It may return an awaitable, which
#: the client awaits. It must be idempotent, quick and non-blocking; an exception is
#: reported to the daemon as this terminator's failure and stops no other terminator.
TerminatorCallback = Callable[[], object]


class TerminatorKind(enum.Enum):
    """What a terminator does at the trip."""

    #: The daemon tells the tool (``run_terminator``) and the client calls the callable.
    CALLBACK = "callback"
    #: The daemon signals the process group itself, then SIGKILLs it after ``kill_after``.
    PROCESS_GROUP = "process_group"


@dataclass(frozen=True, slots=True)
class Terminator:
    """A registered terminator; pass it (or its id) to ``unregister``."""

    terminator_id: str
    kind: TerminatorKind
    #: The process group, for PROCESS_GROUP terminators.
    pgid: int | None = None


@dataclass(frozen=True, slots=True)
class CallbackSpec:
    pass


@dataclass(frozen=True, slots=True)
class ProcessGroupSpec:
    pgid: int
    signal: int
    kill_after: timedelta | None


TerminatorSpec = CallbackSpec | ProcessGroupSpec


class RegistrarBackend(Protocol):
    """Where registrations go. Both methods raise ``SidecarError`` subclasses on refusal."""

    async def register(self, terminator_id: str, spec: TerminatorSpec) -> None: ...

    async def unregister(self, terminator_id: str) -> None: ...
