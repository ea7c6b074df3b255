"""The restart after a crash: resume what the journal says was pending.

Rules, in the order they are applied to each journaled execution (oldest first, so a
parent is live again before its children re-attach their cascade):

1. It is re-created with its id, its attach token (tools reconnect with the token they
   hold and see the true state), its original begin time (a budget keeps running from
   there) and a fresh lease.
2. Its registered process groups come back as terminators of a stand-in tool
   ("restored"), each with the identity pinned at its registration: whatever signals them
   later re-checks that identity first, so a PID recycled while the daemon was down is
   never hit.
3. Tripped before the crash → tripped again at once with the *same* reason, detail and
   trip time: its groups are killed (the kill latency honestly includes the downtime).
   Ended too → then ended again, after the kill has started.
4. Untripped and held by a holder before the crash → the holder must come back (a
   ``WatchExecution(hold=true)``) within the lease TTL, or ``holder_grace`` without one;
   if it does not, the execution trips with HOLDER_LOST and its groups die.
5. Ended and untripped → nothing left to do: forgotten.
6. Anything else stays live, as it was: a lease or budget fires as usual.
"""

from __future__ import annotations

import logging

from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec
from interrupt_sidecar.domain.execution import ProcessGroupSpec, RemoteParent
from interrupt_sidecar.domain.types import Instant, InterruptBehavior, InterruptReason
from interrupt_sidecar.errors import SidecarError
from interrupt_sidecar.osedge.journal import Journal, JournaledExecution, JournalUnavailable
from interrupt_sidecar.osedge.process_groups import GroupIdentity
from interrupt_sidecar.runtime.trip_path import TripPath

log = logging.getLogger(__name__)

#: The stand-in tool that owns restored process groups (its stream died with the old daemon).
RESTORED_TOOL_NAME = "restored"


class RecoveryReport:
    """What the restart found and did, for the log and for tests."""

    # A plain class: a dataclass compiles its methods at import, on the way to "ready".
    __slots__ = ("awaiting_holder", "failed", "forgotten", "groups", "restored", "retripped")

    def __init__(self) -> None:
        self.restored: list[str] = []
        self.retripped: list[str] = []
        self.awaiting_holder: list[str] = []
        self.forgotten: list[str] = []
        self.groups = 0
        self.failed: list[str] = []


def recover(coordinator: Coordinator, trip_path: TripPath, journal: Journal, *, holder_grace_ns: int) -> RecoveryReport:
    """Apply the module's rules to everything in ``journal``. Runs on the event loop."""
    report = RecoveryReport()
    for record in journal.load():
        try:
            _recover_one(coordinator, trip_path, journal, record, holder_grace_ns, report)
        except SidecarError as err:
            # One bad record (a parent gone, an id clash) must not keep the others from
            # being resumed — above all, their process groups from being killed.
            log.error("recovery: execution %r could not be restored: %s", record.execution_id, err)
            report.failed.append(record.execution_id)
    if report.restored or report.forgotten:
        log.info(
            "recovery: restored %d execution(s) (%d re-tripped, %d awaiting their holder), %d process group(s); "
            "forgot %d ended one(s)",
            len(report.restored),
            len(report.retripped),
            len(report.awaiting_holder),
            report.groups,
            len(report.forgotten),
        )
    return report


def _recover_one(
    coordinator: Coordinator,
    trip_path: TripPath,
    journal: Journal,
    record: JournaledExecution,
    holder_grace_ns: int,
    report: RecoveryReport,
) -> None:
    if record.ended and record.trip_reason is None:
        journal.forget(record.execution_id)
        report.forgotten.append(record.execution_id)
        return
    spec = record.spec
    parent = str(spec.get("parent_execution_id") or "")
    if parent and parent not in {e.execution_id for e in coordinator.list()}:
        parent = ""  # the parent ended or was forgotten: nothing left to cascade from
    execution = coordinator.restore(
        ExecutionSpec(
            execution_id=record.execution_id,
            parent_execution_id=parent,
            context_id=str(spec.get("context_id") or ""),
            grace_ns=_int_or_none(spec.get("grace_ns")),
            budget_ns=_int_or_none(spec.get("budget_ns")),
            lease_ttl_ns=_int_or_none(spec.get("lease_ttl_ns")),
            labels={str(k): str(v) for k, v in dict(spec.get("labels") or {}).items()},  # type: ignore[call-overload]
            session_id=str(spec.get("session_id") or ""),
            task_id=str(spec.get("task_id") or ""),
            remote_parent=_remote_parent(spec.get("remote_parent")),
        ),
        record.token_id,
        record.token_digest,
        record.begun_wall_ns,
    )
    execution.held = record.held
    if record.held:
        journal.held(record.execution_id)
    report.restored.append(record.execution_id)
    if record.groups:
        stand_in = execution.attach(
            tool_id=f"restored-{record.execution_id}",
            tool_name=RESTORED_TOOL_NAME,
            tool_call_id="",
            behavior=InterruptBehavior.EXTERNALLY_TERMINATED,
            pid=0,
        )
        rejournaled = True
        for group in record.groups:
            terminator_spec = ProcessGroupSpec(group.pgid, group.signal, group.kill_after_ns)
            identity = GroupIdentity(group.pgid, group.leader_start, group.session)
            # Journaled again under the stand-in's id before the original rows go.
            try:
                trip_path.group_registering(stand_in, group.terminator_id, terminator_spec, identity)
            except JournalUnavailable as err:
                # The disk fails: the original rows stay (a later restart still finds the
                # group) and the group is registered all the same, so it is still killed.
                log.error("recovery: process group %d not journaled again: %s", group.pgid, err)
                rejournaled = False
            execution.register(stand_in, group.terminator_id, terminator_spec, identity)
            report.groups += 1
        for group in record.groups:
            if rejournaled and group.tool_id != stand_in.tool_id:
                journal.group_dropped(record.execution_id, group.tool_id, group.terminator_id)
        # Its stream is gone; the groups stay registered (a detached tool's groups do).
        execution.detach(stand_in)
    if record.trip_reason is not None:
        at = None
        if record.trip_wall_ns is not None:
            # begun_at pairs this process's monotonic clock with the wall clock, so the
            # original trip moment maps onto the monotonic clock from it.
            begun = execution.begun_at
            at = Instant(begun.mono_ns + (record.trip_wall_ns - begun.wall_ns), record.trip_wall_ns)
        execution.trip(InterruptReason(record.trip_reason), record.trip_detail, at)
        # Only now: its tripped parent's cascade finds it tripped, with its own trip kept.
        coordinator.follow_parent(execution)
        report.retripped.append(record.execution_id)
        if record.ended:
            coordinator.end(record.execution_id)
        return
    coordinator.follow_parent(execution)
    if record.held:
        within = execution.lease_ttl_ns or holder_grace_ns
        trip_path.expect_holder(execution, within)
        report.awaiting_holder.append(record.execution_id)


def _remote_parent(value: object) -> RemoteParent | None:
    if not isinstance(value, dict):
        return None
    return RemoteParent(
        address=str(value.get("address", "")),
        execution_id=str(value.get("execution_id", "")),
        credential=str(value.get("credential", "")),
        unreachable_after_ns=_int_or_none(value.get("unreachable_after_ns")),
        keep_running_when_unreachable=bool(value.get("keep_running_when_unreachable")),
        tls=bool(value.get("tls")),
    )


def _int_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and value else None
