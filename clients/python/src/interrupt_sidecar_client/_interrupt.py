"""THREAD_INTERRUPT the Python way: interrupt whatever is running the tool.

* async (``aio.attach``): the task that entered the ``async with`` block is cancelled
  (``Task.cancel``); leaving the block turns that ``CancelledError`` into
  ``CancelledExecution``, the way ``asyncio.timeout`` turns it into ``TimeoutError``.
* sync, main thread: a real SIGINT is sent to the main thread (``signal.pthread_kill``),
  so a blocking call (``time.sleep``, ``Lock.acquire``, ``Popen.wait``, ``select``…)
  returns with EINTR and the handler this module installs for the block raises
  ``CancelledExecution``. The SIGINT is sent again (backing off to every 100 ms) until
  the handler has run, because one that lands just before a blocking call begins does
  not end it. A SIGINT that is not ours goes to the previous handler; once ours has been
  fired, every SIGINT until the block ends is taken for ours.
* sync, other threads: ``ThreadInterrupted`` is raised in the thread with
  ``PyThreadState_SetAsyncExc``. CPython delivers it at the thread's next bytecode, so a
  thread blocked inside one C call (``time.sleep(30)``, ``socket.recv``) only sees it
  when that call returns: register a terminator that unblocks it, or wait on
  ``signal.event`` instead.

Every interrupter fires at most once and only while armed (inside the block); an
interrupt that has not been delivered when the block ends is withdrawn.

A thread can hold its interrupts back over a critical section with :func:`defer_interrupts`
(the managed-process helpers do, from the fork until the child's group is registered and
its owner's cleanup is in place): an asynchronous exception can land at any bytecode, and
one landing between the fork and the registration would leave a child nobody kills.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import signal as signal_module
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from interrupt_sidecar_client._errors import CancelledExecution, ThreadInterrupted
from interrupt_sidecar_client._signal import CancellationSignal
from interrupt_sidecar_client._types import Cancellation

log = logging.getLogger(__name__)

_CANCEL_MESSAGE = "interrupt-sidecar: the execution was cancelled (THREAD_INTERRUPT)"


class Interrupter(Protocol):
    def arm(self) -> None:
        """Allow interrupts (on the worker, entering the block)."""

    def interrupt(self) -> None:
        """Interrupt the worker if armed; at most once. Any thread."""

    def disarm(self) -> bool:
        """Withdraw (on the worker, leaving the block); True when an interrupt was fired. Idempotent."""


class InterruptScope:
    """Connects a signal's trip to an interrupter for the duration of a block."""

    def __init__(self, signal: CancellationSignal, interrupter: Interrupter) -> None:
        self._signal = signal
        self._interrupter = interrupter
        self._key: int | None = None

    def enter(self) -> Cancellation | None:
        """Arm. Returns the cancellation when the signal had tripped already (nothing is armed then)."""
        self._interrupter.arm()
        # Added only if untripped: a listener running right here, on the worker, would
        # interrupt the very code that is setting the interrupt up.
        self._key = self._signal._add_listener_if_untripped(self._interrupter.interrupt)
        if self._key is None:
            self._interrupter.disarm()
            return self._signal.cancellation
        return None

    def exit(self) -> bool:
        """Disarm; True when the worker was interrupted (or an interrupt was withdrawn)."""
        self._signal._remove_listener(self._key)
        return self._interrupter.disarm()


class TaskInterrupter:
    """Cancels one asyncio task. All state changes happen on the task's loop."""

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self._task = task
        self._loop = task.get_loop()
        self._armed = False
        self._fired = False
        self._disarmed = False
        #: ``task.cancelling()`` when armed: more than that at the end means someone else cancelled too.
        self.cancelling_at_arm = 0

    def arm(self) -> None:
        self.cancelling_at_arm = self._task.cancelling()
        self._armed = True

    def interrupt(self) -> None:
        with contextlib.suppress(RuntimeError):  # RuntimeError: the loop has closed
            self._loop.call_soon_threadsafe(self._fire)

    def _fire(self) -> None:
        if self._armed and not self._fired and not self._task.done():
            self._fired = True
            self._task.cancel(msg=_CANCEL_MESSAGE)

    def disarm(self) -> bool:
        if not self._disarmed:
            self._disarmed = True
            self._armed = False
            if self._fired:
                # Balance our cancel() whether or not its CancelledError arrived.
                self._task.uncancel()
        return self._fired

    @property
    def task(self) -> asyncio.Task[Any]:
        return self._task


