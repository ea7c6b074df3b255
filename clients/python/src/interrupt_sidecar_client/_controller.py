"""The cooperative-cancellation seed's ``InterruptController`` protocol, driven by the sidecar.

An agent framework built on that protocol (``request``, ``clear``, ``is_set``, ``reason``,
``check``, ``event``) gets a controller whose flag is the sidecar's execution: any
interrupt of it — this controller's ``request``, a Ctrl+C handler elsewhere, a parent's
cascade, a budget, a shutdown — sets ``event``, and ``request`` trips the execution for
every tool attached to it, in any process.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading
from collections.abc import Mapping
from datetime import timedelta
from types import TracebackType

from interrupt_sidecar_client._coordinator import AsyncCoordinator
from interrupt_sidecar_client._errors import DeadlineExceeded, SidecarError
from interrupt_sidecar_client._loop import shared_loop
from interrupt_sidecar_client._types import BegunExecution, EventKind, InterruptReason, reason_from_pb

__all__ = ["SidecarInterruptController"]

log = logging.getLogger(__name__)


class SidecarInterruptController:
    """An ``InterruptController`` whose flag is a sidecar execution's cancellation.

    Two modes:

    * **owned** (no ``execution_id``): the controller begins an execution now and a fresh
      one at every ``clear()`` — one per turn, ending the previous one, so a stale
      request can never abort the next turn's tools. Hand ``attach_token`` /
      ``tool_env()`` to tool processes of the current turn.
    * **bound** (``execution_id=...``): follows an execution someone else began.
      ``clear()`` clears the flag and stops following it; ``bind()`` follows the next.

    The flag is set by the sidecar (a watch of the execution) and at once by this
    controller's own ``request``. Thread-safe; the blocking calls (``request``, ``clear``,
    ``bind``, ``close``) make RPCs.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        execution_id: str | None = None,
        context_id: str = "",
        parent_execution_id: str = "",
        grace: timedelta | float | None = None,
        budget: timedelta | float | None = None,
        lease_ttl: timedelta | float | None = None,
        labels: Mapping[str, str] | None = None,
        default_reason: InterruptReason = InterruptReason.USER_SIGINT,
        timeout: float | None = 10.0,
    ) -> None:
        self._coordinator = AsyncCoordinator(address, timeout=timeout)
        self._loop = shared_loop()
        self._timeout = timeout
        self._default_reason = InterruptReason(default_reason)
        self._begin_execution = functools.partial(
            self._coordinator.begin,
            context_id=context_id,
            parent_execution_id=parent_execution_id,
            grace=grace,
            budget=budget,
            lease_ttl=lease_ttl,
            labels=labels,
        )
        # Reentrant: request() may be called from a SIGINT handler that interrupted a
        # method of this controller on the same thread.
        self._lock = threading.RLock()
        self._event = threading.Event()
        self._reason: str | None = None
        self._interrupt_reason: InterruptReason | None = None
        # Bumped whenever the controller moves to another execution (or none): a watch
        # of an older one must not set the flag of the new turn.
        self._generation = 0
        self._execution_id: str | None = None
        self._current: BegunExecution | None = None
        self._watch: concurrent.futures.Future[None] | None = None
        self._owned = execution_id is None
        self._closed = False
        if execution_id is None:
            self._begin()
        else:
            self.bind(execution_id)

    # -- the seed's protocol ---------------------------------------------------------

    def request(self, reason: str | InterruptReason = "user") -> None:
        """Interrupt: trip the current execution through the sidecar, and set the flag.

        ``reason`` is free text (it becomes the interrupt's detail, under the controller's
        ``default_reason``) or an :class:`InterruptReason` (or its name, any case).
        """
        wire_reason, detail = self._wire_reason(reason)
        with self._lock:
            execution_id, generation = self._execution_id, self._generation
        if execution_id is None:
            self._set(generation, wire_reason, detail)
            return
        outcomes = self._loop.run(self._coordinator.interrupt(execution_id, reason=wire_reason, detail=detail))
        outcome = outcomes[0] if outcomes else None
        if outcome is not None and not outcome.tripped:
            # Someone tripped it first: the watch reports its reason; until then, show theirs.
            self._set(generation, outcome.reason or wire_reason, "")
        else:
            self._set(generation, wire_reason, detail)

    def clear(self) -> None:
        """Start afresh: a new execution (owned mode) or none (bound mode), with the flag clear."""
        if self._owned:
            with self._lock:
                previous = self._execution_id
                self._unbind()
            if previous is not None:
                self._end_quietly(previous)
            self._begin()
        else:
            with self._lock:
                self._unbind()

    def is_set(self) -> bool:
        """True once the current execution has been interrupted."""
        return self._event.is_set()

    @property
    def reason(self) -> str | None:
        """Why, as text (the request's text, or the interrupt's detail or reason name); None if not set."""
        with self._lock:
            return self._reason if self._event.is_set() else None

    def check(self) -> None:
        """Raise ``InterruptedError`` if interrupted."""
        if self._event.is_set():
            raise InterruptedError(f"cancelled: {self.reason}")

    @property
    def event(self) -> threading.Event:
        """The flag as a ``threading.Event``, set at the interrupt: tools wait on or poll it."""
        return self._event

    # -- beyond the seed -------------------------------------------------------------

    @property
    def interrupt_reason(self) -> InterruptReason | None:
        """The sidecar's reason for the interrupt; None if not set."""
        with self._lock:
            return self._interrupt_reason if self._event.is_set() else None

    @property
    def execution_id(self) -> str | None:
        """The execution the controller follows now (None when unbound)."""
        return self._execution_id

    @property
    def execution(self) -> BegunExecution | None:
        """The current turn's execution, in owned mode."""
        return self._current

    def tool_env(self) -> dict[str, str]:
        """``INTERRUPT_SIDECAR_ADDRESS``/``_TOKEN`` for a tool process of the current turn (owned mode)."""
        current = self._current
        if current is None:
            raise RuntimeError("only a controller that began its execution has an attach token to hand out")
        return current.tool_env()

    def bind(self, execution_id: str) -> None:
        """Follow ``execution_id`` from now on (flag cleared, then set if it has tripped already)."""
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._lock:
            self._unbind()
            self._execution_id = execution_id
            generation = self._generation
            self._watch = self._loop.submit(self._follow(generation, execution_id, ready))
        # Wait for the watch's snapshot, so a trip that happened before is reflected now.
        try:
            ready.result(self._timeout)
        except TimeoutError:
            raise DeadlineExceeded(f"no snapshot of execution {execution_id!r} within {self._timeout}s") from None

    def close(self) -> None:
        """Stop following; in owned mode, end the current execution. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            previous = self._execution_id if self._owned else None
            self._unbind()
        if previous is not None:
            self._end_quietly(previous)
        self._loop.run(self._coordinator.close())

    def __enter__(self) -> SidecarInterruptController:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------

    def _begin(self) -> None:
        begun = self._loop.run(self._begin_execution())
        self._current = begun
        self.bind(begun.execution_id)

    def _unbind(self) -> None:
        # Caller holds the lock.
        self._generation += 1
        self._execution_id = None
        self._event.clear()
        self._reason = None
        self._interrupt_reason = None
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()

    def _set(self, generation: int, reason: InterruptReason, detail: str) -> None:
        with self._lock:
            if generation != self._generation or self._event.is_set():
                return  # another turn by now, or set already: the first reason stays
            self._interrupt_reason = reason
            self._reason = detail or reason.name
            self._event.set()

    async def _follow(self, generation: int, execution_id: str, ready: concurrent.futures.Future[None]) -> None:
        try:
            async for event in self._coordinator.watch(execution_id):
                if event.kind is EventKind.SNAPSHOT and event.snapshot is not None:
                    if event.snapshot.cancelled:
                        self._set(generation, event.snapshot.reason or self._default_reason, event.snapshot.detail)
                elif event.kind is EventKind.TRIPPED:
                    tripped = event.proto.tripped
                    self._set(generation, reason_from_pb(tripped.reason) or self._default_reason, tripped.detail)
                if not ready.done():
                    ready.set_result(None)
                if event.kind is EventKind.ENDED:
                    return
        except SidecarError as error:
            if not ready.done():
                ready.set_exception(error)
            else:
                log.warning("stopped following execution %r: %s", execution_id, error)
        finally:
            if not ready.done():
                ready.set_exception(SidecarError(f"the watch of execution {execution_id!r} ended before its snapshot"))

    def _end_quietly(self, execution_id: str) -> None:
        try:
            self._loop.run(self._coordinator.end(execution_id))
        except SidecarError as error:
            log.warning("could not end execution %r: %s", execution_id, error)

    def _wire_reason(self, reason: str | InterruptReason) -> tuple[InterruptReason, str]:
        if isinstance(reason, InterruptReason):
            return reason, ""
        try:
            return InterruptReason[reason.strip().upper()], ""
        except KeyError:
            return self._default_reason, reason
