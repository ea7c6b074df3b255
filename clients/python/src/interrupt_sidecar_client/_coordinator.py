"""The agent side, async core: begin, interrupt, end and watch executions."""

from __future__ import annotations

import builtins
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import grpc

from interrupt_sidecar_client._config import AUTH_TOKEN_ENV, CHANNEL_OPTIONS, resolve_address
from interrupt_sidecar_client._errors import error_from_rpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2, interrupt_pb2_grpc
from interrupt_sidecar_client._types import (
    BegunExecution,
    ExecutionEvent,
    ExecutionInfo,
    InterruptOutcome,
    InterruptReason,
    duration_to_pb,
    event_from_pb,
    execution_from_pb,
    reason_from_pb,
    reason_to_pb,
)

__all__ = ["AsyncCoordinator"]


class AsyncCoordinator:
    """What an agent runtime uses: one per daemon, on one event loop.

    ``address`` (``unix:///path.sock`` or ``HOST:PORT``) defaults to
    ``INTERRUPT_SIDECAR_ADDRESS``, then to the daemon's default socket
    (``$XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock`` or
    ``/tmp/interrupt-sidecar-$UID/sidecar.sock``). The channel is opened on first use, inside the running loop, and
    closed by ``close()`` / ``async with``. Each unary call has a deadline of
    ``timeout`` seconds. Refusals raise :class:`SidecarError` subclasses.
    ``auth_token`` (default ``INTERRUPT_SIDECAR_AUTH_TOKEN``) is the coordinator
    credential a daemon's TCP listener requires; it is sent as ``authorization: Bearer``.
    """

    def __init__(
        self, address: str | None = None, *, timeout: float | None = 10.0, auth_token: str | None = None
    ) -> None:
        self._address = resolve_address(address)
        self._timeout = timeout
        token = auth_token if auth_token is not None else os.environ.get(AUTH_TOKEN_ENV, "").strip()
        self._metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token}"),) if token else ()
        self._channel: grpc.aio.Channel | None = None
        self._stub: interrupt_pb2_grpc.CoordinatorServiceAsyncStub | None = None

    @property
    def address(self) -> str:
        """The daemon address."""
        return self._address

    def _coordinator(self) -> interrupt_pb2_grpc.CoordinatorServiceAsyncStub:
        if self._stub is None:
            self._channel = grpc.aio.insecure_channel(self._address, options=CHANNEL_OPTIONS)
            self._stub = interrupt_pb2_grpc.CoordinatorServiceStub(self._channel)
        assert self._stub is not None
        return self._stub

    async def begin(
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
        """Begin an execution (a turn or a task) with a fresh, untripped signal.

        Durations are seconds or timedeltas; ``None`` leaves them unset (``grace``: the
        daemon's default; ``budget``/``lease_ttl``: none). Hand ``result.attach_token``
        (or ``result.tool_env()``) to the tools.
        """
        request = interrupt_pb2.BeginExecutionRequest(
            execution_id=execution_id,
            parent_execution_id=parent_execution_id,
            context_id=context_id,
            labels=dict(labels or {}),
            session_id=session_id,
            task_id=task_id,
        )
        for name, value in (("grace", grace), ("budget", budget), ("lease_ttl", lease_ttl)):
            duration = duration_to_pb(value)
            if duration is not None:
                getattr(request, name).CopyFrom(duration)
        try:
            response = await self._coordinator().BeginExecution(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, "begin execution") from None
        return BegunExecution(
            execution_id=response.execution_id,
            attach_token=response.attach_token,
            execution=execution_from_pb(response.execution),
            address=self._address,
        )

    async def interrupt(
        self,
        execution_id: str | None = None,
        *,
        context_id: str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        reason: InterruptReason | None = None,
        detail: str = "",
    ) -> builtins.list[InterruptOutcome]:
        """Trip one execution, or every live execution of a context, session or task (pass
        exactly one target). ``reason`` is required except for a session (default
        SESSION_RELEASED) or a task (default TASK_CANCELLED).

        Single-shot: the first reason wins; an execution tripped already is reported with
        ``tripped=False`` and its original reason.
        """
        targets = {"execution_id": execution_id, "context_id": context_id, "session_id": session_id, "task_id": task_id}
        named = {name: value for name, value in targets.items() if value is not None}
        if len(named) != 1:
            raise ValueError("pass exactly one of execution_id, context_id, session_id and task_id")
        if reason is None and not (session_id is not None or task_id is not None):
            raise ValueError("reason is required (every interrupt says why)")
        request = interrupt_pb2.InterruptRequest(detail=detail)
        if reason is not None:
            request.reason = reason_to_pb(reason)
        for name, value in named.items():
            setattr(request, name, value)
        try:
            response = await self._coordinator().Interrupt(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, "interrupt") from None
        return [
            InterruptOutcome(outcome.execution_id, outcome.tripped, reason_from_pb(outcome.reason))
            for outcome in response.outcomes
        ]

    async def end(self, execution_id: str) -> ExecutionInfo:
        """End an execution: every tool's registrar closes. Idempotent."""
        try:
            response = await self._coordinator().EndExecution(
                interrupt_pb2.EndExecutionRequest(execution_id=execution_id),
                timeout=self._timeout,
                metadata=self._metadata,
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, f"end execution {execution_id!r}") from None
        return execution_from_pb(response.execution)

    async def keep_alive(self, execution_id: str) -> datetime | None:
        """Renew the execution's lease; returns when it now expires (None: it has no lease)."""
        try:
            response = await self._coordinator().KeepAlive(
                interrupt_pb2.KeepAliveRequest(execution_id=execution_id),
                timeout=self._timeout,
                metadata=self._metadata,
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, f"keep execution {execution_id!r} alive") from None
        if not response.HasField("lease_expires_at"):
            return None
        return response.lease_expires_at.ToDatetime(tzinfo=UTC)

    async def get(self, execution_id: str) -> ExecutionInfo:
        """The state of one execution (live, or recently ended)."""
        try:
            response = await self._coordinator().GetExecution(
                interrupt_pb2.GetExecutionRequest(execution_id=execution_id),
                timeout=self._timeout,
                metadata=self._metadata,
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, f"get execution {execution_id!r}") from None
        return execution_from_pb(response.execution)

    async def list(self, *, context_id: str = "", include_ended: bool = False) -> builtins.list[ExecutionInfo]:
        """Live executions (and recently ended ones with ``include_ended``), optionally of one context."""
        try:
            response = await self._coordinator().ListExecutions(
                interrupt_pb2.ListExecutionsRequest(context_id=context_id, include_ended=include_ended),
                timeout=self._timeout,
                metadata=self._metadata,
            )
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, "list executions") from None
        return [execution_from_pb(execution) for execution in response.executions]

    async def watch(self, execution_id: str, *, hold: bool = False) -> AsyncGenerator[ExecutionEvent, None]:
        """Events of one execution: a snapshot first, then each event until it ends.

        ``async for event in coordinator.watch(id):`` — breaking out of the loop (or
        ``aclose()``) cancels the watch. With ``hold=True`` the watch *holds* the
        execution: if it ends while the execution is live and untripped (this process
        died, its connection broke, or the watch was cancelled), the daemon trips the
        execution with HOLDER_LOST and kills its tools' process groups.
        """
        call = self._coordinator().WatchExecution(
            interrupt_pb2.WatchExecutionRequest(execution_id=execution_id, hold=hold)
        )
        try:
            async for message in call:
                yield event_from_pb(message)
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, f"watch execution {execution_id!r}") from None
        finally:
            call.cancel()

    @asynccontextmanager
    async def execution(
        self,
        *,
        execution_id: str = "",
        parent_execution_id: str = "",
        context_id: str = "",
        grace: timedelta | float | None = None,
        budget: timedelta | float | None = None,
        lease_ttl: timedelta | float | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> AsyncIterator[BegunExecution]:
        """``async with coordinator.execution(...) as ex:`` — begun on entry, ended on exit."""
        begun = await self.begin(
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
            await self.end(begun.execution_id)

    async def close(self) -> None:
        """Close the channel (cancels running watches). Idempotent."""
        channel, self._channel, self._stub = self._channel, None, None
        if channel is not None:
            await channel.close()

    async def __aenter__(self) -> AsyncCoordinator:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
