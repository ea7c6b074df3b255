"""The exit codes of ``interrupt-sidecar run``: the numbers are :mod:`interrupt_sidecar.exits`' (one table
for the whole CLI, with why each is what it is); what is the wrapper's own is the shell's rule below.
"""

from __future__ import annotations

import errno

from interrupt_sidecar.exits import (
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
    "exec_failure_code",
]


def exec_failure_code(error: OSError) -> int:
    """127 when the command does not exist, 126 when it exists but cannot be executed (the shell's rule)."""
    return EXIT_NOT_FOUND if error.errno in (errno.ENOENT, errno.ENOTDIR) else EXIT_CANNOT_EXECUTE
