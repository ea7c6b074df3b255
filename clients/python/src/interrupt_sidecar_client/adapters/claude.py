"""Claude Code and the Claude Agent SDK: hosts whose agent loop is not ours.

The loop (model calls, the Bash tool, MCP clients) runs inside Claude Code, so nothing of it
can be wrapped. What can be configured is enough:

* **MCP servers** (:func:`bridge_mcp_servers`): each stdio server of an ``mcpServers``
  mapping (``.mcp.json``, ``ClaudeAgentOptions(mcp_servers=...)``) runs behind
  ``interrupt-sidecar mcp --``, which follows the turn through a token file;
* **the Bash tool** (:func:`bash_hook`, :func:`bash_command`): a PreToolUse hook rewrites
  each command to run under ``interrupt-sidecar run``, which reads the turn's token from
  the same file when the command starts (none: the command just runs);
* **the turn**: an execution per user prompt, its token in the file — for the SDK,
  :func:`sdk_turn` (which also calls ``client.interrupt()`` at the trip); for a standalone
  Claude Code, :func:`begin_turn` and :func:`end_turn` as UserPromptSubmit and Stop hooks.

Command-line forms (``python -m interrupt_sidecar_client.adapters.claude``): ``mcp-config``
(rewrite a ``.mcp.json``), ``bash-hook`` (the PreToolUse hook: JSON on stdin, JSON on
stdout), ``begin`` and ``end``. Nothing here imports the Claude Agent SDK.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

# _turn (the turn machinery: grpc, asyncio) is imported where it is used, not here: the
# bash-hook runs as a process of its own before every Bash command, and importing it
# would more than double that process's start-up.

if TYPE_CHECKING:
    from claude_agent_sdk.types import HookContext, HookInput, HookJSONOutput

    from interrupt_sidecar_client._types import BegunExecution
    from interrupt_sidecar_client.adapters._turn import Turn

__all__ = [
    "ConfigError",
    "bash_command",
    "bash_hook",
    "begin_turn",
    "bridge_mcp_servers",
    "end_turn",
    "main",
    "rewrite_bash_input",
    "sdk_turn",
]

log = logging.getLogger(__name__)

TOKEN_FILE_ENV = "INTERRUPT_SIDECAR_TOKEN_FILE"
#: The context ``begin`` gives the turn by default: ``interrupt-sidecar interrupt --context claude-code``.
DEFAULT_CONTEXT = "claude-code"


class ConfigError(ValueError):
    """An ``mcpServers`` mapping (or a hook's input) that is not what Claude accepts."""


# -- MCP -------------------------------------------------------------------------------


def bridge_mcp_servers(
    servers: Mapping[str, Any],
    *,
    token_file: str | os.PathLike[str],
    bridge: str = "interrupt-sidecar",
    options: Sequence[str] = (),
) -> dict[str, Any]:
    """A copy of a Claude ``mcpServers`` mapping with every stdio server run behind
    ``interrupt-sidecar mcp --`` and ``INTERRUPT_SIDECAR_TOKEN_FILE`` in its ``env``.

    A stdio entry is ``{"type": "stdio"?, "command", "args"?, "env"?}`` (``.mcp.json``, and
    ``McpStdioServerConfig`` of ``ClaudeAgentOptions(mcp_servers=...)``); ``http``, ``sse``
    and ``sdk`` entries are returned as they are, and so is an entry already behind the
    bridge (rewriting twice changes nothing). Raises :class:`ConfigError` for an entry
    Claude would reject.
    """
    from interrupt_sidecar_client.adapters._turn import bridge_stdio

    if not isinstance(servers, Mapping):
        raise ConfigError(f"mcpServers must be an object of servers by name, not {type(servers).__name__}")
    rewritten: dict[str, Any] = {}
    for name, server in servers.items():
        if not isinstance(server, Mapping):
            raise ConfigError(f"mcpServers.{name} must be an object, not {type(server).__name__}")
        if server.get("type", "stdio") != "stdio":
            rewritten[name] = server  # http, sse, sdk (an in-process instance: never copied)
            continue
        command, args, env = _stdio_fields(name, server)
        entry = dict(server)
        if not (command == bridge and args[:1] == ["mcp"]):
            entry["command"], entry["args"] = bridge_stdio(command, args, bridge=bridge, options=options)
        entry["env"] = {**env, TOKEN_FILE_ENV: os.fspath(token_file)}
        rewritten[name] = entry
    return rewritten


def _stdio_fields(name: str, server: Mapping[str, Any]) -> tuple[str, list[str], dict[str, str]]:
    command, args, env = server.get("command"), server.get("args", []), server.get("env", {})
    if not isinstance(command, str) or not command:
        raise ConfigError(f"mcpServers.{name}: a stdio server needs a non-empty string 'command'")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"mcpServers.{name}.args must be a list of strings")
    if not isinstance(env, Mapping) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(f"mcpServers.{name}.env must be an object of strings")
    return command, list(args), dict(env)


