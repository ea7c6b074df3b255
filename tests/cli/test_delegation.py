"""Each implementation hands the other what it does not run itself, by exec (same pid).

The native binary execs the Python command line for serve, top, demo, mcp, --help and
usage errors; the Python ``interrupt-sidecar`` (entry.console_main) execs the native binary
for run, begin, interrupt, end and status when one is installed beside its interpreter.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from interrupt_sidecar import entry, settings

from tests.cli.implementations import native_cli, python_cli
from tests.conftest import ROOT, DaemonProcess, start_daemon
from tests.native import native_binary
from tests.requires import unavailable

# -- the native binary hands everything else to Python ---------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--version"], id="version"),
        pytest.param(["--help"], id="help"),
        pytest.param([], id="no-subcommand"),
        pytest.param(["frobnicate"], id="unknown-subcommand"),
        pytest.param(["begin", "--help"], id="begin-help"),
        pytest.param(["status", "-h"], id="status-h"),
        pytest.param(["serve", "--grace", "soon"], id="serve-usage-error"),
        pytest.param(["top", "--address", "unix:///nonexistent/isd/nobody.sock"], id="top-unreachable"),
        pytest.param(["mcp", "--help"], id="mcp-help"),
    ],
)
def test_what_the_binary_does_not_run_is_pythons_answer(args: list[str]) -> None:
    """Same stdout, stderr and exit code as the Python command line."""
    python, native = python_cli(), native_cli()
    from_python, from_native = python(*args), native(*args)
    assert (from_native.returncode, from_native.stdout, from_native.stderr) == (
        from_python.returncode,
        from_python.stdout,
        from_python.stderr,
    )
    assert from_python.stdout or from_python.stderr, "the case must print something to compare"


def test_serve_through_the_binary_is_the_python_daemon_in_the_same_process(tmp_short: Path) -> None:
    """exec, not a child: the pid the caller started is the daemon's (PID 1 in a container)."""
    native = native_cli()
    daemon = start_daemon(tmp_short, command=native.argv, env=native.env)
    try:
        cmdline = Path(f"/proc/{daemon.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:4] == [b"-m", b"interrupt_sidecar", b"serve"], cmdline
        assert os.path.realpath(f"/proc/{daemon.pid}/exe") == os.path.realpath(sys.executable)
        assert native("status", "--address", daemon.address).stdout == "no executions\n"
    finally:
        assert daemon.stop(signal.SIGTERM) == 0, daemon.stderr


def _fake_python_implementation(directory: Path) -> Path:
    """A stand-in for interrupt-sidecar-py that reports its pid and argv."""
    script = directory / "interrupt-sidecar-py"
    script.write_text('#!/bin/sh\necho "pid $$"\nfor a in "$@"; do echo "arg [$a]"; done\nexit 7\n')
    script.chmod(0o755)
    return script


def test_the_binary_prefers_interrupt_sidecar_py_beside_it_and_passes_argv_and_exit_code(tmp_path: Path) -> None:
    shutil.copy(native_binary(), tmp_path / "interrupt-sidecar")
    _fake_python_implementation(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != settings.PYTHON.env}
    process = subprocess.Popen(
        [str(tmp_path / "interrupt-sidecar"), "serve", "--grace", "two words", "", "ünï"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    stdout, _ = process.communicate(timeout=30)
    assert process.returncode == 7
    assert stdout.splitlines() == [
        f"pid {process.pid}",
        "arg [serve]",
        "arg [--grace]",
        "arg [two words]",
        "arg []",
        "arg [ünï]",
    ]


def test_without_a_python_implementation_the_native_commands_still_run(tmp_path: Path, daemon: DaemonProcess) -> None:
    shutil.copy(native_binary(), tmp_path / "interrupt-sidecar")
    env = {k: v for k, v in os.environ.items() if k != settings.PYTHON.env}
    env["PATH"] = str(tmp_path / "empty")
    binary = str(tmp_path / "interrupt-sidecar")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=30, check=False)

    served = run("serve")
    assert served.returncode == 127
    assert served.stderr == (
        "interrupt-sidecar: serve needs the Python implementation: no Python implementation found: set "
        "INTERRUPT_SIDECAR_PYTHON to a Python interpreter that has interrupt-sidecar installed, or put "
        "interrupt-sidecar-py on PATH\n"
    )
    assert run("--version").returncode == 127
    begun = run("begin", "--address", daemon.address, "--id", "no-python")
    assert begun.returncode == 0, begun.stderr
    assert run("status", "--address", daemon.address).stdout.startswith("no-python\tlive\t")
    refused = run("status", "--bogus")
    assert (refused.returncode, refused.stderr) == (
        2,
        "interrupt-sidecar status: error: unrecognized arguments: --bogus\n",
    )


def test_a_python_named_by_the_variable_that_does_not_exist_is_reported_with_127() -> None:
    result = native_cli()("serve", env={settings.PYTHON.env: "/nonexistent/python3"})
    assert result.returncode == 127
    assert "INTERRUPT_SIDECAR_PYTHON=/nonexistent/python3" in result.stderr


# -- the Python command hands the native commands to the binary --------------------------------

CONSOLE_MAIN = "import sys; from interrupt_sidecar.entry import console_main; sys.exit(console_main())"


def _fake_native(directory: Path, name: str = "fake-native") -> Path:
    """A stand-in for the native binary: its pid, whether SIGPIPE is ignored, its argv."""
    script = directory / name
    script.write_text(
        "#!/bin/sh\n"
        'echo "pid $$"\n'
        "ignored=$(awk '/^SigIgn:/ {print $2}' /proc/$$/status)\n"
        'echo "sigign $ignored"\n'
        'for a in "$@"; do echo "arg [$a]"; done\n'
        "exit 9\n"
    )
    script.chmod(0o755)
    return script


def _console(*args: str, env: dict[str, str], python: str = sys.executable) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [python, "-c", CONSOLE_MAIN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
    )


def _finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=30)
    return process.returncode, stdout, stderr


@pytest.mark.parametrize(
    "args",
    [
        ["begin", "--id", "x y"],
        ["interrupt", "x"],
        ["end", "x"],
        ["status", "--json"],
        ["run", "--token", "t", "--", "true"],
    ],
)
def test_console_main_execs_the_native_binary_for_what_it_implements(tmp_path: Path, args: list[str]) -> None:
    fake = _fake_native(tmp_path)
    process = _console(*args, env={settings.NATIVE.env: str(fake), settings.TOKEN.env: ""})
    code, stdout, stderr = _finish(process)
    assert code == 9, stderr
    lines = stdout.splitlines()
    assert lines[0] == f"pid {process.pid}", "exec'd: the same process"
    # Python ignores SIGPIPE; the binary must not inherit that (nor pass it on to `run`'s CMD).
    assert not int(lines[1].split()[1], 16) & (1 << (signal.SIGPIPE - 1)), lines[1]
    assert lines[2:] == [f"arg [{a}]" for a in args]


@pytest.mark.parametrize("args", [["--version"], ["serve", "--grace", "soon"], ["top", "--help"]])
def test_console_main_keeps_the_other_subcommands_in_python(tmp_path: Path, args: list[str]) -> None:
    fake = _fake_native(tmp_path)
    code, stdout, stderr = _finish(_console(*args, env={settings.NATIVE.env: str(fake)}))
    python = python_cli()(*args)
    assert (code, stdout, stderr) == (python.returncode, python.stdout, python.stderr)
    assert "arg [" not in stdout


def test_console_main_runs_everything_in_python_when_told_off(daemon: DaemonProcess) -> None:
    code, stdout, stderr = _finish(_console("status", "--address", daemon.address, env={settings.NATIVE.env: "OFF"}))
    assert (code, stdout) == (0, "no executions\n"), stderr


def test_console_main_keeps_the_tokenless_run_fast_path(tmp_path: Path) -> None:
    """Without a token `run` only execs CMD: done in Python at once, not via the binary."""
    fake = _fake_native(tmp_path)
    process = _console(
        "run", "--", "sh", "-c", 'echo "cmd $$"', env={settings.NATIVE.env: str(fake), settings.TOKEN.env: ""}
    )
    code, stdout, stderr = _finish(process)
    assert (code, stdout) == (0, f"cmd {process.pid}\n"), stderr


def test_console_main_refuses_a_native_binary_it_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "not-executable").write_text("")
    unusable = tmp_path / "not-executable"
    code, _, stderr = _finish(_console("status", env={settings.NATIVE.env: str(unusable)}))
    assert code == 2
    assert (
        stderr
        == f"interrupt-sidecar status: {settings.NATIVE.env}={unusable}: not an executable file (a path, or off)\n"
    )


