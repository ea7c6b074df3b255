"""Run the gated command as a tool of its execution: attach, register, release, wait, clean up, report.

The order is what makes it safe (each step explains its race where it happens):

1. the command's process group already exists, gated (see :mod:`interrupt_sidecar.wrapper.spawn`);
2. attach to the daemon; unreachable or refused: the command never runs;
3. already tripped: the command never runs;
4. register the group (EXTERNALLY_TERMINATED): from here the daemon can kill it;
5. open the gate: the command runs; SIGINT/SIGTERM/SIGHUP to the wrapper go to its group;
6. the command exits: every descendant left over is terminated, then SIGKILLed;
7. report ``unwound`` with the outcome, and turn it all into the wrapper's exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from datetime import UTC, datetime

from interrupt_sidecar_client import (
    Cancellation,
    DeadlineExceeded,
    InterruptBehavior,
    SidecarError,
    ToolOutcome,
    Unavailable,
    aio,
)

from interrupt_sidecar.wrapper.exits import EXIT_INTERRUPTED, EXIT_REFUSED, EXIT_UNREACHABLE, exec_failure_code
from interrupt_sidecar.wrapper.spawn import FORWARDED_SIGNALS, GatedChild, hand_terminal
from interrupt_sidecar.wrapper.tree import kill_descendants

#: How long the attach (hello → attached) and each registration may take.
ATTACH_TIMEOUT_S = 10.0
#: Bound on the GetExecution that settles whether a trip preceded the command's exit.
SETTLE_TIMEOUT_S = 2.0
#: The clean-up grace when neither ``--kill-after`` nor the execution's grace is known.
DEFAULT_GRACE_S = 0.5


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What ``interrupt-sidecar run`` was asked to do (flags and environment resolved)."""

    command: tuple[str, ...]
    address: str | None
    token: str
    behavior: InterruptBehavior
    tool_name: str
    tool_call_id: str
    signal: int
    kill_after: float | None


def _say(message: str) -> None:
    print(f"interrupt-sidecar run: {message}", file=sys.stderr, flush=True)


def _describe(cancellation: Cancellation) -> str:
    return f"{cancellation.reason.name}: {cancellation.detail}" if cancellation.detail else cancellation.reason.name


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Supervisor:
    """Owns the command's process: reaps it (and re-parented orphans), forwards signals."""

    def __init__(self, options: RunOptions, child: GatedChild) -> None:
        self._options = options
        self._child = child
        self._loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self.exited_at: datetime | None = None
        self.forwarded: list[int] = []

    # -- signals and reaping (all on the loop thread, so no two of them interleave) ----

    def install(self) -> None:
        """Install SIGCHLD and forwarding handlers, then unblock the signals blocked since the fork."""
        self._loop.add_signal_handler(signal.SIGCHLD, self.reap)
        for signum in FORWARDED_SIGNALS:
            self._loop.add_signal_handler(signum, self._forward, signum)
        # Signals that arrived while blocked are delivered now, to these handlers.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD, *FORWARDED_SIGNALS})
        # A child that died before the SIGCHLD handler existed left only a zombie: collect it.
        self.reap()

    def uninstall(self) -> None:
        for signum in (signal.SIGCHLD, *FORWARDED_SIGNALS):
            self._loop.remove_signal_handler(signum)

    def reap(self) -> None:
        """Collect every exited child: the command, and orphans re-parented to the subreaper."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self._child.pid and not self._exited.done():
                self.exited_at = datetime.now(UTC)
                self._exited.set_result(status)

    @property
    def command_running(self) -> bool:
        """True until the command (or the gated child) has been reaped.

        While it is unreaped its pid cannot be recycled, so its pid is still a safe pgid
        to signal: the group cannot be a stranger's.
        """
        return not self._exited.done()

    def signal_group(self, signum: int) -> None:
        if self.command_running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._child.pgid, signum)

    def _forward(self, signum: int) -> None:
        self.forwarded.append(signum)
        self.signal_group(signum)

    def on_cancel(self) -> None:
        """COOPERATIVE: the cancel becomes ``--signal`` to the group (and SIGCONT, so a stopped
        command can act on it). No SIGKILL: the command decides how to return early."""
        self.signal_group(self._options.signal)
        if self._options.signal not in (signal.SIGKILL, signal.SIGCONT):
            self.signal_group(signal.SIGCONT)

    async def wait(self) -> int:
        """The command's wait status, once reaped."""
        return await asyncio.shield(self._exited)

    async def abort(self) -> None:
        """Do not run the command: close the gate and collect the gated child."""
        self._child.abort()
        if self.command_running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._child.pid, signal.SIGKILL)  # it never exec'd: nothing to be polite to
        await self.wait()

    async def clean_up(self, grace: float) -> None:
        await kill_descendants(os.getpid(), grace, self.reap)


async def supervise(options: RunOptions, child: GatedChild) -> int:
    """Run the command as a tool of the execution the token names; returns the exit code."""
    sup = Supervisor(options, child)
    sup.install()
    try:
        return await _run(options, child, sup)
    finally:
        if sup.command_running:  # an internal error: never leave the command behind
            sup.signal_group(signal.SIGKILL)
            await sup.abort()
        await sup.clean_up(0.0 if options.kill_after is None else options.kill_after)
        sup.uninstall()


