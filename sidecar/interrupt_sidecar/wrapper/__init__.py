"""``interrupt-sidecar run -- CMD ARGS...``: any executable becomes an interruptible tool.

A top layer beside the CLI, and a *client* of the daemon: it attaches over gRPC with the
Python client (``interrupt_sidecar_client``) like any tool would, and imports nothing of
the daemon's internals. ``spawn`` starts the command gated in its own process group,
``supervisor`` drives the tool's life, ``tree`` makes sure no descendant outlives it,
``exits`` is the exit-code table, ``command`` the subcommand.
"""

from typing import TYPE_CHECKING

from interrupt_sidecar.wrapper.exits import (
    EXIT_CANNOT_EXECUTE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)

if TYPE_CHECKING:
    from interrupt_sidecar.wrapper.command import add_run, run_command


def __getattr__(name: str) -> object:
    # The subcommand (argparse, the client, grpc) is loaded on first use, so the package
    # stays as cheap as its exit codes for ``interrupt_sidecar.wrapper.direct``.
    if name in ("add_run", "run_command"):
        from interrupt_sidecar.wrapper import command

        return getattr(command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
