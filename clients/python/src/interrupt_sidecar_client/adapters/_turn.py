"""What every framework adapter shares: a turn tied to an execution, its tool calls, spawning.

No framework is imported here. A framework adapter:

1. keeps its constructor's settings in a :class:`TurnSettings` and opens a :class:`Turn`
   with it (``settings.open(execution)``): an execution it begins (or one the runtime
   began), attached as a COOPERATIVE tool named ``<framework>:turn`` whose signal is the
   turn's — so the daemon sees the framework call itself unwind, and a call that outlives
   the grace shows as a grace overrun;
2. runs the framework call in a task of its own (:func:`run_turn`) and maps the trip to
   the framework's own cancel (cancelling that task, or a callback such as
   ``RunResultStreaming.cancel``); a blocking framework call runs in the calling thread,
   attached THREAD_INTERRUPT instead (:func:`run_blocking_turn`);
3. runs each tool call through :func:`call_sync` (the tool's body in the thread that runs
   it, attached THREAD_INTERRUPT) or :func:`call_async` (attached COOPERATIVE, the body in
   a task the adapter cancels at the trip), which refuse calls of a tripped turn and turn
   an interrupt into an "interrupted" result, never an empty success;
4. once the framework call has stopped, waits for the tool calls still unwinding and for
   the daemon to report each of their process trees gone, and raises
   :class:`TurnInterrupted` with what the model should see.

Tools reach their call through a context variable (frameworks copy the context into the
tasks and worker threads they run tools in), which is how :func:`popen` and
:func:`create_subprocess_exec` know which execution a subprocess belongs to.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from interrupt_sidecar_client._coordinator import AsyncCoordinator
from interrupt_sidecar_client._errors import CancelledExecution
from interrupt_sidecar_client._interrupt import defer_interrupts
from interrupt_sidecar_client._loop import shared_loop
from interrupt_sidecar_client._process import AsyncManagedProcess, ManagedProcess, finish_despite_cancels
from interrupt_sidecar_client._signal import CancellationSignal, CancellationSource
from interrupt_sidecar_client._sync_coordinator import Coordinator
from interrupt_sidecar_client._sync_tool import ToolRun, attach
from interrupt_sidecar_client._tool import AsyncToolRun
from interrupt_sidecar_client._tool import attach as aio_attach
from interrupt_sidecar_client._types import (
    BegunExecution,
    Cancellation,
    EventKind,
    ExecutionEvent,
    InterruptBehavior,
    ToolOutcome,
)

__all__ = [
    "InterruptedCall",
    "Turn",
    "TurnInterrupted",
    "TurnSettings",
    "bridge_stdio",
    "call_async",
    "call_sync",
    "create_subprocess_exec",
    "current_turn",
    "follow_blocking",
    "interrupted_text",
    "open_turn",
    "popen",
    "run_blocking_turn",
    "run_turn",
]

T = TypeVar("T")

log = logging.getLogger(__name__)

#: How long past the grace (and a process group's ``kill_after``) the adapter waits for
#: tool calls and their processes to unwind before it gives up on them.
UNWIND_MARGIN = 1.0


def interrupted_text(cancellation: Cancellation | None, *, started: bool) -> str:
    """What the model is told about a tool call the interrupt stopped (or refused)."""
    why = cancellation.reason.name if cancellation is not None else "UNKNOWN"
    if cancellation is not None and cancellation.detail:
        why += f": {cancellation.detail}"
    if started:
        return f"Interrupted ({why}): the turn was interrupted and this tool call was stopped before it finished."
    return f"Interrupted ({why}): the turn was interrupted, so this tool call was not run."


@dataclass
class InterruptedCall:
    """A tool call of an interrupted turn: stopped while it ran, or refused (``started`` false)."""

    name: str
    call_id: str
    started: bool
    text: str


class TurnInterrupted(CancelledExecution):
    """The framework call of a turn was stopped because its execution tripped.

    ``calls`` are the tool calls that were running (stopped) or refused; ``history`` is what
    the framework's adapter could rebuild of the conversation, interrupted tool results
    included (its shape is the framework's: LangChain messages, Agents SDK input items), or
    None when it could not. ``unconfirmed_pgids`` are the process groups of the turn's tools
    the daemon did not report gone (tree and all) within the kill window, or failed to kill;
    empty when every tree is known gone.
    """

    def __init__(
        self,
        cancellation: Cancellation | None,
        *,
        execution_id: str,
        calls: Sequence[InterruptedCall] = (),
        history: list[Any] | None = None,
        unconfirmed_pgids: Sequence[int] = (),
    ) -> None:
        super().__init__(cancellation)
        self.execution_id = execution_id
        self.calls = list(calls)
        self.history = history
        self.unconfirmed_pgids = list(unconfirmed_pgids)


@dataclass
class _Call:
    name: str
    call_id: str
    started: bool = True
    #: Ended by the interrupt (or ended after the trip: the framework's call is being
    #: cancelled, so whatever it returned never reaches the model).
    interrupted: bool = False
    done: bool = False


@dataclass
class _Group:
    """A process group a spawn helper registered for one of the turn's tool calls."""

    tool_id: str
    terminator_id: str
    pgid: int
    #: How long after the trip the daemon may take to have the tree gone (_kill_window).
    window: float


@dataclass
class _CallScope:
    """What a tool's body can see of the call it runs in (for the spawn helpers)."""

    turn: Turn
    name: str
    call_id: str
    #: The call's own signal: the cancel that stops the body may come on its stream before
    #: the one on its ``<tool>:process`` stream (each stream gets its own).
    signal: CancellationSignal | None = None

    def tripped(self) -> bool:
        return self.turn.interrupted or (self.signal is not None and self.signal.is_cancelled)


_TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("interrupt_sidecar_turn", default=None)
_CALL: contextvars.ContextVar[_CallScope | None] = contextvars.ContextVar("interrupt_sidecar_call", default=None)


def current_turn() -> Turn | None:
    """The turn whose framework call is running in this context, if any."""
    return _TURN.get()


@dataclass
class Turn:
    """One agent turn: an execution, its signal, and the tool calls it has run."""

    framework: str
    execution_id: str
    address: str | None
    token: str = field(repr=False)
    signal: CancellationSignal
    grace: timedelta
    _calls: list[_Call] = field(default_factory=list, repr=False)
    _lock: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _on_trip: list[Callable[[], object]] = field(default_factory=list, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    #: What a framework adapter keeps about the turn (its own records of the calls).
    extras: dict[str, Any] = field(default_factory=dict, repr=False)
    # What the execution's watch (_follow) has said about process trees, under _lock. The
    # leader of a group dies at the first signal, but the daemon goes on killing the group
    # and the descendants that left it (setsid), SIGKILL after kill_after: only its
    # ProcessGroupGone says the tree is gone, so that is what the turn waits for at a trip.
    _groups: dict[tuple[str, str], _Group] = field(default_factory=dict, repr=False)
    _signalled: set[tuple[str, str]] = field(default_factory=set, repr=False)
    #: Gone (None) or failed (the daemon's message), by (tool_id, terminator_id).
    _finished: dict[tuple[str, str], str | None] = field(default_factory=dict, repr=False)
    #: Tools the watch saw unwind or detach.
    _closed_tools: set[str] = field(default_factory=set, repr=False)
    #: True from the watch's snapshot until it ends: only then do its events tell anything.
    _watching: bool = field(default=False, repr=False)
    _unconfirmed: list[int] = field(default_factory=list, repr=False)

    @classmethod
    def _attached(
        cls,
        framework: str,
        begun: BegunExecution,
        run: AsyncToolRun | ToolRun,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Turn:
        """The turn of ``begun`` whose ``<framework>:turn`` tool is attached as ``run``."""
        return cls(
            framework=framework,
            execution_id=begun.execution_id,
            address=run.address,
            token=begun.attach_token,
            signal=run.signal,
            grace=run.grace or begun.execution.grace or timedelta(milliseconds=500),
            _loop=loop,
        )

    @property
    def interrupted(self) -> bool:
        return self.signal.is_cancelled

    @contextlib.contextmanager
    def activate(self) -> Iterator[Turn]:
        """Make this the current turn in this context: tool calls made inside belong to it
        (the adapters do this around the framework call; use it to run a tool yourself)."""
        token = _TURN.set(self)
        try:
            yield self
        finally:
            _TURN.reset(token)

    def on_trip(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` on the turn's loop at the trip (soon, if tripped already)."""
        assert self._loop is not None
        with self._lock:
            self._on_trip.append(callback)
        if self.signal.is_cancelled:
            self._loop.call_soon_threadsafe(callback)

    def _fire(self) -> None:
        with self._lock:
            callbacks = list(self._on_trip)
        for callback in callbacks:
            callback()

    # -- tool calls --------------------------------------------------------------

    def _begin(self, name: str, call_id: str, *, started: bool = True) -> _Call:
        call = _Call(name, call_id, started=started, interrupted=not started, done=not started)
        with self._lock:
            self._calls.append(call)
        return call

    def _end(self, call: _Call, *, interrupted: bool) -> None:
        with self._lock:
            call.interrupted = call.interrupted or interrupted or self.signal.is_cancelled
            call.done = True
            self._lock.notify_all()

    def _settle_blocking(self, timeout: float | None = None) -> None:
        if timeout is None:
            timeout = self.grace.total_seconds() * 2 + UNWIND_MARGIN
        deadline = time.monotonic() + timeout
        with self._lock:
            while any(not call.done for call in self._calls):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._lock.wait(remaining)
            if self.signal.is_cancelled:
                self._await_trees()

    # -- process trees -----------------------------------------------------------

    def _track(self, tool_id: str | None, terminator: object, pgid: int, window: float) -> None:
        """A spawn helper registered ``pgid`` (terminator ``terminator``) for one of the calls."""
        terminator_id = getattr(terminator, "terminator_id", None)
        if tool_id is None or terminator_id is None:
            return
        with self._lock:
            self._groups[(tool_id, terminator_id)] = _Group(tool_id, terminator_id, pgid, window)

    def _observe(self, event: ExecutionEvent) -> None:
        """One event of the execution's watch (on whichever thread runs the watch)."""
        proto = event.proto
        with self._lock:
            if event.kind is EventKind.SNAPSHOT:
                self._watching = True
            elif event.kind is EventKind.PROCESS_GROUP_SIGNALLED:
                signalled = proto.process_group_signalled
                self._signalled.add((signalled.tool_id, signalled.terminator_id))
            elif event.kind is EventKind.PROCESS_GROUP_GONE:
                self._finished[(proto.process_group_gone.tool_id, proto.process_group_gone.terminator_id)] = None
            elif event.kind is EventKind.TERMINATOR_FAILED:
                failed = proto.terminator_failed
                self._finished.setdefault((failed.tool_id, failed.terminator_id), failed.message or "failed")
            elif event.kind is EventKind.TOOL_UNWOUND:
                self._closed_tools.add(proto.tool_unwound.tool_id)
            elif event.kind is EventKind.TOOL_DETACHED:
                self._closed_tools.add(proto.tool_detached.tool_id)
            else:
                return
            self._lock.notify_all()

    def _pending_trees(self) -> list[_Group]:
        # Under _lock. A group is waited for until its Gone (or TerminatorFailed) unless the
        # daemon never kills it: released before the trip. That is told by its tool's unwind:
        # the trip's kills are signalled (ProcessGroupSignalled) on the daemon's loop right
        # after the trip, long before the tool, which unwinds only after its child is released
        # (a round trip later), is seen unwound; the watch delivers events in that order. So a
        # group of an unwound tool with no Signalled was not the daemon's to kill.
        return [
            group
            for key, group in self._groups.items()
            if key not in self._finished and (key in self._signalled or group.tool_id not in self._closed_tools)
        ]

    def _await_trees(self) -> None:
        # Under _lock, after the trip: until every tree of the turn's tool calls is gone, or
        # the kill window (grace + kill_after + margin) has passed.
        if not self._watching or not self._groups:
            return  # no watch (it failed, or this turn was made without one): nothing to wait on
        deadline = time.monotonic() + max(group.window for group in self._groups.values())
        while self._watching and self._pending_trees():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._lock.wait(remaining)
        failed = [self._groups[key] for key, message in self._finished.items() if message and key in self._groups]
        unconfirmed = sorted({group.pgid for group in [*self._pending_trees(), *failed]})
        if unconfirmed != self._unconfirmed and unconfirmed:
            log.warning(
                "turn %s (%s): the daemon did not report the process trees of groups %s gone%s",
                self.execution_id,
                self.framework,
                unconfirmed,
                "" if self._watching else " (its watch of the execution ended)",
            )
        self._unconfirmed = unconfirmed

    async def settle(self, timeout: float | None = None) -> None:
        """Wait (at most ``timeout``, by default the grace plus a margin) until every tool
        call of the turn has unwound; after a trip, then until the daemon reports each of
        their process trees gone (at most their kill window)."""
        await asyncio.to_thread(self._settle_blocking, timeout)

    def interrupted_calls(self) -> list[InterruptedCall]:
        """The turn's tool calls the interrupt stopped or refused, in the order they began."""
        with self._lock:
            calls = [call for call in self._calls if call.interrupted or not call.done]
        cancellation = self.signal.cancellation
        return [
            InterruptedCall(call.name, call.call_id, call.started, interrupted_text(cancellation, started=call.started))
            for call in calls
        ]

    def refusal(self, name: str, call_id: str) -> InterruptedCall:
        """Record a tool call refused because the turn has tripped; returns what to tell the model."""
        call = self._begin(name, call_id, started=False)
        return InterruptedCall(
            call.name, call.call_id, False, interrupted_text(self.signal.cancellation, started=False)
        )

    def interrupted_error(self, history: list[Any] | None = None) -> TurnInterrupted:
        with self._lock:
            unconfirmed = list(self._unconfirmed)
        return TurnInterrupted(
            self.signal.cancellation,
            execution_id=self.execution_id,
            calls=self.interrupted_calls(),
            history=history,
            unconfirmed_pgids=unconfirmed,
        )


#: How long a turn waits for its watch's snapshot before it goes on without one.
_WATCH_START_TIMEOUT = 10.0


async def _follow(turn: Turn, coordinator: AsyncCoordinator, started: Callable[[], None]) -> None:
    """Feed the execution's events to ``turn`` until it ends (or this is cancelled).

    ``started()`` is called at the snapshot (every event after it reaches the turn) or when
    the watch ends without one.
    """
    try:
        async for event in coordinator.watch(turn.execution_id):
            turn._observe(event)
            if event.kind is EventKind.SNAPSHOT:
                started()
    except Exception as error:  # the turn goes on; it cannot confirm trees gone
        log.warning("turn %s: watching the execution failed: %s", turn.execution_id, error)
    finally:
        with turn._lock:
            turn._watching = False
            turn._lock.notify_all()
        started()


@contextlib.contextmanager
def follow_blocking(turn: Turn, address: str) -> Iterator[Turn]:
    """Watch the turn's execution for the block, for a :class:`Turn` made outside
    :func:`open_turn` (a blocking call): it returns after a trip only once the daemon has
    reported its tools' process trees gone (:meth:`Turn.settle`)."""
    started = threading.Event()

    async def follow() -> None:
        coordinator = AsyncCoordinator(address)
        try:
            await _follow(turn, coordinator, started.set)
        finally:
            await coordinator.close()

    future = shared_loop().submit(follow())
    started.wait(_WATCH_START_TIMEOUT)
    try:
        yield turn
    finally:
        future.cancel()


@dataclass(frozen=True)
class TurnSettings:
    """How an adapter begins its turns: the keyword arguments every ``Interruptible*`` class
    takes, kept once.

    Each turn begins an execution (on ``coordinator``, or a client made for ``address``) in
    ``context_id`` with ``grace`` and ``labels`` (plus ``framework=<framework>``) and ends it
    after, unless it follows one the runtime began. ``token_file``: each turn's attach token
    is written there (atomically) for MCP servers behind ``interrupt-sidecar mcp``.
    """

    # In the order of the adapters' keyword arguments, so that each passes them on in one line.
    framework: str
    coordinator: AsyncCoordinator | None = None
    address: str | None = None
    context_id: str = ""
    grace: timedelta | float | None = None
    labels: Mapping[str, str] | None = None
    token_file: str | os.PathLike[str] | None = None

    def open(self, execution: BegunExecution | None = None) -> contextlib.AbstractAsyncContextManager[Turn]:
        """A turn for the duration of an ``async with`` block: begins an execution (ended
        after), or follows ``execution`` (begun by the runtime, left for it to end)."""
        return _open_turn(self, execution)

    def _begin_labels(self) -> dict[str, str]:
        return {"framework": self.framework, **dict(self.labels or {})}


def open_turn(
    framework: str,
    *,
    coordinator: AsyncCoordinator | None = None,
    address: str | None = None,
    execution: BegunExecution | None = None,
    context_id: str = "",
    grace: timedelta | float | None = None,
    labels: Mapping[str, str] | None = None,
    token_file: str | os.PathLike[str] | None = None,
) -> contextlib.AbstractAsyncContextManager[Turn]:
    """A turn for the duration of the block: begins an execution (ended after), or follows
    ``execution`` (begun by the runtime, left for it to end).

    ``token_file``: write the turn's attach token there (atomically) for MCP servers behind
    ``interrupt-sidecar mcp --token-file`` (see :func:`bridge_stdio`).
    """
    return TurnSettings(framework, coordinator, address, context_id, grace, labels, token_file).open(execution)


@contextlib.asynccontextmanager
async def _open_turn(settings: TurnSettings, execution: BegunExecution | None) -> AsyncIterator[Turn]:
    framework = settings.framework
    coordinator = settings.coordinator
    own_coordinator: AsyncCoordinator | None = None
    begun = execution
    if begun is None:
        if coordinator is None:
            coordinator = own_coordinator = AsyncCoordinator(settings.address)
        begun = await coordinator.begin(
            context_id=settings.context_id, grace=settings.grace, labels=settings._begin_labels()
        )
    try:
        if settings.token_file is not None:
            _write_token(settings.token_file, begun.attach_token)
        run = await aio_attach(
            behavior=InterruptBehavior.COOPERATIVE,
            tool_name=f"{framework}:turn",
            address=begun.address,
            token=begun.attach_token,
        )
        loop = asyncio.get_running_loop()
        turn = Turn._attached(framework, begun, run, loop)
        # The listener runs on whichever thread trips the signal: hop to the turn's loop,
        # where the framework's task lives.
        run.signal.on_cancel(lambda: loop.call_soon_threadsafe(turn._fire))
        # Watched from before any tool call: a watch has no history, so a group's Gone
        # published before it began would never be seen.
        watcher = coordinator if coordinator is not None else AsyncCoordinator(begun.address)
        started: asyncio.Future[None] = loop.create_future()

        def on_start() -> None:
            if not started.done():
                started.set_result(None)

        following = loop.create_task(_follow(turn, watcher, on_start))
        outcome = ToolOutcome.COMPLETED
        try:
            await asyncio.wait({started}, timeout=_WATCH_START_TIMEOUT)
            with turn.activate():
                yield turn
        except BaseException:
            outcome = ToolOutcome.INTERRUPTED if turn.interrupted else ToolOutcome.FAILED
            raise
        finally:
            if turn.interrupted:
                outcome = ToolOutcome.INTERRUPTED
            try:
                await run.unwind(outcome)
            finally:
                following.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await following
                if watcher is not coordinator:
                    await watcher.close()
    finally:
        if execution is None:
            assert coordinator is not None
            try:
                await coordinator.end(begun.execution_id)
            finally:
                if own_coordinator is not None:
                    await own_coordinator.close()


def _write_token(path: str | os.PathLike[str], token: str) -> None:
    # The bridge re-reads the file when its inode, size or mtime changes: write it whole
    # and rename, so it never reads half a token.
    temporary = f"{os.fspath(path)}.tmp"
    with open(temporary, "w") as handle:
        handle.write(token)
    os.replace(temporary, path)


async def run_turn(turn: Turn, call: Awaitable[T], *, history: Callable[[], Awaitable[list[Any] | None]]) -> T:
    """Run the framework's call in a task of its own; at the trip cancel it, wait for the tool
    calls to unwind, and raise :class:`TurnInterrupted` with ``await history()``."""
    task: asyncio.Future[T] = asyncio.ensure_future(call)
    if turn.interrupted:
        # Tripped before the call began: cancelled before its first step, it never starts
        # (on_trip's callback would only come after that step had begun the framework's run).
        task.cancel()
    turn.on_trip(task.cancel)
    try:
        return await task
    except BaseException as error:
        current = asyncio.current_task()
        # Ours when the turn tripped and nobody cancelled the caller (asyncio.timeout's rule).
        if not turn.interrupted or (current is not None and current.cancelling()):
            raise
        await turn.settle()
        raise turn.interrupted_error(await history()) from error


def run_blocking_turn(
    settings: TurnSettings,
    execution: BegunExecution | None,
    call: Callable[[], T],
    *,
    history: Callable[[Turn], list[Any] | None],
) -> T:
    """Run a blocking framework call (``call()``) as one turn, in the calling thread.

    The blocking counterpart of :meth:`TurnSettings.open` with :func:`run_turn`: the thread
    is attached THREAD_INTERRUPT as ``<framework>:turn`` and interrupted at the trip; once
    the tool calls have unwound and the daemon has reported their process trees gone,
    :class:`TurnInterrupted` is raised with ``history(turn)``. A turn whose execution
    tripped before the call began never starts it.
    """
    with contextlib.ExitStack() as ending:
        begun = execution
        if begun is None:
            address = settings.address if settings.coordinator is None else settings.coordinator.address
            coordinator = ending.enter_context(Coordinator(address))
            begun = coordinator.begin(
                context_id=settings.context_id, grace=settings.grace, labels=settings._begin_labels()
            )
            ending.callback(coordinator.end, begun.execution_id)
        if settings.token_file is not None:
            _write_token(settings.token_file, begun.attach_token)
        return _run_blocking(settings.framework, begun, call, history)


def _run_blocking(
    framework: str, begun: BegunExecution, call: Callable[[], T], history: Callable[[Turn], list[Any] | None]
) -> T:
    # The watch outlives the attach: the trees are waited for after the run has unwound.
    with contextlib.ExitStack() as following:
        run = attach(
            behavior=InterruptBehavior.THREAD_INTERRUPT,
            tool_name=f"{framework}:turn",
            address=begun.address,
            token=begun.attach_token,
        )
        turn = Turn._attached(framework, begun, run)
        try:
            # Entering raises CancelledExecution when the execution tripped before the call
            # began: the call never starts, not one model call is made.
            with run:
                # Watched from before any tool call: a watch has no history, so a group's
                # Gone published before it began would never be seen.
                following.enter_context(follow_blocking(turn, begun.address))
                try:
                    with turn.activate():
                        return call()
                except Exception:
                    if turn.interrupted:
                        # Whatever the framework made of the interrupt (it lands as
                        # CancelledExecution in this thread; CrewAI may surface it as its
                        # hook's refusal of the next model call), the run was interrupted.
                        run.unwind(ToolOutcome.INTERRUPTED)
                    raise
        except Exception as error:
            # The interrupt may also land in the attach's own code (its __exit__ turns a late
            # ThreadInterrupted into CancelledExecution): all of it is the trip once tripped.
            if not turn.interrupted:
                raise
            stopped = error
        turn._settle_blocking()
    raise turn.interrupted_error(history(turn)) from stopped


# -- tool calls ------------------------------------------------------------------------


def call_sync(name: str, call_id: str, body: Callable[[], T], interrupted: Callable[[InterruptedCall], T]) -> T:
    """Run a sync tool's ``body`` in this thread as a THREAD_INTERRUPT tool of the current turn.

    At the trip the thread is interrupted (the client's THREAD_INTERRUPT) and the result is
    ``interrupted(call)``; a call of a tripped turn is refused the same way without running.
    Outside a turn, ``body()`` runs as it is.
    """
    turn = _TURN.get()
    if turn is None:
        return body()
    if turn.interrupted:
        return interrupted(turn.refusal(name, call_id))
    record = turn._begin(name, call_id)
    stopped = False
    try:
        with attach(
            behavior=InterruptBehavior.THREAD_INTERRUPT,
            tool_name=name,
            tool_call_id=call_id,
            address=turn.address,
            token=turn.token,
        ) as run:
            token = _CALL.set(_CallScope(turn, name, call_id, run.signal))
            try:
                return body()
            finally:
                _CALL.reset(token)
    except CancelledExecution:
        stopped = True
        return interrupted(
            InterruptedCall(name, call_id, True, interrupted_text(turn.signal.cancellation, started=True))
        )
    finally:
        turn._end(record, interrupted=stopped)


async def call_async(
    name: str, call_id: str, body: Callable[[], Awaitable[T]], interrupted: Callable[[InterruptedCall], T]
) -> T:
    """Run an async tool's ``body`` as a COOPERATIVE tool of the current turn, in a task the
    adapter cancels at the trip; then the result is ``interrupted(call)``."""
    turn = _TURN.get()
    if turn is None:
        return await body()
    if turn.interrupted:
        return interrupted(turn.refusal(name, call_id))
    record = turn._begin(name, call_id)
    stopped = False
    try:
        async with aio_attach(
            behavior=InterruptBehavior.COOPERATIVE,
            tool_name=name,
            tool_call_id=call_id,
            address=turn.address,
            token=turn.token,
        ) as run:
            context = contextvars.copy_context()
            context.run(_CALL.set, _CallScope(turn, name, call_id, run.signal))

            async def invoke() -> T:
                return await body()

            inner = asyncio.get_running_loop().create_task(invoke(), context=context)
            loop = asyncio.get_running_loop()
            run.signal.on_cancel(lambda: loop.call_soon_threadsafe(inner.cancel))
            try:
                return await inner
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not (inner.cancelled() and run.signal.is_cancelled) or (
                    current is not None and current.cancelling()
                ):
                    raise
                stopped = True
                return interrupted(
                    InterruptedCall(name, call_id, True, interrupted_text(run.signal.cancellation, started=True))
                )
    finally:
        turn._end(record, interrupted=stopped)


# -- subprocesses ----------------------------------------------------------------------


def _tripped(signal: CancellationSignal, scope: _CallScope | None) -> bool:
    return signal.is_cancelled or (scope is not None and scope.tripped())


def _kill_window(grace: timedelta | None, kill_after: timedelta | float | None) -> float:
    grace_s = grace.total_seconds() if grace is not None else 0.5
    if kill_after is None:
        kill_s = grace_s
    elif isinstance(kill_after, timedelta):
        kill_s = kill_after.total_seconds()
    else:
        kill_s = float(kill_after)
    return grace_s + kill_s + UNWIND_MARGIN


@contextlib.contextmanager
def popen(
    args: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    kill_after: timedelta | float | None = None,
    **kwargs: Any,
) -> Iterator[ManagedProcess]:
    """Start a subprocess of the current tool call in a process group of its own, registered
    with the daemon: at the trip the daemon kills the group and every descendant that left
    it (``setsid`` grandchildren too), SIGKILL after ``kill_after`` (default: the grace).

    The group is registered by an EXTERNALLY_TERMINATED tool ``<tool>:process`` with the
    call's id (a THREAD_INTERRUPT or COOPERATIVE run may not register process groups).
    Outside a turn the child still gets its own group, killed when the block ends.
    """
    scope = _CALL.get()
    if scope is None:
        local = attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, source=CancellationSource())
    else:
        local = attach(
            behavior=InterruptBehavior.EXTERNALLY_TERMINATED,
            tool_name=f"{scope.name}:process",
            tool_call_id=scope.call_id,
            address=scope.turn.address,
            token=scope.turn.token,
        )
    with local as run:
        # The tool call's THREAD_INTERRUPT is held back from before the fork until the
        # group is tracked and the `finally` below is in place (the registrar's popen holds
        # it only until its own `with`, whose __exit__ would SIGKILL the group itself and
        # unregister it, orphaning a setsid grandchild the daemon has not killed yet).
        deferral = defer_interrupts()
        try:
            with run.registrar.popen(args, kill_after=kill_after, **kwargs) as process:
                try:
                    if scope is not None:
                        window = _kill_window(run.grace, kill_after)
                        scope.turn._track(run.tool_id, process.terminator, process.pgid, window)
                    deferral.end()  # an interrupt that came while spawning lands here
                    yield process
                finally:
                    if _tripped(run.signal, scope) and process.process.poll() is None:
                        # The daemon is killing the tree: a SIGKILL of the leader from here could
                        # orphan a setsid grandchild before the daemon has seen it. Let it finish.
                        # (The trip may be known here before this run's own cancel has come.)
                        with contextlib.suppress(Exception):
                            process.process.wait(_kill_window(run.grace, kill_after))
        finally:
            deferral.end()  # popen failed before its block: let a held-back interrupt through


@contextlib.asynccontextmanager
async def create_subprocess_exec(
    program: str | os.PathLike[str],
    *args: str | os.PathLike[str],
    kill_after: timedelta | float | None = None,
    **kwargs: Any,
) -> AsyncIterator[AsyncManagedProcess]:
    """The async :func:`popen`: ``asyncio.create_subprocess_exec`` in a registered group."""
    scope = _CALL.get()
    if scope is None:
        local = aio_attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, source=CancellationSource())
    else:
        local = aio_attach(
            behavior=InterruptBehavior.EXTERNALLY_TERMINATED,
            tool_name=f"{scope.name}:process",
            tool_call_id=scope.call_id,
            address=scope.turn.address,
            token=scope.turn.token,
        )
    async with local as run:
        window = _kill_window(run.grace, kill_after)

        async def spawn() -> AsyncManagedProcess:
            process = await run.registrar.create_subprocess_exec(program, *args, kill_after=kill_after, **kwargs)
            if scope is not None:
                scope.turn._track(run.tool_id, process.terminator, process.pgid, window)
            return process

        # The adapter cancels the tool's task at the trip, the very moment the daemon starts
        # killing the tool's trees. A cancel landing between the fork and the tracking would
        # have the helper kill the leader (or its group) itself, orphaning a setsid grandchild
        # the daemon never saw, and leave the turn blind to the group. So the spawn, the
        # registration and the tracking run to their end whatever comes (the registrar's own
        # hold then sees no cancel), and a cancel held back meanwhile is raised below, inside
        # the `finally` that waits for the daemon's kill.
        process, cancelled = await finish_despite_cancels(spawn())
        async with process:
            try:
                if cancelled:
                    raise asyncio.CancelledError
                yield process
            finally:
                if _tripped(run.signal, scope) and process.returncode is None:
                    await _outlast_cancels(process.process.wait(), window)


async def _outlast_cancels(waiting: Awaitable[object], timeout: float) -> None:
    """Await ``waiting`` up to ``timeout`` even while this task is being cancelled (the tool's
    task is cancelled at the same trip the daemon kills its processes for); a cancel that
    arrives meanwhile is raised after."""
    try:
        _, cancelled = await finish_despite_cancels(asyncio.wait_for(waiting, timeout))
    except TimeoutError:
        return  # not cancelled meanwhile (a held cancel is raised instead): give up waiting
    if cancelled:
        raise asyncio.CancelledError


# -- MCP -------------------------------------------------------------------------------


def bridge_stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    bridge: str = "interrupt-sidecar",
    options: Sequence[str] = (),
) -> tuple[str, list[str]]:
    """The command line that runs the stdio MCP server ``command args`` behind
    ``interrupt-sidecar mcp`` (``options`` go to the bridge, before ``--``)."""
    return bridge, ["mcp", *options, "--", command, *args]
