"""Start a child in a process group of its own and register the group as a terminator.

At the trip the daemon signals the whole group (the child and everything it spawned that
stayed in the group), then SIGKILLs it after ``kill_after``. Leaving the helper's block
unregisters the group; if the child is still running then, the group is SIGKILLed so a
tool never leaves it behind. Only EXTERNALLY_TERMINATED tools may register groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal as signal_module
import subprocess
from collections.abc import Awaitable, Sequence
from datetime import timedelta
from types import TracebackType
from typing import Any, Protocol, TypeVar

from interrupt_sidecar_client._errors import NotFound
from interrupt_sidecar_client._interrupt import InterruptDeferral, defer_interrupts
from interrupt_sidecar_client._terminator import Terminator, TerminatorKind

__all__ = ["AsyncGroupRegistrar", "AsyncManagedProcess", "GroupRegistrar", "ManagedProcess", "finish_despite_cancels"]

T = TypeVar("T")

log = logging.getLogger(__name__)


# What a managed process needs of the registrar that started it, and no more: the
# registrars (``_registrar``, ``_sync_tool``) build on this module, so it names them
# by these shapes rather than importing them.


class AsyncGroupRegistrar(Protocol):
    """The async registrar's part a managed process uses (``AsyncTerminatorRegistrar`` is one)."""

    def _check(self, kind: TerminatorKind) -> None: ...

    async def register_process_group(
        self, pgid: int, *, signal: int, kill_after: timedelta | float | None, terminator_id: str | None
    ) -> Terminator: ...

    async def _unregister_quietly(self, terminator: Terminator) -> None: ...


class GroupRegistrar(Protocol):
    """The blocking registrar's part a managed process uses (``TerminatorRegistrar`` is one)."""

    def _check(self, kind: TerminatorKind) -> None: ...

    def register_process_group(
        self, pgid: int, *, signal: int, kill_after: timedelta | float | None, terminator_id: str | None
    ) -> Terminator: ...

    def _unregister_quietly(self, terminator: Terminator) -> None: ...


def _own_group(kwargs: dict[str, Any]) -> dict[str, Any]:
    for key in ("start_new_session", "process_group"):
        if key in kwargs:
            raise TypeError(f"{key}= is set by the helper: the child always gets a process group of its own")
    return {**kwargs, "start_new_session": True}


def leader_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an exited, unreaped child)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except FileNotFoundError:
        return False
    except OSError:  # no procfs: existence is the best we can tell
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state = data[data.rfind(b")") + 2 : data.rfind(b")") + 3]
    return state not in (b"Z", b"X", b"x")


def _kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # gone already
        os.killpg(pgid, signum)


class AsyncManagedProcess:
    """An asyncio child running in its own process group, registered with the daemon.

    ``async with`` it: on exit the group is unregistered, and SIGKILLed if the child is
    still running. ``wait()``/``communicate()`` unregister as soon as the child has ended.
    """

    def __init__(self, process: asyncio.subprocess.Process, registrar: AsyncGroupRegistrar) -> None:
        self.process = process
        self._registrar = registrar
        self.terminator: Terminator | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def pgid(self) -> int:
        """The child's process group (its pid: it leads the group)."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        """Wait for the child to exit, then unregister its group; returns the exit code."""
        code = await self.process.wait()
        await self.release()
        return code

    async def communicate(self, input: bytes | None = None) -> tuple[bytes, bytes]:  # noqa: A002 - asyncio's name
        """``Process.communicate``, then unregister the group."""
        output = await self.process.communicate(input)
        await self.release()
        return output

    def kill_group(self, signum: int = signal_module.SIGKILL) -> None:
        """Signal the child's whole group now (no-op once it is gone)."""
        _kill_group(self.pgid, signum)

    async def release(self) -> None:
        """Unregister the group (idempotent; quiet once the run has closed)."""
        terminator, self.terminator = self.terminator, None
        if terminator is not None:
            await self._registrar._unregister_quietly(terminator)

    async def __aenter__(self) -> AsyncManagedProcess:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.release()
        finally:
            if self.process.returncode is None and leader_running(self.pid):
                self.kill_group(signal_module.SIGKILL)
            await self.process.wait()


async def finish_despite_cancels(work: Awaitable[T]) -> tuple[T, bool]:
    """Await ``work`` to its end in a task of its own, even while the calling task is cancelled.

    Returns its result and whether a cancel of the caller was held back meanwhile: the caller
    raises it (``asyncio.CancelledError``) once its own cleanup is in place. If ``work``
    fails after such a cancel, the cancel is raised, from its error. The async counterpart of
    :func:`~interrupt_sidecar_client._interrupt.defer_interrupts`.
    """
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                raise  # the work itself was cancelled (the loop is closing): nothing to finish
            # The caller's cancel: the shield keeps it from the work, which goes on; each
            # further cancel lands here again. The task's cancel count stays raised, as it
            # must for the CancelledError raised later (asyncio.timeout reads it).
            cancelled = True
        except BaseException as error:
            if cancelled:
                raise asyncio.CancelledError from error
            raise
        else:
            return result, cancelled


