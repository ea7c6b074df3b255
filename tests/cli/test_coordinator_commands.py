"""begin, interrupt, end and status: the same behaviour from both implementations.

Every test here runs once against the Python command line and once against the native
binary with the same assertions; the parity tests compare their output byte for byte.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.cli.implementations import CommandLine
from tests.conftest import DaemonProcess


def test_begin_prints_export_lines_that_eval_sets_exactly(
    cli: CommandLine, daemon: DaemonProcess, tmp_path: Path
) -> None:
    # A caller-chosen id may hold any printable character but space: every shell
    # metacharacter below would run `touch ran` if eval ran the id instead of setting it.
    execution_id = "t;touch${IFS}ran`touch${IFS}ran`$(touch${IFS}ran)'\"\\|&>x"
    begun = cli("begin", "--id", execution_id, env={"INTERRUPT_SIDECAR_ADDRESS": daemon.address})
    assert begun.returncode == 0, begun.stderr
    script = (
        'eval "$1"; printf "%s\\n" "$INTERRUPT_SIDECAR_EXECUTION" "$INTERRUPT_SIDECAR_TOKEN"; '
        # A process the shell starts (a tool) sees the token: the lines export it.
        'sh -c \'printf "%s\\n" "$INTERRUPT_SIDECAR_TOKEN"\''
    )
    shell = subprocess.run(
        ["sh", "-c", script, "sh", begun.stdout], cwd=tmp_path, capture_output=True, text=True, timeout=10
    )
    assert shell.returncode == 0, shell.stderr
    got_id, token, childs_token = shell.stdout.splitlines()
    assert got_id == execution_id
    assert token.startswith("ist1.") and childs_token == token
    assert not (tmp_path / "ran").exists(), "eval ran part of the execution id"


def test_client_subcommands_drive_an_execution(cli: CommandLine, daemon: DaemonProcess) -> None:
    env = {"INTERRUPT_SIDECAR_ADDRESS": daemon.address}
    begun = cli("begin", "--id", "turn-7", "--context", "main", "--budget", "1h", env=env)
    assert begun.returncode == 0, begun.stderr
    assert begun.stdout.splitlines()[0] == "export INTERRUPT_SIDECAR_EXECUTION=turn-7"
    assert begun.stdout.splitlines()[1].startswith("export INTERRUPT_SIDECAR_TOKEN=ist1.")
    status = cli("status", env=env)
    assert status.returncode == 0
    assert status.stdout == "turn-7\tlive\ttools=0\toverruns=0\tcontext=main\n"
    tripped = cli("interrupt", "turn-7", "--reason", "NOW_PRIORITY_INPUT", env=env)
    assert tripped.stdout == "turn-7\ttripped\tNOW_PRIORITY_INPUT\n"
    again = cli("interrupt", "--context", "main", env=env)
    assert again.stdout == "turn-7\talready tripped\tNOW_PRIORITY_INPUT\n"
    assert cli("interrupt", "--context", "elsewhere", env=env).stdout == "no live execution matched\n"
    one = cli("status", "turn-7", env=env)
    assert one.stdout == "turn-7\tlive, cancelled (NOW_PRIORITY_INPUT)\ttools=0\toverruns=0\tcontext=main\n"
    as_json = cli("status", "turn-7", "--json", env=env)
    assert '"cancelled": true' in as_json.stdout
    ended = cli("end", "turn-7", env=env)
    assert (ended.returncode, ended.stdout) == (0, "turn-7\tended\n")
    assert cli("status", env=env).stdout == "no executions\n"
    assert "turn-7\tended, cancelled" in cli("status", "--all", env=env).stdout
    refused = cli("interrupt", "turn-7", env=env)
    assert refused.returncode == 5
    assert refused.stderr.startswith("interrupt-sidecar interrupt: FAILED_PRECONDITION: ")
    unknown = cli("end", "nobody", env=env)
    assert unknown.returncode == 5 and unknown.stderr.startswith("interrupt-sidecar end: NOT_FOUND: ")


def test_json_output_carries_the_wires_field_names(cli: CommandLine, daemon: DaemonProcess) -> None:
    address = f"--address={daemon.address}"
    begun = json.loads(cli("begin", address, "--json", "--id", "j-1", "--grace", "1.5s", "--label", "k=v").stdout)
    assert begun["execution_id"] == "j-1" and begun["attach_token"].startswith("ist1.")
    execution = begun["execution"]
    assert execution["grace"] == "1.500s" and execution["labels"] == {"k": "v"}
    assert execution["begun_at"].endswith("Z")
    assert "cancelled" not in execution, "unset fields are left out, as json_format does"
    tripped = json.loads(cli("interrupt", address, "--json", "j-1").stdout)
    assert tripped == {"outcomes": [{"execution_id": "j-1", "tripped": True, "reason": "INTERRUPT_REASON_USER_SIGINT"}]}
    listed = json.loads(cli("status", address, "--json").stdout)
    assert [e["execution_id"] for e in listed["executions"]] == ["j-1"]
    assert listed["executions"][0]["reason"] == "INTERRUPT_REASON_USER_SIGINT"
    assert json.loads(cli("interrupt", address, "--json", "--context", "none").stdout) == {}


def test_both_print_the_same_bytes(both: tuple[CommandLine, CommandLine], daemon: DaemonProcess) -> None:
    """Text and --json output, compared between the implementations on the same executions."""
    python, native = both
    env = {"INTERRUPT_SIDECAR_ADDRESS": daemon.address}
    # Characters json.dumps escapes (quote, backslash, control, non-ASCII, above U+FFFF)
    # in a field that travels back: the detail.
    detail = 'quote " backslash \\ tab \t é ✓ 😀 <&>'
    for execution_id in ("same-1", "same-2"):
        begun = python(
            "begin", "--id", execution_id, "--context", "c", "--budget", "1m30s", "--grace", "250ms", env=env
        )
        assert begun.returncode == 0, begun.stderr
    python("interrupt", "same-1", "--reason", "BUDGET_EXCEEDED", "--detail", detail, env=env)
    for args in (
        ("status",),
        ("status", "--json"),
        ("status", "--all", "--json"),
        ("status", "same-1"),
        ("status", "same-1", "--json"),
        ("status", "--context", "c", "--json"),
        # Repeated, these answer the same: an interrupt of a tripped execution, an end.
        ("interrupt", "same-1", "--json"),
        ("interrupt", "same-1"),
        ("interrupt", "--context", "nothing-here"),
        ("end", "same-2", "--json"),
        ("end", "same-2"),
    ):
        from_python, from_native = python(*args, env=env), native(*args, env=env)
        assert from_native.returncode == from_python.returncode == 0, (args, from_python.stderr, from_native.stderr)
        assert from_native.stdout == from_python.stdout, args


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("begin", "--grace", "soon"), "interrupt-sidecar begin: --grace: 'soon' is not a duration"),
        (("begin", "--budget", ""), "interrupt-sidecar begin: --budget: '' is not a duration"),
        (("begin", "--label", "no-equals"), "interrupt-sidecar begin: --label 'no-equals': expected KEY=VALUE"),
        (("interrupt",), "interrupt-sidecar interrupt: name one target"),
        (("interrupt", "x", "--context", "y"), "interrupt-sidecar interrupt: name one target"),
        (("interrupt", "--context", "y", "x"), "interrupt-sidecar interrupt: name one target"),
        (("interrupt", "--session=s", "--task", "t"), "interrupt-sidecar interrupt: name one target"),
        (("interrupt", "x", "--reason", "SOON"), "argument --reason: invalid choice: 'SOON'"),
        (("interrupt", "x", "--detail"), "argument --detail: expected one argument"),
        (("end",), "the following arguments are required: execution_id"),
        (("status", "--bogus"), "unrecognized arguments: --bogus"),
        (("status", "a", "b"), "unrecognized arguments: b"),
        (("status", "--a"), "ambiguous option: --a"),
        (("status", "--json=yes"), "ignored explicit argument 'yes'"),
    ],
)
def test_bad_input_exits_2_before_anything_is_sent(
    both: tuple[CommandLine, CommandLine], tmp_short: Path, args: tuple[str, ...], message: str
) -> None:
    """Both refuse with exit 2 and the same words; nothing is sent (no daemon listens)."""
    env = {"INTERRUPT_SIDECAR_ADDRESS": f"unix://{tmp_short}/nobody.sock"}
    python, native = both
    from_python, from_native = python(*args, env=env), native(*args, env=env)
    assert from_python.returncode == from_native.returncode == 2
    assert message in from_python.stderr
    assert from_native.stderr == from_python.stderr
    assert from_native.stdout == from_python.stdout == ""


def test_abbreviated_flags_are_understood(cli: CommandLine, daemon: DaemonProcess) -> None:
    begun = cli("begin", f"--addr={daemon.address}", "--cont", "ab", "--id=abbrev", "--bud", "1h")
    assert begun.returncode == 0, begun.stderr
    listed = cli("status", "--address", daemon.address, "--con=ab", "--al")
    assert listed.stdout.startswith("abbrev\tlive\t"), listed


def test_unreachable_daemon_exits_4(cli: CommandLine, tmp_short: Path) -> None:
    for args in (("status",), ("begin",), ("interrupt", "x"), ("end", "x")):
        result = cli(*args, "--address", f"unix://{tmp_short}/nobody.sock")
        assert result.returncode == 4, (args, result.stderr)
        assert result.stderr.startswith(
            f"interrupt-sidecar {args[0]}: cannot reach the daemon at unix://{tmp_short}/nobody.sock: "
        )


def test_the_address_comes_from_the_flag_else_the_variable_else_the_default_socket(
    cli: CommandLine, daemon: DaemonProcess, tmp_short: Path
) -> None:
    elsewhere = f"unix://{tmp_short}/nobody.sock"
    assert cli("status", "--address", daemon.address, env={"INTERRUPT_SIDECAR_ADDRESS": elsewhere}).returncode == 0
    assert cli("status", env={"INTERRUPT_SIDECAR_ADDRESS": f"  {daemon.address} "}).returncode == 0
    # Neither: serve's default socket, under XDG_RUNTIME_DIR.
    (tmp_short / "interrupt-sidecar").mkdir()
    (tmp_short / "interrupt-sidecar" / "sidecar.sock").symlink_to(daemon.socket_path)
    by_default = cli("status", env={"INTERRUPT_SIDECAR_ADDRESS": "", "XDG_RUNTIME_DIR": str(tmp_short)})
    assert by_default.returncode == 0, by_default.stderr
    unset = cli("status", env={"INTERRUPT_SIDECAR_ADDRESS": "", "XDG_RUNTIME_DIR": f"{tmp_short}/none"})
    assert unset.returncode == 4
    assert f"cannot reach the daemon at unix://{tmp_short}/none/interrupt-sidecar/sidecar.sock:" in unset.stderr


def test_ctrl_c_while_waiting_for_the_daemon_exits_130(cli: CommandLine, tmp_short: Path) -> None:
    """A socket that accepts and never answers: the command waits (no deadline) until Ctrl+C."""
    path = tmp_short / "silent.sock"
    with socket.socket(socket.AF_UNIX) as silent:
        silent.bind(str(path))
        silent.listen()
        silent.settimeout(20)
        # `with`: its pipes are closed even when the test fails, so no ResourceWarning of
        # theirs is raised later, in whichever unrelated test the garbage collector runs in.
        with cli.popen("status", "--address", f"unix://{path}") as waiting:
            try:
                connection, _ = silent.accept()  # the command has connected and is waiting
                with connection:
                    waiting.send_signal(signal.SIGINT)
                    stdout, stderr = waiting.communicate(timeout=20)
            finally:
                waiting.kill()
                waiting.wait()
    assert waiting.returncode == 130, stderr
    assert stdout == ""
    assert "Traceback" not in stderr


def test_the_coordinator_credential_is_sent_from_the_environment(cli: CommandLine, tmp_short: Path) -> None:
    from tests.conftest import free_port, start_daemon

    token = "coordinator-credential-0123456789"
    (tmp_short / "token").write_text(token + "\n")
    (tmp_short / "token").chmod(0o600)
    port = free_port()
    daemon = start_daemon(tmp_short, "--listen", f"127.0.0.1:{port}", "--auth-token-file", str(tmp_short / "token"))
    try:
        env = {"INTERRUPT_SIDECAR_ADDRESS": f"127.0.0.1:{port}", "INTERRUPT_SIDECAR_AUTH_TOKEN": ""}
        refused = cli("begin", "--session", "chat-7", env=env)
        assert refused.returncode == 5 and "interrupt-sidecar begin: UNAUTHENTICATED: " in refused.stderr
        env["INTERRUPT_SIDECAR_AUTH_TOKEN"] = f" {token} "
        for _ in range(2):
            assert cli("begin", "--session", "chat-7", env=env).returncode == 0
        released = cli("interrupt", "--session", "chat-7", env=env)
        assert released.returncode == 0, released.stderr
        lines = released.stdout.splitlines()
        assert len(lines) == 2 and all(line.endswith("\ttripped\tSESSION_RELEASED") for line in lines)
    finally:
        assert daemon.stop() == 0
