"""The Claude adapter: hooks and MCP configs of a host whose loop is not ours, run for real.

What Claude Code would do with the hook's answer is done here by hand, as it does it: the
rewritten command runs under ``bash -c`` with Claude Code's environment, against a real
daemon; the rewritten MCP entry is started by the official MCP client. The Claude Agent
SDK's own types check the callback and build the options (mypy and at run time).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from claude_agent_sdk.types import HookContext, PreToolUseHookInput
from interrupt_sidecar_client import Coordinator
from interrupt_sidecar_client.adapters.claude import (
    ConfigError,
    bash_command,
    bash_hook,
    begin_turn,
    bridge_mcp_servers,
    end_turn,
    rewrite_bash_input,
)
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.adapters.claude_host import host, tool_results
from tests.adapters.support import interrupt_context, pids_of, survivors_now, tree_command
from tests.conftest import DaemonProcess
from tests.mcp.support import MODERN, alive, eventually, processes_running, within
from tests.polling import eventually as eventually_sync

#: The venv's command, as Claude Code would find ``interrupt-sidecar`` on its PATH.
SIDECAR = str(Path(sys.executable).with_name("interrupt-sidecar"))
ADAPTER = [sys.executable, "-m", "interrupt_sidecar_client.adapters.claude"]

#: Commands a model writes, each awkward for a rewrite that quotes badly.
AWKWARD = [
    "echo plain",
    """echo "double $HOME" 'single $HOME' \\$escaped""",
    "printf '%s\\n' \"it's\" 'say \"hi\"'; exit 7",
    "x=1\nif [[ $x == 1 ]]; then echo 'bash, not sh'; fi\necho \"line three\" >&2",
    "set -o pipefail; false | true",
    "cd / && pwd && echo $((6 * 7)) `echo backtick` $(echo dollar-paren)",
]


def pre_tool_use(command: str, tool_use_id: str = "toolu_01") -> dict[str, Any]:
    """A PreToolUse hook input of Claude Code for its Bash tool."""
    return {
        "session_id": "s1",
        "transcript_path": "/dev/null",
        "cwd": "/",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "a command", "timeout": 120000},
        "tool_use_id": tool_use_id,
    }


def as_claude_code_runs(command: str, address: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run a Bash tool command the way Claude Code does: ``bash -c`` in its environment."""
    env = {**os.environ, "INTERRUPT_SIDECAR_ADDRESS": address}
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=timeout)


def hooked(command: str, token_file: Path, tool_use_id: str = "toolu_01") -> str:
    """The command the hook's answer tells Claude Code to run."""
    answer = rewrite_bash_input(pre_tool_use(command, tool_use_id), token_file=token_file, program=SIDECAR)
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and "permissionDecision" not in output
    assert output["updatedInput"]["description"] == "a command" and output["updatedInput"]["timeout"] == 120000
    rewritten = output["updatedInput"]["command"]
    assert isinstance(rewritten, str)
    return rewritten


# -- the Bash tool -----------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("turn", ["no turn", "a turn"])
def test_the_rewritten_command_runs_the_original_unchanged(daemon: DaemonProcess, tmp_path: Path, turn: str) -> None:
    token_file = tmp_path / "turn-token"
    if turn == "a turn":
        begin_turn(token_file, address=daemon.address, context_id="claude-same")
        assert token_file.read_text()
    for command in AWKWARD:
        expected = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)
        got = as_claude_code_runs(hooked(command, token_file), daemon.address)
        assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr), (
            command
        )
    if turn == "a turn":
        assert end_turn(token_file, address=daemon.address) is not None


@pytest.mark.timeout(60)
def test_an_interrupt_kills_the_commands_whole_tree(daemon: DaemonProcess, tmp_path: Path) -> None:
    token_file = tmp_path / "turn-token"
    begun = begin_turn(token_file, address=daemon.address, context_id="claude-tree", grace=0.5)
    pidfile = tmp_path / "pids"
    command = hooked(shlex.join(tree_command(pidfile)), token_file, tool_use_id="toolu_tree")
    env = {**os.environ, "INTERRUPT_SIDECAR_ADDRESS": daemon.address}
    with subprocess.Popen(["bash", "-c", command], stderr=subprocess.PIPE, text=True, env=env) as shell:
        try:
            pids = pids_of(pidfile, timeout=20)  # sh, its child, the setsid grandchild
            with Coordinator(daemon.address) as coordinator:
                assert coordinator.get(begun.execution_id).attached_tools == 1  # run, for the command
            interrupt_context(daemon.address, "claude-tree")
            _, stderr = shell.communicate(timeout=20)
            assert shell.returncode == 124, stderr  # run's documented "interrupted"
            assert "interrupted USER_SIGINT: Esc" in stderr
            assert survivors_now(pids) == []  # run exits only once the whole tree is gone
        finally:
            if shell.poll() is None:
                shell.kill()
    end_turn(token_file, address=daemon.address)


