"""docs/adapters.md, the Claude Agent SDK example: run with a real ClaudeSDKClient on the
Claude Code CLI the SDK bundles, offline (a network namespace with loopback only and a
scripted Messages API in it), against a real daemon."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from interrupt_sidecar_client import Coordinator

from tests.adapters.claude_host import host, tool_results
from tests.adapters.support import interrupt_context, pids_of, survivors_now, tree_command
from tests.conftest import DaemonProcess
from tests.docs.blocks import docblock


@pytest.mark.slow  # the real Claude Code CLI (seconds to start)
@pytest.mark.timeout(120)
def test_the_claude_sdk_example_stops_the_turn_and_the_bash_commands_tree(
    daemon: DaemonProcess, tmp_path: Path
) -> None:
    example = tmp_path / "claude_sdk_example.py"
    example.write_text(docblock("adapters-claude-sdk").text)
    token_file = tmp_path / "turn-token"
    pidfile = tmp_path / "pids"
    venv = str(Path(sys.executable).parent)  # where `interrupt-sidecar` is, for the hook's `run`
    env = {"INTERRUPT_SIDECAR_ADDRESS": daemon.address, "PATH": f"{venv}:{os.environ['PATH']}"}
    sdk = {"module": str(example), "token_file": str(token_file), "address": daemon.address}
    argv, log = host(tmp_path, shlex.join(tree_command(pidfile)), sdk=sdk, env=env)
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as driver:
        try:
            pids = pids_of(pidfile, timeout=60)
            interrupt_context(daemon.address, "main")  # sdk_turn's context in the example
            out, err = driver.communicate(timeout=60)
        finally:
            if driver.poll() is None:
                driver.kill()
    assert driver.returncode == 0, err
    assert survivors_now(pids) == []  # the setsid grandchild too
    # client.interrupt() at the trip stopped the turn: the model was never called again.
    assert json.loads(out.splitlines()[-1]) == {"subtype": "error_during_execution", "is_error": True}
    assert tool_results(log) == []
    # sdk_turn ended the execution and emptied the token file.
    assert token_file.read_text() == ""
    with Coordinator(daemon.address) as coordinator:
        assert coordinator.list(context_id="main") == []
