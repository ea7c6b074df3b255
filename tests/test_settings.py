"""One source for each setting and exit code: the tables in interrupt_sidecar.settings and
interrupt_sidecar.exits. These tests fail when a flag, a variable, a default or an exit code
is defined anywhere else, or when docs/configuration.md disagrees with the tables."""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from interrupt_sidecar import exits, settings
from interrupt_sidecar.cli import COMMANDS, build_parser
from interrupt_sidecar.config import ServeConfig, serve_config
from interrupt_sidecar_client import _config as client_config

from tests.conftest import ROOT

SIDECAR = ROOT / "sidecar" / "interrupt_sidecar"
GEN_DOCS = ROOT / "scripts" / "gen_docs.py"


# -- the docs page ------------------------------------------------------------------------


def _check_docs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GEN_DOCS), "--check", *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def test_the_committed_page_is_what_the_tables_render() -> None:
    result = _check_docs()
    assert result.returncode == 0, result.stderr


def test_a_page_that_disagrees_with_the_tables_fails_the_check(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    committed = (ROOT / "docs" / "configuration.md").read_text()
    assert "| `500ms` |" in committed
    page.write_text(committed.replace("| `500ms` |", "| `250ms` |"))
    result = _check_docs("--page", str(page))
    assert result.returncode == 1
    assert "make docs" in result.stderr and "+| `--grace DURATION`" in result.stderr


# -- every flag and every variable is in the table -----------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings if o not in ("-h", "--help")}


def test_every_serve_flag_is_the_tables() -> None:
    serve = _options(_subparsers(build_parser())["serve"])
    assert set(serve) == {s.flag for s in settings.SERVE}
    for setting in settings.SERVE:
        assert serve[setting.flag].dest == setting.name
        assert setting.env in str(serve[setting.flag].help), setting.flag


@pytest.mark.parametrize("command", ["begin", "interrupt", "end", "status", "top", "run"])
def test_the_address_flag_of_every_client_subcommand_is_the_tables(command: str) -> None:
    """--address (and run's --token) is declared from the table, so its help names the variable."""
    options = _options(_subparsers(build_parser())[command])
    shared = [settings.ADDRESS, settings.TOKEN] if command == "run" else [settings.ADDRESS]
    for setting in shared:
        assert options[setting.flag].dest == setting.name
        assert setting.env in str(options[setting.flag].help)
    assert "--token" not in options or command == "run"


def _declared(parser: argparse.ArgumentParser) -> list[tuple[Any, ...]]:
    return [(type(a), a.option_strings, a.dest, a.default, a.const, a.nargs, a.choices) for a in parser._actions]


def test_a_subcommand_built_alone_is_the_whole_parsers() -> None:
    """main() builds only the subcommand its line names (serve's start-up does not pay for
    the others): that parser must be the whole parser's, flag for flag and line for line."""
    whole = _subparsers(build_parser())
    assert list(whole) == list(COMMANDS)
    for command, parser in whole.items():
        alone = _subparsers(build_parser(command))
        assert list(alone) == [command]
        assert _declared(alone[command]) == _declared(parser), command
        assert alone[command].format_help() == parser.format_help(), command


def test_the_client_librarys_variables_are_the_tables() -> None:
    """The Python client (whose rules the CLI uses) reads the variables the table documents."""
    assert settings.ADDRESS.env == client_config.ADDRESS_ENV
    assert settings.TOKEN.env == client_config.TOKEN_ENV
    assert settings.AUTH_TOKEN.env == client_config.AUTH_TOKEN_ENV
    assert client_config.DOORBELL_ENV == settings.CLIENT_DOORBELL.env == settings.DOORBELL.env


# Hand-written sources of the daemon and of every client library (generated code and
# tests excluded): each INTERRUPT_SIDECAR_* name they mention must be in the table.
SOURCES = [
    (ROOT / "sidecar", "*.py"),
    (ROOT / "clients" / "python" / "src" / "interrupt_sidecar_client", "*.py"),
    (ROOT / "clients" / "go", "*.go"),
    (ROOT / "clients" / "typescript" / "src", "*.ts"),
    (ROOT / "clients" / "java" / "src" / "main", "*.java"),
    (ROOT / "clients" / "rust" / "src", "*.rs"),
    # The chart hands the agent its variables.
    (ROOT / "helm" / "interrupt-sidecar", "*.yaml"),
    (ROOT / "helm" / "interrupt-sidecar", "*.tpl"),
]
GENERATED = ("_proto", "gen")


def _source_files() -> list[Path]:
    files = [p for root, pattern in SOURCES for p in root.rglob(pattern)]
    return [p for p in files if not set(p.relative_to(ROOT).parts) & set(GENERATED)]


def test_every_variable_the_code_reads_is_in_the_table() -> None:
    known = {s.env for s in settings.ALL} | {settings.EXECUTION_ENV}
    files = _source_files()
    assert len(files) > 40, "the source globs found too little: did a client move?"
    seen: set[str] = set()
    for path in files:
        for name in re.findall(r"INTERRUPT_SIDECAR_[A-Z0-9_]*[A-Z0-9]", path.read_text()):
            seen.add(name)
            assert name in known, (
                f"{path.relative_to(ROOT)} mentions {name}, which is not in interrupt_sidecar.settings"
            )
    # And the table holds nothing the code never reads (serve's settings are read by name).
    assert {s.env for s in settings.CLIENT} <= seen


def test_the_prefix_is_spelled_only_in_the_table() -> None:
    """Variables are derived from flags (``ENV_PREFIX + name``) in one place: a name built
    elsewhere from the bare prefix would be a setting the table does not know."""
    for path in (ROOT / "sidecar").rglob("*.py"):
        if path.name == "settings.py":
            continue
        text = path.read_text()
        assert '"INTERRUPT_SIDECAR_"' not in text, path
        assert "ENV_PREFIX +" not in text, path


# -- flag, variable and default agree (uvicorn's auto_envvar parity, for every setting) ----


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    token = tmp_path / "token"
    token.write_text("a-coordinator-token-of-32-characters\n")
    other = tmp_path / "other-token"
    other.write_text("another-token-also-long-enough-0123\n")
    for name in ("cert", "key", "ca", "cert2"):
        (tmp_path / name).write_bytes(f"-----BEGIN {name}-----\n".encode())
    return {"token": str(token), "other": str(other), **{n: str(tmp_path / n) for n in ("cert", "key", "ca", "cert2")}}


def _samples(f: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Two valid values for each setting, both different from its default."""
    return {
        "listen": ("unix:///tmp/isd-a/s.sock", "unix:///tmp/isd-b/s.sock"),
        "metrics_listen": ("127.0.0.1:9464", "127.0.0.1:9999"),
        "state_dir": ("/tmp/isd-state-a", "/tmp/isd-state-b"),
        "grace": ("750ms", "2s"),
        "loop": ("asyncio", "uvloop"),
        "allow_insecure_tcp": ("1", "yes"),
        "shutdown_timeout": ("7s", "20s"),
        "allow_uid": ("1000", "2000"),
        "auth_token_file": (f["token"], f["other"]),
        "tls_cert": (f["cert"], f["cert2"]),
        "tls_key": (f["key"], f["cert2"]),
        "tls_client_ca": (f["ca"], f["cert2"]),
        "remote_parent_timeout": ("3s", "4s"),
        "health_listen": ("127.0.0.1:9465", "127.0.0.1:9466"),
        "doorbell": ("off", "/tmp/isd-bell"),
        "holder_grace": ("4s", "5s"),
        "log_level": ("DEBUG", "warning"),
    }


def _needs(name: str, f: dict[str, str]) -> dict[str, str]:
    """Flags a sample needs beside it (the rules between settings)."""
    tls = {"tls_cert": f["cert"], "tls_key": f["key"]}
    return {k: v for k, v in tls.items() if k != name} if name.startswith("tls_") else {}


def _flag(setting: settings.Setting[object], text: str) -> Any:
    return {"list": [text], "switch": True, "value": text}[setting.kind]


@pytest.mark.parametrize("setting", settings.SERVE, ids=lambda s: s.name)
def test_flag_and_variable_mean_the_same_and_the_flag_wins(
    setting: settings.Setting[object], files: dict[str, str]
) -> None:
    samples = _samples(files)
    assert set(samples) == {s.name for s in settings.SERVE}, "every setting needs samples here"
    a, b = samples[setting.name]
    needs = _needs(setting.name, files)

    def config(flags: dict[str, Any], env: dict[str, str]) -> ServeConfig:
        return serve_config({**needs, **flags}, env)

    by_flag = config({setting.name: _flag(setting, a)}, {})
    assert config({}, {setting.env: a}) == by_flag, "the variable is read as the flag is"
    if setting.name not in ("tls_cert", "tls_key"):  # each alone is refused: they go together
        assert by_flag != config({}, {}), "the sample changes something (else this test proves nothing)"
    if setting.kind != "switch":
        assert config({}, {setting.env: b}) != by_flag
        assert config({setting.name: _flag(setting, a)}, {setting.env: b}) == by_flag, "the flag wins"
    else:
        assert config({setting.name: True}, {setting.env: "0"}) == by_flag, "the flag wins"


def test_defaults_come_from_the_table() -> None:
    default = serve_config({}, {})
    assert default.grace_ns == settings.GRACE.value(None, {}) == 500_000_000
    assert default.shutdown_timeout_ns == settings.SHUTDOWN_TIMEOUT.value(None, {})
    assert default.holder_grace_ns == settings.HOLDER_GRACE.value(None, {})
    assert default.remote_parent_timeout_ns == settings.REMOTE_PARENT_TIMEOUT.value(None, {})
    assert default.log_level == settings.LOG_LEVEL.default
    assert default.loop == settings.LOOP.default
    # The dataclass's own defaults (for code that builds one directly) are the table's too.
    assert ServeConfig(listen=(), metrics_listen=None, state_dir=None, grace_ns=1, loop="auto") == ServeConfig(
        listen=(),
        metrics_listen=None,
        state_dir=None,
        grace_ns=1,
        loop="auto",
        shutdown_timeout_ns=default.shutdown_timeout_ns,
        log_level=default.log_level,
        holder_grace_ns=default.holder_grace_ns,
        remote_parent_timeout_ns=default.remote_parent_timeout_ns,
    )


# -- exit codes -----------------------------------------------------------------------------


def test_every_exit_code_is_in_the_table_once() -> None:
    constants = {name: value for name, value in vars(exits).items() if name.startswith("EXIT_")}
    codes = [row.code for row in exits.TABLE]
    assert len(codes) == len(set(codes))
    assert sorted(codes) == sorted(constants.values())


# Where exit codes are returned: no bare number there (a number is a name in exits.py).
EXIT_SITES = [
    "cli.py",
    "server.py",
    "demo.py",
    "top.py",
    *(f"wrapper/{p.name}" for p in (SIDECAR / "wrapper").glob("*.py")),
]


@pytest.mark.parametrize("module", EXIT_SITES)
def test_no_exit_code_is_a_bare_number(module: str) -> None:
    for node in ast.walk(ast.parse((SIDECAR / module).read_text())):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
            assert not isinstance(node.value.value, int) or isinstance(node.value.value, bool), (
                f"{module}:{node.lineno}: return {node.value.value}: name it in interrupt_sidecar.exits"
            )
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = ast.unparse(node.func)
            if func in ("os._exit", "sys.exit", "exit"):
                raise AssertionError(f"{module}:{node.lineno}: {func}({node.args[0].value!r}): name it in exits")


def test_the_cli_help_lists_the_tables_exit_codes() -> None:
    help_text = build_parser().format_help()
    run_help = _subparsers(build_parser())["run"].format_help()
    for row in exits.TABLE:
        assert re.search(rf"^  {row.code}\s", run_help if row.who == "run" else help_text, re.M), row.code
