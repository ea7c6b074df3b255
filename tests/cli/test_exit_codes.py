"""The native binary's exit codes are Python's: ``exits.go`` against :mod:`interrupt_sidecar.exits`.

Why a parse and not a generated file or a dump from the binary: the Go list is eleven
constants that change once a year; reading them here needs no toolchain and no build, so
the check runs on every machine (a skipped check would let the two drift where Go is absent).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from interrupt_sidecar import exits

EXITS_GO = Path(__file__).resolve().parents[2] / "clients" / "go" / "cmd" / "interrupt-sidecar" / "exits.go"


def _snake(camel: str) -> str:
    """``CannotExecute`` → ``CANNOT_EXECUTE``; an acronym (``SIGINT``, ``OK``) stays whole."""
    return re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", camel).upper()


def go_exit_codes(text: str) -> dict[str, int]:
    """The ``exitName = N`` constants of exits.go's const block, as Python's ``EXIT_NAME: N``."""
    block = re.search(r"^const \($\n(.*?)^\)$", text, re.MULTILINE | re.DOTALL)
    assert block, "exits.go has no const ( ... ) block"
    codes: dict[str, int] = {}
    for line in block[1].splitlines():
        code = line.split("//")[0].strip()
        if not code:
            continue
        # Anything else (iota, an expression, another name) would escape this check: refuse it.
        constant = re.fullmatch(r"exit([A-Z][A-Za-z]*)\s*=\s*(\d+)", code)
        assert constant, f"exits.go: {line.strip()!r} is not `exitName = N`"
        codes["EXIT_" + _snake(constant[1])] = int(constant[2])
    return codes


def test_the_native_exit_codes_are_pythons() -> None:
    python = {name: value for name, value in vars(exits).items() if name.startswith("EXIT_")}
    assert len(python) >= 10, "interrupt_sidecar.exits lost its EXIT_* names?"
    assert go_exit_codes(EXITS_GO.read_text()) == python


def test_the_parse_reads_names_and_refuses_what_it_cannot_check() -> None:
    assert go_exit_codes("const (\n\texitOK = 0\n\texitCannotExecute = 126 // CMD\n\texitSIGINT = 130\n)\n") == {
        "EXIT_OK": 0,
        "EXIT_CANNOT_EXECUTE": 126,
        "EXIT_SIGINT": 130,
    }
    with pytest.raises(AssertionError, match="is not `exitName = N`"):
        go_exit_codes("const (\n\texitOK = iota\n)\n")