async def create_subprocess_exec(
    registrar: AsyncGroupRegistrar,
    program: str | os.PathLike[str],
    *args: str | os.PathLike[str],
    signal: int = signal_module.SIGTERM,
    kill_after: timedelta | float | None = None,
    terminator_id: str | None = None,
    **kwargs: Any,
) -> AsyncManagedProcess:
    registrar._check(TerminatorKind.PROCESS_GROUP)  # refuse before starting anything
    kwargs = _own_group(kwargs)
    # A cancel of the calling task landing between the fork and the registration would leave
    # processes nobody kills: asyncio's own cleanup of a cancelled create_subprocess_exec
    # (after the fork, while it makes the child's transport) SIGKILLs the leader only, and
    # _spawn's cleanup of a cancelled registration the leader's group only; the rest of the
    # group, or a setsid descendant, lives on unregistered. So the spawn and the registration
    # run to their end in a task of their own; a cancel that came meanwhile is raised once
    # the child has been cleaned up as the caller's `async with` would have.
    managed, cancelled = await finish_despite_cancels(
        _spawn(registrar, program, args, signal=signal, kill_after=kill_after, terminator_id=terminator_id, **kwargs)
    )
    if cancelled:
        await finish_despite_cancels(managed.__aexit__(asyncio.CancelledError, None, None))
        raise asyncio.CancelledError
    return managed


async def _spawn(
    registrar: AsyncGroupRegistrar,
    program: str | os.PathLike[str],
    args: Sequence[str | os.PathLike[str]],
    *,
    signal: int,
    kill_after: timedelta | float | None,
    terminator_id: str | None,
    **kwargs: Any,
) -> AsyncManagedProcess:
    process = await asyncio.create_subprocess_exec(program, *args, **kwargs)
    managed = AsyncManagedProcess(process, registrar)
    try:
        managed.terminator = await registrar.register_process_group(
            process.pid, signal=signal, kill_after=kill_after, terminator_id=terminator_id
        )
    except NotFound:
        if leader_running(process.pid):
            _kill_group(process.pid, signal_module.SIGKILL)
            await process.wait()
            raise
        log.debug("child %d exited before its group could be registered", process.pid)
    except BaseException:
        _kill_group(process.pid, signal_module.SIGKILL)
        await process.wait()
        raise
    return managed


class ManagedProcess:
    """A ``subprocess.Popen`` child running in its own process group, registered with the daemon.

    ``with`` it: on exit the group is unregistered, SIGKILLed if the child is still
    running, and the child's pipes are closed. ``wait()``/``communicate()`` unregister
    as soon as the child has ended.

    A THREAD_INTERRUPT of the thread that started it is held back from the fork until the
    ``with`` block is entered (or ``wait()``/``communicate()`` is called): one that comes
    meanwhile is raised there, after the child has been killed and reaped.
    """

    def __init__(
        self, process: subprocess.Popen[Any], registrar: GroupRegistrar, deferral: InterruptDeferral | None = None
    ) -> None:
        self.process = process
        self._registrar = registrar
        self.terminator: Terminator | None = None
        self._deferral = deferral

    def _end_deferral(self) -> None:
        deferral, self._deferral = self._deferral, None
        if deferral is not None:
            deferral.end()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def pgid(self) -> int:
        """The child's process group (its pid: it leads the group)."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to exit, then unregister its group; returns the exit code."""
        self._end_deferral()
        code = self.process.wait(timeout)
        self.release()
        return code

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:  # noqa: A002
        """``Popen.communicate``, then unregister the group."""
        self._end_deferral()
        output = self.process.communicate(input, timeout)
        self.release()
        return output

    def kill_group(self, signum: int = signal_module.SIGKILL) -> None:
        """Signal the child's whole group now (no-op once it is gone)."""
        _kill_group(self.pgid, signum)

    def release(self) -> None:
        """Unregister the group (idempotent; quiet once the run has closed)."""
        terminator, self.terminator = self.terminator, None
        if terminator is not None:
            self._registrar._unregister_quietly(terminator)

    def __enter__(self) -> ManagedProcess:
        try:
            # The interrupt held back since the fork lands here; a `with` runs no __exit__
            # for an __enter__ that raises, so clean up as __exit__ would have.
            self._end_deferral()
        except BaseException as error:
            self.__exit__(type(error), error, error.__traceback__)
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.release()
        finally:
            # poll() reaps only an exited child; while it has not been reaped its pid pins the group.
            if self.process.poll() is None:
                self.kill_group(signal_module.SIGKILL)
            self.process.__exit__(exc_type, exc, tb)
            self._end_deferral()  # entered without `with`: an interrupt held back is raised now


def popen(
    registrar: GroupRegistrar,
    args: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    signal: int = signal_module.SIGTERM,
    kill_after: timedelta | float | None = None,
    terminator_id: str | None = None,
    **kwargs: Any,
) -> ManagedProcess:
    registrar._check(TerminatorKind.PROCESS_GROUP)  # refuse before starting anything
    kwargs = _own_group(kwargs)
    # From the fork until the caller's `with` (ManagedProcess.__enter__), an asynchronous
    # exception (THREAD_INTERRUPT) landing at any bytecode would leave a child that nobody
    # kills: inside Popen after the fork, before the registration's try, or before the
    # `with` has an __exit__ to run. So the thread's interrupts are held back over that
    # stretch, and one that came meanwhile is raised once a cleanup is there to run. One that
    # fired before is raised here, before anything is started.
    deferral = defer_interrupts()
    try:
        process: subprocess.Popen[Any] = subprocess.Popen(args, **kwargs)
    except BaseException:
        deferral.end()
        raise
    managed = ManagedProcess(process, registrar, deferral)
    try:
        managed.terminator = registrar.register_process_group(
            process.pid, signal=signal, kill_after=kill_after, terminator_id=terminator_id
        )
    except NotFound:
        if leader_running(process.pid):
            _kill_group(process.pid, signal_module.SIGKILL)
            process.wait()
            managed._end_deferral()
            raise
        log.debug("child %d exited before its group could be registered", process.pid)
    except BaseException:
        _kill_group(process.pid, signal_module.SIGKILL)
        process.wait()
        managed._end_deferral()
        raise
    return managed
