"""ToolChannelService.Attach: one bidirectional stream per tool run.

Each stream has two halves: a reader task that applies the tool's messages to
the domain, and the handler coroutine that drains the stream's bounded outbox
into ``context.write``. The trip path only ever appends to outboxes, so a tool
that stops reading delays nobody but itself; when its outbox overflows its
stream is ended with RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from interrupt_sidecar.domain.coordinator import Coordinator
from interrupt_sidecar.domain.execution import (
    CallbackSpec,
    ProcessGroupSpec,
    TerminatorSpec,
    ToolRun,
    ensure_behavior_allows,
)
from interrupt_sidecar.domain.types import Instant, Trip
from interrupt_sidecar.errors import (
    FailedPrecondition,
    Internal,
    InvalidArgument,
    PermissionDenied,
    ResourceExhausted,
    SidecarError,
    Unauthenticated,
)
from interrupt_sidecar.osedge.process_groups import ProcessGroups
from interrupt_sidecar.runtime import events
from interrupt_sidecar.runtime.observer import NOOP_OBSERVER, TripObserver, refusal_cause
from interrupt_sidecar.runtime.trip_path import TripPath
from interrupt_sidecar.runtime.watch import WatchHub
from interrupt_sidecar.services import convert
from interrupt_sidecar.services import validation as v
from interrupt_sidecar.services.doorbell import DoorbellLine, DoorbellListener, cancel_frame
from interrupt_sidecar.services.status import Context, abort, status_code

log = logging.getLogger(__name__)

#: Messages a tool may leave unread before its stream is ended.
OUTBOX_CAPACITY = 1_024
#: A stream must say hello within this time.
HELLO_TIMEOUT_S = 30.0


#: The last cancel message built, by (trip, grace deadline): a trip fans out the same
#: message to every tool that attached before it, so it is built once, not once a stream
#: (building it is most of what the fan-out loop costs; messages are never mutated).
_last_cancel: tuple[Trip, int, pb.SidecarMessage] | None = None


def _cancel_message(trip: Trip, grace_deadline: Instant) -> pb.SidecarMessage:
    global _last_cancel
    cached = _last_cancel
    if cached is not None and cached[0] is trip and cached[1] == grace_deadline.mono_ns:
        return cached[2]
    # Filled in place: nested constructors copy each Timestamp into its parent, and
    # Timestamp.FromNanoseconds is Python. This runs before the first cancel is written,
    # so every step saved here is saved on the cancel's latency.
    message = pb.SidecarMessage()
    cancel = message.cancel
    cancel.reason = int(trip.reason)  # type: ignore[assignment]
    cancel.detail = trip.detail
    tripped_at, deadline = cancel.tripped_at, cancel.grace_deadline
    tripped_at.seconds, tripped_at.nanos = divmod(trip.at.wall_ns, 1_000_000_000)
    deadline.seconds, deadline.nanos = divmod(grace_deadline.wall_ns, 1_000_000_000)
    _last_cancel = (trip, grace_deadline.mono_ns, message)
    return message


#: The doorbell frame of the last cancel message, for the same reason.
_last_frame: tuple[pb.SidecarMessage, bytes] | None = None


def _doorbell_frame(message: pb.SidecarMessage) -> bytes:
    global _last_frame
    cached = _last_frame
    if cached is not None and cached[0] is message:
        return cached[1]
    frame = cancel_frame(message.cancel)
    _last_frame = (message, frame)
    return frame


class AttachSession:
    """One Attach stream's state and outbox; the ``ToolSink`` of its tool."""

    def __init__(self, capacity: int = OUTBOX_CAPACITY, observer: TripObserver = NOOP_OBSERVER) -> None:
        self._outbox: deque[pb.SidecarMessage] = deque()
        self._capacity = capacity
        #: The writer's wait for more to write (``_drain``), made each time it sleeps: a bare
        #: future is what an ``asyncio.Event`` would make per wait, without its bookkeeping.
        self._waiter: asyncio.Future[None] | None = None
        self._held: list[pb.SidecarMessage] | None = None
        self.tool: ToolRun | None = None
        self.fatal: SidecarError | None = None
        self.reader_done = False
        self._cancel_sent = False
        self._observer = observer
        # The cancel message and its trip, so the writer can time the delivery
        # once the cancel is actually written (not when it is queued).
        self._cancel_message: pb.SidecarMessage | None = None
        self._cancel_trip: Trip | None = None
        #: Done when the cancel is written or the stream has ended (``cancel_written``);
        #: made on demand, ``_written_yet`` says whether it would be done already.
        self._written: asyncio.Future[None] | None = None
        self._written_yet = False
        #: The tool's cancel doorbell, when its hello asked for one (see services.doorbell).
        self.doorbell: DoorbellLine | None = None

    # -- ToolSink --------------------------------------------------------------

    def send_cancel(self, trip: Trip, grace_deadline: Instant) -> None:
        # Idempotent: a tool is told about the trip exactly once.
        if self._cancel_sent:
            return
        self._cancel_sent = True
        message = _cancel_message(trip, grace_deadline)
        self._cancel_message, self._cancel_trip = message, trip
        if self.doorbell is not None:
            # Before the stream's cancel: a raw socket write of a few microseconds, where
            # the stream's write waits its turn behind every other writer of the trip.
            self.doorbell.ring(_doorbell_frame(message))
        self.push(message)

    def cancel_written(self) -> asyncio.Future[None]:
        if self._written is None:
            self._written = asyncio.get_running_loop().create_future()
            if self._written_yet:
                self._written.set_result(None)
        return self._written

    def _settle_written(self) -> None:
        self._written_yet = True
        if self._written is not None and not self._written.done():
            self._written.set_result(None)

    def send_run_terminator(self, terminator_id: str) -> None:
        self.push(pb.SidecarMessage(run_terminator=pb.RunTerminator(terminator_id=terminator_id)))

    # -- outbox ----------------------------------------------------------------

    def push(self, message: pb.SidecarMessage) -> None:
        if self._held is not None:
            self._held.append(message)
            return
        if len(self._outbox) >= self._capacity:
            self.fail(
                ResourceExhausted(
                    f"the tool left {self._capacity} messages unread; its stream is closed (is it still reading?)"
                )
            )
            return
        self._outbox.append(message)
        self._wake()

    @contextlib.contextmanager
    def acknowledging(self, ack: pb.SidecarMessage) -> Iterator[None]:
        """Hold what is pushed inside the block and put ``ack`` before it, so a
        terminator registered after the trip is acknowledged before it is run."""
        self._held = []
        try:
            yield
        except BaseException:
            held, self._held = self._held, None
            for message in held:
                self.push(message)
            raise
        held, self._held = self._held, None
        self.push(ack)
        for message in held:
            self.push(message)

    def _delivered(self) -> None:
        """The cancel is written: observe trip (or late attach) → write."""
        tool, trip = self.tool, self._cancel_trip
        self._cancel_message = None
        self._settle_written()
        if tool is None or trip is None:
            return
        start = max(trip.at.mono_ns, tool.attached_at.mono_ns)
        # Instants are CLOCK_MONOTONIC readings (SystemClock), so this compares like with like.
        latency = max(0, time.monotonic_ns() - start)
        self._observer.cancel_delivered(trip.reason, tool.behavior, latency, tool.execution.execution_id)

    def fail(self, err: SidecarError) -> None:
        if self.fatal is None:
            self.fatal = err
        self._wake()

    def hello_overdue(self) -> None:
        """The hello timer fired (``_read``): no hello came in time."""
        self.fail(FailedPrecondition(f"no hello within {HELLO_TIMEOUT_S:g}s of opening the stream"))

    def finish_reading(self) -> None:
        self.reader_done = True
        self._wake()

    def _wake(self) -> None:
        # The writer checks the outbox, ``fatal`` and ``reader_done`` before it sleeps, with
        # no await in between: whatever changed them while it was writing is seen then.
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def drain(self, context: Context) -> None:
        """Write the outbox until the tool's side ends or the stream fails."""
        try:
            await self._drain(context)
        finally:
            # A cancel that will never be written must not keep anyone waiting for it.
            self._settle_written()

    async def _drain(self, context: Context) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while self._outbox and not (self.fatal is not None and self.fatal.status_name == "RESOURCE_EXHAUSTED"):
                message = self._outbox.popleft()
                await context.write(message)
                if message is self._cancel_message:
                    self._delivered()
            if self.fatal is not None:
                await abort(context, self.fatal)
            if self.reader_done:
                return
            self._waiter = waiter = loop.create_future()
            await waiter