@pytest.mark.timeout(60)
def test_between_turns_commands_just_run_and_a_stale_token_would_not(daemon: DaemonProcess, tmp_path: Path) -> None:
    token_file = tmp_path / "turn-token"
    begun = begin_turn(token_file, address=daemon.address)
    assert end_turn(token_file, address=daemon.address) == begun.execution_id
    assert token_file.read_text() == "" and not Path(f"{token_file}.execution").exists()
    with Coordinator(daemon.address) as coordinator:
        assert coordinator.get(begun.execution_id).ended
    ran = as_claude_code_runs(hooked("echo between", token_file), daemon.address)
    assert (ran.returncode, ran.stdout) == (0, "between\n")
    # Why end_turn empties the file: run refuses an ended turn's token and does not run CMD.
    token_file.write_text(begun.attach_token)
    refused = as_claude_code_runs(hooked("echo never", token_file), daemon.address)
    assert (refused.returncode, refused.stdout) == (5, "")
    token_file.unlink()
    missing = as_claude_code_runs(hooked("echo no file", token_file), daemon.address)
    assert (missing.returncode, missing.stdout) == (0, "no file\n")


@pytest.mark.timeout(60)
def test_a_turn_left_open_is_ended_by_the_next_begin(daemon: DaemonProcess, tmp_path: Path) -> None:
    token_file = tmp_path / "turn-token"
    first = begin_turn(token_file, address=daemon.address)
    second = begin_turn(token_file, address=daemon.address)  # no Stop hook ran in between
    assert token_file.read_text() == second.attach_token
    with Coordinator(daemon.address) as coordinator:
        assert coordinator.get(first.execution_id).ended and not coordinator.get(second.execution_id).ended
    end_turn(token_file, address=daemon.address)
    # A recorded turn the daemon never heard of (it restarted in between) is no obstacle.
    Path(f"{token_file}.execution").write_text("exec-from-before-a-restart")
    third = begin_turn(token_file, address=daemon.address)
    assert end_turn(token_file, address=daemon.address) == third.execution_id


def test_only_bash_pre_tool_use_is_rewritten(tmp_path: Path) -> None:
    token_file = tmp_path / "t"
    assert rewrite_bash_input({**pre_tool_use("ls"), "tool_name": "Read"}, token_file=token_file) == {}
    assert rewrite_bash_input({**pre_tool_use(""), "tool_input": {"command": "  "}}, token_file=token_file) == {}
    assert rewrite_bash_input({"tool_name": "Bash", "tool_input": "ls"}, token_file=token_file) == {}
    line = bash_command("ls", token_file="/run/a b/token", address="unix:///s.sock", shell="sh")
    assert line == (
        "INTERRUPT_SIDECAR_TOKEN=\"$(cat -- '/run/a b/token' 2>/dev/null)\" "
        "interrupt-sidecar run --tool-name Bash --address unix:///s.sock -- sh -c ls"
    )


# -- the Claude Agent SDK ----------------------------------------------------------------


@pytest.mark.timeout(30)
async def test_the_sdk_callback_and_options_type_check_and_answer(tmp_path: Path) -> None:
    hook = bash_hook(token_file=tmp_path / "turn-token", program=SIDECAR)
    matcher = HookMatcher(matcher="Bash", hooks=[hook])
    options = ClaudeAgentOptions(
        hooks={"PreToolUse": [matcher]},
        mcp_servers=bridge_mcp_servers({"modern": {"command": "python3", "args": ["server.py"]}}, token_file="/t"),
    )
    assert options.hooks is not None and options.hooks["PreToolUse"][0].hooks == [hook]
    event: PreToolUseHookInput = {
        "session_id": "s1",
        "transcript_path": "/dev/null",
        "cwd": "/",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "echo hi"},
        "tool_use_id": "toolu_sdk",
    }
    context: HookContext = {"signal": None}
    answer: Any = await hook(event, "toolu_sdk", context)
    command = answer["hookSpecificOutput"]["updatedInput"]["command"]
    assert "--tool-call-id toolu_sdk" in command and command.endswith("-- bash -c 'echo hi'")
    assert await hook({**event, "tool_name": "Write"}, "toolu_sdk", context) == {}


