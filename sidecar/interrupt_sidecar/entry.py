"""The ``interrupt-sidecar`` executables: fast paths ahead of the command line.

``interrupt-sidecar run -- CMD`` without a token runs on every tool call and is only an
``exec``: it is taken here, before the command-line module and its imports (argparse,
the configuration, grpc) are loaded. Every other command goes to
:func:`interrupt_sidecar.cli.main`.

Two console scripts start here. ``interrupt-sidecar-py`` (and ``python -m
interrupt_sidecar``) is the Python implementation: :func:`main`. ``interrupt-sidecar``
(:func:`console_main`) first hands the subcommands the native binary implements to it,
when one is installed beside the interpreter: it runs them without the interpreter's
and grpc's start-up (docs/cli.md). The binary hands every other subcommand back to
``interrupt-sidecar-py``, which never delegates, so the two cannot loop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: The subcommands the native binary runs itself (its dispatch, clients/go/cmd/interrupt-sidecar/main.go).
NATIVE_COMMANDS = frozenset({"run", "begin", "interrupt", "end", "status"})
#: The binary's name beside the interpreter (``make install`` puts it in the virtual environment).
NATIVE_NAME = "interrupt-sidecar-native"
# A copy of settings.NATIVE.env (the settings table costs argparse and re to import);
# tests/cli/test_delegation.py checks that the two agree.
NATIVE_ENV = "INTERRUPT_SIDECAR_NATIVE"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``interrupt-sidecar ARGS`` (``sys.argv[1:]`` by default) in Python; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["run"]:
        from interrupt_sidecar.wrapper.direct import command_without_token, exec_command

        command = command_without_token(args[1:])
        if command is not None:
            return exec_command(command)
    if args[:1] == ["serve"]:
        # No automatic collection while the daemon's modules load: nearly every object
        # they make lives as long as the process. serve() collects once and re-enables
        # the collector right after it prints "ready" (server._tune_garbage_collector).
        import gc

        gc.disable()
    from interrupt_sidecar.cli import main as cli_main

    return cli_main(args)


def native_binary() -> str | None:
    """The native binary to hand a subcommand to: ``INTERRUPT_SIDECAR_NATIVE`` (``off``: none),
    else ``interrupt-sidecar-native`` beside the interpreter when it is there; None for none.

    Raises :class:`OSError` when the variable names a file that cannot be run: a
    deployment's explicit choice fails loudly rather than silently costing the Python start-up.
    """
    chosen = os.environ.get(NATIVE_ENV, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        if not os.access(chosen, os.X_OK) or os.path.isdir(chosen):
            raise OSError(f"{NATIVE_ENV}={chosen}: not an executable file (a path, or off)")
        return chosen
    beside = os.path.join(os.path.dirname(sys.executable), NATIVE_NAME)
    return beside if os.access(beside, os.X_OK) else None


def console_main() -> int:
    """``interrupt-sidecar``: the native binary for what it implements, else :func:`main`."""
    args = sys.argv[1:]
    if args[:1] and args[0] in NATIVE_COMMANDS:
        if args[0] == "run":
            # Already in Python: exec'ing CMD here is cheaper than starting the binary first.
            from interrupt_sidecar.wrapper.direct import command_without_token, exec_command

            command = command_without_token(args[1:])
            if command is not None:
                return exec_command(command)
        try:
            native = native_binary()
        except OSError as err:
            print(f"interrupt-sidecar {args[0]}: {err}", file=sys.stderr)
            from interrupt_sidecar.exits import EXIT_USAGE

            return EXIT_USAGE
        if native is not None:
            _exec_native(native, args)
    return main(args)


def _exec_native(native: str, args: list[str]) -> None:
    """Become the native binary (same pid, streams, environment). Returns only if the exec
    fails, after saying so: the Python implementation then runs the command itself."""
    import signal

    # The dispositions Python changed at start-up, back to what the binary would have
    # inherited: an ignored signal stays ignored across exec (and `run` would pass that
    # on to CMD). SIGINT only if Python installed its handler (it leaves an inherited
    # SIG_IGN alone, and so must this).
    changed = [signal.SIGPIPE, signal.SIGXFSZ]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        changed.append(signal.SIGINT)
    previous = {signum: signal.signal(signum, signal.SIG_DFL) for signum in changed}
    try:
        os.execv(native, [native, *args])
    except OSError as err:
        print(f"interrupt-sidecar: cannot run {native} ({err.strerror}); running in Python", file=sys.stderr)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
