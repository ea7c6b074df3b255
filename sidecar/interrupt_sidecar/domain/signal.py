"""The single-shot cancellation signal."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from interrupt_sidecar.domain.types import Instant, InterruptReason, Trip

log = logging.getLogger(__name__)

Listener = Callable[[Trip], None]


class CancellationSignal:
    """Trips once; the first reason wins; listeners run once each, in registration order.

    Thread-safe. The invariant every client relies on: there is no reset. A new
    turn gets a new signal, so a stale cancel can never leak into it.
    """

    __slots__ = ("_listeners", "_lock", "_trip")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trip: Trip | None = None
        self._listeners: list[Listener] = []

    @property
    def cancelled(self) -> bool:
        return self._trip is not None

    @property
    def trip_info(self) -> Trip | None:
        """The trip, or None while not cancelled."""
        return self._trip

    def trip(self, reason: InterruptReason, detail: str, at: Instant) -> tuple[bool, Trip]:
        """Trip the signal. Returns (True, trip) for the call that tripped it and
        (False, first trip) for every later call, which changes nothing."""
        with self._lock:
            if self._trip is not None:
                return False, self._trip
            trip = Trip(reason, detail, at)
            self._trip = trip
            # Take the list under the lock: a listener added from here on sees
            # _trip set and runs itself, so each listener runs exactly once.
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            _call(listener, trip)
        return True, trip

    def on_cancel(self, listener: Listener) -> None:
        """Run ``listener`` at the trip, or now (on this thread) if already tripped."""
        with self._lock:
            trip = self._trip
            if trip is None:
                self._listeners.append(listener)
                return
        _call(listener, trip)


def _call(listener: Listener, trip: Trip) -> None:
    # A failing listener must not stop the ones after it.
    try:
        listener(trip)
    except Exception:
        log.exception("cancellation listener %r failed", listener)