class ToolChannelService(pb_grpc.ToolChannelServiceServicer):
    def __init__(
        self, coordinator: Coordinator, trip_path: TripPath, hub: WatchHub, process_groups: ProcessGroups
    ) -> None:
        self._coordinator = coordinator
        self._trip_path = trip_path
        self._hub = hub
        self._groups = process_groups
        self._tool_ids = itertools.count(1)
        self._prefix = f"tool-{os.getpid()}-"
        self._sessions: set[AttachSession] = set()
        #: Set by the server when it runs a doorbell socket.
        self.doorbell: DoorbellListener | None = None

    @property
    def open_streams(self) -> int:
        return len(self._sessions)

    def close_all(self, err: SidecarError) -> None:
        """End every open stream with ``err`` (after what is already in its outbox)."""
        for session in self._sessions:
            session.fail(err)

    async def Attach(self, request_iterator: AsyncIterator[pb.ToolMessage], context: Context) -> None:  # type: ignore[override]
        session = AttachSession(observer=self._trip_path.observer)
        self._sessions.add(session)
        reader = asyncio.create_task(self._read(session, request_iterator))
        try:
            await session.drain(context)
        finally:
            self._sessions.discard(session)
            if session.doorbell is not None:
                session.doorbell.close()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            if session.tool is not None:
                session.tool.execution.detach(session.tool)

    async def _read(self, session: AttachSession, requests: AsyncIterator[pb.ToolMessage]) -> None:
        try:
            # A loop timer, not wait_for (a task, futures and a timer for every stream): when
            # it fires, the session fails and its writer ends the stream, cancelling this read.
            overdue = asyncio.get_running_loop().call_later(HELLO_TIMEOUT_S, session.hello_overdue)
            try:
                first = await anext(requests)
            except StopAsyncIteration:
                return
            finally:
                overdue.cancel()
            if first.WhichOneof("message") != "hello":
                session.fail(FailedPrecondition("the first message on an Attach stream must be hello"))
                return
            try:
                self._hello(session, first.hello)
            except SidecarError as err:
                session.fail(err)
                return
            async for message in requests:
                if session.fatal is not None:
                    return
                self._handle(session, message)
        except grpc.aio.AbortError:
            pass
        except Exception as err:  # never let a tool crash the daemon
            log.exception("Attach stream reader failed")
            session.fail(Internal(f"internal error reading the stream: {err}"))
        finally:
            session.finish_reading()

    def _hello(self, session: AttachSession, hello: pb.Hello) -> None:
        try:
            execution = self._coordinator.resolve_token(hello.attach_token)
        except (Unauthenticated, PermissionDenied) as denied:
            self._trip_path.observer.auth_denied("tool", denied.status_name)
            raise
        behavior = v.behavior(hello.behavior)
        tool_name = v.text(hello.tool_name, "hello.tool_name")
        tool_call_id = v.text(hello.tool_call_id, "hello.tool_call_id")
        if hello.pid < 0:
            raise InvalidArgument(f"hello.pid must not be negative, got {hello.pid}")
        tool = execution.attach(
            tool_id=f"{self._prefix}{next(self._tool_ids)}",
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            behavior=behavior,
            pid=hello.pid,
            sink=session,
        )
        session.tool = tool
        trip = execution.trip_info
        # Filled in place: a nested constructor would copy Attached (and its Duration) into
        # the SidecarMessage.
        message = pb.SidecarMessage()
        attached = message.attached
        attached.execution_id = execution.execution_id
        if trip is not None:
            attached.cancelled = True
            attached.reason = int(trip.reason)  # type: ignore[assignment]
        attached.tool_id = tool.tool_id
        convert.fill_duration(attached.grace, execution.grace_ns)
        if hello.doorbell and self.doorbell is not None and behavior.receives_cancel:
            session.doorbell = self.doorbell.line(self._trip_path.observer.doorbell_rung)
            attached.doorbell.path = str(self.doorbell.path)
            attached.doorbell.token = session.doorbell.token
        session.push(message)
        # Runs on the loop thread with no await since attach(): the trip cannot
        # have happened in between, so a tool attached before the trip got its
        # cancel from the fan-out and one attached after gets it here.
        if trip is not None and behavior.receives_cancel:
            deadline = execution.grace_deadline_for(tool)
            assert deadline is not None
            session.send_cancel(trip, deadline)
            self._trip_path.late_attach(tool)

    def _handle(self, session: AttachSession, message: pb.ToolMessage) -> None:
        tool = session.tool
        assert tool is not None
        kind = message.WhichOneof("message")
        terminator_id = ""
        try:
            if kind == "register_terminator":
                request = message.register_terminator
                terminator_id = request.terminator_id
                self._register(session, tool, request)
            elif kind == "unregister_terminator":
                terminator_id = message.unregister_terminator.terminator_id
                v.identifier(terminator_id, "unregister_terminator.terminator_id", required=True)
                tool.execution.unregister(tool, terminator_id)
                self._trip_path.group_unregistered(tool, terminator_id)
                session.push(
                    pb.SidecarMessage(terminator_unregistered=pb.TerminatorUnregistered(terminator_id=terminator_id))
                )
            elif kind == "unwound":
                outcome = v.outcome(message.unwound.outcome)
                v.detail(message.unwound.detail, "unwound.detail")
                tool.execution.unwound(tool, outcome)
            elif kind == "terminator_result":
                result = message.terminator_result
                v.identifier(result.terminator_id, "terminator_result.terminator_id", required=True)
                if result.error:
                    self._trip_path.observer.terminator_failed("callback")
                    self._trip_path.publish(
                        tool.execution,
                        events.TerminatorFailed(tool.tool_id, result.terminator_id, v.detail(result.error, "error")),
                    )
            elif kind == "hello":
                session.fail(
                    FailedPrecondition("hello was already received on this stream; open a new stream per tool run")
                )
            else:
                raise InvalidArgument("empty ToolMessage: set one of its fields")
        except SidecarError as err:
            session.push(
                pb.SidecarMessage(
                    error=pb.ChannelError(code=status_code(err).value[0], message=str(err), terminator_id=terminator_id)
                )
            )

    def _register(self, session: AttachSession, tool: ToolRun, request: pb.RegisterTerminator) -> None:
        terminator_id = v.identifier(request.terminator_id, "register_terminator.terminator_id", required=True)
        kind = request.WhichOneof("kind")
        spec: TerminatorSpec
        identity: object = None
        if kind == "callback":
            spec = CallbackSpec()
        elif kind == "process_group":
            group = request.process_group
            kill_after = (
                v.duration_ns(group.kill_after, "kill_after", minimum_ns=0, maximum_ns=v.MAX_KILL_AFTER_NS)
                if group.HasField("kill_after")
                else None
            )
            spec = ProcessGroupSpec(group.pgid, self._groups.validate_signal(group.signal), kill_after)
            # Before pinning: a tool that may not register groups learns nothing about a pgid.
            ensure_behavior_allows(tool, spec)
            try:
                identity = self._groups.pin(group.pgid)
            except SidecarError as err:
                self._trip_path.observer.process_group_refused(refusal_cause(err))
                raise
        else:
            raise InvalidArgument("register_terminator needs a kind: callback or process_group")
        ack = pb.SidecarMessage(terminator_registered=pb.TerminatorRegistered(terminator_id=terminator_id))
        # Write-ahead: the journal has the group before it can be killed. A duplicate id is
        # refused by register() below and must not overwrite the journaled original.
        journaled = isinstance(spec, ProcessGroupSpec) and terminator_id not in tool.terminators
        if journaled:
            assert isinstance(spec, ProcessGroupSpec)
            self._trip_path.group_registering(tool, terminator_id, spec, identity)
        with session.acknowledging(ack):
            try:
                tool.execution.register(tool, terminator_id, spec, identity)
            except SidecarError:
                if journaled:
                    self._trip_path.group_unregistered(tool, terminator_id)
                raise
