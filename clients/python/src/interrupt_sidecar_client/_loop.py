"""The private event-loop thread the sync facade runs the async core on.

One per process, started on first use, a daemon thread. Every gRPC aio object of the
sync API is created and used on it (aio objects are bound to the loop that made them).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class LoopThread:
    """An asyncio loop running forever on a thread of its own."""

    def __init__(self, name: str = "interrupt-sidecar-client") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def stopped(self) -> bool:
        """True once the loop has stopped (at interpreter exit): nothing more can run on it."""
        return self._loop.is_closed() or not self._thread.is_alive()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            try:
                pending = [task for task in asyncio.all_tasks(self._loop) if not task.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                self._loop.close()

    @property
    def on_loop_thread(self) -> bool:
        """True when called from the loop's own thread (where blocking on it would deadlock)."""
        return threading.get_ident() == self._thread.ident

    def submit(self, coroutine: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Schedule ``coroutine`` on the loop; returns a thread-safe future."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` on the loop and block this thread until it is done.

        If this thread is interrupted while waiting (Ctrl+C, a THREAD_INTERRUPT), the
        coroutine is cancelled and the interruption propagates.
        """
        if self.on_loop_thread:
            coroutine.close()
            raise RuntimeError(
                "the blocking interrupt-sidecar API was called on the client's own event-loop thread "
                "(from a cancellation listener?); use the async API there, or do it from another thread"
            )
        if self.stopped:
            coroutine.close()
            raise RuntimeError("the interrupt-sidecar client's event loop has stopped (is the interpreter exiting?)")
        future = self.submit(coroutine)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def call_soon(self, callback: Any, *args: Any) -> None:
        self._loop.call_soon_threadsafe(callback, *args)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop (cancelling what still runs on it) and wait for the thread."""
        if self._loop.is_closed():
            return
        try:
            self._loop.call_soon_threadsafe(self._loop.stop)
        except RuntimeError:
            return
        if threading.get_ident() != self._thread.ident:
            self._thread.join(timeout)


_lock = threading.Lock()
_shared: LoopThread | None = None
_shared_pid = 0


def shared_loop() -> LoopThread:
    """The process's loop thread, started on first use (and again in a forked child)."""
    global _shared, _shared_pid
    with _lock:
        if _shared is None or _shared_pid != os.getpid():
            _shared = LoopThread()
            _shared_pid = os.getpid()
        return _shared


@atexit.register
def _stop_shared() -> None:
    loop = _shared
    if loop is not None and _shared_pid == os.getpid():
        loop.stop()
