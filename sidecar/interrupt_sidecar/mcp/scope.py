"""The ``--scope`` of ``interrupt-sidecar mcp``: what is killed after the grace.

Apart from :mod:`interrupt_sidecar.mcp.trip` so the command line can list the choices
without importing the client (every subcommand builds the ``mcp`` parser).
"""

from __future__ import annotations

import enum


class KillScope(enum.Enum):
    """What the bridge kills after the grace, for the interrupted calls."""

    #: The processes each interrupted call started (the default).
    CALL = "call"
    #: Every process started since the turn's first request (calls that already answered too).
    TURN = "turn"
    #: The server and its whole tree; it is restarted on the next request.
    SERVER = "server"
