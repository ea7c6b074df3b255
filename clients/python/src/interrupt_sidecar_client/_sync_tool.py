"""The tool side, blocking facade: delegates every call to the async core on the private loop thread."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal as signal_module
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from types import TracebackType
from typing import Any

from interrupt_sidecar_client._errors import CancelledExecution, ThreadInterrupted
from interrupt_sidecar_client._interrupt import InterruptScope, ThreadInterrupter
from interrupt_sidecar_client._loop import LoopThread, shared_loop
from interrupt_sidecar_client._process import ManagedProcess, popen
from interrupt_sidecar_client._registrar import AsyncTerminatorRegistrar
from interrupt_sidecar_client._signal import CancellationSignal, CancellationSource
from interrupt_sidecar_client._terminator import Terminator, TerminatorKind
from interrupt_sidecar_client._tool import AsyncToolRun, open_run, outcome_for
from interrupt_sidecar_client._types import InterruptBehavior, ToolOutcome

__all__ = ["TerminatorRegistrar", "ToolRun", "attach"]


def _in_thread(callback: Callable[[], object]) -> Callable[[], object]:
    """Run a blocking-API terminator in a worker thread, off the client's loop."""

    async def run_in_thread() -> None:
        await asyncio.to_thread(callback)

    run_in_thread.__qualname__ = f"in_thread({getattr(callback, '__qualname__', repr(callback))})"
    return run_in_thread


