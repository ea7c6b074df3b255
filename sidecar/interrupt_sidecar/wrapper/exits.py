"""The exit codes of ``interrupt-sidecar run``.

A wrapper's own codes necessarily share the 0–255 space with the command's. The
command's code passes through untouched when it finished on its own (128+N when it died
of signal N, as a shell reports it). The wrapper's codes are the CLI's for failures that
happen *before* the command runs (2 usage, 4 unreachable, 5 refused: the command was
not started, so there is no command code to confuse them with), the shell's for a
command that cannot be started (126, 127), and 124 for "interrupted", the code
``timeout(1)`` uses for "stopped from outside before it finished". One code for every
reason, with the reason on stderr: reasons are for people and logs, behaviour depends
only on "cancelled" (the product's contract), and nine codes would take nine more
values away from the command.
"""

from __future__ import annotations

import errno

EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 4
EXIT_REFUSED = 5
EXIT_INTERRUPTED = 124
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127


def exec_failure_code(error: OSError) -> int:
    """127 when the command does not exist, 126 when it exists but cannot be executed (the shell's rule)."""
    return EXIT_NOT_FOUND if error.errno in (errno.ENOENT, errno.ENOTDIR) else EXIT_CANNOT_EXECUTE
