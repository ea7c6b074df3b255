"""The journal's health: NOT_SERVING while it cannot write, SERVING again once it can.

A failing disk (full, read-only, I/O errors) does not stop the daemon: trips still trip and
kill (see ``osedge.journal`` for which writes are refused and which are kept). But a daemon
whose journal lags behind memory would forget those trips if it crashed, so it tells its
probes: the health service turns NOT_SERVING, and a load balancer or the kubelet stops
sending it new turns. This module polls the journal while it fails (each poll replays the
kept writes, or probes the disk) and reports each change. While the journal is healthy it
sleeps without a timer until a write fails (the journal's ``on_failure``): an idle daemon
wakes for nothing (docs/performance-footprint.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from interrupt_sidecar.osedge.journal import Journal

#: How often a failing journal is retried. A healthy one costs a property read per poll.
POLL_S = 0.2


class JournalHealth:
    """Runs beside the server; ``on_change(healthy)`` is awaited on every change."""

    def __init__(
        self, journal: Journal, on_change: Callable[[bool], Awaitable[None]], *, poll_s: float = POLL_S
    ) -> None:
        self._journal = journal
        self._on_change = on_change
        self._poll_s = poll_s
        self.healthy = True
        self._write_failed = asyncio.Event()
        journal.on_failure = self._write_failed.set

    async def run(self) -> None:
        while True:
            if self._journal.healthy:
                # Every write runs on this thread, so no failure can slip in between the
                # check, the clear and the wait.
                self._write_failed.clear()
                await self._write_failed.wait()
            await asyncio.sleep(self._poll_s)
            healthy = self._journal.healthy or self._journal.retry()
            if healthy != self.healthy:
                self.healthy = healthy
                await self._on_change(healthy)