def rewrite_mcp_file(path: str | os.PathLike[str], **bridge: Any) -> int:
    """Rewrite the ``mcpServers`` of a ``.mcp.json`` (or any JSON file holding one) in place,
    atomically; ``bridge`` goes to :func:`bridge_mcp_servers`. Returns how many servers are
    stdio servers behind the bridge now."""
    text = Path(path).read_text()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{os.fspath(path)} is not JSON: {error}") from None
    if not isinstance(document, dict) or "mcpServers" not in document:
        raise ConfigError(f'{os.fspath(path)} has no top-level "mcpServers" object')
    servers = bridge_mcp_servers(document["mcpServers"], **bridge)
    document["mcpServers"] = servers
    temporary = f"{os.fspath(path)}.tmp"
    Path(temporary).write_text(json.dumps(document, indent=2) + "\n")
    os.replace(temporary, path)
    return sum(1 for server in servers.values() if server.get("type", "stdio") == "stdio")


# -- the Bash tool -----------------------------------------------------------------------


def bash_command(
    command: str,
    *,
    token_file: str | os.PathLike[str],
    tool_use_id: str = "",
    program: str = "interrupt-sidecar",
    shell: str = "bash",
    address: str | None = None,
) -> str:
    """``command`` rewritten to run as ``interrupt-sidecar run -- SHELL -c COMMAND``: a tool
    of the turn whose token is in ``token_file`` when it starts, in a process group the
    daemon kills (with every descendant) at the trip.

    The token is read by the shell that runs the rewritten line, so a command starts in the
    turn current at that moment; an empty or missing file means no turn, and ``run`` then
    just executes the command. ``shell`` is ``bash`` because Claude Code's Bash tool runs
    bash (``[[``, arrays, ``pipefail`` keep working)."""
    run = [program, "run", "--tool-name", "Bash"]
    if tool_use_id:
        run += ["--tool-call-id", tool_use_id]
    if address:
        run += ["--address", address]
    read = f"$(cat -- {shlex.quote(os.fspath(token_file))} 2>/dev/null)"
    return f'INTERRUPT_SIDECAR_TOKEN="{read}" {shlex.join([*run, "--", shell, "-c", command])}'


def rewrite_bash_input(event: Mapping[str, Any], **command_options: Any) -> dict[str, Any]:
    """The PreToolUse hook's answer to ``event`` (Claude Code's hook input): for the Bash
    tool, ``updatedInput`` with the command rewritten by :func:`bash_command`; ``{}`` (no
    opinion) for anything else.

    No ``permissionDecision`` is given: the hook changes how a command runs, never whether
    it may (Claude Code's permission rules and prompts still decide)."""
    tool_input = event.get("tool_input")
    if event.get("tool_name") != "Bash" or not isinstance(tool_input, Mapping):
        return {}
    command = tool_input.get("command")
    if not isinstance(command, str) or not command.strip():
        return {}
    call_id = event.get("tool_use_id")
    rewritten = bash_command(command, tool_use_id=call_id if isinstance(call_id, str) else "", **command_options)
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            # The whole input, not just the command: description, timeout, run_in_background
            # stay as the model gave them whether the host merges or replaces.
            "updatedInput": {**tool_input, "command": rewritten},
        }
    }


