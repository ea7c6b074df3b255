"""``interrupt-sidecar run`` without a token: become CMD at once.

Without a token the wrapper is documented to simply exec the command, and it runs on
every tool call an agent makes, so this path must cost nothing but the interpreter's
start: it imports only ``os``, ``signal``, ``sys`` and the exit-code table (no argparse,
no grpc, no asyncio), and the entry point (:mod:`interrupt_sidecar.entry`) takes it before
anything else is imported. Anything it cannot decide alone (a token, an option that needs
checking, ``--help``, a malformed line) goes to the full ``run`` subcommand, which
behaves exactly as before.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

from interrupt_sidecar.wrapper.exits import exec_failure_code

# A copy of settings.TOKEN.env (the settings table costs argparse and re to import);
# tests/run/test_direct.py checks that the two agree.
TOKEN_ENV = "INTERRUPT_SIDECAR_TOKEN"

#: The signals the wrapper forwards to the command's group (supervised mode).
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: ``run`` options that take a value which nothing checks when there is no token.
_UNCHECKED_OPTIONS = frozenset({"--address", "--tool-name", "--tool-call-id"})


def command_without_token(args: Sequence[str]) -> list[str] | None:
    """CMD ARGS when ``run ARGS`` has no token and nothing to check; None when the full
    subcommand must decide (it then parses, validates and reports as it always has)."""
    if os.environ.get(TOKEN_ENV, "").strip():
        return None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return list(args[i + 1 :]) or None
        if not arg.startswith("-"):
            return list(args[i:])  # argparse's REMAINDER: CMD and everything after it
        name, eq, _ = arg.partition("=")
        if name not in _UNCHECKED_OPTIONS:
            return None  # --token, --behavior, --signal, --kill-after, --help, abbreviations
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None  # a missing value: the full parser's usage error
            i += 1
        i += 1
    return None


def reset_signals_for_exec() -> None:
    """Give the command the dispositions a shell would: Python ignores SIGPIPE and SIGXFSZ,
    and an ignored signal stays ignored across ``exec`` (``subprocess``'s ``restore_signals``)."""
    for signum in (signal.SIGPIPE, signal.SIGXFSZ, *FORWARDED_SIGNALS):
        signal.signal(signum, signal.SIG_DFL)


def exec_command(command: Sequence[str]) -> int:
    """Become the command (same pid, group, signals, streams). Returns only on failure:
    126 or 127 (the shell's codes), with the reason on stderr."""
    sys.stdout.flush()
    sys.stderr.flush()
    reset_signals_for_exec()
    try:
        os.execvp(command[0], list(command))
    except OSError as error:
        print(f"interrupt-sidecar run: cannot run {command[0]!r}: {error.strerror}", file=sys.stderr, flush=True)
        return exec_failure_code(error)