# -- MCP servers -------------------------------------------------------------------------


def test_mcp_servers_stdio_entries_behind_the_bridge_others_untouched() -> None:
    sdk_instance = object()
    servers = {
        "plain": {"command": "npx", "args": ["-y", "mcp-server-commands"]},
        "typed": {"type": "stdio", "command": "uvx", "env": {"ALLOW_COMMANDS": "ls"}},
        "remote": {"type": "http", "url": "https://example.invalid/mcp"},
        "events": {"type": "sse", "url": "https://example.invalid/sse"},
        "inproc": {"type": "sdk", "name": "inproc", "instance": sdk_instance},
    }
    bridged = bridge_mcp_servers(servers, token_file="/run/agent/turn-token", options=["--scope", "turn"])
    assert bridged["plain"] == {
        "command": "interrupt-sidecar",
        "args": ["mcp", "--scope", "turn", "--", "npx", "-y", "mcp-server-commands"],
        "env": {"INTERRUPT_SIDECAR_TOKEN_FILE": "/run/agent/turn-token"},
    }
    assert bridged["typed"] == {
        "type": "stdio",
        "command": "interrupt-sidecar",
        "args": ["mcp", "--scope", "turn", "--", "uvx"],
        "env": {"ALLOW_COMMANDS": "ls", "INTERRUPT_SIDECAR_TOKEN_FILE": "/run/agent/turn-token"},
    }
    for name in ("remote", "events", "inproc"):
        assert bridged[name] is servers[name]
    assert servers["plain"] == {"command": "npx", "args": ["-y", "mcp-server-commands"]}  # a copy
    assert bridge_mcp_servers(bridged, token_file="/run/agent/turn-token", options=["--scope", "turn"]) == bridged


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ([], "mcpServers must be an object"),
        ({"a": "npx"}, "mcpServers.a must be an object"),
        ({"a": {"args": ["x"]}}, "mcpServers.a: a stdio server needs a non-empty string 'command'"),
        ({"a": {"command": "x", "args": "-y"}}, "mcpServers.a.args must be a list of strings"),
        ({"a": {"command": "x", "env": {"N": 1}}}, "mcpServers.a.env must be an object of strings"),
    ],
)
def test_mcp_servers_bad_entries_are_named(servers: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        bridge_mcp_servers(servers, token_file="/t")


@pytest.mark.slow  # a real MCP server on the SDK (seconds to start)
@pytest.mark.timeout(60)
async def test_the_rewritten_mcp_entry_talks_through_the_bridge_and_is_answered_at_the_trip(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    token_file = tmp_path / "turn-token"
    [entry] = bridge_mcp_servers(
        {"modern": {"command": MODERN[0], "args": MODERN[1:]}}, token_file=token_file, bridge=SIDECAR
    ).values()
    # Claude Code starts a stdio server with its own environment plus the entry's env.
    env = {**os.environ, "INTERRUPT_SIDECAR_ADDRESS": daemon.address, **entry["env"]}
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
    duration = f"{300 + random.random():.6f}"
    async with Client(params) as client:
        await asyncio.to_thread(begin_turn, token_file, address=daemon.address, context_id="claude-mcp", grace=0.3)
        call = asyncio.create_task(client.call_tool("run", {"argv": ["sleep", duration]}))
        [pid] = await eventually(lambda: processes_running("sleep", duration))
        await asyncio.to_thread(interrupt_context, daemon.address, "claude-mcp")
        result = await within(call, 10)
        assert result.is_error and "Interrupted" in " ".join(getattr(c, "text", "") for c in result.content)
        await eventually(lambda: not alive(pid), timeout=10)
        await asyncio.to_thread(end_turn, token_file, address=daemon.address)
        # Between turns the server still answers (the call goes through unattached).
        pid_result = await within(client.call_tool("pid", {}), 15)
        assert not pid_result.is_error


# -- command-line forms ------------------------------------------------------------------


def adapter(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ADAPTER, *args], input=stdin, capture_output=True, text=True, timeout=30, env={**os.environ, **(env or {})}
    )


@pytest.mark.timeout(60)
def test_bash_hook_command_json_in_json_out(tmp_path: Path) -> None:
    token_file = tmp_path / "turn-token"
    done = adapter("bash-hook", "--token-file", str(token_file), stdin=json.dumps(pre_tool_use("echo 'hi there'")))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer == rewrite_bash_input(pre_tool_use("echo 'hi there'"), token_file=token_file)
    other = adapter(
        "bash-hook",
        stdin=json.dumps({**pre_tool_use("x"), "tool_name": "Edit"}),
        env={"INTERRUPT_SIDECAR_TOKEN_FILE": str(token_file)},
    )
    assert (other.returncode, json.loads(other.stdout)) == (0, {})
    bad = adapter("bash-hook", "--token-file", str(token_file), stdin="{not json")
    # 1, not 2: Claude Code would block the tool call on 2; this says why and lets it run.
    assert (bad.returncode, bad.stdout) == (1, "") and "the hook input is not JSON" in bad.stderr
    usage = adapter("bash-hook", stdin="{}", env={"INTERRUPT_SIDECAR_TOKEN_FILE": ""})
    assert usage.returncode == 2 and "--token-file" in usage.stderr


@pytest.mark.timeout(60)
def test_mcp_config_rewrites_the_file_and_refuses_bad_ones(tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    servers = {"cmd": {"command": "npx", "args": ["-y", "mcp-server-commands"]}, "web": {"type": "http", "url": "u"}}
    config.write_text(json.dumps({"mcpServers": servers, "other": 1}))
    done = adapter("mcp-config", str(config), "--token-file", "/run/agent/turn-token")
    assert done.returncode == 0, done.stderr
    assert json.loads(config.read_text()) == {
        "mcpServers": bridge_mcp_servers(servers, token_file="/run/agent/turn-token"),
        "other": 1,
    }
    again = config.read_text()
    assert adapter("mcp-config", str(config), "--token-file", "/run/agent/turn-token").returncode == 0
    assert config.read_text() == again  # idempotent
    for text, message in [
        ("{", "is not JSON"),
        ("[]", 'has no top-level "mcpServers" object'),
        ('{"mcpServers": {"a": {"command": ""}}}', "mcpServers.a: a stdio server needs"),
    ]:
        config.write_text(text)
        bad = adapter("mcp-config", str(config), "--token-file", "/t")
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
        assert config.read_text() == text  # untouched
    missing = adapter("mcp-config", str(tmp_path / "absent.json"), "--token-file", "/t")
    assert missing.returncode == 2 and "absent.json" in missing.stderr
    no_token_file = adapter("mcp-config", str(config), env={"INTERRUPT_SIDECAR_TOKEN_FILE": ""})
    assert no_token_file.returncode == 2


@pytest.mark.timeout(60)
def test_begin_and_end_hooks(daemon: DaemonProcess, tmp_path: Path) -> None:
    token_file = tmp_path / "turn-token"
    prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "run the tests", "session_id": "s1"})
    begun = adapter("begin", "--token-file", str(token_file), "--address", daemon.address, stdin=prompt)
    # UserPromptSubmit adds a hook's stdout to the prompt: it must print nothing.
    assert (begun.returncode, begun.stdout) == (0, ""), begun.stderr
    execution_id = Path(f"{token_file}.execution").read_text()
    with Coordinator(daemon.address) as coordinator:
        info = coordinator.get(execution_id)
        assert info.context_id == "claude-code" and not info.ended
        ended = adapter("end", "--token-file", str(token_file), "--address", daemon.address, stdin="{}")
        assert (ended.returncode, ended.stdout) == (0, ""), ended.stderr
        assert coordinator.get(execution_id).ended and token_file.read_text() == ""
    unreachable = adapter("begin", "--token-file", str(token_file), "--address", f"unix://{tmp_path}/none.sock")
    assert unreachable.returncode == 1 and "begin" in unreachable.stderr