def bash_hook(
    *,
    token_file: str | os.PathLike[str],
    program: str = "interrupt-sidecar",
    shell: str = "bash",
    address: str | None = None,
) -> Callable[[HookInput, str | None, HookContext], Coroutine[Any, Any, HookJSONOutput]]:
    """A Claude Agent SDK hook callback for ``HookMatcher(matcher="Bash", hooks=[...])`` under
    ``ClaudeAgentOptions(hooks={"PreToolUse": [...]})``: every Bash command runs under
    ``interrupt-sidecar run`` (see :func:`bash_command`)."""

    async def hook(event: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        # The SDK passes the id beside the input too; the input's own is the one Claude Code sent.
        merged: dict[str, Any] = {"tool_use_id": tool_use_id, **event}
        if merged.get("hook_event_name") != "PreToolUse":
            return {}
        answer = rewrite_bash_input(merged, token_file=token_file, program=program, shell=shell, address=address)
        return cast("HookJSONOutput", answer)

    return hook


# -- the turn ----------------------------------------------------------------------------


def _execution_file(token_file: str | os.PathLike[str]) -> Path:
    return Path(f"{os.fspath(token_file)}.execution")


def begin_turn(
    token_file: str | os.PathLike[str],
    *,
    address: str | None = None,
    context_id: str = DEFAULT_CONTEXT,
    grace: float | None = None,
) -> BegunExecution:
    """Begin the turn's execution and write its token to ``token_file`` (its id beside it, in
    ``TOKEN_FILE.execution``, for :func:`end_turn`). A turn still open there (Claude Code
    runs no Stop hook when the user interrupts it) is ended first."""
    from interrupt_sidecar_client import Coordinator
    from interrupt_sidecar_client.adapters._turn import _write_token

    with Coordinator(address) as coordinator:
        _end_recorded(coordinator, token_file)
        begun = coordinator.begin(context_id=context_id, grace=grace, labels={"framework": "claude"})
        _write_token(_execution_file(token_file), begun.execution_id)
        _write_token(token_file, begun.attach_token)
        return begun


def end_turn(token_file: str | os.PathLike[str], *, address: str | None = None) -> str | None:
    """End the execution :func:`begin_turn` recorded beside ``token_file`` and empty the file,
    so commands and MCP calls between turns run unattached (an ended turn's token would be
    refused). Returns the ended execution's id, None when there was none."""
    from interrupt_sidecar_client import Coordinator
    from interrupt_sidecar_client.adapters._turn import _write_token

    _write_token(token_file, "")
    with Coordinator(address) as coordinator:
        return _end_recorded(coordinator, token_file)


def _end_recorded(coordinator: Any, token_file: str | os.PathLike[str]) -> str | None:
    record = _execution_file(token_file)
    try:
        execution_id = record.read_text().strip()
    except FileNotFoundError:
        return None
    if execution_id:
        from interrupt_sidecar_client import NotFound

        # A daemon restarted since has never heard of it: there is nothing left to end.
        with contextlib.suppress(NotFound):
            coordinator.end(execution_id)
    record.unlink(missing_ok=True)
    return execution_id or None


@contextlib.asynccontextmanager
async def sdk_turn(
    client: Any,
    *,
    token_file: str | os.PathLike[str],
    address: str | None = None,
    context_id: str = DEFAULT_CONTEXT,
    grace: float | None = None,
    execution: BegunExecution | None = None,
) -> AsyncIterator[Turn]:
    """One turn of a Claude Agent SDK ``ClaudeSDKClient`` as an execution: begun (or
    ``execution``, begun by the runtime), its token in ``token_file`` for :func:`bash_hook`
    and the bridged MCP servers; at the trip ``client.interrupt()``, so Claude Code stops
    the turn as at Esc; after the block the execution is ended (unless the runtime began it)
    and the file emptied."""
    from interrupt_sidecar_client.adapters._turn import _write_token, open_turn

    interrupting: set[asyncio.Future[Any]] = set()  # held: a task nobody references may vanish

    def done(task: asyncio.Future[Any]) -> None:
        interrupting.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("client.interrupt() failed at the trip: %s", task.exception())

    def interrupt() -> None:
        task = asyncio.ensure_future(client.interrupt())
        interrupting.add(task)
        task.add_done_callback(done)

    try:
        async with open_turn(
            "claude", address=address, execution=execution, context_id=context_id, grace=grace, token_file=token_file
        ) as turn:
            turn.on_trip(interrupt)
            yield turn
    finally:
        _write_token(token_file, "")


# -- command line ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m interrupt_sidecar_client.adapters.claude",
        description="Claude Code's MCP servers and Bash tool as interruptible tools of interrupt-sidecar turns.",
    )
    commands = parser.add_subparsers(dest="action", required=True)
    mcp = commands.add_parser("mcp-config", help="run every stdio server of a .mcp.json behind the bridge (in place)")
    mcp.add_argument("file", help="the JSON file with a top-level mcpServers object")
    mcp.add_argument("--bridge", default="interrupt-sidecar", help="the bridge command (default: %(default)s)")
    mcp.add_argument("--option", action="append", default=[], help="an option for the bridge (repeatable)")
    hook = commands.add_parser("bash-hook", help="the PreToolUse command hook: hook input on stdin, answer on stdout")
    hook.add_argument("--program", default="interrupt-sidecar", help="the `run` command (default: %(default)s)")
    hook.add_argument("--shell", default="bash", help="the shell that runs the command (default: %(default)s)")
    hook.add_argument("--address", default=None, help="the daemon, for `run` (default: its own default)")
    begin = commands.add_parser("begin", help="UserPromptSubmit: begin the turn, write its token file")
    begin.add_argument("--context", default=DEFAULT_CONTEXT, help="the turn's context id (default: %(default)s)")
    begin.add_argument("--grace", type=float, default=None, help="seconds the tools get to stop themselves")
    begin.add_argument("--address", default=None)
    end = commands.add_parser("end", help="Stop: end the turn, empty its token file")
    end.add_argument("--address", default=None)
    for command in (mcp, hook, begin, end):
        command.add_argument(
            "--token-file",
            default=os.environ.get(TOKEN_FILE_ENV) or None,
            required=not os.environ.get(TOKEN_FILE_ENV),
            help=f"where the turn's token is (default: ${TOKEN_FILE_ENV})",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. Exit codes: 0 done; 1 a hook could not do its part (bad hook input,
    the daemon unreachable: Claude Code's non-blocking error; never 2, which would block the
    prompt or the tool call); 2 usage, or an ``mcp-config`` file it cannot rewrite."""
    args = _parser().parse_args(argv)
    try:
        if args.action == "mcp-config":
            count = rewrite_mcp_file(args.file, token_file=args.token_file, bridge=args.bridge, options=args.option)
            print(f"{args.file}: {count} stdio server(s) behind {args.bridge} mcp", file=sys.stderr)
        elif args.action == "bash-hook":
            event = _read_event()
            answer = rewrite_bash_input(
                event, token_file=args.token_file, program=args.program, shell=args.shell, address=args.address
            )
            print(json.dumps(answer))
        elif args.action == "begin":
            _drain_stdin()
            begin_turn(args.token_file, address=args.address, context_id=args.context, grace=args.grace)
        else:
            _drain_stdin()
            end_turn(args.token_file, address=args.address)
    except (ConfigError, OSError) as error:
        print(f"interrupt-sidecar claude: {args.action}: {error}", file=sys.stderr)
        # A hook exiting 2 blocks the prompt or the tool call: a hook that cannot do its part
        # says so and lets the host go on (the command then runs unwrapped).
        return 2 if args.action == "mcp-config" else 1
    except Exception as error:  # the daemon: unreachable, refused (grpc's errors and ours)
        print(f"interrupt-sidecar claude: {args.action}: {error}", file=sys.stderr)
        return 1
    return 0


def _drain_stdin() -> None:
    # The hook input is not needed, but read, so Claude Code's write to the hook never fails.
    if not sys.stdin.isatty():
        sys.stdin.read()


def _read_event() -> dict[str, Any]:
    text = sys.stdin.read() if not sys.stdin.isatty() else ""
    if not text.strip():
        return {}
    try:
        event = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"the hook input is not JSON: {error}") from None
    if not isinstance(event, dict):
        raise ConfigError("the hook input must be a JSON object")
    return event


if __name__ == "__main__":
    sys.exit(main())
