"""CoordinatorService: what agent runtimes call."""

from __future__ import annotations

from typing import Protocol

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec, InterruptOutcome
from interrupt_sidecar.domain.execution import Execution, RemoteParent
from interrupt_sidecar.domain.types import InterruptReason
from interrupt_sidecar.errors import FailedPrecondition, InvalidArgument, NotFound, SidecarError
from interrupt_sidecar.runtime.trip_path import TripPath
from interrupt_sidecar.runtime.watch import WatcherOverflow, WatchHub
from interrupt_sidecar.services import convert
from interrupt_sidecar.services import validation as v
from interrupt_sidecar.services.status import Context, abort, maps_errors

#: The reason an Interrupt by session or task gets when the caller names none.
_DEFAULT_REASONS: dict[str | None, InterruptReason] = {
    "session_id": InterruptReason.SESSION_RELEASED,
    "task_id": InterruptReason.TASK_CANCELLED,
}


class RemoteParents(Protocol):
    """Follows parents that live in other daemons (implemented by ``interrupt_sidecar.federation``)."""

    async def check(self, parent: RemoteParent) -> None:
        """Refuse (NOT_FOUND, UNAVAILABLE, ...) unless the parent exists and can be reached."""

    def follow(self, execution: Execution) -> None:
        """Trip ``execution`` when its remote parent trips or ends, or stays unreachable."""


