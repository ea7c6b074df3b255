"""The tool side, async core: attach to an execution, get its signal and a registrar."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Generator
from datetime import timedelta
from types import TracebackType
from typing import Any

import grpc

from interrupt_sidecar_client._config import CHANNEL_OPTIONS, resolve_tool
from interrupt_sidecar_client._errors import CancelledExecution
from interrupt_sidecar_client._interrupt import InterruptScope, TaskInterrupter
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2
from interrupt_sidecar_client._registrar import (
    SEQUENTIAL_WINDOW,
    AsyncTerminatorRegistrar,
    LocalBackend,
    TerminatorRunner,
    describe,
)
from interrupt_sidecar_client._signal import NOOP_SIGNAL, CancellationSignal, CancellationSource
from interrupt_sidecar_client._stream import ToolStream
from interrupt_sidecar_client._types import (
    Cancellation,
    InterruptBehavior,
    InterruptReason,
    ToolOutcome,
    behavior_to_pb,
    reason_from_pb,
    timedelta_from_pb,
)

__all__ = ["AsyncToolRun", "attach", "open_run", "outcome_for"]

#: How long unwinding waits for the daemon to end the stream after the tool's ``unwound``.
UNWIND_TIMEOUT = 2.0


class AsyncToolRun:
    """One tool run attached to an execution (or running without a sidecar).

    Use it as an async context manager (``async with aio.attach(...) as run:``): leaving
    the block reports ``unwound`` to the daemon with an outcome derived from how the block
    ended, closes the registrar and the stream. A THREAD_INTERRUPT run also interrupts the
    task that entered the block at the trip (see :func:`attach`).
    """

    def __init__(
        self,
        *,
        signal: CancellationSignal,
        registrar: AsyncTerminatorRegistrar,
        runner: TerminatorRunner,
        behavior: InterruptBehavior,
        interrupt_worker: bool,
        stream: ToolStream | None = None,
        on_unwound: Callable[[], None] | None = None,
        address: str | None = None,
        execution_id: str | None = None,
        tool_id: str | None = None,
        grace: timedelta | None = None,
    ) -> None:
        self._signal = signal
        self._registrar = registrar
        self._runner = runner
        self._behavior = behavior
        self._interrupt_worker = interrupt_worker
        self._stream = stream
        self._on_unwound = on_unwound
        self._address = address
        self._execution_id = execution_id
        self._tool_id = tool_id
        self._grace = grace
        self._unwound = False
        self._scope: InterruptScope | None = None
        self._interrupter: TaskInterrupter | None = None

    @property
    def signal(self) -> CancellationSignal:
        """The execution's cancellation signal (:data:`NOOP_SIGNAL` outside an agent)."""
        return self._signal

    @property
    def registrar(self) -> AsyncTerminatorRegistrar:
        """Where the tool registers terminators (refuses unless the behaviour allows them)."""
        return self._registrar

    @property
    def behavior(self) -> InterruptBehavior:
        """The behaviour the tool declared."""
        return self._behavior

    @property
    def attached(self) -> bool:
        """True when attached to a sidecar; False in no-op mode or with a local source."""
        return self._stream is not None

    @property
    def address(self) -> str | None:
        """The daemon address, when attached."""
        return self._address

    @property
    def execution_id(self) -> str | None:
        """The execution attached to (None when not attached)."""
        return self._execution_id

    @property
    def tool_id(self) -> str | None:
        """The id the daemon gave this tool run (None when not attached)."""
        return self._tool_id

    @property
    def grace(self) -> timedelta | None:
        """How long after the trip the tool has to unwind before it counts as a grace overrun."""
        return self._grace

    @property
    def unwound(self) -> bool:
        """True once the run has been reported unwound (and the registrar closed)."""
        return self._unwound

    async def unwind(self, outcome: ToolOutcome = ToolOutcome.COMPLETED, detail: str = "") -> None:
        """Report the run's end: closes the registrar, sends ``unwound``, closes the stream. Idempotent.

        Leaving the ``async with`` block calls it; call it earlier to report an outcome
        the block cannot infer (e.g. ``ToolOutcome.INTERRUPTED`` for an early return).
        """
        if self._unwound:
            return
        self._unwound = True
        if self._scope is not None:
            self._scope.exit()
        # Refuse registrations now, but keep the callables until the stream has ended:
        # run_terminator messages the daemon sent before reading unwound still run.
        self._registrar._close_local(forget=False)
        try:
            if self._stream is not None:
                if self._signal.is_cancelled:
                    # The trip asks for every callback terminator: when the doorbell
                    # brought the cancel, those requests may still be on the stream.
                    await self._stream.runs_asked(UNWIND_TIMEOUT)
                # Terminators the daemon already asked for report their results first.
                await self._runner.settle(SEQUENTIAL_WINDOW)
                await self._stream.finish(ToolOutcome(outcome), detail, timeout=UNWIND_TIMEOUT)
            await self._runner.close()
        finally:
            self._registrar._close_local()
            if self._on_unwound is not None:
                self._on_unwound()

    async def __aenter__(self) -> AsyncToolRun:
        if self._behavior is InterruptBehavior.THREAD_INTERRUPT and self._interrupt_worker and not self._unwound:
            task = asyncio.current_task()
            if task is not None:
                self._interrupter = TaskInterrupter(task)
                self._scope = InterruptScope(self._signal, self._interrupter)
                tripped = self._scope.enter()
                if tripped is not None:
                    # Entering a THREAD_INTERRUPT block after the trip: the worker is
                    # interrupted before it starts.
                    await self.unwind(ToolOutcome.INTERRUPTED, "cancelled before the tool started")
                    raise CancelledExecution(tripped)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        fired = self._scope.exit() if self._scope is not None else False
        interrupter = self._interrupter
        # Ours when we cancelled the task and nobody else has since (asyncio.timeout's rule).
        convert = (
            fired
            and interrupter is not None
            and isinstance(exc, asyncio.CancelledError)
            and interrupter.task.cancelling() <= interrupter.cancelling_at_arm
        )
        error: BaseException | None = CancelledExecution(self._signal.cancellation) if convert else exc
        outcome, detail = outcome_for(error, self._signal, self._behavior)
        await self.unwind(outcome, detail)
        if convert:
            raise CancelledExecution(self._signal.cancellation) from exc

    def __repr__(self) -> str:
        where = f"execution {self._execution_id!r}" if self.attached else "no sidecar"
        return f"<AsyncToolRun {self._behavior.name} {where} {self._signal!r}>"


