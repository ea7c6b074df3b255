"""The agent's requests in flight, and what the bridge must drop after answering them itself.

Invariant: the agent gets exactly one answer per request. A request leaves ``in_flight``
either when the server answers it (the answer is forwarded) or when the bridge answers
it at a trip (its id goes to ``dropped``: whatever the server still sends for it — a late
result, an error, progress on its token — is swallowed). Both happen on the event loop,
one message at a time, so whichever comes first wins and the other finds nothing.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from interrupt_sidecar.mcp import jsonrpc
from interrupt_sidecar.mcp.turns import CallRun, Turn

#: How many answered-by-the-bridge ids are remembered (a server that never answers a
#: cancelled request must not grow the bridge without bound).
DROPPED_MAX = 10_000


@dataclass(slots=True)
class InFlight:
    """One request of the agent that the server has not answered yet."""

    request_id: Any
    key: str
    method: str
    turn: Turn | None
    progress_key: str | None = None
    #: Who was below the bridge when the request was forwarded (tools/call only).
    baseline: frozenset[tuple[int, int]] | None = None
    run: CallRun | None = None
    started: float = field(default_factory=time.monotonic)


class _Bounded:
    """A set that forgets its oldest members past a bound."""

    def __init__(self, bound: int) -> None:
        self._items: OrderedDict[str, None] = OrderedDict()
        self._bound = bound

    def add(self, key: str) -> None:
        self._items[key] = None
        self._items.move_to_end(key)
        while len(self._items) > self._bound:
            self._items.popitem(last=False)

    def take(self, key: str) -> bool:
        """True (and forgotten) when ``key`` was in the set."""
        return self._items.pop(key, False) is None

    def __contains__(self, key: object) -> bool:
        return key in self._items


class RequestTable:
    """Requests in flight by id, plus the ids and progress tokens answered by the bridge."""

    def __init__(self) -> None:
        self.in_flight: dict[str, InFlight] = {}
        self._dropped = _Bounded(DROPPED_MAX)
        self._dropped_progress = _Bounded(DROPPED_MAX)

    def add(self, entry: InFlight) -> None:
        self.in_flight[entry.key] = entry
        if entry.turn is not None:
            entry.turn.in_flight.add(entry.key)

    def pop(self, key: str) -> InFlight | None:
        entry = self.in_flight.pop(key, None)
        if entry is not None and entry.turn is not None:
            entry.turn.in_flight.discard(key)
        return entry

    def answered_by_bridge(self, entry: InFlight) -> None:
        """The bridge answered ``entry``: from now on the server's words about it are dropped."""
        self.pop(entry.key)
        self._dropped.add(entry.key)
        if entry.progress_key is not None:
            self._dropped_progress.add(entry.progress_key)

    def is_dropped(self, key: str) -> bool:
        return key in self._dropped

    def drop_response(self, key: str) -> bool:
        """True when a response with this id must be dropped (once: the id is then forgotten)."""
        return self._dropped.take(key)

    def drop_progress(self, token: Any) -> bool:
        return jsonrpc.id_key(token) in self._dropped_progress

    def of_turn(self, turn: Turn) -> list[InFlight]:
        return [self.in_flight[key] for key in sorted(turn.in_flight, key=lambda k: self.in_flight[k].started)]
