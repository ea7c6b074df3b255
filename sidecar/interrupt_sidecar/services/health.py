"""The standard gRPC health service, with a shutdown no watcher can hold up.

grpc_health's asyncio servicer writes each ``Watch`` update while holding that service's
``asyncio.Condition``, and ``enter_graceful_shutdown`` takes the same lock to publish
NOT_SERVING. A watcher that stops reading (its flow-control window full, or never opened)
leaves its write pending, and the lock held, until the call ends: SIGTERM's first step then
waited forever and the daemon never shut down. Here shutdown publishes NOT_SERVING without
the lock: ``Check`` sees it at once, watchers whose lock is free are woken to send it, and a
watcher stuck in a write is left to ``server.stop``, whose grace ends by cancelling its call.
"""

from __future__ import annotations

import asyncio

from grpc_health.v1 import health, health_pb2


class HealthServicer(health.aio.HealthServicer):  # type: ignore[misc]  # grpc_health has no types
    """grpc_health's asyncio servicer whose graceful shutdown never waits for a watcher."""

    # The base class's own state (its annotations, which mypy cannot see without types).
    _gracefully_shutting_down: bool
    _server_status: dict[str, int]
    _server_watchers: dict[str, asyncio.Condition]

    async def enter_graceful_shutdown(self) -> None:
        """Permanently NOT_SERVING for every service, now; later ``set`` calls are ignored."""
        if self._gracefully_shutting_down:
            return
        self._gracefully_shutting_down = True
        for service in self._server_status:
            self._server_status[service] = health_pb2.HealthCheckResponse.NOT_SERVING
        for condition in list(self._server_watchers.values()):
            # A free lock is taken without suspending; a held one belongs to a watcher in
            # a write, which sees the new status when the write ends or is cancelled.
            if not condition.locked():
                async with condition:
                    condition.notify_all()
