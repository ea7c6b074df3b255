"""The ``mcp`` subcommand: flags and environment, then the bridge."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from interrupt_sidecar import settings
from interrupt_sidecar.config import ConfigError, parse_duration
from interrupt_sidecar.mcp.scope import KillScope
from interrupt_sidecar.wrapper.exits import EXIT_INTERNAL, EXIT_USAGE

# Every subcommand builds this parser: the bridge (asyncio, the client, grpc) is imported
# only when `mcp` runs.
if TYPE_CHECKING:
    from interrupt_sidecar.mcp.bridge import BridgeOptions

EPILOG = """\
The MCP host starts `interrupt-sidecar mcp -- CMD ARGS...` where it started `CMD ARGS...`.
A tools/call belongs to the turn whose attach token is, first found: the request's
params._meta["dev.interruptsidecar/token"], the token file (--token-file or
$INTERRUPT_SIDECAR_TOKEN_FILE, rewritten by the agent at each turn), $INTERRUPT_SIDECAR_TOKEN.
Without a token the bridge passes everything through unchanged.

exit codes: the server's own code when it ended the session; 128+N when the bridge was
stopped by signal N; 2 usage; 126/127 the server cannot be executed / was not found;
1 internal error. See docs/mcp.md.
"""


def add_mcp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``interrupt-sidecar mcp`` on the CLI's subparsers."""
    p = sub.add_parser(
        "mcp",
        help="run an MCP stdio server so that interrupting the turn stops its tool calls",
        description="Bridge an MCP stdio server: at the trip of the agent's turn, its tool calls are answered "
        "as interrupted at once, the server is told to cancel, what the calls started is killed after the grace, "
        "and a server that stopped answering is restarted.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # From the one table of settings: the same flags and variables as every client subcommand.
    settings.ADDRESS.add_to(p)
    settings.TOKEN.add_to(p)
    settings.TOKEN_FILE.add_to(p)
    p.add_argument(
        "--no-meta-token",
        action="store_true",
        help="ignore tokens in requests' params._meta (the key is still removed before forwarding)",
    )
    p.add_argument(
        "--scope",
        choices=[s.value for s in KillScope],
        default=KillScope.CALL.value,
        help="what is killed after the grace: call (default) the processes each interrupted call started; "
        "turn every process started since the turn's first request; server the server's whole tree "
        "(restarted on the next request)",
    )
    p.add_argument(
        "--grace", metavar="DURATION", help="the server's time to stop a call itself (default: the execution's)"
    )
    p.add_argument("--kill-after", metavar="DURATION", help="SIGKILL this long after SIGTERM (default: the grace)")
    p.add_argument(
        "--probe-timeout",
        metavar="DURATION",
        default="2s",
        help="after a trip, a server that does not answer ping (server/discover) this fast is restarted (default 2s)",
    )
    p.add_argument(
        "--close-timeout",
        metavar="DURATION",
        default="1s",
        help="when the agent closes stdin, how long the server may take to exit before it is killed (default 1s)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    p.set_defaults(func=mcp_command)


def _seconds(text: str | None, name: str) -> float | None:
    return None if text is None else parse_duration(text, name) / 1e9


def _options(args: argparse.Namespace) -> BridgeOptions:
    from interrupt_sidecar_client._config import resolve_address

    from interrupt_sidecar.mcp.bridge import BridgeOptions
    from interrupt_sidecar.mcp.turns import TokenFile, TokenSources

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ConfigError("name the server to run: interrupt-sidecar mcp [OPTIONS] -- CMD ARGS...")
    token_file = (settings.TOKEN_FILE.value(args.token_file, os.environ) or "").strip() or None
    env_token = args.token if args.token is not None else (os.environ.get(settings.TOKEN.env, "").strip() or None)
    probe = _seconds(args.probe_timeout, "--probe-timeout")
    close = _seconds(args.close_timeout, "--close-timeout")
    assert probe is not None and close is not None
    return BridgeOptions(
        command=tuple(command),
        address=resolve_address(args.address),
        tokens=TokenSources(
            token_file=TokenFile(token_file) if token_file else None,
            env_token=env_token,
            meta_tokens=not args.no_meta_token,
        ),
        grace=_seconds(args.grace, "--grace"),
        kill_after=_seconds(args.kill_after, "--kill-after"),
        probe_timeout=probe,
        scope=KillScope(args.scope),
        close_timeout=close,
    )


def mcp_command(args: argparse.Namespace) -> int:
    """``interrupt-sidecar mcp``: returns the exit code."""
    try:
        options = _options(args)
    except ConfigError as err:
        print(f"interrupt-sidecar mcp: {err}", file=sys.stderr)
        return EXIT_USAGE
    import asyncio
    import logging

    from interrupt_sidecar.mcp.bridge import Bridge
    from interrupt_sidecar.wrapper.spawn import become_subreaper

    logging.basicConfig(level=logging.WARNING, format="interrupt-sidecar mcp: %(message)s")
    try:
        # Everything the server starts stays our descendant, even what double-forks and setsid()s.
        become_subreaper()
    except OSError as error:
        print(f"interrupt-sidecar mcp: cannot become a child subreaper: {error}", file=sys.stderr)
        return EXIT_INTERNAL
    return asyncio.run(Bridge(options).run())
