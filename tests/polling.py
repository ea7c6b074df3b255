"""Polling with a deadline: what tests wait on where no event exists to await.

One implementation for every suite (a process leaving /proc, a pod turning Ready, a
line reaching a log): poll ``check`` until it returns something truthy and return that,
or fail at the deadline naming what was awaited and the last value seen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _expired(timeout: float, what: str, check: object, last: object) -> AssertionError:
    return AssertionError(f"timed out after {timeout:g}s waiting for {what or check} (last value {last!r})")


def eventually(check: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01, *, what: str = "") -> Any:
    """Poll ``check`` (sleeping ``interval`` between tries) until it returns something truthy
    (typed Any: the truthy value is what callers use, e.g. a PID where check returns int | None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise _expired(timeout, what, check, value)
        time.sleep(interval)


async def eventually_async(
    check: Callable[[], T], timeout: float = 10.0, interval: float = 0.005, *, what: str = ""
) -> T:
    """:func:`eventually` for a coroutine: the loop runs between tries."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise _expired(timeout, what, check, value)
        await asyncio.sleep(interval)
