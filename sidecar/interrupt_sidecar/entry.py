"""The ``interrupt-sidecar`` executable: a fast path ahead of the command line.

``interrupt-sidecar run -- CMD`` without a token runs on every tool call and is only an
``exec``: it is taken here, before the command-line module and its imports (argparse,
the configuration, grpc) are loaded. Every other command goes to
:func:`interrupt_sidecar.cli.main`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``interrupt-sidecar ARGS`` (``sys.argv[1:]`` by default); returns the exit code."""
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
