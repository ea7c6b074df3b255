"""The agent side, blocking facade: delegates every call to the async core on the private loop thread."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta

from interrupt_sidecar_client._coordinator import AsyncCoordinator
from interrupt_sidecar_client._loop import shared_loop
from interrupt_sidecar_client._types import (
    BegunExecution,
    ExecutionEvent,
    ExecutionInfo,
    InterruptOutcome,
    InterruptReason,
)

__all__ = ["Coordinator"]


async def _next(events: AsyncIterator[ExecutionEvent]) -> ExecutionEvent | None:
    try:
        return await anext(events)
    except StopAsyncIteration:
        return None


class Coordinator:
    """What an agent runtime uses (blocking API); see :class:`~interrupt_sidecar_client.aio.AsyncCoordinator`.

    Thread-safe: calls from several threads run concurrently on the client's loop thread.
    """

    def __init__(
        self, address: str | None = None, *, timeout: float | None = 10.0, auth_token: str | None = None
    ) -> None:
        self._core = AsyncCoordinator(address, timeout=timeout, auth_token=auth_token)
        self._loop = shared_loop()

    @property
    def address(self) -> str:
        """The daemon address."""
        return self._core.address

    def begin(
        self,
        *,
        execution_id: str = "",
        parent_execution_id: str = "",
        context_id: str = "",
        grace: timedelta | float | None = None,
        budget: timedelta | float | None = None,
        lease_ttl: timedelta | float | None = None,
        labels: Mapping[str, str] | None = None,
        session_id: str = "",
        task_id: str = "",
    ) -> BegunExecution:
        """Begin an execution with a fresh, untripped signal; hand ``attach_token`` to its tools."""
        return self._loop.run(
            self._core.begin(
                execution_id=execution_id,
                parent_execution_id=parent_execution_id,
                context_id=context_id,
                grace=grace,
                budget=budget,
                lease_ttl=lease_ttl,
                labels=labels,
                session_id=session_id,
                task_id=task_id,
            )
        )

    def interrupt(
        self,
        execution_id: str | None = None,
        *,
        context_id: str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        reason: InterruptReason | None = None,
        detail: str = "",
    ) -> builtins.list[InterruptOutcome]:
        """Trip one execution, or every live execution of a context, session or task (pass exactly one)."""
        return self._loop.run(
            self._core.interrupt(
                execution_id,
                context_id=context_id,
                session_id=session_id,
                task_id=task_id,
                reason=reason,
                detail=detail,
            )
        )

    def end(self, execution_id: str) -> ExecutionInfo:
        """End an execution: every tool's registrar closes. Idempotent."""
        return self._loop.run(self._core.end(execution_id))

    def keep_alive(self, execution_id: str) -> datetime | None:
        """Renew the execution's lease; returns when it now expires (None: it has no lease)."""
        return self._loop.run(self._core.keep_alive(execution_id))

    def get(self, execution_id: str) -> ExecutionInfo:
        """The state of one execution (live, or recently ended)."""
        return self._loop.run(self._core.get(execution_id))

    def list(self, *, context_id: str = "", include_ended: bool = False) -> builtins.list[ExecutionInfo]:
        """Live executions (and recently ended ones with ``include_ended``), optionally of one context."""
        return self._loop.run(self._core.list(context_id=context_id, include_ended=include_ended))

    def watch(self, execution_id: str, *, hold: bool = False) -> Iterator[ExecutionEvent]:
        """Events of one execution: a snapshot first, then each event until it ends.

        A generator: ``close()`` it (or break out of a ``for`` loop and drop it) to cancel.
        ``hold=True``: see :meth:`AsyncCoordinator.watch` (HOLDER_LOST when it ends early).
        """
        events = self._core.watch(execution_id, hold=hold)
        try:
            while True:
                event = self._loop.run(_next(events))
                if event is None:
                    return
                yield event
        finally:
            # At interpreter exit there is nothing left to cancel; a generator collected on
            # the loop's own thread cannot wait for its own loop.
            if self._loop.on_loop_thread:
                self._loop.submit(events.aclose())
            elif not self._loop.stopped:
                self._loop.run(events.aclose())

    @contextmanager
    def execution(
        self,
        *,
        execution_id: str = "",
        parent_execution_id: str = "",
        context_id: str = "",
        grace: timedelta | float | None = None,
        budget: timedelta | float | None = None,
        lease_ttl: timedelta | float | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Iterator[BegunExecution]:
        """``with coordinator.execution(...) as ex:`` — begun on entry, ended on exit."""
        begun = self.begin(
            execution_id=execution_id,
            parent_execution_id=parent_execution_id,
            context_id=context_id,
            grace=grace,
            budget=budget,
            lease_ttl=lease_ttl,
            labels=labels,
        )
        try:
            yield begun
        finally:
            self.end(begun.execution_id)

    def close(self) -> None:
        """Close the channel. Idempotent."""
        self._loop.run(self._core.close())

    def __enter__(self) -> Coordinator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