# -- Claude Code itself, offline ---------------------------------------------------------


def claude_code(
    tmp_path: Path, address: str, command: str, context_id: str, allowed: str = "Bash"
) -> tuple[list[str], Path]:
    """Claude Code, offline (:mod:`tests.adapters.claude_host`), with the adapter's three
    command hooks in its settings as docs/adapters.md gives them."""
    hook = [*ADAPTER]
    token = ["--token-file", str(tmp_path / "turn-token"), "--address", address]
    begin = [*hook, "begin", *token, "--context", context_id, "--grace", "0.5"]
    bash = [*hook, "bash-hook", *token, "--program", SIDECAR]
    hooks = {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": shlex.join(begin)}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": shlex.join(bash)}]}],
        "Stop": [{"hooks": [{"type": "command", "command": shlex.join([*hook, "end", *token])}]}],
    }
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": hooks}))
    # Not bypassPermissions: Claude Code refuses it as root. Allowing Bash is what a user does.
    args = ["-p", "run it", "--settings", str(settings), "--allowedTools", allowed, "--output-format", "json"]
    return host(tmp_path, command, args=args)


@pytest.mark.slow  # the real Claude Code CLI (seconds to start)
@pytest.mark.timeout(120)
def test_in_claude_code_an_interrupt_kills_the_bash_commands_tree(daemon: DaemonProcess, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    argv, log = claude_code(tmp_path, daemon.address, shlex.join(tree_command(pidfile)), "claude-host")
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as host:
        try:
            pids = pids_of(pidfile, timeout=60)
            interrupt_context(daemon.address, "claude-host")  # the UserPromptSubmit hook's turn
            out, err = host.communicate(timeout=60)
        finally:
            if host.poll() is None:
                host.kill()
    assert host.returncode == 0, err
    assert survivors_now(pids) == []  # the Bash call ended only once the whole tree was gone
    [result] = tool_results(log)
    assert result["tool_use_id"] == "toolu_host" and result["is_error"] is True
    assert "interrupt-sidecar run: interrupted USER_SIGINT: Esc" in json.dumps(result["content"])
    assert json.loads(out)["result"] == "done"  # the model got the interrupted result and answered
    # The Stop hook ended the turn and emptied the token file.
    assert (tmp_path / "turn-token").read_text() == ""
    with Coordinator(daemon.address) as coordinator:
        assert coordinator.list(context_id="claude-host") == []


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_in_claude_code_an_awkward_command_runs_unchanged_in_the_turn(daemon: DaemonProcess, tmp_path: Path) -> None:
    command = AWKWARD[3] + '\necho "token: ${#INTERRUPT_SIDECAR_TOKEN}"'
    argv, log = claude_code(tmp_path, daemon.address, command, "claude-host-ok")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    [result] = tool_results(log)
    text = json.dumps(result["content"])
    assert result["is_error"] is False and "bash, not sh" in text and "line three" in text
    assert "token: 0" not in text and "token: " in text  # it ran as a tool of the turn


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_in_claude_code_a_prefix_rule_does_not_allow_the_rewritten_command(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    """What docs/adapters.md says Claude Code would not let the adapter do: its permission
    check sees the rewritten command, so ``Bash(echo:*)`` no longer allows ``echo``."""
    argv, log = claude_code(tmp_path, daemon.address, "echo allowed-by-rule", "claude-rule", allowed="Bash(echo:*)")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr
    [result] = tool_results(log)
    assert result["is_error"] is True and "allowed-by-rule" not in json.dumps(result["content"])


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_in_claude_code_a_bridged_mcp_call_is_answered_at_the_interrupt(daemon: DaemonProcess, tmp_path: Path) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"modern": {"command": MODERN[0], "args": MODERN[1:]}}}))
    token = ["--token-file", str(tmp_path / "turn-token")]
    assert adapter("mcp-config", str(config), *token, "--bridge", SIDECAR).returncode == 0
    begin = [*ADAPTER, "begin", *token, "--address", daemon.address, "--context", "claude-mcp-host", "--grace", "0.3"]
    end = [*ADAPTER, "end", *token, "--address", daemon.address]
    hooks = {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": shlex.join(begin)}]}],
        "Stop": [{"hooks": [{"type": "command", "command": shlex.join(end)}]}],
    }
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": hooks}))
    duration = f"{300 + random.random():.6f}"
    args = ["-p", "run it", "--settings", str(settings), "--mcp-config", str(config), "--strict-mcp-config"]
    args += ["--allowedTools", "mcp__modern__run", "--output-format", "json"]
    call = {"name": "mcp__modern__run", "input": {"argv": ["sleep", duration]}}
    argv, log = host(tmp_path, call=call, args=args, env={"INTERRUPT_SIDECAR_ADDRESS": daemon.address})
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as claude:
        try:
            [pid] = eventually_sync(
                lambda: processes_running("sleep", duration), timeout=60, what="the MCP call's sleep"
            )
            interrupt_context(daemon.address, "claude-mcp-host")
            out, err = claude.communicate(timeout=60)
        finally:
            if claude.poll() is None:
                claude.kill()
    assert claude.returncode == 0, err
    [result] = tool_results(log)
    assert result["is_error"] is True and "Interrupted" in json.dumps(result["content"]), result
    assert json.loads(out)["result"] == "done"  # the model got the interrupted result and answered
    eventually_sync(lambda: not alive(pid), timeout=10, what="the call's sleep killed after the grace")