def outcome_for(
    error: BaseException | None, signal: CancellationSignal, behavior: InterruptBehavior
) -> tuple[ToolOutcome, str]:
    """The outcome to report for a block that ended with ``error`` (None: normally)."""
    if error is None:
        # An interruptible tool that returns after the cancel has most likely stopped
        # early; report otherwise with run.unwind(ToolOutcome.COMPLETED).
        if signal.is_cancelled and behavior.receives_cancel:
            return ToolOutcome.INTERRUPTED, ""
        return ToolOutcome.COMPLETED, ""
    if isinstance(error, CancelledExecution | asyncio.CancelledError | KeyboardInterrupt):
        return ToolOutcome.INTERRUPTED, describe(error)
    return ToolOutcome.FAILED, describe(error)


async def open_run(
    *,
    behavior: InterruptBehavior,
    tool_name: str,
    tool_call_id: str,
    address: str | None,
    token: str | None,
    source: CancellationSource | None,
    pid: int | None,
    timeout: float | None,
    interrupt_worker: bool,
    doorbell: bool | None = None,
) -> AsyncToolRun:
    """Attach (or set up a local run). Runs on the loop the run will live on."""
    behavior = InterruptBehavior(behavior)
    if source is not None:
        if address is not None or token is not None:
            raise ValueError("pass either source= (an in-process signal) or address=/token= (a sidecar), not both")
        return _local_run(source.signal, source.grace, behavior, interrupt_worker)
    config = resolve_tool(address, token, doorbell)
    if config is None:
        return _local_run(NOOP_SIGNAL, None, behavior, interrupt_worker)

    channel = grpc.aio.insecure_channel(config.address, options=CHANNEL_OPTIONS)
    stream = ToolStream(channel, config.address, request_timeout=timeout)
    hello = interrupt_pb2.Hello(
        attach_token=config.token,
        tool_name=tool_name,
        tool_call_id=tool_call_id,
        behavior=behavior_to_pb(behavior),
        pid=pid if pid is not None else os.getpid(),
        # The daemon only rings for tools it sends the cancel to.
        doorbell=config.doorbell and behavior.receives_cancel,
    )
    try:
        handshake = await stream.handshake(hello, timeout=timeout, expect_cancel=behavior.receives_cancel)
    except BaseException:
        await stream.close()
        raise
    attached = handshake.attached
    signal = CancellationSignal()
    if handshake.cancel is not None:
        signal._trip(handshake.cancel)
    elif attached.cancelled:
        # A NON_INTERRUPTIBLE tool is never sent the cancel, but sees the state it attached in.
        signal._trip(Cancellation(reason_from_pb(attached.reason) or InterruptReason.USER_SIGINT))
    registrar = AsyncTerminatorRegistrar(behavior, stream)
    runner = TerminatorRunner(registrar._callback_for, stream.report_result)
    stream.start(on_cancel=signal._trip, on_run_terminator=runner.submit)
    return AsyncToolRun(
        signal=signal,
        registrar=registrar,
        runner=runner,
        behavior=behavior,
        interrupt_worker=interrupt_worker,
        stream=stream,
        address=config.address,
        execution_id=attached.execution_id,
        tool_id=attached.tool_id,
        grace=timedelta_from_pb(attached.grace, attached.HasField("grace")),
    )


