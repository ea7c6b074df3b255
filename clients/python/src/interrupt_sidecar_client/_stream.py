"""One ``ToolChannelService.Attach`` stream: the handshake, a reader, serialized writes.

The reader task is the only consumer of the stream. It never runs tool code that could
block it: cancels trip the signal (whose listeners must be quick), run_terminator goes
to the :class:`TerminatorRunner`, and answers resolve futures. Writes from the
registrar, the runner and the unwind are serialized by one lock (gRPC allows a single
outstanding write per call).

When ``attached`` grants a cancel doorbell (see ``_doorbell``), the stream also opens it:
the cancel is then taken from whichever of the two brings it first, and the other copy is
dropped, so ``on_cancel`` runs once. The doorbell is closed with the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import grpc

from interrupt_sidecar_client._doorbell import DoorbellClient
from interrupt_sidecar_client._errors import (
    ConnectionLost,
    DeadlineExceeded,
    SidecarError,
    error_for,
    error_from_rpc,
)
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2, interrupt_pb2_grpc
from interrupt_sidecar_client._terminator import CallbackSpec, ProcessGroupSpec, TerminatorSpec
from interrupt_sidecar_client._types import Cancellation, ToolOutcome, cancellation_from_pb, outcome_to_pb

log = logging.getLogger(__name__)

_Answer = Literal["registered", "unregistered"]
#: Which way a cancel reached the tool.
CancelPath = Literal["stream", "doorbell"]
_Call = grpc.aio.StreamStreamCall[interrupt_pb2.ToolMessage, interrupt_pb2.SidecarMessage]


@dataclass(slots=True)
class _Pending:
    answer: _Answer
    future: asyncio.Future[None]


@dataclass(frozen=True, slots=True)
class Handshake:
    attached: interrupt_pb2.Attached
    #: The cancel that follows ``attached`` when an interruptible tool attaches after the trip.
    cancel: Cancellation | None


class ToolStream:
    """The client end of one tool's Attach stream. Create and use on one event loop."""

    def __init__(self, channel: grpc.aio.Channel, address: str, *, request_timeout: float | None) -> None:
        self._channel = channel
        self._address = address
        self._request_timeout = request_timeout
        self._stub = interrupt_pb2_grpc.ToolChannelServiceStub(channel)
        self._call: _Call | None = None
        self._write_lock = asyncio.Lock()
        self._pending: dict[str, deque[_Pending]] = {}
        self._early: list[interrupt_pb2.SidecarMessage] = []
        self._reader: asyncio.Task[None] | None = None
        self._ended = asyncio.Event()
        # Why the stream ended, for requests made afterwards.
        self._end_error: SidecarError | None = None
        # Set once the tool has reported unwound: the stream ending is then expected.
        self._finishing = False
        self._write_failed = False
        self._on_cancel: Callable[[Cancellation], object] = lambda _: None
        self._on_run_terminator: Callable[[str], None] = lambda _: None
        # The doorbell granted in attached (opened by start), and which way the cancel came:
        # once set, a cancel arriving the other way is the same one again and is dropped.
        self._doorbell_grant: interrupt_pb2.Doorbell | None = None
        self._doorbell: DoorbellClient | None = None
        self._cancel_path: CancelPath | None = None
        # Callback terminators the daemon has acknowledged (and not unregistered), and those
        # it has asked to run. At the trip it asks for every one it holds, on the stream:
        # after a doorbell cancel those requests may still be on their way (runs_asked).
        self._callbacks_held: set[str] = set()
        self._runs_asked: set[str] = set()
        self._run_asked = asyncio.Event()

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    @property
    def doorbell(self) -> DoorbellClient | None:
        """The doorbell connection, once opened (None when none was granted or it was not needed)."""
        return self._doorbell

    @property
    def cancel_path(self) -> CancelPath | None:
        """How the cancel reached this tool first (None while it has not)."""
        return self._cancel_path

    # -- handshake -----------------------------------------------------------------

    async def handshake(self, hello: interrupt_pb2.Hello, *, timeout: float | None, expect_cancel: bool) -> Handshake:
        """Send hello and read ``attached`` (and the cancel that follows it when already tripped)."""
        call: _Call = self._stub.Attach()
        self._call = call
        try:
            async with asyncio.timeout(timeout):
                try:
                    await call.write(interrupt_pb2.ToolMessage(hello=hello))
                except grpc.aio.AioRpcError as error:
                    raise error_from_rpc(error, f"attach to the sidecar at {self._address}") from None
                except asyncio.InvalidStateError:
                    pass  # the daemon already ended the call: reading reports why
                first = await self._read_handshake(call)
                if first.WhichOneof("message") != "attached":
                    raise self._refusal(first)
                if first.attached.HasField("doorbell"):
                    self._doorbell_grant = first.attached.doorbell
                cancel: Cancellation | None = None
                if first.attached.cancelled and expect_cancel:
                    # The daemon sends the cancel right after attached for an interruptible
                    # tool; reading it here means the run starts with the full cancellation.
                    second = await self._read_handshake(call)
                    if second.WhichOneof("message") == "cancel":
                        cancel = cancellation_from_pb(second.cancel)
                        # The caller trips its signal with it: the doorbell would only
                        # ring the same cancel again, so start() does not open it.
                        self._cancel_path = "stream"
                    else:
                        self._early.append(second)
                return Handshake(first.attached, cancel)
        except TimeoutError:
            call.cancel()
            raise DeadlineExceeded(
                f"attach to the sidecar at {self._address}: no answer to hello within {timeout}s"
            ) from None
        except BaseException:
            call.cancel()
            raise

    async def _read_handshake(self, call: _Call) -> interrupt_pb2.SidecarMessage:
        try:
            message = await call.read()
        except grpc.aio.AioRpcError as error:
            raise error_from_rpc(error, f"attach to the sidecar at {self._address}") from None
        except asyncio.InvalidStateError:
            raise ConnectionLost(f"attach to the sidecar at {self._address}: the stream ended") from None
        if message is grpc.aio.EOF or not isinstance(message, interrupt_pb2.SidecarMessage):
            raise ConnectionLost(f"attach to the sidecar at {self._address}: the daemon closed the stream")
        return message

    def _refusal(self, message: interrupt_pb2.SidecarMessage) -> SidecarError:
        if message.WhichOneof("message") == "error":
            return error_for(message.error.code, f"attach refused: {message.error.message}")
        return SidecarError(f"attach: expected 'attached' from the daemon, got {message.WhichOneof('message')!r}")

    # -- reading ---------------------------------------------------------------------

    def start(self, *, on_cancel: Callable[[Cancellation], object], on_run_terminator: Callable[[str], None]) -> None:
        """Start the reader, and open the doorbell if one was granted.

        ``on_cancel`` and ``on_run_terminator`` run on the loop, must not block.
        ``on_cancel`` runs at most once, whichever way the cancel comes.
        """
        self._on_cancel = on_cancel
        self._on_run_terminator = on_run_terminator
        for message in self._early:
            self._dispatch(message)
        self._early.clear()
        grant = self._doorbell_grant
        if grant is not None and self._cancel_path is None:
            if grant.path and grant.token:
                # Before the reader: its connect task runs first, so the doorbell is ready
                # as early as it can be.
                self._doorbell = DoorbellClient(grant, self._cancel_from_doorbell)
                self._doorbell.open()
            else:
                log.debug("ignoring an incomplete cancel doorbell grant: %r", grant)
        self._reader = asyncio.get_running_loop().create_task(self._read_loop(), name="interrupt-sidecar reader")

    def _cancel_from_doorbell(self, cancellation: Cancellation) -> None:
        self._take_cancel(cancellation, "doorbell")

    def _take_cancel(self, cancellation: Cancellation, path: CancelPath) -> None:
        """Hand the first cancel to ``on_cancel``; the copy that comes the other way is dropped."""
        if self._cancel_path is not None:
            log.debug("dropping the %s's copy of the cancel (the %s brought it first)", path, self._cancel_path)
            return
        self._cancel_path = path
        if path == "stream" and self._doorbell is not None:
            self._doorbell.close()  # it can only ring what the stream has just said
        self._on_cancel(cancellation)

    async def _read_loop(self) -> None:
        assert self._call is not None
        error: SidecarError | None = None
        try:
            while True:
                message = await self._call.read()
                if message is grpc.aio.EOF or not isinstance(message, interrupt_pb2.SidecarMessage):
                    if not self._finishing:
                        log.warning("the sidecar at %s closed the tool stream before the run ended", self._address)
                    error = ConnectionLost("the tool's stream to the sidecar has ended")
                    return
                self._dispatch(message)
        except grpc.aio.AioRpcError as rpc_error:
            if self._write_failed and rpc_error.code() is grpc.StatusCode.INTERNAL:
                error = ConnectionLost("the tool's stream to the sidecar has ended")
            else:
                error = error_from_rpc(rpc_error, "the tool's stream to the sidecar ended")
            if not self._finishing:
                log.warning("the tool stream to the sidecar at %s ended: %s", self._address, error)
        except asyncio.InvalidStateError:
            error = ConnectionLost("the tool's stream to the sidecar has ended")
        finally:
            self._end_error = error or ConnectionLost("the tool's stream to the sidecar has ended")
            self._ended.set()
            self._run_asked.set()  # nothing more will be asked: runs_asked stops waiting
            if self._doorbell is not None:
                # The daemon hangs up the doorbell when the stream ends: it can no longer ring.
                self._doorbell.close()
            self._fail_pending(self._end_error)

    def _dispatch(self, message: interrupt_pb2.SidecarMessage) -> None:
        kind = message.WhichOneof("message")
        if kind == "cancel":
            self._take_cancel(cancellation_from_pb(message.cancel), "stream")
        elif kind == "run_terminator":
            self._runs_asked.add(message.run_terminator.terminator_id)
            self._run_asked.set()
            self._on_run_terminator(message.run_terminator.terminator_id)
        elif kind == "terminator_registered":
            self._resolve(message.terminator_registered.terminator_id, "registered", None)
        elif kind == "terminator_unregistered":
            self._resolve(message.terminator_unregistered.terminator_id, "unregistered", None)
        elif kind == "error":
            refusal = message.error
            error = error_for(refusal.code, refusal.message, terminator_id=refusal.terminator_id)
            if not refusal.terminator_id or not self._resolve(refusal.terminator_id, None, error):
                log.warning("the sidecar refused a request of this tool: %s", error)
        else:  # attached again, or a message newer than this client
            log.debug("ignoring sidecar message %r", kind)

    def _resolve(self, terminator_id: str, answer: _Answer | None, error: SidecarError | None) -> bool:
        """Settle the oldest pending request for the terminator (of kind ``answer``; any for errors)."""
        waiting = self._pending.get(terminator_id)
        if not waiting:
            return False
        for pending in waiting:
            if answer is None or pending.answer == answer:
                waiting.remove(pending)
                if not waiting:
                    del self._pending[terminator_id]
                if not pending.future.done():
                    if error is None:
                        pending.future.set_result(None)
                    else:
                        pending.future.set_exception(error)
                return True
        return False

    def _fail_pending(self, error: SidecarError) -> None:
        for waiting in self._pending.values():
            for pending in waiting:
                if not pending.future.done():
                    pending.future.set_exception(error)
        self._pending.clear()

    # -- writing -------------------------------------------------------------------

    async def _write(self, message: interrupt_pb2.ToolMessage) -> None:
        if self._end_error is not None:
            raise self._end_error
        assert self._call is not None
        async with self._write_lock:
            try:
                await self._call.write(message)
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError) as error:
                raise await self._write_failure(error) from None

    async def _write_failure(self, error: Exception) -> SidecarError:
        # A write racing the end of the stream fails, and gRPC then reports the call as
        # INTERNAL ("Internal error from Core") instead of how the daemon ended it; the
        # reader maps that to ConnectionLost once it sees the end, a moment later.
        self._write_failed = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await self._ended.wait()
        if self._end_error is not None:
            return self._end_error
        if isinstance(error, grpc.aio.AioRpcError):
            return error_from_rpc(error, "write to the sidecar")
        return ConnectionLost("the tool's stream to the sidecar has ended")

    async def _request(self, message: interrupt_pb2.ToolMessage, terminator_id: str, answer: _Answer) -> None:
        if self._end_error is not None:
            raise self._end_error
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending = _Pending(answer, future)
        self._pending.setdefault(terminator_id, deque()).append(pending)
        try:
            await self._write(message)
            async with asyncio.timeout(self._request_timeout):
                await future
        except TimeoutError:
            raise DeadlineExceeded(
                f"the sidecar did not answer for terminator {terminator_id!r} within {self._request_timeout}s",
                terminator_id=terminator_id,
            ) from None
        finally:
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: the stream's end may have failed it unawaited
            waiting = self._pending.get(terminator_id)
            if waiting is not None and pending in waiting:
                waiting.remove(pending)
                if not waiting:
                    del self._pending[terminator_id]

    # The registrar's backend.

    async def register(self, terminator_id: str, spec: TerminatorSpec) -> None:
        request = interrupt_pb2.RegisterTerminator(terminator_id=terminator_id)
        if isinstance(spec, CallbackSpec):
            request.callback.SetInParent()
        elif isinstance(spec, ProcessGroupSpec):
            request.process_group.pgid = spec.pgid
            request.process_group.signal = spec.signal
            if spec.kill_after is not None:
                request.process_group.kill_after.FromTimedelta(spec.kill_after)
        await self._request(interrupt_pb2.ToolMessage(register_terminator=request), terminator_id, "registered")
        if isinstance(spec, CallbackSpec):
            self._callbacks_held.add(terminator_id)

    async def unregister(self, terminator_id: str) -> None:
        request = interrupt_pb2.UnregisterTerminator(terminator_id=terminator_id)
        await self._request(interrupt_pb2.ToolMessage(unregister_terminator=request), terminator_id, "unregistered")
        # A run asked for before the trip's unregistration has been read already (the
        # stream keeps the daemon's order); a later registration under the id runs anew.
        self._callbacks_held.discard(terminator_id)
        self._runs_asked.discard(terminator_id)

    async def runs_asked(self, timeout: float) -> None:
        """After the trip: wait (at most ``timeout`` s) until the daemon has asked to run
        every callback terminator it holds for this tool, or the stream has ended.

        The daemon asks for each of them at the trip, after the cancel, on this stream. The
        doorbell's copy of the cancel comes ahead of all that: a worker it interrupts can
        reach the unwind before those requests are read, and after ``unwound`` their
        results could no longer be reported.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self._callbacks_held <= self._runs_asked and not self._ended.is_set():
                    self._run_asked.clear()
                    await self._run_asked.wait()

    async def report_result(self, terminator_id: str, error: str) -> None:
        """Tell the daemon how a callback terminator went (best-effort after the run ended)."""
        result = interrupt_pb2.TerminatorResult(terminator_id=terminator_id, error=error)
        try:
            await self._write(interrupt_pb2.ToolMessage(terminator_result=result))
        except SidecarError as failure:
            log.debug("could not report the result of terminator %r: %s", terminator_id, failure)

    # -- the end ---------------------------------------------------------------------

    async def finish(self, outcome: ToolOutcome, detail: str, *, timeout: float) -> None:
        """Report unwound, half-close, give the daemon ``timeout`` s to end the stream, then close."""
        self._finishing = True
        try:
            if self._end_error is None:
                unwound = interrupt_pb2.Unwound(outcome=outcome_to_pb(outcome), detail=detail)
                await self._write(interrupt_pb2.ToolMessage(unwound=unwound))
                assert self._call is not None
                await self._call.done_writing()
                # Cancelling the call right away could drop the unwound on the daemon's
                # side; let it read the message and end the stream itself.
                async with asyncio.timeout(timeout):
                    await self._ended.wait()
        except TimeoutError:
            log.debug("the sidecar did not end the tool stream within %ss of unwound", timeout)
        except (SidecarError, grpc.aio.AioRpcError, asyncio.InvalidStateError) as error:
            log.warning("could not report unwound to the sidecar: %s", error)
        finally:
            await self.close()

    async def close(self) -> None:
        """Drop the stream, the doorbell and the channel. Idempotent."""
        self._finishing = True
        if self._call is not None:
            self._call.cancel()
        if self._doorbell is not None:
            self._doorbell.close()
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
            try:
                await self._reader
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
        if self._doorbell is not None:
            await self._doorbell.aclose()  # its connect task, if still running, is over after this
        self._fail_pending(ConnectionLost("the tool's stream to the sidecar was closed"))
        await self._channel.close()
