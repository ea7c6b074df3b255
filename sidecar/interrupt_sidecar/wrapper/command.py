"""The ``run`` subcommand: flags and environment, the no-op mode, and the supervised mode."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from interrupt_sidecar_client._config import resolve_address

from interrupt_sidecar import exits, settings
from interrupt_sidecar.settings import ConfigError, parse_duration
from interrupt_sidecar.wrapper.direct import exec_command
from interrupt_sidecar.wrapper.exits import EXIT_INTERNAL, EXIT_USAGE

if TYPE_CHECKING:  # the supervised mode (asyncio, the client, grpc) is loaded when it runs
    from interrupt_sidecar.wrapper.supervisor import RunOptions

TOKEN_ENV = settings.TOKEN.env

#: The behaviours a wrapped executable can have. THREAD_INTERRUPT has no meaning for a
#: process the wrapper does not run code in (its "signal to the worker" is COOPERATIVE's).
#: Names of ``interrupt_sidecar_client.InterruptBehavior`` members (resolved when ``run``
#: runs: every command builds this parser, and the client's types cost imports).
BEHAVIORS = ("EXTERNALLY_TERMINATED", "COOPERATIVE", "NON_INTERRUPTIBLE")

EPILOG = exits.epilog("run") + f"\n\nWithout a token ({TOKEN_ENV} or --token) the command is exec'd unchanged.\n"


def add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``interrupt-sidecar run`` on the CLI's subparsers."""
    p = sub.add_parser(
        "run",
        help="run any executable as an interruptible tool",
        description="Run CMD as a tool of the execution whose attach token it is given: "
        "in its own process group, registered with the daemon, which kills the group when the execution trips.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    settings.ADDRESS.add_to(p)
    settings.TOKEN.add_to(p)
    p.add_argument(
        "--behavior",
        default="EXTERNALLY_TERMINATED",
        type=str.upper,
        choices=list(BEHAVIORS),
        help="EXTERNALLY_TERMINATED (default): the daemon signals the group, then SIGKILLs it; "
        "COOPERATIVE: the wrapper sends --signal to the group at the cancel and lets CMD finish; "
        "NON_INTERRUPTIBLE: CMD is left to finish",
    )
    p.add_argument("--tool-name", help="the tool's name for the daemon (default: CMD's basename)")
    p.add_argument("--tool-call-id", default="", help="the agent's id for this tool call")
    p.add_argument("--signal", default="TERM", help="the polite signal sent at the trip (default TERM)")
    p.add_argument(
        "--kill-after",
        metavar="DURATION",
        help="SIGKILL after the polite signal (default: the execution's grace); also the clean-up grace",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    p.set_defaults(func=run_command)


def parse_signal(text: str) -> int:
    """``TERM``, ``SIGTERM`` or ``15`` → 15."""
    if text.isdigit():
        number = int(text)
        if number not in {int(s) for s in signal.valid_signals()} or number == 0:
            raise ConfigError(f"--signal {text}: not a signal number on this host")
        return number
    name = text.upper()
    name = name if name.startswith("SIG") else "SIG" + name
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise ConfigError(f"--signal {text!r}: not a signal name (e.g. TERM, INT, HUP)") from None


def _options(args: argparse.Namespace, token: str) -> RunOptions:
    from interrupt_sidecar.wrapper.supervisor import RunOptions

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ConfigError("name the command to run: interrupt-sidecar run [OPTIONS] -- CMD ARGS...")
    from interrupt_sidecar_client import InterruptBehavior

    behavior = InterruptBehavior[args.behavior]
    kill_after = None
    if args.kill_after is not None:
        if behavior is not InterruptBehavior.EXTERNALLY_TERMINATED:
            raise ConfigError("--kill-after applies to EXTERNALLY_TERMINATED only (nothing is SIGKILLed otherwise)")
        kill_after = parse_duration(args.kill_after, "--kill-after") / 1e9
    address = resolve_address(args.address)
    return RunOptions(
        command=tuple(command),
        address=address,
        token=token,
        behavior=behavior,
        tool_name=args.tool_name or os.path.basename(command[0]),
        tool_call_id=args.tool_call_id,
        signal=parse_signal(args.signal),
        kill_after=kill_after,
    )


def _say(message: str) -> None:
    print(f"interrupt-sidecar run: {message}", file=sys.stderr, flush=True)


def run_command(args: argparse.Namespace) -> int:
    """``interrupt-sidecar run``: returns the exit code (see :mod:`interrupt_sidecar.wrapper.exits`)."""
    # The token makes the command a tool (the clients' rule): an empty --token is sent,
    # and refused by the daemon; an empty variable means "no sidecar".
    token = args.token if args.token is not None else (os.environ.get(TOKEN_ENV, "").strip() or None)
    try:
        options = _options(args, token or "")
    except ConfigError as err:
        _say(str(err))
        return EXIT_USAGE
    if token is None:
        return exec_unchanged(options.command)
    return run_supervised(options)


def exec_unchanged(command: Sequence[str]) -> int:
    """No-op mode: become the command (same pid, group, signals, streams). Returns only on failure.

    Usually :mod:`interrupt_sidecar.entry` has already done this before argparse ran
    (:mod:`interrupt_sidecar.wrapper.direct`); this is the same exec for the lines it left
    to the full parser (e.g. ``--behavior COOPERATIVE`` without a token)."""
    return exec_command(command)


def run_supervised(options: RunOptions) -> int:
    """Start the command gated, then attach, register, release and supervise it."""
    import asyncio

    from interrupt_sidecar.wrapper.spawn import FORWARDED_SIGNALS, become_subreaper, spawn_gated
    from interrupt_sidecar.wrapper.supervisor import supervise

    try:
        become_subreaper()
    except OSError as error:
        _say(f"cannot become a child subreaper, so descendants could escape: {error}")
        return EXIT_INTERNAL
    # Blocked from before the fork until the handlers exist: a Ctrl+C in between is
    # held, then forwarded to the group, instead of killing the wrapper half-way.
    blocked = {signal.SIGCHLD, *FORWARDED_SIGNALS}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        # Fork before anything starts a thread (gRPC does): see spawn.py.
        child = spawn_gated(options.command)
        return asyncio.run(supervise(options, child))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