async def _ignore_report(terminator_id: str, error: str) -> None:
    return None


def _local_run(
    signal: CancellationSignal, grace: timedelta | None, behavior: InterruptBehavior, interrupt_worker: bool
) -> AsyncToolRun:
    registrar_holder: list[AsyncTerminatorRegistrar] = []
    runner = TerminatorRunner(lambda terminator_id: registrar_holder[0]._callback_for(terminator_id), _ignore_report)
    backend = LocalBackend(signal, runner, grace if grace is not None else timedelta(milliseconds=500))
    registrar = AsyncTerminatorRegistrar(behavior, backend)
    registrar_holder.append(registrar)
    return AsyncToolRun(
        signal=signal,
        registrar=registrar,
        runner=runner,
        behavior=behavior,
        interrupt_worker=interrupt_worker,
        grace=grace,
        on_unwound=backend.close,
    )


class _AttachContext:
    """What :func:`attach` returns: await it for the run, or use it as ``async with``."""

    def __init__(self, opener: Callable[[], Coroutine[Any, Any, AsyncToolRun]]) -> None:
        self._opener = opener
        self._run: AsyncToolRun | None = None

    def __await__(self) -> Generator[Any, None, AsyncToolRun]:
        return self._opener().__await__()

    async def __aenter__(self) -> AsyncToolRun:
        self._run = await self._opener()
        return await self._run.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._run is not None
        await self._run.__aexit__(exc_type, exc, tb)


def attach(
    *,
    behavior: InterruptBehavior = InterruptBehavior.NON_INTERRUPTIBLE,
    tool_name: str = "",
    tool_call_id: str = "",
    address: str | None = None,
    token: str | None = None,
    source: CancellationSource | None = None,
    pid: int | None = None,
    timeout: float | None = 10.0,
    interrupt_worker: bool = True,
    doorbell: bool | None = None,
) -> _AttachContext:
    """Attach this tool run to its execution: ``async with aio.attach(behavior=...) as run:``.

    ``address``/``token`` default to ``INTERRUPT_SIDECAR_ADDRESS``/``INTERRUPT_SIDECAR_TOKEN``
    (the address, then, to the daemon's default socket).
    Without a token the run is *no-op*: ``run.signal`` is :data:`NOOP_SIGNAL`, the registrar
    accepts what the behaviour allows and never runs it, and the tool runs unchanged.
    With ``source=`` the run follows an in-process :class:`CancellationSource` (tests).

    Over a ``unix:`` address an interruptible run also asks for the *cancel doorbell*, a
    unix socket on which the daemon writes the cancel before the stream's copy arrives; the
    signal trips on whichever comes first, once. ``doorbell=False`` (or
    ``INTERRUPT_SIDECAR_DOORBELL=0`` when ``doorbell`` is None) takes the cancel from the
    stream only.

    THREAD_INTERRUPT (with ``interrupt_worker=True``): at the trip, the task that entered
    the ``async with`` block is cancelled; the block then raises :class:`CancelledExecution`
    instead of ``CancelledError`` (unless the task was also cancelled by someone else).
    Entering the block after the trip raises it at once.

    Raises a :class:`SidecarError` subclass when the daemon refuses the attach
    (Unauthenticated, InvalidArgument, NotFound, PermissionDenied) or cannot be reached
    (Unavailable, DeadlineExceeded after ``timeout`` seconds, also used for each
    registrar request).
    """

    def opener() -> Coroutine[Any, Any, AsyncToolRun]:
        return open_run(
            behavior=behavior,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            address=address,
            token=token,
            source=source,
            pid=pid,
            timeout=timeout,
            interrupt_worker=interrupt_worker,
            doorbell=doorbell,
        )

    return _AttachContext(opener)
