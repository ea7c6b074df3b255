"""``interrupt-sidecar run -- CMD ARGS...``: any executable becomes an interruptible tool.

A top layer beside the CLI, and a *client* of the daemon: it attaches over gRPC with the
Python client (``interrupt_sidecar_client``) like any tool would, and imports nothing of
the daemon's internals. ``spawn`` starts the command gated in its own process group,
``supervisor`` drives the tool's life, ``tree`` makes sure no descendant outlives it,
``exits`` is the exit-code table, ``command`` the subcommand.
"""

from interrupt_sidecar.wrapper.command import add_run, run_command
from interrupt_sidecar.wrapper.exits import (
    EXIT_CANNOT_EXECUTE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)

__all__ = [
    "EXIT_CANNOT_EXECUTE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_REFUSED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "add_run",
    "run_command",
]