class CoordinatorService(pb_grpc.CoordinatorServiceServicer):
    def __init__(
        self, coordinator: Coordinator, trip_path: TripPath, hub: WatchHub, remote_parents: RemoteParents | None = None
    ) -> None:
        self._coordinator = coordinator
        self._trip_path = trip_path
        self._hub = hub
        self._remote_parents = remote_parents

    @maps_errors
    async def BeginExecution(self, request: pb.BeginExecutionRequest, context: Context) -> pb.BeginExecutionResponse:
        spec = ExecutionSpec(
            execution_id=v.identifier(request.execution_id, "execution_id", required=False),
            parent_execution_id=v.identifier(request.parent_execution_id, "parent_execution_id", required=False),
            context_id=v.identifier(request.context_id, "context_id", required=False),
            grace_ns=(
                v.duration_ns(request.grace, "grace", minimum_ns=1_000_000, maximum_ns=v.MAX_GRACE_NS)
                if request.HasField("grace")
                else None
            ),
            budget_ns=(
                v.duration_ns(request.budget, "budget", minimum_ns=1_000_000, maximum_ns=v.MAX_BUDGET_NS)
                if request.HasField("budget")
                else None
            ),
            lease_ttl_ns=(
                v.duration_ns(request.lease_ttl, "lease_ttl", minimum_ns=v.MIN_LEASE_NS, maximum_ns=v.MAX_LEASE_NS)
                if request.HasField("lease_ttl")
                else None
            ),
            labels=v.labels(request.labels),
            session_id=v.identifier(request.session_id, "session_id", required=False),
            task_id=v.identifier(request.task_id, "task_id", required=False),
            remote_parent=v.remote_parent(request.remote_parent) if request.HasField("remote_parent") else None,
        )
        if spec.remote_parent is not None:
            if spec.parent_execution_id:
                raise InvalidArgument("set parent_execution_id (a parent here) or remote_parent (elsewhere), not both")
            if self._remote_parents is None:
                raise FailedPrecondition("this daemon does not follow remote parents")
            # Before the execution exists: a parent that is unknown or unreachable refuses the begin.
            await self._remote_parents.check(spec.remote_parent)
        execution, token = self._coordinator.begin(spec)
        if execution.remote_parent is not None and self._remote_parents is not None:
            self._remote_parents.follow(execution)
        return pb.BeginExecutionResponse(
            execution_id=execution.execution_id, attach_token=token, execution=convert.execution(execution)
        )

    @maps_errors
    async def Interrupt(self, request: pb.InterruptRequest, context: Context) -> pb.InterruptResponse:
        # The cancel's path: everything before let_writers_start() delays every tool's cancel,
        # so it does the least it can (lookups, no Enum calls, ids checked only on a miss).
        target = request.WhichOneof("target")
        # A released session or a cancelled task names its own reason when the caller does not.
        default = _DEFAULT_REASONS.get(target) if request.reason == 0 else None
        reason = default if default is not None else v.reason(request.reason)
        detail = v.detail(request.detail)
        outcomes: list[InterruptOutcome]
        if target == "execution_id":
            execution_id = request.execution_id
            try:
                outcomes = [self._coordinator.interrupt_execution(execution_id, reason, detail)]
            except NotFound:
                # Every id the coordinator holds was checked when it began: a malformed
                # one can only miss, and is refused as malformed rather than unknown.
                v.identifier(execution_id, "execution_id", required=True)
                self._trip_path.observer.interrupt_requested(reason, "not_found")
                raise
            except FailedPrecondition:
                self._trip_path.observer.interrupt_requested(reason, "ended")
                raise
        elif target in ("context_id", "session_id", "task_id"):
            key = v.identifier(getattr(request, target), target, required=True)
            by_target = {
                "context_id": self._coordinator.interrupt_context,
                "session_id": self._coordinator.interrupt_session,
                "task_id": self._coordinator.interrupt_task,
            }
            outcomes = by_target[target](key, reason, detail)
            if not outcomes:
                self._trip_path.observer.interrupt_requested(reason, "not_found")
        else:
            raise InvalidArgument("name a target: execution_id, context_id, session_id or task_id")
        await self._trip_path.let_writers_start()
        self._observe(reason, outcomes)
        if outcomes:
            # Safety first: the trips above happened and their kills are under way; only
            # the answer says whether a restart would still know them.
            ids = ", ".join(o.execution_id for o in outcomes[:5]) + (" ..." if len(outcomes) > 5 else "")
            self._trip_path.ensure_journaled(f"the interrupt tripped or found tripped {ids}")
        return pb.InterruptResponse(
            outcomes=[
                pb.InterruptOutcome(execution_id=o.execution_id, tripped=o.tripped, reason=int(o.reason))  # type: ignore[arg-type]
                for o in outcomes
            ]
        )

    def _observe(self, reason: InterruptReason, outcomes: list[InterruptOutcome]) -> None:
        observer = self._trip_path.observer
        for outcome in outcomes:
            # The request's reason, not the effective one: this counts what callers asked.
            observer.interrupt_requested(reason, "tripped" if outcome.tripped else "already_tripped")

    @maps_errors
    async def EndExecution(self, request: pb.EndExecutionRequest, context: Context) -> pb.EndExecutionResponse:
        execution_id = v.identifier(request.execution_id, "execution_id", required=True)
        execution = self._coordinator.end(execution_id)
        self._trip_path.ensure_journaled(f"execution {execution_id!r} ended")
        return pb.EndExecutionResponse(execution=convert.execution(execution))

    @maps_errors
    async def KeepAlive(self, request: pb.KeepAliveRequest, context: Context) -> pb.KeepAliveResponse:
        execution_id = v.identifier(request.execution_id, "execution_id", required=True)
        deadline = self._coordinator.live(execution_id).renew_lease()
        response = pb.KeepAliveResponse()
        if deadline is not None:
            response.lease_expires_at.CopyFrom(convert.timestamp(deadline))
        return response

    @maps_errors
    async def GetExecution(self, request: pb.GetExecutionRequest, context: Context) -> pb.GetExecutionResponse:
        execution_id = v.identifier(request.execution_id, "execution_id", required=True)
        return pb.GetExecutionResponse(execution=convert.execution(self._coordinator.get(execution_id), tools=True))

    @maps_errors
    async def ListExecutions(self, request: pb.ListExecutionsRequest, context: Context) -> pb.ListExecutionsResponse:
        context_id = v.identifier(request.context_id, "context_id", required=False)
        found = self._coordinator.list(context_id, request.include_ended)
        return pb.ListExecutionsResponse(executions=[convert.execution(e, tools=request.include_tools) for e in found])

    async def WatchExecution(self, request: pb.WatchExecutionRequest, context: Context) -> None:  # type: ignore[override]
        try:
            execution_id = v.identifier(request.execution_id, "execution_id", required=True)
            execution = self._coordinator.live(execution_id) if request.hold else self._coordinator.get(execution_id)
            if request.hold:
                execution.hold()
        except SidecarError as err:
            await abort(context, err)
        if request.hold:
            self._trip_path.holder_gained(execution)
        # Snapshot and subscription are taken together on the loop thread, so
        # the watcher sees every event after the snapshot and none twice.
        subscription = self._hub.subscribe(execution_id, done=self._trip_path.done(execution))
        snapshot = pb.ExecutionEvent(
            execution_id=execution_id,
            sequence=self._hub.last_sequence(execution_id),
            occurred_at=convert.timestamp(execution.begun_at),
            snapshot=convert.execution(execution, tools=True),
        )
        try:
            await context.write(snapshot)
            while (event := await subscription.next()) is not None:
                await context.write(convert.event(event))
        except WatcherOverflow as err:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{err}; watch again to resume from a snapshot")
        finally:
            self._hub.unsubscribe(subscription)
            # However the stream ended — the agent crashed, its connection died (keepalive),
            # it cancelled the call — a holder that leaves a live, untripped execution
            # behind has lost it. (An ended execution ends the watch first: no trip.)
            if request.hold and execution.release():
                self._trip_path.holder_lost(execution, "the holder's WatchExecution stream ended")
