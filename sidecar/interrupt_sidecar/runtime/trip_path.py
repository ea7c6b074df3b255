"""Where a trip goes. Read this file to follow an interrupt from the signal to the OS.

1. ``Execution.trip`` (domain) flips the single-shot signal and, on the winning
   call only, calls ``TripPath.tripped`` and then ``TripPath.run_terminator``
   for each terminator in registration order. Nothing here awaits; the RPC that
   asked for the trip then calls ``let_writers_start`` (the woken writers and
   queued kills go first; up to eight tools' cancels are written; the trip's
   bookkeeping below has run, journal included) and answers.
2. ``tripped``: a cancel message is put in the outbox of every attached
   interruptible tool first (each stream has its own bounded outbox and writer,
   so a slow or dead tool delays nobody). The trip's bookkeeping is queued
   behind the writers it woke (``_settle_trips``): the budget and lease timers
   are disarmed, the ``Tripped`` event goes to watchers, a grace timer is armed
   and the journal records the trip. Every other entry point settles pending
   trips first, so nothing that follows a trip is seen before it.
3. ``run_terminator``: a callback terminator becomes a ``run_terminator``
   message on its tool's stream; a process-group terminator is queued for the
   loop's next turn (after the stream writers the trip woke and its bookkeeping,
   so its /proc survey delays no cancel and the journal has the trip) and then
   signalled through the OS edge (freeze, polite signal + SIGCONT), with SIGKILL
   armed for ``kill_after`` (default: the grace, counted from the trip) and a
   watcher that reports the group gone.
4. The grace timer marks every interruptible tool that has not reported
   unwound as a grace overrun (an event on WatchExecution).
5. Child executions trip through the same path (the coordinator's cascade
   listener calls ``Execution.trip`` on them).

Everything here runs on the daemon's single event-loop thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal as signal_module
from collections.abc import Callable, Sequence

from interrupt_sidecar.domain.execution import CallbackSpec, Execution, ProcessGroupSpec, Terminator, ToolRun, ToolSink
from interrupt_sidecar.domain.types import Clock, Instant, InterruptReason, Trip
from interrupt_sidecar.errors import SidecarError
from interrupt_sidecar.osedge.journal import Journal, JournaledGroup, JournalUnavailable
from interrupt_sidecar.osedge.process_groups import GroupIdentity, ProcessGroups, ProcessTree
from interrupt_sidecar.runtime import events
from interrupt_sidecar.runtime.observer import NOOP_OBSERVER, TripObserver, refusal_cause
from interrupt_sidecar.runtime.watch import WatchHub

log = logging.getLogger(__name__)

#: How long after SIGKILL a group may take to disappear before it is reported as a failure.
_GONE_TIMEOUT_S = 10.0
#: While waiting for a tree to go, rescan /proc at least this often: a member may fork or a
#: descendant may escape the group, and those have no pidfd yet.
_RESCAN_S = 0.05
#: Up to this many writers woken by one trip, the tripping RPC lets them start before it
#: answers (each costs the answer one write submission), and waits for the tools'
#: cancels to be written.
_YIELD_TO_WRITERS_UP_TO = 8
#: The longest the tripping RPC waits for those cancels (a tool that stopped reading can
#: hold its stream's write back; its cancel still goes, the answer just does not wait).
_ANSWER_AFTER_CANCELS_S = 0.002


class _Deadline:
    """Runs a callback on the loop once a moment on the monotonic clock has come, never before.

    Loop timers may fire before the delay they were given: uvloop keeps its time in whole
    milliseconds, so it runs ``call_later`` callbacks up to a millisecond early. Acting on
    a deadline early breaks what the deadline promised (a SIGKILL before the group's
    grace ran out, a budget cut short), so a timer that fires early is armed again for
    what is left.
    """

    __slots__ = ("_at_ns", "_callback", "_clock", "_handle", "_loop")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, clock: Clock, at: Instant, callback: Callable[[], None]
    ) -> None:
        self._loop, self._clock, self._at_ns, self._callback = loop, clock, at.mono_ns, callback
        self._handle = self._arm()

    def _arm(self) -> asyncio.TimerHandle:
        delay = max(0.0, (self._at_ns - self._clock.now().mono_ns) / 1e9)
        return self._loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        if self._clock.now().mono_ns < self._at_ns:
            self._handle = self._arm()
        else:
            self._callback()

    def cancel(self) -> None:
        self._handle.cancel()


class _KillJob:
    """One signalled process group, followed until every process of its tree is gone."""

    # A plain class: a dataclass compiles its methods at import, on the way to "ready".
    __slots__ = (
        "escalated",
        "escalation",
        "execution_id",
        "identity",
        "known",
        "reason",
        "signalled_at",
        "terminator",
        "tree",
        "trip_at",
    )

    def __init__(
        self,
        execution_id: str,
        terminator: Terminator,
        identity: GroupIdentity,
        tree: ProcessTree,
        signalled_at: Instant,
        trip_at: Instant,
        reason: InterruptReason,
        known: list[tuple[int, int]],
    ) -> None:
        self.execution_id = execution_id
        self.terminator = terminator
        self.identity = identity
        self.tree = tree
        self.signalled_at = signalled_at
        self.trip_at = trip_at
        self.reason = reason
        #: (pid, start) of the tree's processes found by the last signal pass.
        self.known = known
        self.escalation: _Deadline | None = None
        self.escalated = False


class _QueuedKill:
    """A process-group kill queued behind its trip's stream writers (see ``run_terminator``)."""

    __slots__ = ("execution_id",)

    def __init__(self, execution_id: str) -> None:
        self.execution_id = execution_id


