"""The command line: configuration precedence, exit codes, serve's lifecycle (the client
subcommands, held to the same tests in both implementations: tests/cli)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from interrupt_sidecar.config import ConfigError, ServeConfig, build_serve_config, parse_duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import ROOT, DaemonProcess, start_daemon
from tests.daemon.wire import RawTool, eventually, group_owner
from tests.requires import require_root

NO_FLAGS: dict[str, None] = {
    "listen": None,
    "metrics_listen": None,
    "state_dir": None,
    "grace": None,
    "loop": None,
    "allow_insecure_tcp": None,
    "shutdown_timeout": None,
    "log_level": None,
    "auth_token_file": None,
    "tls_cert": None,
    "tls_key": None,
    "tls_client_ca": None,
}


def config(env: dict[str, str] | None = None, **flags: Any) -> ServeConfig:
    return build_serve_config(**{**NO_FLAGS, **flags}, env=env or {})


@pytest.fixture(scope="module")
def token_file() -> Iterator[str]:
    """A coordinator credential for TCP listeners, in an owner-only file."""
    with tempfile.TemporaryDirectory(prefix="isd-tok-") as directory:
        path = Path(directory) / "token"
        path.write_text("conformance-coordinator-token-0123456789\n")
        path.chmod(0o600)
        yield str(path)


def test_flag_beats_environment_beats_default(token_file: str) -> None:
    assert config().grace_ns == 500_000_000
    assert config({"INTERRUPT_SIDECAR_GRACE": "2s"}).grace_ns == 2_000_000_000
    assert config({"INTERRUPT_SIDECAR_GRACE": "2s"}, grace="750ms").grace_ns == 750_000_000
    env = {
        "INTERRUPT_SIDECAR_LISTEN": "unix:///tmp/a.sock,127.0.0.1:7000",
        "INTERRUPT_SIDECAR_AUTH_TOKEN_FILE": token_file,
    }
    assert [a.grpc_target() for a in config(env).listen] == ["unix:///tmp/a.sock", "127.0.0.1:7000"]
    assert [a.grpc_target() for a in config(env, listen=["unix:///tmp/b.sock"]).listen] == ["unix:///tmp/b.sock"]
    assert config({"XDG_RUNTIME_DIR": "/run/user/7"}).listen[0].grpc_target() == (
        "unix:///run/user/7/interrupt-sidecar/sidecar.sock"
    )
    assert config({"INTERRUPT_SIDECAR_LOOP": "asyncio"}).loop == "asyncio"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"listen": ["0.0.0.0:7000"]}, "needs authentication"),
        ({"listen": ["127.0.0.1:7000"]}, "needs authentication"),
        ({"auth_token_file": "/nonexistent/token"}, "No such file"),
        ({"tls_cert": "/etc/hostname"}, "go together"),
        ({"listen": ["unix:relative.sock"]}, "absolute path"),
        ({"listen": ["nohost"]}, "neither"),
        ({"grace": "fast"}, "not a duration"),
        ({"grace": "0s"}, "between 1ms and 1h"),
        ({"loop": "trio"}, "choose one of"),
        ({"metrics_listen": "unix:///tmp/m.sock"}, "HOST:PORT"),
        ({"grace": "5s", "shutdown_timeout": "1s"}, "at least --grace"),
        ({"log_level": "chatty"}, "DEBUG"),
    ],
)
def test_invalid_settings_are_refused_with_a_reason(flags: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config(**flags)


def test_plaintext_tcp_beyond_loopback_is_allowed_only_when_asked(token_file: str) -> None:
    with pytest.raises(ConfigError, match="allow-insecure-tcp"):
        config(listen=["0.0.0.0:7000"], auth_token_file=token_file)
    assert config(listen=["127.0.0.1:7000"], auth_token_file=token_file).auth_token is not None
    assert config(listen=["0.0.0.0:7000"], allow_insecure_tcp=True, auth_token_file=token_file).allow_insecure_tcp
    env = {"INTERRUPT_SIDECAR_ALLOW_INSECURE_TCP": "1", "INTERRUPT_SIDECAR_AUTH_TOKEN_FILE": token_file}
    assert config(env, listen=["[::]:7000"]).allow_insecure_tcp


def test_a_short_token_is_refused(tmp_short: Path) -> None:
    short = tmp_short / "token"
    short.write_text("secret")
    with pytest.raises(ConfigError, match="at least 16"):
        config(listen=["127.0.0.1:7000"], auth_token_file=str(short))


def test_durations() -> None:
    assert parse_duration("1m30s", "x") == 90_000_000_000
    assert parse_duration("1.5s", "x") == 1_500_000_000
    assert parse_duration("250us", "x") == 250_000
    for bad in ("", "5", "5 s", "-1s", "1sx"):
        with pytest.raises(ConfigError):
            parse_duration(bad, "x")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interrupt_sidecar", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=30,
    )


@pytest.fixture
def tmp_short() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as d:
        yield Path(d)


def test_serve_with_bad_configuration_exits_2(tmp_short: Path) -> None:
    result = run_cli("serve", "--listen", f"unix://{tmp_short}/s.sock", "--grace", "soon")
    assert result.returncode == 2
    assert "not a duration" in result.stderr


def test_serve_refuses_a_socket_another_daemon_serves_with_exit_3(daemon: DaemonProcess) -> None:
    result = run_cli("serve", "--listen", daemon.address)
    assert result.returncode == 3
    assert "another process is serving" in result.stderr


def test_socket_is_owner_only(daemon: DaemonProcess) -> None:
    mode = stat.S_IMODE(daemon.socket_path.stat().st_mode)
    assert mode == 0o600


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_serves_on_tcp_loopback_with_either_loop(tmp_short: Path, loop: str, token_file: str) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "interrupt_sidecar",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--loop",
            loop,
            "--auth-token-file",
            token_file,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline().split()
        assert ready[0] == "ready"
        host, port = ready[1].rsplit(":", 1)
        assert host == "127.0.0.1"
        assert int(port) > 0
        async with grpc.aio.insecure_channel(ready[1]) as channel:
            stub = pb_grpc.CoordinatorServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.BeginExecution(pb.BeginExecutionRequest())
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            bearer = (("authorization", "Bearer conformance-coordinator-token-0123456789"),)
            begun = await stub.BeginExecution(pb.BeginExecutionRequest(), metadata=bearer)
            tool = RawTool(channel)
            await tool.hello(begun.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
            await stub.Interrupt(
                pb.InterruptRequest(execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT),
                metadata=bearer,
            )
            assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_USER_SIGINT
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert proc.stdout is not None
        proc.stdout.close()


async def test_sigterm_trips_everything_with_system_shutdown_kills_groups_and_exits_0(tmp_short: Path) -> None:
    daemon = start_daemon(tmp_short)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        async with grpc.aio.insecure_channel(daemon.address) as channel:
            stub = pb_grpc.CoordinatorServiceStub(channel)
            begun = await stub.BeginExecution(pb.BeginExecutionRequest())
            tool = await group_owner(channel, begun.attach_token, child.pid)
            daemon.process.send_signal(signal.SIGTERM)
            cancel = (await tool.recv()).cancel
            assert cancel.reason == pb.INTERRUPT_REASON_SYSTEM_SHUTDOWN
            await tool.send(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED))
            await eventually(lambda: child.poll() is not None)
            assert child.returncode == -signal.SIGTERM
            assert await tool.status() == grpc.StatusCode.UNAVAILABLE
        assert daemon.process.wait(15) == 0
        assert not daemon.socket_path.exists(), "the socket file is removed on shutdown"
    finally:
        child.kill()
        child.wait()
        daemon.stop(signal.SIGKILL)


def test_demo_runs_a_real_daemon_and_reports_latency() -> None:
    result = run_cli("demo", "--interrupts", "20")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("daemon ready on unix://")
    assert "cooperative tool: cancelled with USER_SIGINT" in result.stdout
    assert "gone" in result.stdout
    assert "20 interrupts over the unix socket" in result.stdout
    assert lines[-1] == "daemon stopped (exit 0)"


def test_metrics_listen_serves_prometheus_text(tmp_short: Path) -> None:
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = start_daemon(tmp_short, "--metrics-listen", f"127.0.0.1:{port}")
    try:
        run_cli("begin", "--address", daemon.address)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        assert 'interrupt_sidecar_build_info{python="' in text and 'version="' in text
        assert "interrupt_sidecar_active_executions 1.0" in text
        assert 'interrupt_sidecar_attached_streams{behavior="COOPERATIVE"} 0.0' in text
    finally:
        assert daemon.stop() == 0


def test_a_taken_metrics_port_fails_the_start_with_exit_3(tmp_short: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("serve", "--listen", f"unix://{tmp_short}/s.sock", "--metrics-listen", f"127.0.0.1:{port}")
    assert result.returncode == 3
    assert "cannot serve metrics" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_socket_directory_others_control_is_refused(tmp_short: Path) -> None:
    require_root("needs root to give the directory to another uid")
    shared = tmp_short / "shared"
    shared.mkdir()
    os.chown(shared, 12345, 12345)
    shared.chmod(0o777)
    result = run_cli("serve", "--listen", f"unix://{shared}/s.sock")
    assert result.returncode == 3
    assert "choose a socket directory you own" in result.stderr