def test_console_main_finds_interrupt_sidecar_native_beside_the_interpreter(tmp_path: Path) -> None:
    """The default: the binary `make install` puts in the virtual environment's bin/."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(os.path.realpath(sys.executable))
    _fake_native(bin_dir, entry.NATIVE_NAME)
    env = {k: v for k, v in os.environ.items() if k != settings.NATIVE.env}
    env["PYTHONPATH"] = str(ROOT / "sidecar")
    process = subprocess.Popen(
        [str(bin_dir / "python"), "-c", CONSOLE_MAIN, "status"], stdout=subprocess.PIPE, text=True, env=env
    )
    stdout, _ = process.communicate(timeout=30)
    assert process.returncode == 9
    assert stdout.splitlines()[0] == f"pid {process.pid}" and stdout.splitlines()[-1] == "arg [status]"


def test_the_two_implementations_agree_on_what_is_native_and_on_their_variables() -> None:
    main_go = (ROOT / "clients" / "go" / "cmd" / "interrupt-sidecar" / "main.go").read_text()
    dispatched = set(re.findall(r'"(\w+)"', re.search(r"switch args\[0\] \{(.*?)\n\t\t\}", main_go, re.S)[1]))  # type: ignore[index]
    assert dispatched == entry.NATIVE_COMMANDS
    assert settings.NATIVE.env == entry.NATIVE_ENV
    # The binary names its variables once, in settings.go.
    settings_go = (ROOT / "clients" / "go" / "cmd" / "interrupt-sidecar" / "settings.go").read_text()
    assert f'pythonEnv = "{settings.PYTHON.env}"' in settings_go
    assert f'authTokenEnv = "{settings.AUTH_TOKEN.env}"' in settings_go
    assert f'executionEnv = "{settings.EXECUTION_ENV}"' in settings_go


def test_the_installed_console_script_hands_status_to_the_installed_binary(tmp_short: Path) -> None:
    """What `make install` sets up: the venv's `interrupt-sidecar` reaches the native binary
    beside the interpreter (told apart by grpc-go's words for a refused connection)."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / entry.NATIVE_NAME).exists() or not (bin_dir / "interrupt-sidecar").exists():
        unavailable(f"no {entry.NATIVE_NAME} beside {sys.executable}: make install builds it when go is installed")
    env = {k: v for k, v in os.environ.items() if k != settings.NATIVE.env}
    address = f"unix://{tmp_short}/nobody.sock"
    argv = ["status", "--address", address]
    console = subprocess.run(
        [str(bin_dir / "interrupt-sidecar"), *argv], capture_output=True, text=True, env=env, timeout=30
    )
    native = native_cli()(*argv)
    python = python_cli()(*argv)
    assert console.returncode == native.returncode == python.returncode == 4
    assert console.stderr == native.stderr != python.stderr