class _Timers:
    """An execution's deadlines, and its kills in flight."""

    __slots__ = ("budget", "grace", "holder", "kills", "lease")

    def __init__(self) -> None:
        self.budget: _Deadline | None = None
        self.lease: _Deadline | None = None
        self.grace: _Deadline | None = None
        self.holder: _Deadline | None = None
        #: Kills in flight, queued ones included: the execution's events stay open until
        #: they are done, and shutdown waits for them.
        self.kills: set[_KillJob | _QueuedKill] = set()


async def _all_done(futures: Sequence[asyncio.Future[None]], timeout_s: float) -> None:
    """Wait until every future is done or ``timeout_s`` has passed (what
    ``asyncio.wait(futures, timeout=...)`` does on every Interrupt, without its sets,
    per-future wrapping and a second pass over the futures)."""
    pending = [f for f in futures if not f.done()]
    if not pending:
        return
    loop = asyncio.get_running_loop()
    all_done = loop.create_future()
    left = len(pending)

    def one_done(_: asyncio.Future[None]) -> None:
        nonlocal left
        left -= 1
        if left == 0 and not all_done.done():
            all_done.set_result(None)

    def timed_out() -> None:
        if not all_done.done():
            all_done.set_result(None)

    for future in pending:
        future.add_done_callback(one_done)
    timer = loop.call_later(timeout_s, timed_out)
    try:
        await all_done
    finally:
        timer.cancel()
        for future in pending:
            future.remove_done_callback(one_done)


