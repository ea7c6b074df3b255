"""The tool's view of its execution's single-shot cancellation signal."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
from collections.abc import Callable, Generator
from datetime import UTC, datetime, timedelta
from typing import Any

from interrupt_sidecar_client._errors import CancelledExecution
from interrupt_sidecar_client._types import Cancellation, InterruptReason

__all__ = ["NOOP_SIGNAL", "CancellationSignal", "CancellationSource", "Listener"]

log = logging.getLogger(__name__)

#: A cancellation listener: called once, with no arguments (read the signal for the reason).
Listener = Callable[[], object]


class _ReadOnlyEvent(threading.Event):
    """A ``threading.Event`` that only its signal can set, and nobody can clear.

    It is set when the trip's listeners have run. On the thread running them it reads as
    set already: a listener that waits on it would otherwise wait for itself.
    """

    def __init__(self) -> None:
        super().__init__()
        #: ``threading.get_ident()`` of the thread running the trip's listeners, while it does.
        self._tripper: int | None = None

    def is_set(self) -> bool:
        return super().is_set() or self._tripper == threading.get_ident()

    def wait(self, timeout: float | None = None) -> bool:
        if self._tripper == threading.get_ident():
            return True
        return super().wait(timeout)

    def set(self) -> None:
        raise TypeError("a CancellationSignal's event is read-only: it is set by the signal's trip")

    def clear(self) -> None:
        raise TypeError("a CancellationSignal's event is read-only: a tripped signal stays tripped")

    def _trip(self) -> None:
        threading.Event.set(self)


class CancellationSignal:
    """A read-only, single-shot view of an execution's cancellation.

    * Thread-safe: every member can be used from any thread, and from any event loop.
    * Single-shot: once cancelled it stays cancelled, with its first reason. There is no
      reset; a new turn is a new execution with a new signal.
    * Listeners (:meth:`on_cancel`) run once each, in registration order, on the thread
      that trips the signal; one registered after the trip runs at once, on the
      registering thread. A listener must be quick and non-blocking; one that raises is
      logged and does not stop the others.
    * Waiters wake after the listeners: :meth:`wait` (``await signal``) returns and
      :attr:`event` is set only once every listener registered before the trip has run,
      so code that waited for the cancel sees their effect. The state reads
      (:attr:`is_cancelled`, :attr:`cancellation`, :meth:`checkpoint`) show the trip from
      its first moment, before the listeners have run: wait rather than poll for that
      guarantee. A THREAD_INTERRUPT interrupt is fired by a listener the run registers
      when the block is entered, so code woken by it is not ordered after the tool's own
      listeners; it can ``signal.event.wait()`` for them.
    * A listener may use its signal: on the thread running the listeners the event reads
      as set and waits return at once (waiting there for the listeners after it would
      never end). A listener registered from another thread while the trip is under way
      runs at once on that thread, possibly before the trip's own listeners finish, and
      still exactly once.

    A tool gets its signal from ``attach(...)`` (``run.signal``). Outside an agent that
    is :data:`NOOP_SIGNAL`, which is never cancelled. For tests, :class:`CancellationSource`
    makes one you can trip.
    """

    __slots__ = ("_cancellation", "_event", "_keys", "_listeners", "_lock", "_waiters")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancellation: Cancellation | None = None
        # Insertion-ordered: the order listeners run in.
        self._listeners: dict[int, Listener] = {}
        # The wake-ups of async waits: run after the listeners, with the event.
        self._waiters: dict[int, Listener] = {}
        self._keys = itertools.count()
        self._event = _ReadOnlyEvent()

    # -- state -----------------------------------------------------------------

    @property
    def is_cancelled(self) -> bool:
        """True once the execution has been cancelled."""
        return self._cancellation is not None

    @property
    def reason(self) -> InterruptReason | None:
        """The first reason the execution was cancelled with; ``None`` while it is not."""
        cancellation = self._cancellation
        return cancellation.reason if cancellation is not None else None

    @property
    def detail(self) -> str:
        """The free-text detail of the interrupt ('' while not cancelled, or when none was given)."""
        cancellation = self._cancellation
        return cancellation.detail if cancellation is not None else ""

    @property
    def cancellation(self) -> Cancellation | None:
        """Everything known about the cancellation (reason, detail, trip time, grace deadline)."""
        return self._cancellation

    @property
    def event(self) -> threading.Event:
        """A ``threading.Event`` set at the trip: ``signal.event.wait(0.1)`` is an interruptible sleep.

        Set once the listeners registered before the trip have run (on the thread running
        them it reads as set already). Read-only: ``set()`` and ``clear()`` raise ``TypeError``.
        """
        return self._event

    def checkpoint(self) -> None:
        """Raise :class:`~interrupt_sidecar_client.CancelledExecution` if cancelled; otherwise do nothing."""
        cancellation = self._cancellation
        if cancellation is not None:
            raise CancelledExecution(cancellation)

    # -- waiting -----------------------------------------------------------------

    async def wait(self) -> Cancellation:
        """Wait until cancelled and return the cancellation.

        Returns once the listeners registered before the trip have run (at once if they
        have). Works on any event loop, whichever thread trips the signal. Combine with
        ``asyncio.timeout`` for a bounded wait.
        """
        if self._event.is_set():
            return self._cancelled()
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            # RuntimeError: the waiting loop has closed; nobody is left to wake.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, woken)

        with self._lock:
            # Checked under the lock the trip sets the event under: no wake-up is missed.
            key = None if self._event.is_set() else next(self._keys)
            if key is not None:
                self._waiters[key] = wake
        if key is None:
            return self._cancelled()
        try:
            await woken
        finally:
            with self._lock:
                self._waiters.pop(key, None)
        return self._cancelled()

    def _cancelled(self) -> Cancellation:
        cancellation = self._cancellation
        assert cancellation is not None  # the event is only set after the trip
        return cancellation

    def __await__(self) -> Generator[Any, None, Cancellation]:
        """``await signal`` is ``await signal.wait()``."""
        return self.wait().__await__()

    # -- listeners ---------------------------------------------------------------

    def on_cancel(self, listener: Listener) -> None:
        """Run ``listener()`` at the trip, or now (on this thread) if the signal has tripped already."""
        self._add_listener(listener)

    def _add_listener(self, listener: Listener) -> int | None:
        """Add a listener; returns its key, or None when it ran at once (already tripped)."""
        with self._lock:
            if self._cancellation is None:
                key = next(self._keys)
                self._listeners[key] = listener
                return key
        _call(listener)
        return None

    def _add_listener_if_untripped(self, listener: Listener) -> int | None:
        """Add a listener unless the signal has tripped; returns its key, or None (not added, not run)."""
        with self._lock:
            if self._cancellation is not None:
                return None
            key = next(self._keys)
            self._listeners[key] = listener
            return key

    def _remove_listener(self, key: int | None) -> None:
        if key is not None:
            with self._lock:
                self._listeners.pop(key, None)

    # -- tripping (the client's side only) -------------------------------------------

    def _trip(self, cancellation: Cancellation) -> bool:
        """Trip the signal; True for the call that tripped it. Later calls change nothing.

        In order: the signal reads as cancelled; the listeners run; the waiters wake (the
        event is set, async waits are woken). Waking last is the point: code that waited
        for the cancel and goes on (to report, say) must find every listener registered
        before the trip run, however long this thread is descheduled in between.
        """
        with self._lock:
            if self._cancellation is not None:
                return False
            self._cancellation = cancellation
            # Take the listeners under the lock: one added from here on sees the trip and
            # runs itself (on the adding thread), so each listener runs exactly once.
            listeners = list(self._listeners.values())
            self._listeners.clear()
            self._event._tripper = threading.get_ident()
        try:
            for listener in listeners:
                _call(listener)
        finally:
            # _call contains what a listener raises short of a BaseException (KeyboardInterrupt
            # from the THREAD_INTERRUPT SIGINT, say): whatever happened, the waiters must wake.
            with self._lock:
                self._event._tripper = None
                self._event._trip()
                waiters = list(self._waiters.values())
                self._waiters.clear()
            for wake in waiters:
                _call(wake)
        return True

    def __repr__(self) -> str:
        cancellation = self._cancellation
        state = f"cancelled {cancellation.reason.name}" if cancellation is not None else "not cancelled"
        return f"<{type(self).__name__} {state}>"


class _NoopCancellationSignal(CancellationSignal):
    """Never cancelled. Listeners are dropped, since they could never run."""

    __slots__ = ()

    def _add_listener(self, listener: Listener) -> int | None:
        return None

    def _add_listener_if_untripped(self, listener: Listener) -> int | None:
        return None

    def _trip(self, cancellation: Cancellation) -> bool:
        return False


#: The signal of a tool that runs outside any agent: never cancelled, so a tool can
#: always poll without checking whether it has a signal.
NOOP_SIGNAL: CancellationSignal = _NoopCancellationSignal()


class CancellationSource:
    """Owns a :class:`CancellationSignal` and can trip it: an in-process stand-in for the daemon.

    For tests of tools (``attach(source=...)``) and for code that wants the signal
    semantics without a sidecar. ``cancel`` is thread-safe and single-shot.
    """

    __slots__ = ("_grace", "signal")

    def __init__(self, *, grace: timedelta = timedelta(milliseconds=500)) -> None:
        self.signal = CancellationSignal()
        self._grace = grace

    @property
    def grace(self) -> timedelta:
        """How long after the trip tools get to unwind (used for process-group escalation)."""
        return self._grace

    def cancel(self, reason: InterruptReason = InterruptReason.USER_SIGINT, detail: str = "") -> bool:
        """Trip the signal. True when this call tripped it; False when it had tripped already."""
        now = datetime.now(UTC)
        return self.signal._trip(Cancellation(InterruptReason(reason), detail, now, now + self._grace))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _call(listener: Listener) -> None:
    # A failing listener must not stop the ones after it, nor the trip itself.
    try:
        listener()
    except Exception:
        log.exception("cancellation listener %r failed", listener)
