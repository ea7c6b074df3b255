"""The commands and programs of docs/, run against real daemons and real processes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DaemonProcess, start_daemon
from tests.docs.blocks import docblock, run_transcript
from tests.docs.support import BIN, helm_install_as_template, shape, shell_env

#: The daemon's own log lines (stderr, which a terminal shows beside stdout).
_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO) ")


def test_cli_session(daemon: DaemonProcess, tmp_path: Path) -> None:
    run_transcript(docblock("cli-session").text, cwd=tmp_path, env=shell_env(daemon.address), normalize=shape)


def _needs_dash() -> None:
    # The transcripts show dash's "Terminated" for a foreground child killed by SIGTERM;
    # bash as /bin/sh words it differently.
    if not os.path.realpath("/bin/sh").endswith("dash"):
        pytest.skip("/bin/sh is not dash: the transcript shows dash's messages")


def test_run_wrapper_stops_the_shell_script_as_shown(daemon: DaemonProcess, tmp_path: Path) -> None:
    _needs_dash()
    script = tmp_path / "build.sh"
    script.write_text(docblock("run-build-sh").text)
    script.chmod(0o755)
    run_transcript(docblock("run-build-session").text, cwd=tmp_path, env=shell_env(daemon.address))
    assert not (tmp_path / "out.partial").exists(), "the script's TERM trap removed its partial output"


def test_run_wrapper_stops_the_c_program_as_shown(daemon: DaemonProcess, tmp_path: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    source = docblock("run-crawl-c").text
    (tmp_path / "crawl.c").write_text(source)
    compile_line = re.search(r"(gcc [^*]+?)\s*\*/", source)
    assert compile_line is not None, "crawl.c says how to compile it"
    subprocess.run(["bash", "-c", compile_line[1]], cwd=tmp_path, check=True, timeout=120)
    # The page's session goes on from the one above it, which began an execution.
    session = '$ eval "$(interrupt-sidecar begin --context main)"\n' + docblock("run-crawl-session").text
    run_transcript(session, cwd=tmp_path, env=shell_env(daemon.address))


def test_operations_serve_and_stop(tmp_path: Path) -> None:
    # The page's fixed directory becomes a private one; the commands are otherwise the page's.
    directory = tempfile.mkdtemp(prefix="isd-", dir="/tmp")
    try:
        text = docblock("ops-serve").text.replace("/tmp/isd-ops", directory)
        run_transcript(text, cwd=tmp_path, env=shell_env(), ignore=lambda line: bool(_LOG_LINE.match(line)))
        assert not Path(directory, "sidecar.sock").exists(), "a clean shutdown removes its socket"
        assert Path(directory, "state", "journal.sqlite3").exists(), "--state-dir keeps the journal there"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_protocol_hand_written_tool_takes_the_doorbell_cancel(daemon: DaemonProcess, tmp_path: Path) -> None:
    (tmp_path / "raw_tool.py").write_text(docblock("protocol-raw-tool").text)
    agent = docblock("example-agent-py").text
    (tmp_path / "agent.py").write_text(agent)
    result = subprocess.run(
        [str(BIN / "python"), "agent.py", str(BIN / "python"), "raw_tool.py"],
        cwd=tmp_path,
        env=shell_env(daemon.address),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert shape(lines[0]) == "attached to exec-ID cancelled: False", lines
    assert lines[1] == "doorbell: INTERRUPT_REASON_USER_SIGINT", lines
    assert lines[2] == "agent: tripped=True, the tool exited 0", lines


@pytest.fixture
def two_daemons() -> Iterator[tuple[DaemonProcess, DaemonProcess]]:
    with (
        tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as a,
        tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as b,
    ):
        first = start_daemon(Path(a))
        try:
            second = start_daemon(Path(b))
        except BaseException:
            first.stop()
            raise
        try:
            yield first, second
        finally:
            codes = (second.stop(), first.stop())
            assert codes == (0, 0), f"daemons exited with {codes}"


def test_federation_child_in_another_daemon_trips_with_its_parent(
    two_daemons: tuple[DaemonProcess, DaemonProcess], tmp_path: Path
) -> None:
    parent_daemon, child_daemon = two_daemons
    (tmp_path / "federation.py").write_text(docblock("federation-two-daemons").text)
    result = subprocess.run(
        [str(BIN / "python"), "federation.py", parent_daemon.address, child_daemon.address],
        cwd=tmp_path,
        env=shell_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == docblock("federation-two-daemons-output").text


def test_kubernetes_helm_install_renders_every_monitoring_object() -> None:
    rendered = helm_install_as_template("kubernetes-helm-install")
    kinds = set(re.findall(r"^kind: (\w+)", rendered, flags=re.M))
    assert {"Deployment", "PodMonitor", "PrometheusRule", "ConfigMap"} <= kinds, kinds
    assert "release: kps" in rendered


def test_transcript_runner_fails_on_a_wrong_line(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="expected 'two'"):
        run_transcript("$ echo one\ntwo\n", cwd=tmp_path, env=shell_env(), timeout=10)
    with pytest.raises(AssertionError, match="does not show"):
        run_transcript("$ echo one; echo extra\none\n", cwd=tmp_path, env=shell_env(), timeout=10)


def test_transcript_runner_runs_meanwhile_commands_with_the_session_env(tmp_path: Path) -> None:
    text = (
        "$ export GREETING=hello\n"
        '$ echo waiting; read -t 10 line < fifo; echo "got $line"\n'
        "waiting\n"
        '                # meanwhile: echo "$GREETING" > fifo\n'
        "got hello\n"
    )
    os.mkfifo(tmp_path / "fifo")
    run_transcript(text, cwd=tmp_path, env=shell_env(), timeout=15)