async def _run(options: RunOptions, child: GatedChild, sup: Supervisor) -> int:
    try:
        run = await aio.attach(
            behavior=options.behavior,
            tool_name=options.tool_name,
            tool_call_id=options.tool_call_id,
            address=options.address,
            token=options.token,
            timeout=ATTACH_TIMEOUT_S,
        )
    except (Unavailable, DeadlineExceeded) as error:
        await sup.abort()
        _say(f"cannot reach the daemon; the command was not run: {error}")
        return EXIT_UNREACHABLE
    except SidecarError as error:
        await sup.abort()
        _say(f"the daemon refused the attach; the command was not run: {error}")
        return EXIT_REFUSED

    try:
        if run.signal.cancellation is not None:
            # Tripped before the tool attached: the turn is over, do not start its work.
            await sup.abort()
            _say(f"interrupted {_describe(run.signal.cancellation)} (before the command started)")
            await run.unwind(ToolOutcome.INTERRUPTED, "cancelled before the command started")
            return EXIT_INTERRUPTED

        if options.behavior is InterruptBehavior.EXTERNALLY_TERMINATED:
            try:
                await run.registrar.register_process_group(
                    child.pgid, signal=options.signal, kill_after=options.kill_after
                )
            except (Unavailable, DeadlineExceeded) as error:
                await sup.abort()
                _say(f"lost the daemon while registering the process group; the command was not run: {error}")
                await run.unwind(ToolOutcome.FAILED, "could not register the process group")
                return EXIT_UNREACHABLE
            except SidecarError as error:
                sup.reap()  # the refusal may be "no live member": was the gated child killed?
                if sup.command_running:
                    await sup.abort()
                    _say(f"the daemon refused the process group; the command was not run: {error}")
                    await run.unwind(ToolOutcome.FAILED, f"process group refused: {error}")
                    return EXIT_REFUSED
                # The gated child died before the registration (a forwarded signal): the
                # refusal (no live member) is a consequence, not the story. Fall through.
        elif options.behavior is InterruptBehavior.COOPERATIVE:
            loop = asyncio.get_running_loop()
            run.signal.on_cancel(lambda: loop.call_soon_threadsafe(sup.on_cancel))

        if run.signal.cancellation is not None:
            # Tripped while registering: the daemon ran the terminator at once, killing the
            # gated child. The command must not start now.
            await sup.abort()
            _say(f"interrupted {_describe(run.signal.cancellation)} (before the command started)")
            await run.unwind(ToolOutcome.INTERRUPTED, "cancelled before the command started")
            return EXIT_INTERRUPTED

        take_back_terminal = hand_terminal(child.pgid) if sup.command_running else None
        try:
            if child.release():
                failure = await child.exec_error()
                if failure is not None:
                    await sup.wait()
                    _say(f"cannot run {options.command[0]!r}: {failure.strerror}")
                    await run.unwind(ToolOutcome.FAILED, f"cannot execute: {failure.strerror}")
                    return exec_failure_code(failure)
            else:
                child.abort()
            status = await sup.wait()
        finally:
            if take_back_terminal is not None:
                take_back_terminal()
        exited_at = sup.exited_at
        cancellation = run.signal.cancellation
        if cancellation is None and options.behavior.receives_cancel and run.execution_id:
            cancellation = await _tripped_before(options, run.execution_id, exited_at)

        grace = options.kill_after
        if grace is None:
            grace = run.grace.total_seconds() if run.grace is not None else DEFAULT_GRACE_S
        await sup.clean_up(grace)

        code = os.waitstatus_to_exitcode(status)
        exit_code = code if code >= 0 else 128 - code
        if cancellation is not None:
            _say(f"interrupted {_describe(cancellation)}")
            await run.unwind(ToolOutcome.INTERRUPTED, _describe(cancellation))
            return EXIT_INTERRUPTED
        if code < 0 and -code in sup.forwarded:
            await run.unwind(ToolOutcome.INTERRUPTED, f"{_signal_name(-code)} forwarded to the command")
        elif code == 0:
            await run.unwind(ToolOutcome.COMPLETED)
        elif code < 0:
            await run.unwind(ToolOutcome.FAILED, f"killed by {_signal_name(-code)}")
        else:
            await run.unwind(ToolOutcome.FAILED, f"exit status {code}")
        return exit_code
    finally:
        await run.unwind(ToolOutcome.FAILED, "the wrapper failed")  # a no-op when already unwound


async def _tripped_before(options: RunOptions, execution_id: str, exited_at: datetime | None) -> Cancellation | None:
    """Whether the execution tripped before the command exited, per the daemon.

    The daemon writes the cancel to the tool's stream *before* it signals the group, but
    the wrapper may reap the killed command before it has read that message. The
    daemon's stamped trip time settles it; a trip that races the command's own exit
    within the reaping delay may be reported either way.
    """
    try:
        async with aio.AsyncCoordinator(options.address, timeout=SETTLE_TIMEOUT_S) as coordinator:
            info = await coordinator.get(execution_id)
    except SidecarError:
        return None
    if not info.cancelled or info.reason is None:
        return None
    if exited_at is not None and info.tripped_at is not None and info.tripped_at > exited_at:
        return None
    return Cancellation(info.reason, info.detail, info.tripped_at)