class TerminatorRegistrar:
    """Registers terminators for the tool's run (``run.registrar``); blocking calls.

    Same rules as :class:`~interrupt_sidecar_client.aio.AsyncTerminatorRegistrar`. Callback
    terminators run at the trip in worker threads, one after the other in registration
    order; one still running after 0.25 s no longer holds up the next. ``with registrar:``
    closes it on exit.
    """

    def __init__(self, core: AsyncTerminatorRegistrar, loop: LoopThread) -> None:
        self._core = core
        self._loop = loop

    @property
    def behavior(self) -> InterruptBehavior:
        """The behaviour the tool declared; decides what may be registered."""
        return self._core.behavior

    @property
    def closed(self) -> bool:
        """True once closed: by ``close()``, or because the tool's run unwound."""
        return self._core.closed

    @property
    def terminators(self) -> Sequence[Terminator]:
        """The live terminators, in registration order."""
        return self._core.terminators

    def register(self, callback: Callable[[], object], *, terminator_id: str | None = None) -> Terminator:
        """Register a callback terminator, run once when the execution trips (at once if it has).

        Returns when the daemon has acknowledged it. Raises ``FailedPrecondition`` unless
        the tool declared THREAD_INTERRUPT or EXTERNALLY_TERMINATED, or once closed.
        """
        if not callable(callback):
            raise TypeError(f"a terminator must be callable, got {callback!r}")
        if inspect.iscoroutinefunction(callback):
            raise TypeError("a coroutine function cannot be a terminator of the blocking API; use aio.attach")
        return self._loop.run(self._core.register(_in_thread(callback), terminator_id=terminator_id))

    def register_process_group(
        self,
        pgid: int,
        *,
        signal: int = signal_module.SIGTERM,
        kill_after: timedelta | float | None = None,
        terminator_id: str | None = None,
    ) -> Terminator:
        """Register a process group the daemon kills at the trip (EXTERNALLY_TERMINATED only).

        The daemon sends ``signal`` to the whole group, then SIGKILL after ``kill_after``
        (seconds or a timedelta; default: the execution's grace).
        """
        return self._loop.run(
            self._core.register_process_group(pgid, signal=signal, kill_after=kill_after, terminator_id=terminator_id)
        )

    def unregister(self, terminator: Terminator | str) -> None:
        """Unregister a terminator so it no longer runs. Idempotent; a no-op once closed."""
        self._loop.run(self._core.unregister(terminator))

    @contextmanager
    def registered(self, callback: Callable[[], object], *, terminator_id: str | None = None) -> Iterator[Terminator]:
        """``with registrar.registered(cb):`` — registered inside the block, unregistered after."""
        terminator = self.register(callback, terminator_id=terminator_id)
        try:
            yield terminator
        finally:
            self._unregister_quietly(terminator)

    def popen(
        self,
        args: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        signal: int = signal_module.SIGTERM,
        kill_after: timedelta | float | None = None,
        terminator_id: str | None = None,
        **kwargs: Any,
    ) -> ManagedProcess:
        """Start ``args`` in a new process group and register the group (EXTERNALLY_TERMINATED).

        ``kwargs`` go to ``subprocess.Popen`` (``start_new_session=True`` is set). Use the
        result as a context manager; see :class:`~interrupt_sidecar_client.ManagedProcess`.
        """
        return popen(self, args, signal=signal, kill_after=kill_after, terminator_id=terminator_id, **kwargs)

    def close(self) -> None:
        """Unregister every live terminator and refuse later registrations. Idempotent."""
        self._loop.run(self._core.close())

    def _unregister_quietly(self, terminator: Terminator) -> None:
        self._loop.run(self._core._unregister_quietly(terminator))

    def _check(self, kind: TerminatorKind) -> None:
        self._core._check(kind)

    def __enter__(self) -> TerminatorRegistrar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class ToolRun:
    """One tool run attached to an execution (or running without a sidecar); blocking API.

    Use it as a context manager (``with attach(...) as run:``): leaving the block reports
    ``unwound`` with an outcome derived from how the block ended, and closes the
    registrar and the stream. A THREAD_INTERRUPT run interrupts the thread that entered
    the block at the trip (see :func:`attach`).
    """

    def __init__(self, core: AsyncToolRun, loop: LoopThread, *, interrupt_worker: bool) -> None:
        self._core = core
        self._loop = loop
        self._interrupt_worker = interrupt_worker
        self._registrar = TerminatorRegistrar(core.registrar, loop)
        self._scope: InterruptScope | None = None
        self._worker: int | None = None

    @property
    def signal(self) -> CancellationSignal:
        """The execution's cancellation signal (:data:`NOOP_SIGNAL` outside an agent)."""
        return self._core.signal

    @property
    def registrar(self) -> TerminatorRegistrar:
        """Where the tool registers terminators (refuses unless the behaviour allows them)."""
        return self._registrar

    @property
    def behavior(self) -> InterruptBehavior:
        """The behaviour the tool declared."""
        return self._core.behavior

    @property
    def attached(self) -> bool:
        """True when attached to a sidecar; False in no-op mode or with a local source."""
        return self._core.attached

    @property
    def address(self) -> str | None:
        """The daemon address, when attached."""
        return self._core.address

    @property
    def execution_id(self) -> str | None:
        """The execution attached to (None when not attached)."""
        return self._core.execution_id

    @property
    def tool_id(self) -> str | None:
        """The id the daemon gave this tool run (None when not attached)."""
        return self._core.tool_id

    @property
    def grace(self) -> timedelta | None:
        """How long after the trip the tool has to unwind before it counts as a grace overrun."""
        return self._core.grace

    @property
    def unwound(self) -> bool:
        """True once the run has been reported unwound (and the registrar closed)."""
        return self._core.unwound

    def unwind(self, outcome: ToolOutcome = ToolOutcome.COMPLETED, detail: str = "") -> None:
        """Report the run's end: closes the registrar, sends ``unwound``, closes the stream. Idempotent."""
        if self._scope is not None and threading.get_ident() == self._worker:
            self._scope.exit()
        self._loop.run(self._core.unwind(outcome, detail))

    def __enter__(self) -> ToolRun:
        if self.behavior is InterruptBehavior.THREAD_INTERRUPT and self._interrupt_worker and not self.unwound:
            self._worker = threading.get_ident()
            self._scope = InterruptScope(self.signal, ThreadInterrupter(lambda: self.signal.cancellation))
            tripped = self._scope.enter()
            if tripped is not None:
                self.unwind(ToolOutcome.INTERRUPTED, "cancelled before the tool started")
                raise CancelledExecution(tripped)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._scope is not None:
            # The interrupt may land in this very method, before it is withdrawn; it fires
            # at most once, so the second attempt always completes. The block has ended by
            # then, so such a late interrupt is dropped.
            for _ in range(2):
                try:
                    self._scope.exit()
                    break
                except CancelledExecution:
                    continue
        convert = isinstance(exc, ThreadInterrupted)
        error: BaseException | None = CancelledExecution(self.signal.cancellation) if convert else exc
        outcome, detail = outcome_for(error, self.signal, self.behavior)
        self._loop.run(self._core.unwind(outcome, detail))
        if convert:
            raise CancelledExecution(self.signal.cancellation) from exc

    def __repr__(self) -> str:
        return repr(self._core).replace("AsyncToolRun", "ToolRun", 1)


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
) -> ToolRun:
    """Attach this tool run to its execution: ``with attach(behavior=...) as run:`` (blocking API).

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

    THREAD_INTERRUPT (with ``interrupt_worker=True``): at the trip the thread that entered
    the ``with`` block is interrupted and the block raises :class:`CancelledExecution`:

    * the main thread gets a real SIGINT, which also breaks blocking calls (``time.sleep``,
      ``Lock.acquire``, ``Popen.wait``…); a handler installed for the block's duration
      turns it into ``CancelledExecution`` and passes other SIGINTs to the previous handler;
    * another thread gets ``ThreadInterrupted`` at its next Python bytecode
      (``PyThreadState_SetAsyncExc``) — a thread blocked inside one C call sees it only
      when the call returns.

    Entering the block after the trip raises ``CancelledExecution`` at once.

    Raises a :class:`SidecarError` subclass when the daemon refuses the attach or cannot
    be reached.
    """
    loop = shared_loop()
    core = loop.run(
        open_run(
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
    )
    return ToolRun(core, loop, interrupt_worker=interrupt_worker)
