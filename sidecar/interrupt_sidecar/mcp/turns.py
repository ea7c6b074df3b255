"""How the bridge follows the agent's current turn, and each call's run with the daemon.

An MCP server lives across turns; an attach token names one turn (one execution). The
token of a request is, first found wins:

1. ``params._meta["dev.interruptsidecar/token"]`` of the request itself (for hosts that
   can add ``_meta`` per call). The bridge removes the key before forwarding: a token is a
   capability the server has no use for;
2. the token file (``--token-file`` or ``INTERRUPT_SIDECAR_TOKEN_FILE``), which the agent
   rewrites at every turn. It is read again whenever its size, mtime or inode changed, so
   the cost per call is one ``stat``; write it atomically (write a temporary file, rename);
3. ``INTERRUPT_SIDECAR_TOKEN`` (or ``--token``): one turn for the bridge's whole life, for
   hosts that start a server per task.

No token: the request is passed through untouched and nothing is attached (the bridge is a
transparent pipe).

Every ``tools/call`` with a token attaches to the daemon as a tool of its own (named
``mcp:<tool>``, its JSON-RPC id as ``tool_call_id``, behaviour COOPERATIVE), so metrics,
events and ``WatchExecution`` show it like any tool, with its outcome when it unwinds.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from interrupt_sidecar_client import Cancellation, InterruptBehavior, SidecarError, ToolOutcome, aio

log = logging.getLogger(__name__)

#: The request ``_meta`` key that carries a per-call attach token.
TOKEN_META = "dev.interruptsidecar/token"

#: How long an attach may take before the call is passed through unattached.
ATTACH_TIMEOUT_S = 5.0


class TokenFile:
    """The token file, re-read only when it changed (one ``stat`` per call otherwise)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._token: str | None = None

    def read(self) -> str | None:
        try:
            st = os.stat(self.path)
        except OSError:
            self._stamp, self._token = None, None
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if stamp != self._stamp:
            try:
                with open(self.path, encoding="utf-8") as f:
                    self._token = f.read().strip() or None
            except OSError:
                self._token = None
            self._stamp = stamp
        return self._token


@dataclass(frozen=True, slots=True)
class TokenSources:
    """Where tokens come from (see the module docstring for the order)."""

    token_file: TokenFile | None
    env_token: str | None
    meta_tokens: bool = True

    def take(self, params: dict[str, Any]) -> str | None:
        """The token of a request whose ``params`` are given; removes the ``_meta`` token from them."""
        meta = params.get("_meta")
        if isinstance(meta, dict) and TOKEN_META in meta:
            token = meta.pop(TOKEN_META)
            if not meta:
                del params["_meta"]
            if self.meta_tokens and isinstance(token, str) and token.strip():
                return token.strip()
        if self.token_file is not None:
            token = self.token_file.read()
            if token:
                return token
        return self.env_token


@dataclass(slots=True)
class Turn:
    """One execution as the bridge sees it: the requests it has in flight, and its trip."""

    token: str
    cancellation: Cancellation | None = None
    #: Who was below the bridge when the turn's first request was forwarded (scope "turn").
    baseline: frozenset[tuple[int, int]] | None = None
    in_flight: set[str] = field(default_factory=set)
    #: Tasks its calls became (2025-11-25 task-augmented requests), cancelled at the trip.
    tasks: set[str] = field(default_factory=set)

    @property
    def tripped(self) -> bool:
        return self.cancellation is not None


class CallRun:
    """One ``tools/call`` attached to its execution; unwinds exactly once."""

    def __init__(self, run: aio.AsyncToolRun) -> None:
        self._run = run
        self._unwound = False

    @property
    def cancellation(self) -> Cancellation | None:
        return self._run.signal.cancellation

    @property
    def grace(self) -> timedelta | None:
        return self._run.grace

    def on_cancel(self, listener: Callable[[], None]) -> None:
        self._run.signal.on_cancel(listener)

    @property
    def unwound(self) -> bool:
        return self._unwound

    async def unwind(self, outcome: ToolOutcome, detail: str = "") -> None:
        if self._unwound:
            return
        self._unwound = True
        try:
            await self._run.unwind(outcome, detail)
        except SidecarError as error:  # the daemon is gone: the call itself is unaffected
            log.warning("could not report the call's outcome to the daemon: %s", error)


async def attach_call(address: str | None, token: str, tool: str, call_id: str) -> CallRun | None:
    """Attach one call; None (and a warning) when the daemon is unreachable or refuses:
    the call then goes through unattached, as without a token."""
    try:
        run = await aio.attach(
            behavior=InterruptBehavior.COOPERATIVE,
            tool_name=f"mcp:{tool}",
            tool_call_id=call_id,
            address=address,
            token=token,
            timeout=ATTACH_TIMEOUT_S,
        )
    except SidecarError as error:
        log.warning("tools/call %s (%s) runs without interrupts: cannot attach: %s", call_id, tool, error)
        return None
    return CallRun(run)