class TripPath:
    """The ``ExecutionEffects`` of the running daemon."""

    def __init__(
        self,
        clock: Clock,
        process_groups: ProcessGroups,
        hub: WatchHub,
        observer: TripObserver = NOOP_OBSERVER,
        journal: Journal | None = None,
    ) -> None:
        self._clock = clock
        self._groups = process_groups
        self._hub = hub
        #: Where the facts a restart needs are written (``--state-dir``); None: not kept.
        self.journal = journal
        #: Where observations go (metrics); the services report through it too.
        self.observer = observer
        self._timers: dict[str, _Timers] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Stream writers a trip woke (cancels queued, watchers told) since the last
        #: ``let_writers_start``.
        self._writers_woken = 0
        #: Process-group kills queued since the last ``let_writers_start``.
        self._kills_queued = 0
        #: Sinks sent a cancel since the last ``let_writers_start`` (no more than one over
        #: the bound: beyond it nobody waits for them).
        self._cancels_sent: list[ToolSink] = []
        #: A ``_drop_unclaimed`` is scheduled for the current loop turn.
        self._unclaimed_drop_scheduled = False
        #: Trips fanned out whose bookkeeping has not run yet (see ``tripped``).
        self._unsettled: list[tuple[Execution, Trip, Instant]] = []

    def _for_the_answer(self) -> None:
        """The trip just noted writers, cancels or kills for ``let_writers_start``.

        The RPC that tripped claims them synchronously, before the loop runs anything
        else. A trip no RPC answers for (a timer, a remote parent's stream) leaves them
        unclaimed: they are dropped on the loop's next turn, so the next Interrupt never
        waits on another trip's writers.
        """
        if not self._unclaimed_drop_scheduled:
            self._unclaimed_drop_scheduled = True
            self.loop.call_soon(self._drop_unclaimed)

    def _drop_unclaimed(self) -> None:
        self._unclaimed_drop_scheduled = False
        self._writers_woken = self._kills_queued = 0
        self._cancels_sent = []

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def ensure_journaled(self, what: str) -> None:
        """Before an RPC answers for facts the journal must hold (a trip, an end): raise
        ``JournalUnavailable`` when a write is still kept (the disk fails). What ``what``
        describes has happened all the same; only its durability is not promised."""
        journal = self.journal
        if journal is None or journal.healthy or journal.retry():
            return
        raise JournalUnavailable(
            f"{what}, but the journal in the state directory cannot write ({journal.failure}): a restart of the "
            "daemon now would forget it. Free space or fix the disk; ask again once the daemon's health is "
            "SERVING and the answer is journaled"
        )

    def _call_at(self, at: Instant, callback: Callable[[], None]) -> _Deadline:
        return _Deadline(self.loop, self._clock, at, callback)

    # -- ExecutionEffects ----------------------------------------------------

    def begun(self, execution: Execution) -> None:
        self._settle()
        if self.journal is not None:
            self.journal.begun(
                execution.execution_id,
                {
                    "parent_execution_id": execution.parent_execution_id,
                    "context_id": execution.context_id,
                    "grace_ns": execution.grace_ns,
                    "budget_ns": execution.budget_ns,
                    "lease_ttl_ns": execution.lease_ttl_ns,
                    "labels": execution.labels,
                    "session_id": execution.session_id,
                    "task_id": execution.task_id,
                    # The credential too: the restarted daemon must follow the parent again.
                    # The journal is owner-only (0600 in a 0700 directory), like the token digests.
                    "remote_parent": execution.remote_parent.as_dict() if execution.remote_parent else None,
                },
                execution.token_id,
                execution.token_digest,
                execution.begun_at.wall_ns,
                held=execution.held,
            )
        self.observer.execution_begun()
        timers = self._timers.setdefault(execution.execution_id, _Timers())
        if execution.budget_ns:
            budget_s = execution.budget_ns / 1e9

            def budget_ran_out() -> None:
                execution.trip(InterruptReason.BUDGET_EXCEEDED, f"wall-clock budget of {budget_s:g}s ran out")

            timers.budget = self._call_at(execution.begun_at.plus(execution.budget_ns), budget_ran_out)
        if execution.lease_deadline is not None:
            timers.lease = self._call_at(execution.lease_deadline, lambda: self._check_lease(execution))

    def _check_lease(self, execution: Execution) -> None:
        deadline = execution.lease_deadline
        if deadline is None or execution.ended or execution.signal.cancelled:
            return
        if self._clock.now().mono_ns >= deadline.mono_ns:
            self.observer.lease_lost()
            execution.trip(InterruptReason.LEASE_LOST, "the execution's lease was not renewed in time")
        else:  # renewed since the timer was armed
            self._timers[execution.execution_id].lease = self._call_at(deadline, lambda: self._check_lease(execution))

    def tripped(self, execution: Execution, trip: Trip) -> None:
        deadline = trip.at.plus(execution.grace_ns)
        # Fan out first: each send is a non-blocking append to the tool's own outbox, and
        # everything before the woken writers run delays every cancel. (Nothing here
        # changes ``tools``, so it is iterated in place.)
        self._for_the_answer()
        for tool in execution.tools.values():
            # A tool whose run already ended (unwound, detached) has nothing to stop.
            if not tool.closed and tool.behavior.receives_cancel and tool.sink is not None:
                tool.sink.send_cancel(trip, deadline)
                self._writers_woken += 1
                if len(self._cancels_sent) <= _YIELD_TO_WRITERS_UP_TO:
                    self._cancels_sent.append(tool.sink)
        if self._hub.watched(execution.execution_id):
            # Its watchers (a remote child's daemon among them) are woken when the trip
            # settles: the tripping RPC lets their writers go before it answers too.
            self._writers_woken += 1
        # The rest — timers, the Tripped event, the journal, metrics — is bookkeeping no
        # cancel needs, so it waits until the writers this trip woke have submitted their
        # cancels: it is queued behind their wake-ups on the loop (it is a large share of
        # the work from Interrupt to write, more with the journal's write on a daemon with
        # a state directory). Nothing may observe the gap: every other entry point here,
        # and ``done`` (the watch's snapshot), settles pending trips first, so a watcher
        # still sees Tripped before anything that follows the trip, the journal still has
        # the trip before any process group is signalled (kills are queued behind this),
        # and an execution ended meanwhile is ended after its trip settled.
        self._unsettled.append((execution, trip, deadline))
        if len(self._unsettled) == 1:
            self.loop.call_soon(self._settle_trips)

    def _settle(self) -> None:
        """Called first by every entry point but the trip's own: pending trips settle
        before anything that follows them can be observed."""
        if self._unsettled:
            self._settle_trips()

    def _settle_trips(self) -> None:
        """Do the bookkeeping of every trip since the last call (see ``tripped``)."""
        unsettled, self._unsettled = self._unsettled, []
        for execution, trip, deadline in unsettled:
            timers = self._timers.get(execution.execution_id)
            if timers is None:
                timers = self._timers[execution.execution_id] = _Timers()
            for handle in (timers.budget, timers.lease, timers.holder):
                if handle is not None:
                    handle.cancel()
            timers.budget = timers.lease = timers.holder = None
            self._hub.publish(execution.execution_id, events.Tripped(trip.reason, trip.detail, trip.at, deadline))
            if not execution.ended:
                timers.grace = self._call_at(deadline, functools.partial(self._grace_check, execution))
            # The process-group kills (run_terminator, queued) come after this write: a crash
            # between the two still finds the trip, and the restart kills the groups.
            if self.journal is not None:
                self.journal.tripped(execution.execution_id, int(trip.reason), trip.detail, trip.at.wall_ns)
            self.observer.tripped(trip.reason)

    async def let_writers_start(self) -> None:
        """Called by the RPC that tripped, before it answers: when the trip woke a handful
        of stream writers (tools' cancels, watchers' events), let them go first.

        Each woken writer runs up to its ``context.write``, which hands the bytes to grpc
        core and yields back. Without this the writers wait until grpc has finished
        answering the RPC (building, serializing and submitting the response), all of
        it on the cancel's path. The answer then also waits for the tools' cancels to be
        written (bounded by ``_ANSWER_AFTER_CANCELS_S``): sent while a cancel is still in
        flight, it competes with it for the grpc threads and the cores, and on an idle
        daemon that showed in the cancel's latency. With many streams every writer would
        run before the answer, so a large fan-out answers first and lets them follow —
        unless process-group kills are queued, which always run before the answer. Either
        way the trip has settled when this returns: an answered trip is in the journal.
        """
        woken, self._writers_woken = self._writers_woken, 0
        kills, self._kills_queued = self._kills_queued, 0
        sinks, self._cancels_sent = self._cancels_sent, []
        try:
            await self._yield_to_writers(woken, kills, sinks)
        finally:
            # An answered trip is settled, whatever ran before the answer: the journal has
            # it, so a kill -9 that follows the answer at once still finds it on restart.
            # (With no writer to wait for, or a fan-out that answers first, the queued
            # settling would otherwise run only after grpc had sent the answer.)
            self._settle()

    async def _yield_to_writers(self, woken: int, kills: int, sinks: list[ToolSink]) -> None:
        if not (0 < woken <= _YIELD_TO_WRITERS_UP_TO or kills):
            return
        if sinks and len(sinks) <= _YIELD_TO_WRITERS_UP_TO:
            # Yield before setting up the wait (futures, a timeout timer): the woken writers
            # run first and submit their cancels, so that setup is off the cancels' path.
            # The trip's bookkeeping and queued kills follow them in that turn, before any
            # write can complete; the watchers the bookkeeping woke run while this waits.
            await asyncio.sleep(0)
            # (ensure_future hands a sink's future back as it is; another awaitable is wrapped.)
            written = [asyncio.ensure_future(sink.cancel_written()) for sink in sinks]
            await _all_done(written, _ANSWER_AFTER_CANCELS_S)
        else:
            # Queued kills always get their turn before the answer: an Interrupt that
            # returns has had its process groups signalled.
            await asyncio.sleep(0)
            if 0 < woken <= _YIELD_TO_WRITERS_UP_TO:
                # Watchers only: the settling trip woke them after this coroutine was
                # queued to resume, so one more turn lets their writers go first.
                await asyncio.sleep(0)

    def run_terminator(self, terminator: Terminator, trip: Trip) -> None:
        tool = terminator.tool
        if isinstance(terminator.spec, CallbackSpec):
            if not tool.detached and tool.sink is not None:
                tool.sink.send_run_terminator(terminator.terminator_id)
                self.observer.terminator_run("callback")
            return
        # The kill starts on the loop's next turn, after the stream writers this trip woke:
        # its freeze-and-survey of /proc (a pass over the host's processes) would otherwise
        # come before every cancel of the execution. It is held in ``kills`` meanwhile.
        # (The journal already has the trip: a crash before the kill still has it done.)
        queued = _QueuedKill(tool.execution.execution_id)
        timers = self._timers.get(queued.execution_id)
        if timers is None:
            timers = self._timers[queued.execution_id] = _Timers()
        timers.kills.add(queued)
        self._for_the_answer()
        self._kills_queued += 1
        self.loop.call_soon(self._run_queued_kill, queued, terminator, terminator.spec, trip)

    def _run_queued_kill(self, queued: _QueuedKill, terminator: Terminator, spec: ProcessGroupSpec, trip: Trip) -> None:
        self._settle()
        try:
            self._start_kill(terminator, spec, trip)
        finally:
            timers = self._timers.get(queued.execution_id)
            if timers is not None:
                timers.kills.discard(queued)
            if terminator.tool.execution.ended:
                self._maybe_done(queued.execution_id)

    def tool_attached(self, tool: ToolRun) -> None:
        self._settle()
        self.observer.tool_attached(tool.behavior)
        self._hub.publish(
            tool.execution.execution_id,
            events.ToolAttached(tool.tool_id, tool.tool_name, tool.tool_call_id, tool.behavior, tool.pid),
        )

    def late_attach(self, tool: ToolRun) -> None:
        """A tool attached after the trip: it gets its own grace from now."""
        self._settle()
        execution = tool.execution
        deadline = execution.grace_deadline_for(tool)
        if deadline is not None and tool.behavior.receives_cancel and not execution.ended:
            self._call_at(deadline, lambda: self._grace_check(execution))

    def publish(self, execution: Execution, payload: events.EventPayload) -> None:
        """Hand an event about ``execution`` to its watchers, unless it is done.

        A tool may still report (unwound, a terminator's failure) or detach after its
        execution ended. Once the execution is done its watches have ended, so nobody
        could get such an event; numbering it anyway would have the hub remember the
        execution for good, a few hundred bytes for every turn that ended with a tool
        still attached.
        """
        self._settle()
        if not self.done(execution):
            self._hub.publish(execution.execution_id, payload)

    def tool_unwound(self, tool: ToolRun, latency_ns: int | None) -> None:
        self._settle()
        execution = tool.execution
        self.publish(
            execution, events.ToolUnwound(tool.tool_id, tool.tool_name, tool.outcome, tool.behavior, latency_ns)
        )
        trip = execution.trip_info
        if latency_ns is not None and trip is not None:
            self.observer.tool_unwound(trip.reason, tool.behavior, latency_ns, execution.execution_id)
        if self.journal is not None:
            # An unwound tool's process groups are no longer the daemon's to kill.
            self.journal.group_dropped(execution.execution_id, tool.tool_id)

    # -- what the services report beyond the domain's effects -----------------

    def group_registering(self, tool: ToolRun, terminator_id: str, spec: ProcessGroupSpec, identity: object) -> None:
        """A process group is about to be registered: journal it first (write-ahead), with
        the identity pinned for it, so a crash right after still has it killed."""
        self._settle()
        if self.journal is None or not isinstance(identity, GroupIdentity):
            return
        self.journal.group_registered(
            tool.execution.execution_id,
            JournaledGroup(
                tool.tool_id,
                terminator_id,
                identity.pgid,
                identity.leader_start,
                identity.session,
                spec.signal,
                spec.kill_after_ns,
            ),
        )

    def group_unregistered(self, tool: ToolRun, terminator_id: str) -> None:
        self._settle()
        if self.journal is not None:
            self.journal.group_dropped(tool.execution.execution_id, tool.tool_id, terminator_id)

    def holder_gained(self, execution: Execution) -> None:
        """A WatchExecution(hold=true) stream opened on ``execution``."""
        self._settle()
        if self.journal is not None:
            self.journal.held(execution.execution_id)
        timers = self._timers.get(execution.execution_id)
        if timers is not None and timers.holder is not None:
            timers.holder.cancel()
            timers.holder = None

    def holder_lost(self, execution: Execution, detail: str) -> None:
        """The last holder of a live, untripped execution went away: trip it."""
        self._settle()
        if execution.ended or execution.signal.cancelled:
            return
        self.observer.holder_lost()
        execution.trip(InterruptReason.HOLDER_LOST, detail)

    def expect_holder(self, execution: Execution, within_ns: int) -> None:
        """After a restart: a held execution trips with HOLDER_LOST unless a holder
        comes back within ``within_ns``."""
        self._settle()

        def check() -> None:
            if execution.holders == 0:
                self.holder_lost(
                    execution, f"its holder did not come back within {within_ns / 1e9:g}s of the daemon's restart"
                )

        timers = self._timers.setdefault(execution.execution_id, _Timers())
        timers.holder = self._call_at(self._clock.now().plus(within_ns), check)

    def tool_detached(self, tool: ToolRun) -> None:
        self._settle()
        self.observer.tool_detached(tool.behavior)
        self.publish(tool.execution, events.ToolDetached(tool.tool_id, tool.tool_name, tool.unwound_at is not None))

    def ended(self, execution: Execution) -> None:
        self._settle()
        timers = self._timers.get(execution.execution_id)
        if timers is not None:
            for handle in (timers.budget, timers.lease, timers.grace, timers.holder):
                if handle is not None:
                    handle.cancel()
        assert execution.ended_at is not None
        if self.journal is not None:
            self.journal.ended(execution.execution_id)
        self.observer.execution_ended()
        self._hub.publish(execution.execution_id, events.Ended(execution.ended_at))
        self._maybe_done(execution.execution_id)

    # -- grace ---------------------------------------------------------------

    def _grace_check(self, execution: Execution) -> None:
        if execution.ended:
            return
        now = self._clock.now()
        trip = execution.trip_info
        for tool in execution.overrun_tools(now):
            if trip is not None:
                self.observer.grace_overrun(trip.reason, tool.behavior)
            log.warning(
                "%s of execution %s overran its grace of %.3fs",
                tool.label,
                execution.execution_id,
                execution.grace_ns / 1e9,
            )
            self._hub.publish(
                execution.execution_id,
                events.GraceOverrun(tool.tool_id, tool.tool_name, tool.behavior, execution.grace_ns),
            )
        # A tool that attached after the trip has a later deadline of its own: re-arm for
        # the soonest still ahead rather than miss an overrun.
        pending = [
            deadline
            for tool in execution.tools.values()
            if tool.behavior.receives_cancel and not tool.closed and not tool.overran
            if (deadline := execution.grace_deadline_for(tool)) is not None
        ]
        if pending:
            soonest = min(pending, key=lambda d: d.mono_ns)
            self._timers[execution.execution_id].grace = self._call_at(soonest, lambda: self._grace_check(execution))

    # -- process groups ------------------------------------------------------

    def _start_kill(self, terminator: Terminator, spec: ProcessGroupSpec, trip: Trip) -> None:
        execution_id = terminator.tool.execution.execution_id
        identity = terminator.identity
        assert isinstance(identity, GroupIdentity)
        tree = self._groups.tree(identity)
        try:
            status = self._groups.signal_tree(tree, spec.signal)
        except SidecarError as err:
            self.observer.process_group_refused(refusal_cause(err))
            self._publish_failure(execution_id, terminator, str(err))
            return
        except OSError as err:
            self._publish_failure(execution_id, terminator, str(err))
            return
        now = self._clock.now()
        self.observer.terminator_run("process_group")
        self.observer.process_group_signalled(trip.reason)
        self._hub.publish(
            execution_id,
            events.ProcessGroupSignalled(
                terminator.tool.tool_id, terminator.terminator_id, spec.pgid, spec.signal, False
            ),
        )
        job = _KillJob(execution_id, terminator, identity, tree, now, trip.at, trip.reason, known=status.processes)
        if not status.alive:
            self._publish_gone(job)
            return
        self._timers.setdefault(execution_id, _Timers()).kills.add(job)
        kill_after = spec.kill_after_ns if spec.kill_after_ns is not None else terminator.tool.execution.grace_ns
        # The deadline counts from the trip (or from a registration that came after it),
        # not from the signal: the signalling itself must not push the SIGKILL later.
        registered = terminator.registered_at
        start = registered if registered is not None and registered.mono_ns > trip.at.mono_ns else trip.at
        job.escalation = self._call_at(start.plus(kill_after), lambda: self._escalate(job))
        task = self.loop.create_task(self._await_gone(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _escalate(self, job: _KillJob) -> None:
        # No survey first: signal_tree's own (frozen) survey says whether anything was left,
        # and every scan here is time past the deadline.
        if job.escalated:
            return
        job.escalated = True
        terminator = job.terminator
        try:
            status = self._groups.signal_tree(job.tree, int(signal_module.SIGKILL))
        except SidecarError as err:
            self.observer.process_group_refused(refusal_cause(err))
            self._publish_failure(job.execution_id, terminator, str(err))
            return
        except OSError as err:
            self._publish_failure(job.execution_id, terminator, str(err))
            return
        if not status.alive:
            return  # it went on its own just before the deadline: nothing was escalated
        self.observer.escalated(job.reason)
        log.warning("process group %d did not exit in time; sent SIGKILL", job.identity.pgid)
        self._hub.publish(
            job.execution_id,
            events.ProcessGroupSignalled(
                terminator.tool.tool_id, terminator.terminator_id, job.identity.pgid, int(signal_module.SIGKILL), True
            ),
        )

    async def _await_gone(self, job: _KillJob) -> None:
        # The last signal pass froze the tree and surveyed it, so it knows every process:
        # wait on their pidfds (readable at exit), then rescan /proc once to confirm (a
        # process resumed by SIGCONT may have forked while handling SIGTERM). After the
        # escalation every pass SIGKILLs what the rescan finds, so a fork loop cannot outrun
        # the kill. Without pidfds (old kernels) this polls with backoff.
        delay = 0.001
        give_up_at: float | None = None
        known = job.known
        while True:
            fds = ProcessTree.pidfds(known) if known else []
            if fds:
                await self._wait_readable(fds, _RESCAN_S)
            elif known:
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RESCAN_S)
            status = job.tree.status()
            if not status.alive:
                break
            known = status.processes
            if job.escalated:
                if give_up_at is None:
                    give_up_at = self.loop.time() + _GONE_TIMEOUT_S
                elif self.loop.time() >= give_up_at:
                    self._publish_failure(
                        job.execution_id,
                        job.terminator,
                        f"process group {job.identity.pgid} or a descendant survived SIGKILL for {_GONE_TIMEOUT_S:g}s",
                    )
                    self._finish(job)
                    return
                with contextlib.suppress(SidecarError, OSError):
                    known = self._groups.signal_tree(job.tree, int(signal_module.SIGKILL)).processes
        self._publish_gone(job)
        self._finish(job)

    async def _wait_readable(self, fds: list[int], timeout: float) -> None:
        """Wait until every fd is readable (each process exited) or ``timeout``; closes them."""
        loop = self.loop

        def on_exit(fd: int, exited: asyncio.Future[None]) -> None:
            # A pidfd stays readable once its process has exited, and readers are level-
            # triggered: left registered, this would be called on every loop turn until the
            # last process exits, spinning a core while the rest of the tree is dying.
            loop.remove_reader(fd)
            _settle(exited)

        pending: list[asyncio.Future[None]] = []
        try:
            for fd in fds:
                exited: asyncio.Future[None] = loop.create_future()
                loop.add_reader(fd, on_exit, fd, exited)
                pending.append(exited)
            await asyncio.wait(pending, timeout=timeout)
        finally:
            for fd in fds:
                loop.remove_reader(fd)  # a no-op for those that fired
                os.close(fd)

    def _publish_gone(self, job: _KillJob) -> None:
        latency = max(0, self._clock.now().mono_ns - job.trip_at.mono_ns)
        terminator = job.terminator
        self._hub.publish(
            job.execution_id,
            events.ProcessGroupGone(terminator.tool.tool_id, terminator.terminator_id, job.identity.pgid, latency),
        )
        self.observer.process_tree_gone(job.reason, latency, job.escalated, job.execution_id)

    def _publish_failure(self, execution_id: str, terminator: Terminator, message: str) -> None:
        log.error("terminator %s of %s failed: %s", terminator.terminator_id, terminator.tool.label, message)
        self.observer.terminator_failed("process_group")
        self._hub.publish(
            execution_id, events.TerminatorFailed(terminator.tool.tool_id, terminator.terminator_id, message)
        )

    def _finish(self, job: _KillJob) -> None:
        if job.escalation is not None:
            job.escalation.cancel()
        timers = self._timers.get(job.execution_id)
        if timers is not None:
            timers.kills.discard(job)
        if job.terminator.tool.execution.ended:
            self._maybe_done(job.execution_id)

    def _maybe_done(self, execution_id: str) -> None:
        """An ended execution with no kill in flight has no more events."""
        timers = self._timers.get(execution_id)
        if timers is None or not timers.kills:
            self._timers.pop(execution_id, None)
            self._hub.close(execution_id)
            if self.journal is not None:
                self.journal.forget(execution_id)

    def done(self, execution: Execution) -> bool:
        """True when no event of this execution can follow."""
        self._settle()
        return execution.ended and execution.execution_id not in self._timers

    # -- shutdown ------------------------------------------------------------

    @property
    def kills_in_flight(self) -> int:
        return sum(len(t.kills) for t in self._timers.values())

    async def wait_kills(self, timeout: float) -> bool:
        """Wait until no process group kill is in flight; False on timeout."""
        deadline = self.loop.time() + timeout
        while self.kills_in_flight and self.loop.time() < deadline:
            await asyncio.sleep(0.01)
        return not self.kills_in_flight


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
