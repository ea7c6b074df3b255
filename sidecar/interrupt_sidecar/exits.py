"""Every exit code of ``interrupt-sidecar``, written once.

The CLI, ``serve``, ``top``, ``demo`` and the ``run`` wrapper return these names, the
``--help`` epilogs and ``docs/configuration.md`` are rendered from :data:`TABLE`, and
``tests/test_settings.py`` pins that the committed page agrees. A leaf module (no imports),
so every layer and the wrapper may use it.

Why these numbers: uvicorn's 3 for "could not start"; 2 for usage, as argparse itself exits;
and for ``run``, whose codes share the 0–255 space with the command's: the CLI's codes for
failures *before* the command runs (it did not, so there is no command code to confuse them
with), the shell's 126/127 for a command that cannot be started, and ``timeout(1)``'s 124 for
"stopped from outside before it finished". One code for every interrupt reason, with the
reason on stderr: behaviour depends only on "cancelled" (the product's contract), and nine
codes would take nine more values away from the command.
"""

from __future__ import annotations

import textwrap
from typing import Literal

from interrupt_sidecar.record import Record, init_field

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_STARTUP = 3
EXIT_UNREACHABLE = 4
EXIT_REFUSED = 5
EXIT_FORCED = 6
EXIT_INTERRUPTED = 124
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
#: Ctrl+C in a client subcommand: 128 + SIGINT, as a shell reports it.
EXIT_SIGINT = 130

#: ``cli``: every subcommand but ``run``; ``run``: the wrapper; ``both``: the same meaning in each.
Who = Literal["cli", "run", "both"]


class ExitCode(Record):
    """One row of the exit-code tables."""

    __slots__ = ("code", "meaning", "who")
    code: int
    who: Who
    #: For people (Markdown: the docs render it as is, ``--help`` without backquotes).
    meaning: str

    def __init__(self, code: int, who: Who, meaning: str) -> None:
        init_field(self, "code", code)
        init_field(self, "who", who)
        init_field(self, "meaning", meaning)


TABLE: tuple[ExitCode, ...] = (
    ExitCode(EXIT_OK, "cli", "success (for `serve`: a clean shutdown after SIGTERM/SIGINT)"),
    ExitCode(EXIT_INTERNAL, "both", "unexpected internal error (for `run`: e.g. no `prctl`)"),
    ExitCode(EXIT_USAGE, "both", "usage error: a bad flag, argument or environment variable (for `run`: also no CMD)"),
    ExitCode(EXIT_STARTUP, "cli", "`serve` could not start (socket in use, directory not creatable, port taken)"),
    ExitCode(
        EXIT_UNREACHABLE, "both", "the daemon cannot be reached (client subcommands; for `run`: CMD was **not** run)"
    ),
    ExitCode(
        EXIT_REFUSED,
        "both",
        "the daemon refused the request, and its status and message are printed (for `run`: the attach or the "
        "process group was refused, e.g. a bad token, an ended execution, a group not allowed; CMD was **not** run)",
    ),
    ExitCode(
        EXIT_FORCED,
        "cli",
        "`serve` was forced down by a second SIGTERM/SIGINT during shutdown, "
        "or its shutdown ran 5 s past `--shutdown-timeout`",
    ),
    ExitCode(
        EXIT_INTERRUPTED,
        "run",
        "**interrupted**: the execution was cancelled before CMD finished (or before it started); one line on "
        "stderr says why: `interrupt-sidecar run: interrupted REASON[: detail]`",
    ),
    ExitCode(EXIT_CANNOT_EXECUTE, "run", "CMD exists but cannot be executed"),
    ExitCode(EXIT_NOT_FOUND, "run", "CMD not found"),
    ExitCode(EXIT_SIGINT, "cli", "stopped by Ctrl+C (SIGINT) before it finished (`top`: 0, Ctrl+C is how it ends)"),
)

#: What ``run`` returns besides the table: the command's own code.
RUN_PASSES_THROUGH = (
    "CMD's own code when it finished on its own; **128+N** when it died of signal N (like a shell), "
    "including a signal forwarded by the wrapper"
)


def epilog(who: Literal["cli", "run"]) -> str:
    """The ``--help`` epilog listing the exit codes of the CLI or of ``run``, from :data:`TABLE`."""
    rows = [(str(row.code), row.meaning) for row in TABLE if row.who in (who, "both")]
    if who == "run":
        rows.insert(0, ("CMD's", RUN_PASSES_THROUGH))
    lines = ["exit codes:"]
    for code, meaning in rows:
        lines += textwrap.wrap(_plain(meaning), 96, initial_indent=f"  {code:<5} ", subsequent_indent=" " * 8)
    return "\n".join(lines)


def _plain(markdown: str) -> str:
    return markdown.replace("`", "").replace("**", "")
