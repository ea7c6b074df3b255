"""Domain values to wire messages."""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from interrupt.v1 import interrupt_pb2 as pb

from sidecar.domain.execution import Execution
from sidecar.domain.types import Instant
from sidecar.runtime import events


def timestamp(at: Instant) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(at.wall_ns)
    return ts


def duration(ns: int) -> Duration:
    d = Duration()
    d.FromNanoseconds(ns)
    return d


def execution(e: Execution) -> pb.Execution:
    msg = pb.Execution(
        execution_id=e.execution_id,
        cancelled=e.signal.cancelled,
        ended=e.ended,
        parent_execution_id=e.parent_execution_id,
        context_id=e.context_id,
        begun_at=timestamp(e.begun_at),
        grace=duration(e.grace_ns),
        labels=e.labels,
        attached_tools=e.attached_tools,
        grace_overruns=e.grace_overruns,
        holders=e.holders,
        session_id=e.session_id,
        task_id=e.task_id,
    )
    if e.remote_parent is not None:
        parent = e.remote_parent
        msg.remote_parent.CopyFrom(
            pb.RemoteParent(  # never the credential
                address=parent.address,
                execution_id=parent.execution_id,
                keep_running_when_unreachable=parent.keep_running_when_unreachable,
                tls=parent.tls,
            )
        )
        if parent.unreachable_after_ns is not None:
            msg.remote_parent.unreachable_after.CopyFrom(duration(parent.unreachable_after_ns))
    trip = e.trip_info
    if trip is not None:
        msg.reason = int(trip.reason)  # type: ignore[assignment]
        msg.detail = trip.detail
        msg.tripped_at.CopyFrom(timestamp(trip.at))
    if e.ended_at is not None:
        msg.ended_at.CopyFrom(timestamp(e.ended_at))
    if e.budget_ns:
        msg.budget.CopyFrom(duration(e.budget_ns))
    if e.lease_ttl_ns:
        msg.lease_ttl.CopyFrom(duration(e.lease_ttl_ns))
    return msg


def event(ev: events.ExecutionEvent) -> pb.ExecutionEvent:
    msg = pb.ExecutionEvent(execution_id=ev.execution_id, sequence=ev.sequence, occurred_at=timestamp(ev.at))
    p = ev.payload
    match p:
        case events.Tripped():
            msg.tripped.CopyFrom(
                pb.ExecutionTripped(
                    reason=int(p.reason),  # type: ignore[arg-type]
                    detail=p.detail,
                    tripped_at=timestamp(p.tripped_at),
                    grace_deadline=timestamp(p.grace_deadline),
                )
            )
        case events.ToolAttached():
            msg.tool_attached.CopyFrom(
                pb.ToolAttached(
                    tool_id=p.tool_id,
                    tool_name=p.tool_name,
                    tool_call_id=p.tool_call_id,
                    behavior=int(p.behavior),  # type: ignore[arg-type]
                    pid=p.pid,
                )
            )
        case events.ToolUnwound():
            unwound = pb.ToolUnwound(
                tool_id=p.tool_id,
                tool_name=p.tool_name,
                outcome=int(p.outcome),  # type: ignore[arg-type]
                behavior=int(p.behavior),  # type: ignore[arg-type]
            )
            if p.latency_ns is not None:
                unwound.latency.CopyFrom(duration(p.latency_ns))
            msg.tool_unwound.CopyFrom(unwound)
        case events.ToolDetached():
            msg.tool_detached.CopyFrom(pb.ToolDetached(tool_id=p.tool_id, tool_name=p.tool_name, unwound=p.unwound))
        case events.GraceOverrun():
            msg.grace_overrun.CopyFrom(
                pb.GraceOverrun(
                    tool_id=p.tool_id,
                    tool_name=p.tool_name,
                    behavior=int(p.behavior),  # type: ignore[arg-type]
                    grace=duration(p.grace_ns),
                )
            )
        case events.ProcessGroupSignalled():
            msg.process_group_signalled.CopyFrom(
                pb.ProcessGroupSignalled(
                    tool_id=p.tool_id,
                    terminator_id=p.terminator_id,
                    pgid=p.pgid,
                    signal=p.signal,
                    escalation=p.escalation,
                )
            )
        case events.ProcessGroupGone():
            msg.process_group_gone.CopyFrom(
                pb.ProcessGroupGone(
                    tool_id=p.tool_id, terminator_id=p.terminator_id, pgid=p.pgid, latency=duration(p.latency_ns)
                )
            )
        case events.TerminatorFailed():
            msg.terminator_failed.CopyFrom(
                pb.TerminatorFailed(tool_id=p.tool_id, terminator_id=p.terminator_id, message=p.message)
            )
        case events.Ended():
            msg.ended.CopyFrom(pb.ExecutionEnded(ended_at=timestamp(p.ended_at)))
    return msg
