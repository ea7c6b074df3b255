"""The watch hub: per-execution event sequences fanned out to WatchExecution streams."""

from __future__ import annotations

import asyncio
from collections import deque

from interrupt_sidecar.domain.types import Clock
from interrupt_sidecar.runtime.events import EventPayload, ExecutionEvent


class WatcherOverflow(Exception):
    """A watcher fell too far behind and was dropped."""


class Subscription:
    """One watcher's bounded queue. ``None`` in the queue means: no more events."""

    # A plain class: a dataclass compiles its methods at import, on the way to "ready".
    __slots__ = ("_items", "_wake", "capacity", "execution_id", "overflowed")

    def __init__(self, execution_id: str, capacity: int) -> None:
        self.execution_id = execution_id
        self.capacity = capacity
        self._items: deque[ExecutionEvent | None] = deque()
        self._wake = asyncio.Event()
        self.overflowed = False

    def _push(self, item: ExecutionEvent | None) -> None:
        if self.overflowed:
            return
        if item is not None and len(self._items) >= self.capacity:
            # Never block the trip path on a slow watcher: drop the watcher.
            self.overflowed = True
            self._items.clear()
            self._items.append(None)
        else:
            self._items.append(item)
        self._wake.set()

    async def next(self) -> ExecutionEvent | None:
        """The next event, or None when the execution is done (or the watcher overflowed)."""
        while not self._items:
            self._wake.clear()
            await self._wake.wait()
        item = self._items.popleft()
        if item is None and self.overflowed:
            raise WatcherOverflow(f"watcher of {self.execution_id!r} fell more than {self.capacity} events behind")
        return item


class WatchHub:
    """Numbers each execution's events and hands them to its subscribers.

    Runs on the event loop thread only.
    """

    def __init__(self, clock: Clock, *, capacity: int = 4_096) -> None:
        self._clock = clock
        self._capacity = capacity
        self._sequence: dict[str, int] = {}
        self._subscribers: dict[str, set[Subscription]] = {}

    def publish(self, execution_id: str, payload: EventPayload) -> ExecutionEvent | None:
        """Number the event and hand it to the execution's watchers; None when it has none
        (the number is still taken, so a later watcher's snapshot counts it)."""
        sequence = self._sequence.get(execution_id, 0) + 1
        self._sequence[execution_id] = sequence
        subscribers = self._subscribers.get(execution_id)
        if not subscribers:
            return None
        event = ExecutionEvent(execution_id, sequence, self._clock.now(), payload)
        for subscription in subscribers:
            subscription._push(event)
        return event

    def watched(self, execution_id: str) -> bool:
        """Whether the execution has a watcher now (an event published now would wake it)."""
        return bool(self._subscribers.get(execution_id))

    def subscribe(self, execution_id: str, *, done: bool) -> Subscription:
        """Subscribe to an execution's events; ``done`` executions get none."""
        subscription = Subscription(execution_id, self._capacity)
        if done:
            subscription._push(None)
        else:
            self._subscribers.setdefault(execution_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subscribers = self._subscribers.get(subscription.execution_id)
        if subscribers is not None:
            subscribers.discard(subscription)
            if not subscribers:
                del self._subscribers[subscription.execution_id]

    def close(self, execution_id: str) -> None:
        """No more events for this execution: end its watches."""
        self._sequence.pop(execution_id, None)
        for subscription in self._subscribers.pop(execution_id, set()):
            subscription._push(None)

    def last_sequence(self, execution_id: str) -> int:
        return self._sequence.get(execution_id, 0)
