"""Domain values to wire messages."""

from __future__ import annotations

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

from interrupt_sidecar.domain.execution import Execution, ToolRun
from interrupt_sidecar.domain.types import Instant
from interrupt_sidecar.runtime import events


def timestamp(at: Instant) -> Timestamp:
    ts = Timestamp()
    ts.seconds, ts.nanos = divmod(at.wall_ns, 1_000_000_000)
    return ts


def duration(ns: int) -> Duration:
    d = Duration()
    fill_duration(d, ns)
    return d


def fill_duration(d: Duration, ns: int) -> None:
    """Set ``d`` to ``ns`` nanoseconds in place (a message's own Duration field)."""
    # What Duration.FromNanoseconds does, without its Python: seconds and nanos share
    # the sign (divmod floors, so a negative count with a remainder is moved one second up).
    seconds, nanos = divmod(ns, 1_000_000_000)
    if seconds < 0 and nanos:
        seconds, nanos = seconds + 1, nanos - 1_000_000_000
    d.seconds, d.nanos = seconds, nanos


def execution(e: Execution, *, tools: bool = False) -> pb.Execution:
    """The wire form of ``e``; with ``tools``, its attached tools too (the answers on the
    turn's own path, BeginExecution and EndExecution, leave them out)."""
    # Filled in place: nested constructors copy each Timestamp and Duration into the
    # parent, and FromNanoseconds is Python. BeginExecution and EndExecution both answer
    # with this, so it was half of a turn's own Python (py-spy, 8 callers).
    msg = pb.Execution()
    msg.execution_id = e.execution_id
    msg.cancelled = e.signal.cancelled
    msg.ended = e.ended
    msg.parent_execution_id = e.parent_execution_id
    msg.context_id = e.context_id
    begun_at = msg.begun_at
    begun_at.seconds, begun_at.nanos = divmod(e.begun_at.wall_ns, 1_000_000_000)
    fill_duration(msg.grace, e.grace_ns)
    if e.labels:
        msg.labels.update(e.labels)
    msg.attached_tools = e.attached_tools
    msg.grace_overruns = e.grace_overruns
    msg.holders = e.holders
    msg.session_id = e.session_id
    msg.task_id = e.task_id
    if e.remote_parent is not None:
        parent = e.remote_parent
        remote = msg.remote_parent  # never the credential
        remote.address = parent.address
        remote.execution_id = parent.execution_id
        remote.keep_running_when_unreachable = parent.keep_running_when_unreachable
        remote.tls = parent.tls
        if parent.unreachable_after_ns is not None:
            fill_duration(remote.unreachable_after, parent.unreachable_after_ns)
    trip = e.trip_info
    if trip is not None:
        msg.reason = int(trip.reason)  # type: ignore[assignment]
        msg.detail = trip.detail
        tripped_at = msg.tripped_at
        tripped_at.seconds, tripped_at.nanos = divmod(trip.at.wall_ns, 1_000_000_000)
    if e.ended_at is not None:
        ended_at = msg.ended_at
        ended_at.seconds, ended_at.nanos = divmod(e.ended_at.wall_ns, 1_000_000_000)
    if e.budget_ns:
        fill_duration(msg.budget, e.budget_ns)
    if e.lease_ttl_ns:
        fill_duration(msg.lease_ttl, e.lease_ttl_ns)
    if tools:
        for tool in e.attached():
            _fill_attached_tool(msg.tools.add(), tool)
    return msg


def _fill_attached_tool(msg: pb.AttachedTool, tool: ToolRun) -> None:
    msg.tool_id = tool.tool_id
    msg.tool_name = tool.tool_name
    msg.tool_call_id = tool.tool_call_id
    msg.behavior = int(tool.behavior)  # type: ignore[assignment]
    msg.pid = tool.pid
    attached_at = msg.attached_at
    attached_at.seconds, attached_at.nanos = divmod(tool.attached_at.wall_ns, 1_000_000_000)
    msg.unwound = tool.unwound_at is not None
    msg.outcome = int(tool.outcome)  # type: ignore[assignment]
    msg.grace_overrun = tool.overran


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
