"""``run``'s command line under both implementations: the same line, the same outcome.

The native binary reads the line as the Python wrapper's argparse parser does (options,
abbreviations, values that look like options, the order in which mistakes are reported).
Each line here goes to both with the daemon unreachable: a usage error must exit 2 with
the very same stderr, any other line must get past the parser alike (4: the daemon cannot
be reached; without a token, CMD's own code).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from interrupt_sidecar.wrapper import EXIT_UNREACHABLE, EXIT_USAGE

from tests.conftest import ROOT
from tests.native import native_binary

pytestmark = pytest.mark.timeout(120)

LINES: list[list[str]] = [
    [],
    ["--"],
    ["--", "true"],
    ["true"],
    ["--behavior", "THREAD_INTERRUPT", "--", "true"],
    ["--behavior", "coop", "--", "true"],
    ["--beh", "cooperative", "--", "true"],
    ["--behavior=non_interruptible", "true"],
    ["--behavior"],
    ["--token"],
    ["--tool-name"],
    ["--tool-name", "--", "true"],
    ["--tool-call-id", "--x", "true"],
    ["--tool", "x", "--", "true"],
    ["--tool=x", "true"],
    ["--bogus", "--", "true"],
    ["--bogus", "x", "--other"],
    ["-x", "true"],
    ["--signal=-5", "--", "true"],
    ["--signal", "-5", "--", "true"],
    ["--signal", "0", "--", "true"],
    ["--signal", "99", "--", "true"],
    ["--signal", "sigusr1", "--", "true"],
    ["--signal", "BOGUS", "--kill-after", "soon", "--", "true"],
    ["--kill-after"],
    ["--kill-after", "1.5x", "--", "true"],
    ["--kill-after", "1m30s", "--", "true"],
    ["--behavior=cooperative", "--kill-after=1s", "--", "true"],
    ["--address=", "--tool-name=", "--", "true"],
    ["--tool-name", "a b", "true", "--token", "x"],
]


def outcome(argv: list[str], token: bool) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_SIDECAR_")}
    env["INTERRUPT_SIDECAR_ADDRESS"] = "unix:///nonexistent/sidecar.sock"
    if token:
        env["INTERRUPT_SIDECAR_TOKEN"] = "ist1.x.y"
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    return result.returncode, result.stderr


@pytest.mark.parametrize("token", [True, False], ids=["token", "no-token"])
def test_every_line_means_the_same_to_both(token: bool) -> None:
    python = [sys.executable, "-m", "interrupt_sidecar", "run"]
    native = [str(native_binary()), "run"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        pythons = list(pool.map(lambda line: outcome([*python, *line], token), LINES))
        natives = list(pool.map(lambda line: outcome([*native, *line], token), LINES))
    seen = set()
    for line, (py_code, py_err), (go_code, go_err) in zip(LINES, pythons, natives, strict=True):
        seen.add(py_code)
        assert go_code == py_code, f"run {line}: native {go_code}, Python {py_code}\n{go_err}\n{py_err}"
        if py_code == EXIT_USAGE:
            assert go_err == py_err, f"run {line}"
    # The corpus reaches every kind of outcome: a usage error, and past the parser.
    assert EXIT_USAGE in seen and (EXIT_UNREACHABLE if token else 0) in seen


@pytest.mark.parametrize("xdg", [True, False], ids=["XDG_RUNTIME_DIR", "no-XDG_RUNTIME_DIR"])
def test_both_find_the_daemon_at_the_same_default_address(tmp_path: Path, xdg: bool) -> None:
    # Without --address or INTERRUPT_SIDECAR_ADDRESS: serve's default socket, by the Python
    # client's rule (_config.default_socket_path) and the Go client's (config.go) alike.
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_SIDECAR_") and k != "XDG_RUNTIME_DIR"}
    env["INTERRUPT_SIDECAR_TOKEN"] = "ist1.x.y"
    if xdg:
        env["XDG_RUNTIME_DIR"] = str(tmp_path)
        socket = tmp_path / "interrupt-sidecar" / "sidecar.sock"
    else:
        env["XDG_RUNTIME_DIR"] = "  "  # blank: as unset
        socket = Path(f"/tmp/interrupt-sidecar-{os.getuid()}/sidecar.sock")
        if socket.exists():
            pytest.skip(f"a daemon may be listening at {socket}: the attach would not fail on the address")
    for argv in ([sys.executable, "-m", "interrupt_sidecar"], [str(native_binary())]):
        result = subprocess.run([*argv, "run", "--", "true"], capture_output=True, text=True, env=env, timeout=60)
        assert result.returncode == EXIT_UNREACHABLE, result.stderr
        assert f"attach to the sidecar at unix://{socket}:" in result.stderr, (argv, result.stderr)
