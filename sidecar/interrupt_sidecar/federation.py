"""Cascades across daemons: an execution whose parent lives in another daemon (another pod).

No consensus, no membership: the child's daemon is simply a gRPC client of the parent's
daemon. It subscribes to the parent's ``WatchExecution`` and trips the child with
PARENT_CANCELLED when the parent trips or ends (a child may not outlive its parent). When
the stream breaks it reconnects with exponential backoff (0.1 s doubling to 2 s); if the
parent's daemon stays unreachable longer than ``unreachable_after`` (default
``--remote-parent-timeout``, 10 s) the child trips with HOLDER_LOST — unless the parent
reference says ``keep_running_when_unreachable``, in which case it keeps retrying.

A vanished peer that does not close its connection is noticed by gRPC keepalive (a ping
every 5 s, 5 s to answer), so the bound is ``max(unreachable_after, ~10 s)`` for a silent
partition and ``unreachable_after`` for a refused or reset connection.

Everything here runs on the daemon's event loop; trips go through ``Execution.trip``, the
same path as every other trip.
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from interrupt_sidecar.domain.execution import Execution, RemoteParent
from interrupt_sidecar.domain.types import InterruptReason
from interrupt_sidecar.errors import FailedPrecondition, NotFound, PermissionDenied, Unavailable
from interrupt_sidecar.runtime.trip_path import TripPath

log = logging.getLogger(__name__)

_BACKOFF_START_S = 0.1
_BACKOFF_MAX_S = 2.0
_CHECK_TIMEOUT_S = 5.0
#: How often followers of ended children are swept (their parent's stream is dropped).
_SWEEP_S = 1.0
_CHANNEL_OPTIONS = (
    ("grpc.keepalive_time_ms", 5_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)


class _Following:
    """An execution whose remote parent is followed, and the task following it."""

    # A plain class: a dataclass compiles its methods at import, on the way to "ready".
    __slots__ = ("execution", "task")

    def __init__(self, execution: Execution, task: asyncio.Task[None]) -> None:
        self.execution = execution
        self.task = task


class RemoteParentFollower:
    """Checks and follows parents in other daemons (the services' ``RemoteParents``)."""

    def __init__(
        self, trip_path: TripPath, *, default_unreachable_ns: int, root_certificates: bytes | None = None
    ) -> None:
        self._trip_path = trip_path
        self._default_unreachable_ns = default_unreachable_ns
        self._roots = root_certificates
        self._channels: dict[tuple[str, bool], grpc.aio.Channel] = {}
        self._following: dict[str, _Following] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # -- channels --------------------------------------------------------------

    def _stub(self, parent: RemoteParent) -> pb_grpc.CoordinatorServiceAsyncStub:
        key = (parent.address, parent.tls)
        channel = self._channels.get(key)
        if channel is None:
            if parent.tls:
                credentials = grpc.ssl_channel_credentials(root_certificates=self._roots)
                channel = grpc.aio.secure_channel(parent.address, credentials, options=_CHANNEL_OPTIONS)
            else:
                channel = grpc.aio.insecure_channel(parent.address, options=_CHANNEL_OPTIONS)
            self._channels[key] = channel
        stub: pb_grpc.CoordinatorServiceAsyncStub = pb_grpc.CoordinatorServiceStub(channel)
        return stub

    @staticmethod
    def _metadata(parent: RemoteParent) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {parent.credential}"),) if parent.credential else ()

    # -- RemoteParents -----------------------------------------------------------

    async def check(self, parent: RemoteParent) -> None:
        """The parent must exist, be live, and its daemon accept our credential."""
        where = f"execution {parent.execution_id!r} at {parent.address}"
        try:
            answer = await self._stub(parent).GetExecution(
                pb.GetExecutionRequest(execution_id=parent.execution_id),
                metadata=self._metadata(parent),
                timeout=_CHECK_TIMEOUT_S,
            )
        except grpc.aio.AioRpcError as err:
            code = err.code()
            if code == grpc.StatusCode.NOT_FOUND:
                raise NotFound(f"remote parent {where} does not exist") from None
            if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                raise PermissionDenied(
                    f"the daemon at {parent.address} refused remote_parent.credential: {err.details()}"
                ) from None
            raise Unavailable(f"cannot reach remote parent {where}: {code.name} {err.details()}") from None
        if answer.execution.ended:
            raise FailedPrecondition(f"remote parent {where} has ended")

    def follow(self, execution: Execution) -> None:
        """Trip ``execution`` when its remote parent trips or ends, or stays unreachable."""
        parent = execution.remote_parent
        if parent is None or execution.execution_id in self._following:
            return
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._follow(execution, parent), name=f"remote parent of {execution.execution_id}")
        self._following[execution.execution_id] = _Following(execution, task)
        task.add_done_callback(lambda _: self._following.pop(execution.execution_id, None))
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = loop.create_task(self._sweep(), name="remote parent sweeper")

    async def close(self) -> None:
        for following in list(self._following.values()):
            following.task.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()

    # -- following -----------------------------------------------------------------

    async def _sweep(self) -> None:
        # A child that ended without tripping no longer needs its parent's stream.
        while self._following:
            await asyncio.sleep(_SWEEP_S)
            for following in list(self._following.values()):
                if following.execution.ended:
                    following.task.cancel()

    def _trip(self, execution: Execution, reason: InterruptReason, detail: str) -> None:
        if execution.ended or execution.signal.cancelled:
            return
        if reason is InterruptReason.HOLDER_LOST:
            self._trip_path.observer.holder_lost()
        execution.trip(reason, detail)

    async def _trip_first(self, execution: Execution, reason: InterruptReason, detail: str) -> None:
        """Trip, then let the woken writers (the child's tools, its own remote children)
        start before this task goes on to cancel the parent's stream."""
        self._trip(execution, reason, detail)
        await self._trip_path.let_writers_start()

    async def _follow(self, execution: Execution, parent: RemoteParent) -> None:
        where = f"remote parent {parent.execution_id!r} at {parent.address}"
        unreachable_s = (parent.unreachable_after_ns or self._default_unreachable_ns) / 1e9
        last_contact = time.monotonic()
        backoff = _BACKOFF_START_S
        while not execution.ended and not execution.signal.cancelled:
            call = self._stub(parent).WatchExecution(
                pb.WatchExecutionRequest(execution_id=parent.execution_id), metadata=self._metadata(parent)
            )
            try:
                async for event in call:
                    last_contact = time.monotonic()
                    backoff = _BACKOFF_START_S
                    kind = event.WhichOneof("event")
                    if kind == "snapshot" and (event.snapshot.cancelled or event.snapshot.ended):
                        state = "was cancelled" if event.snapshot.cancelled else "has ended"
                        await self._trip_first(execution, InterruptReason.PARENT_CANCELLED, f"{where} {state}")
                        return
                    if kind == "tripped":
                        detail = event.tripped.detail or InterruptReason(event.tripped.reason).name
                        await self._trip_first(
                            execution, InterruptReason.PARENT_CANCELLED, f"{where} tripped: {detail}"
                        )
                        return
                    if kind == "ended":
                        await self._trip_first(execution, InterruptReason.PARENT_CANCELLED, f"{where} ended")
                        return
                # The parent's watch ends only when the parent is done.
                await self._trip_first(execution, InterruptReason.PARENT_CANCELLED, f"{where} is done")
                return
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.NOT_FOUND:
                    # Its daemon no longer knows it (ended long ago, or restarted without a journal).
                    self._trip(execution, InterruptReason.PARENT_CANCELLED, f"{where} no longer exists")
                    return
                log.warning("%s: %s %s; reconnecting", where, err.code().name, err.details())
            finally:
                call.cancel()
            down_for = time.monotonic() - last_contact
            if not parent.keep_running_when_unreachable and down_for >= unreachable_s:
                self._trip(
                    execution,
                    InterruptReason.HOLDER_LOST,
                    f"{where} was unreachable for {down_for:.1f}s (limit {unreachable_s:g}s)",
                )
                return
            delay = backoff
            if not parent.keep_running_when_unreachable:
                delay = min(delay, max(0.0, unreachable_s - down_for))
            await asyncio.sleep(delay)
            backoff = min(backoff * 2, _BACKOFF_MAX_S)
