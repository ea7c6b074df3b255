"""Event-loop implementations chosen by name (``--loop auto|uvloop|asyncio``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from interrupt_sidecar.config import ConfigError, LoopName


def loop_factory(name: LoopName) -> Callable[[], asyncio.AbstractEventLoop]:
    """A factory for ``asyncio.Runner``: gRPC aio objects are then created inside
    the one running loop (grpc#40748)."""
    if name in ("auto", "uvloop"):
        try:
            import uvloop
        except ImportError:
            if name == "uvloop":
                raise ConfigError("--loop uvloop: uvloop is not installed (pip install uvloop)") from None
        else:
            return uvloop.new_event_loop
    return asyncio.new_event_loop