def _set_async_exc() -> Callable[[int, object], int]:
    function = ctypes.pythonapi.PyThreadState_SetAsyncExc
    function.argtypes = [ctypes.c_ulong, ctypes.py_object]
    function.restype = ctypes.c_int

    def call(ident: int, exception: object) -> int:
        # ctypes.py_object() is NULL, which withdraws a pending exception.
        argument = ctypes.py_object() if exception is None else ctypes.py_object(exception)
        return int(function(ident, argument))

    return call


_SET_ASYNC_EXC = _set_async_exc()


# The ThreadInterrupters armed on each thread, for defer_interrupts(). Only the thread
# itself arms, disarms and defers, so the lists need no lock.
_ARMED_HERE = threading.local()


def _armed_here() -> list[ThreadInterrupter]:
    armed: list[ThreadInterrupter] | None = getattr(_ARMED_HERE, "interrupters", None)
    if armed is None:
        armed = _ARMED_HERE.interrupters = []
    return armed


class InterruptDeferral:
    """This thread's THREAD_INTERRUPT held back until :meth:`end` (see :func:`defer_interrupts`)."""

    def __init__(self, interrupters: list[ThreadInterrupter]) -> None:
        self._interrupters = interrupters
        self._ended = False

    def end(self) -> None:
        """Let interrupts through again; raise the one that came meanwhile, if any (idempotent).

        Deferrals nest: an interrupt is raised by the end of the outermost one.
        """
        if self._ended:
            return
        self._ended = True
        error: BaseException | None = None
        for interrupter in reversed(self._interrupters):
            raised = interrupter._undefer()
            error = error or raised
        if error is not None:
            raise error


def defer_interrupts() -> InterruptDeferral:
    """Hold this thread's THREAD_INTERRUPT back until the returned deferral's ``end()``.

    For a critical section that must not be cut in two (a fork and the registration of the
    child's group): an interrupt that comes meanwhile is not delivered (no asynchronous
    exception, no SIGINT) but raised by ``end()``, at a point where the caller's cleanup is
    in place. If an interrupt has already fired, this raises it at once, so nothing of the
    section starts. Only the interrupters armed on the calling thread are deferred.
    """
    deferred: list[ThreadInterrupter] = []
    already = False
    try:
        for interrupter in list(_armed_here()):
            already = interrupter._defer() or already
            deferred.append(interrupter)
    except BaseException:
        # An interrupt delivered on the way in (before the one it came from was deferred):
        # nothing has started, so undo the others and let it through.
        for interrupter in deferred:
            interrupter._undefer()
        raise
    deferral = InterruptDeferral(deferred)
    if already:
        deferral.end()  # raises it
    return deferral


