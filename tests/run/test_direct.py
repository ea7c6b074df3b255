"""The fast path of ``run`` without a token (interrupt_sidecar.wrapper.direct): which command
lines it execs at once, and which it leaves to the full parser (so their checks stay).

Python only: these call the Python function itself. The native binary's twin
(``commandWithoutToken``) is held to the same table by its Go unit test
(``clients/go/cmd/interrupt-sidecar/runargs_test.go``, in ``make -C clients/go check``), and
what either does with a whole line is compared in test_command_line.py and test_run.py."""

from __future__ import annotations

import pytest
from interrupt_sidecar.wrapper.direct import TOKEN_ENV, command_without_token

pytestmark = pytest.mark.timeout(10)


@pytest.fixture(autouse=True)
def no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["--", "ls", "-la"], ["ls", "-la"]),
        (["ls", "-la", "--token", "x"], ["ls", "-la", "--token", "x"]),  # after CMD, all is CMD's
        (["--tool-name", "grep", "--", "grep", "-r", "x"], ["grep", "-r", "x"]),
        (["--tool-call-id=c7", "--address", "unix:///s", "--", "true"], ["true"]),
        (["--", "--", "x"], ["--", "x"]),
    ],
)
def test_lines_without_anything_to_check_exec_at_once(args: list[str], command: list[str]) -> None:
    assert command_without_token(args) == command


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--"],
        ["--token", "t", "--", "true"],  # a token: supervised
        ["--token=", "--", "true"],  # an empty token is sent (and refused): not this path
        ["--behavior", "COOPERATIVE", "--", "true"],  # a checked option
        ["--signal", "BOGUS", "--", "true"],
        ["--kill-after", "soon", "--", "true"],
        ["--help"],
        ["--tool", "x", "--", "true"],  # an abbreviation: argparse decides
        ["--tool-name"],  # a missing value
        ["--tool-name", "--", "true"],
    ],
)
def test_anything_else_goes_to_the_full_parser(args: list[str]) -> None:
    assert command_without_token(args) is None


def test_a_token_in_the_environment_means_supervised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "ist1.x.y")
    assert command_without_token(["--", "true"]) is None
    monkeypatch.setenv(TOKEN_ENV, "  ")  # blank: no sidecar, as the full subcommand reads it
    assert command_without_token(["--", "true"]) == ["true"]


def test_the_token_variable_is_the_settings_tables() -> None:
    from interrupt_sidecar import settings
    from interrupt_sidecar.wrapper import direct

    assert settings.TOKEN.env == direct.TOKEN_ENV
