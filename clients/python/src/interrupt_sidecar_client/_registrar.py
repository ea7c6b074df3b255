"""The tool's terminator registrar (async core), and what runs callback terminators.

A registrar keeps the callables behind the tool's callback terminators and forwards
every registration to a *backend*: the tool's stream to the daemon, or a local backend
that runs terminators at the trip of an in-process signal (no-op mode, tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import os
import signal as signal_module
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from interrupt_sidecar_client._errors import (
    AlreadyExists,
    ConnectionLost,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    SidecarError,
)
from interrupt_sidecar_client._process import AsyncManagedProcess, create_subprocess_exec
from interrupt_sidecar_client._signal import CancellationSignal
from interrupt_sidecar_client._terminator import (
    CallbackSpec,
    ProcessGroupSpec,
    RegistrarBackend,
    Terminator,
    TerminatorCallback,
    TerminatorKind,
    TerminatorSpec,
)
from interrupt_sidecar_client._types import InterruptBehavior

__all__ = ["AsyncTerminatorRegistrar", "LocalBackend", "TerminatorRunner"]

log = logging.getLogger(__name__)


def describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


#: How long one running (awaitable) terminator holds up the next one, at most.
SEQUENTIAL_WINDOW = 0.25


class TerminatorRunner:
    """Runs callback terminators off the stream reader, in the order they are asked for.

    Runs on the client's event loop, one terminator after the other: a plain callable is
    called there (it must be quick); an awaitable it returns is awaited in a task of its
    own, and the next terminator starts when that task is done — or after
    :data:`SEQUENTIAL_WINDOW` seconds at most, so a terminator that hangs holds up the
    others by that much only, while it finishes in the background. The outcome of each
    is passed to ``report`` (the stream's ``terminator_result``).
    """

    def __init__(
        self,
        lookup: Callable[[str], TerminatorCallback | None],
        report: Callable[[str, str], Awaitable[None]],
    ) -> None:
        self._lookup = lookup
        self._report = report
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        # Strong references: the loop only keeps weak ones to tasks.
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, terminator_id: str) -> None:
        """Queue one run. Call on the loop's thread."""
        self._queue.put_nowait(terminator_id)
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work(), name="interrupt-sidecar terminators")

    async def _work(self) -> None:
        while True:
            terminator_id = await self._queue.get()
            try:
                await self._start(terminator_id)
            finally:
                self._queue.task_done()

    async def _start(self, terminator_id: str) -> None:
        callback = self._lookup(terminator_id)
        if callback is None:
            self._spawn(self._report(terminator_id, f"terminator {terminator_id!r} is not registered by this tool"))
            return
        try:
            result = callback()
        except Exception as error:
            log.warning("terminator %r failed: %s", terminator_id, describe(error))
            self._spawn(self._report(terminator_id, describe(error)))
            return
        if inspect.isawaitable(result):
            task = self._spawn(self._finish(terminator_id, result))
            await asyncio.wait({task}, timeout=SEQUENTIAL_WINDOW)
        else:
            self._spawn(self._report(terminator_id, ""))

    async def _finish(self, terminator_id: str, awaitable: Awaitable[Any]) -> None:
        try:
            await awaitable
        except Exception as error:
            log.warning("terminator %r failed: %s", terminator_id, describe(error))
            await self._report(terminator_id, describe(error))
        else:
            await self._report(terminator_id, "")

    def _spawn(self, coroutine: Awaitable[None]) -> asyncio.Task[None]:
        async def run() -> None:
            try:
                await coroutine
            except Exception:  # a report that cannot be written must not kill the runner
                log.debug("could not report a terminator result", exc_info=True)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def settle(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until every run asked for so far has started and its
        result has been reported: the run's end half-closes the stream, after which a
        report could no longer be written (a worker interrupted at the trip leaves its
        block while its terminators are still running)."""
        if self._worker is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._queue.join()
                while self._tasks:
                    await asyncio.wait(set(self._tasks))

    async def close(self) -> None:
        """Start every run asked for so far, then stop. Started terminators finish on their own."""
        if self._worker is None:
            return
        if not self._worker.done():
            # Bounded: each start takes SEQUENTIAL_WINDOW at most.
            await self._queue.join()
        self._worker.cancel()


class AsyncTerminatorRegistrar:
    """Registers terminators for the tool's run (``run.registrar``); the async core.

    Only THREAD_INTERRUPT tools may register callbacks, and only EXTERNALLY_TERMINATED
    tools process groups too; otherwise, and once the registrar is closed, ``register``
    raises :class:`FailedPrecondition` (checked here, and by the daemon). Registering
    after the trip is allowed: the terminator runs at once. ``unregister`` is idempotent.

    ``async with registrar:`` closes it on exit: its live terminators are unregistered
    and later registrations refused. The run closes it anyway when it unwinds.
    """

    def __init__(self, behavior: InterruptBehavior, backend: RegistrarBackend) -> None:
        self._behavior = behavior
        self._backend = backend
        self._callbacks: dict[str, TerminatorCallback] = {}
        # Insertion-ordered, like the daemon's: the order terminators run in.
        self._live: dict[str, Terminator] = {}
        self._ids = itertools.count(1)
        self._closed = False

    @property
    def behavior(self) -> InterruptBehavior:
        """The behaviour the tool declared; decides what may be registered."""
        return self._behavior

    @property
    def closed(self) -> bool:
        """True once closed: by ``close()``, or because the tool's run unwound."""
        return self._closed

    @property
    def terminators(self) -> Sequence[Terminator]:
        """The live terminators, in registration order."""
        return tuple(self._live.values())

    def _callback_for(self, terminator_id: str) -> TerminatorCallback | None:
        return self._callbacks.get(terminator_id)

    # -- registration ------------------------------------------------------------

    async def register(self, callback: TerminatorCallback, *, terminator_id: str | None = None) -> Terminator:
        """Register a callback terminator, run once when the execution trips (at once if it has).

        Returns when the daemon has acknowledged it. ``terminator_id`` defaults to a fresh one.
        """
        if not callable(callback):
            raise TypeError(f"a terminator must be callable, got {callback!r}")
        self._check(TerminatorKind.CALLBACK)
        terminator = Terminator(self._new_id("callback", terminator_id), TerminatorKind.CALLBACK)
        # The callable goes in first: the daemon may send run_terminator (registration
        # after the trip) before, or right after, it acknowledges the registration.
        self._callbacks[terminator.terminator_id] = callback
        await self._add(terminator, CallbackSpec())
        return terminator

    async def register_process_group(
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
        self._check(TerminatorKind.PROCESS_GROUP)
        if pgid <= 1:
            raise InvalidArgument(f"process group {pgid} cannot be a terminator: a pgid must be greater than 1")
        if isinstance(kill_after, int | float):
            kill_after = timedelta(seconds=kill_after)
        terminator = Terminator(self._new_id(f"pgid-{pgid}", terminator_id), TerminatorKind.PROCESS_GROUP, pgid=pgid)
        await self._add(terminator, ProcessGroupSpec(pgid, int(signal), kill_after))
        return terminator

    async def unregister(self, terminator: Terminator | str) -> None:
        """Unregister a terminator so it no longer runs. Idempotent; a no-op once closed."""
        terminator_id = terminator if isinstance(terminator, str) else terminator.terminator_id
        if self._closed:
            return
        self._live.pop(terminator_id, None)
        self._callbacks.pop(terminator_id, None)
        await self._backend.unregister(terminator_id)

    @asynccontextmanager
    async def registered(
        self, callback: TerminatorCallback, *, terminator_id: str | None = None
    ) -> AsyncIterator[Terminator]:
        """``async with registrar.registered(cb):`` — registered inside the block, unregistered after."""
        terminator = await self.register(callback, terminator_id=terminator_id)
        try:
            yield terminator
        finally:
            await self._unregister_quietly(terminator)

    async def create_subprocess_exec(
        self,
        program: str | os.PathLike[str],
        *args: str | os.PathLike[str],
        signal: int = signal_module.SIGTERM,
        kill_after: timedelta | float | None = None,
        terminator_id: str | None = None,
        **kwargs: Any,
    ) -> AsyncManagedProcess:
        """Start ``program`` in a new process group and register the group (EXTERNALLY_TERMINATED).

        A thin wrapper over ``asyncio.create_subprocess_exec`` (``start_new_session=True``);
        see :class:`~interrupt_sidecar_client.aio.AsyncManagedProcess`. A cancel of the
        calling task is held until the child is started and its group registered, then
        raised once the group is unregistered and SIGKILLed (as leaving ``async with`` does):
        asyncio's own cleanup of a cancelled spawn would kill the leader alone.
        """
        return await create_subprocess_exec(
            self, program, *args, signal=signal, kill_after=kill_after, terminator_id=terminator_id, **kwargs
        )

    async def close(self) -> None:
        """Unregister every live terminator and refuse later registrations. Idempotent."""
        if self._closed:
            return
        live = list(self._live)
        self._close_local()
        for terminator_id in live:
            try:
                await self._backend.unregister(terminator_id)
            except SidecarError as error:
                log.debug("unregistering %r on close: %s", terminator_id, error)

    def _close_local(self, *, forget: bool = True) -> None:
        """Close without telling the backend (the run's unwound closes it daemon-side).

        With ``forget=False`` the callables stay reachable: a run_terminator the daemon
        sent before it read the tool's unwound must still run the terminator it names.
        """
        self._closed = True
        self._live.clear()
        if forget:
            self._callbacks.clear()

    async def __aenter__(self) -> AsyncTerminatorRegistrar:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- internals ---------------------------------------------------------------

    def _check(self, kind: TerminatorKind) -> None:
        if self._closed:
            raise FailedPrecondition(
                "the terminator registrar is closed (the tool's run has unwound, or close() was called); "
                "terminators can only be registered during the run"
            )
        if kind is TerminatorKind.PROCESS_GROUP and not self._behavior.may_register_process_groups:
            raise FailedPrecondition(
                f"the tool declared {self._behavior.name}: only EXTERNALLY_TERMINATED tools "
                "may register process-group terminators"
            )
        if kind is TerminatorKind.CALLBACK and not self._behavior.may_register_callbacks:
            raise FailedPrecondition(
                f"the tool declared {self._behavior.name}: only THREAD_INTERRUPT and "
                "EXTERNALLY_TERMINATED tools may register terminators"
            )

    def _new_id(self, prefix: str, requested: str | None) -> str:
        if requested is None:
            while True:
                candidate = f"{prefix}-{next(self._ids)}"
                if candidate not in self._live:
                    return candidate
        if not requested:
            raise InvalidArgument("a terminator id cannot be empty")
        if requested in self._live:
            raise AlreadyExists(f"terminator {requested!r} is already registered", terminator_id=requested)
        return requested

    async def _add(self, terminator: Terminator, spec: TerminatorSpec) -> None:
        terminator_id = terminator.terminator_id
        self._live[terminator_id] = terminator
        try:
            await self._backend.register(terminator_id, spec)
        except BaseException as error:
            self._live.pop(terminator_id, None)
            self._callbacks.pop(terminator_id, None)
            if isinstance(error, asyncio.CancelledError):
                # The daemon may have taken it before we stopped waiting: take it back.
                _spawn_quiet(self._backend.unregister(terminator_id))
            raise

    async def _unregister_quietly(self, terminator: Terminator) -> None:
        try:
            await self.unregister(terminator)
        except (FailedPrecondition, ConnectionLost) as error:
            log.debug("unregistering %r: %s", terminator.terminator_id, error)


_background: set[asyncio.Task[None]] = set()


def _spawn_quiet(coroutine: Awaitable[None]) -> None:
    async def run() -> None:
        try:
            await coroutine
        except Exception:
            log.debug("background unregister failed", exc_info=True)

    task = asyncio.get_running_loop().create_task(run())
    _background.add(task)
    task.add_done_callback(_background.discard)


class LocalBackend:
    """Terminators without a daemon, run at the trip of an in-process signal.

    Used in no-op mode (the signal never trips, so nothing ever runs) and with
    ``attach(source=CancellationSource())``. Like the daemon: callbacks and process
    groups run once, in registration order, at the trip, or at once when registered
    after it. Process groups get ``signal`` at the trip and SIGKILL after ``kill_after``
    (default: the source's grace) — best-effort, without the daemon's identity pinning.
    """

    def __init__(self, signal: CancellationSignal, runner: TerminatorRunner, grace: timedelta) -> None:
        self._loop = asyncio.get_running_loop()
        self._runner = runner
        self._grace = grace
        self._lock = threading.Lock()
        self._specs: dict[str, TerminatorSpec] = {}
        self._fired = False
        self._signal = signal
        self._listener = signal._add_listener(self._tripped)

    def close(self) -> None:
        """Stop following the signal (a source may outlive many runs)."""
        self._signal._remove_listener(self._listener)
        with self._lock:
            self._specs.clear()

    async def register(self, terminator_id: str, spec: TerminatorSpec) -> None:
        if isinstance(spec, ProcessGroupSpec):
            _check_local_group(spec.pgid)
        with self._lock:
            run_now = self._fired
            if not run_now:
                self._specs[terminator_id] = spec
        if run_now:
            self._run(terminator_id, spec)

    async def unregister(self, terminator_id: str) -> None:
        with self._lock:
            self._specs.pop(terminator_id, None)

    def _tripped(self) -> None:
        # Runs on whichever thread tripped the signal: hand the runs to the loop, in order.
        with self._lock:
            self._fired = True
            to_run = list(self._specs.items())
            self._specs.clear()
        for terminator_id, spec in to_run:
            try:
                self._loop.call_soon_threadsafe(self._run, terminator_id, spec)
            except RuntimeError:  # the loop has closed: the run is long over
                return

    def _run(self, terminator_id: str, spec: TerminatorSpec) -> None:
        if isinstance(spec, CallbackSpec):
            self._runner.submit(terminator_id)
            return
        _signal_group(spec.pgid, spec.signal)
        kill_after = spec.kill_after if spec.kill_after is not None else self._grace
        self._loop.call_later(kill_after.total_seconds(), _signal_group, spec.pgid, signal_module.SIGKILL)


def _check_local_group(pgid: int) -> None:
    if pgid == os.getpgrp():
        raise InvalidArgument(f"process group {pgid} is this process's own group; refusing to register it")
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        raise NotFound(f"process group {pgid} does not exist") from None
    except PermissionError:
        pass  # it exists; whether it may be signalled shows at the trip


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass  # already gone
    except OSError as error:
        log.warning("could not signal process group %d with %d: %s", pgid, signum, error)