class ThreadInterrupter:
    """Interrupts the thread that creates it (see the module docstring for how)."""

    def __init__(self, cancellation: Callable[[], Cancellation | None]) -> None:
        self._cancellation = cancellation
        self._thread = threading.current_thread()
        ident = self._thread.ident
        assert ident is not None
        self._ident = ident
        self._is_main = self._thread is threading.main_thread()
        # Guards armed/fired between the interrupting thread and the worker. The SIGINT
        # handler must never take it (nor any other lock): it runs on the worker, between
        # two bytecodes, possibly while the worker holds that very lock.
        self._lock = threading.Lock()
        self._armed = False
        self._fired = False
        self._disarmed = False
        self._previous_handler: Any = None
        self._installed = False
        # Written only by the SIGINT handler (on the worker); read by the pusher.
        self._raised = False
        self._stop_pushing = threading.Event()
        self._pusher: threading.Thread | None = None
        # defer_interrupts(): how deep the worker is in deferred sections (changed under
        # _lock, by the worker only), and whether an interrupt is waiting for their end.
        self._deferring = 0
        self._pending = False
        self._armed_list = _armed_here()

    def arm(self) -> None:
        if self._is_main:
            self._previous_handler = signal_module.signal(signal_module.SIGINT, self._on_sigint)
            self._installed = True
        with self._lock:
            self._armed = True
        self._armed_list.append(self)

    def interrupt(self) -> None:
        if threading.get_ident() == self._ident:
            # The worker tripped its own signal: it is running, not blocked, and knows.
            log.debug("THREAD_INTERRUPT: the worker tripped its own signal; not interrupting it")
            return
        with self._lock:
            if not self._armed or self._fired:
                return
            self._fired = True
            if self._deferring:
                # In a deferred section: nothing is delivered now, the section's end raises it.
                self._pending = True
                return
            if not self._is_main:
                _SET_ASYNC_EXC(self._ident, ThreadInterrupted)
                return
            self._pusher = threading.Thread(target=self._push, name="interrupt-sidecar SIGINT", daemon=True)
            self._pusher.start()

    def _push(self) -> None:
        # One SIGINT is not enough: if it lands after the worker's last check for
        # signals but before it enters a blocking call (time.sleep, Lock.acquire), the
        # call does not return early and the handler only runs when it does. So send
        # it again, backing off, until the handler has run or the block has ended.
        delay = 0.005
        while True:
            with self._lock:
                if not self._armed or self._raised:
                    return
                signal_module.pthread_kill(self._ident, signal_module.SIGINT)
            if self._stop_pushing.wait(delay):
                return
            delay = min(delay * 2, 0.1)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self._fired:
            # From the moment we fire until the block ends every SIGINT is taken for ours
            # (a Ctrl+C arriving then has the same effect): the first one raises, the rest
            # (re-sent, or late) are swallowed.
            if self._armed and not self._raised:
                self._raised = True
                if self._deferring:
                    # A SIGINT sent before the section began, handled inside it (between
                    # _defer's increment and its taking of the interrupt): the end raises it.
                    self._pending = True
                    return
                raise CancelledExecution(self._cancellation())
            return
        previous = self._previous_handler
        if callable(previous):
            previous(signum, frame)
        elif previous != signal_module.SIG_IGN:
            raise KeyboardInterrupt

    def _defer(self) -> bool:
        """Enter a deferred section (on the worker); True when the interrupt had fired already."""
        with self._lock:
            fired = self._fired and self._armed
            if fired and not self._is_main:
                # Withdraw the asynchronous exception before the section begins: left
                # pending, it would land at the section's next bytecode. It may land at this
                # very call instead: then it propagates before anything is deferred, which is
                # as good (nothing of the section has started).
                _SET_ASYNC_EXC(self._ident, None)
            self._deferring += 1
            if fired:
                # Taken over by the section: its end raises it (once); a SIGINT the pusher
                # still sends is swallowed by the handler from here on.
                self._pending = True
                self._raised = True
            return fired

    def _undefer(self) -> BaseException | None:
        """Leave a deferred section (on the worker); the interrupt to raise, at the outermost end."""
        with self._lock:
            self._deferring -= 1
            if self._deferring or not self._pending:
                return None
            self._pending = False
            if not self._armed:
                return None  # the block has ended meanwhile: withdrawn, as any undelivered interrupt
            self._raised = True
        if self._is_main:
            return CancelledExecution(self._cancellation())
        return ThreadInterrupted()

    def disarm(self) -> bool:
        with contextlib.suppress(ValueError):  # disarmed once already
            self._armed_list.remove(self)
        with self._lock:
            if self._disarmed:
                return self._fired
            self._armed = False
            self._disarmed = True
            if self._fired and not self._is_main:
                _SET_ASYNC_EXC(self._ident, None)  # withdraw it if not delivered yet
        self._stop_pushing.set()
        if self._pusher is not None:
            self._pusher.join()
        if self._installed:
            if self._fired:
                # A SIGINT the pusher sent is delivered by the time join() returns (the
                # kernel delivers it as this thread leaves that syscall); a short sleep
                # lets the handler (which now swallows it) run before the previous
                # handler is back, or it would be taken for a Ctrl+C.
                time.sleep(0.001)
            previous = self._previous_handler
            # None: the previous handler was not installed from Python; SIG_DFL is the nearest.
            signal_module.signal(signal_module.SIGINT, previous if previous is not None else signal_module.SIG_DFL)
            self._installed = False
        return self._fired
