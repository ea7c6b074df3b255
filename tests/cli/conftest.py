"""The command line's two implementations, held to the same assertions.

``cli`` is each in turn (:mod:`tests.cli.implementations`); ``both`` is the pair, for the
tests that compare their output byte for byte.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.implementations import CommandLine, native_cli, python_cli


@pytest.fixture(params=["python", "native"])
def cli(request: pytest.FixtureRequest) -> CommandLine:
    """Each implementation of the command line in turn."""
    return python_cli() if request.param == "python" else native_cli()


@pytest.fixture
def both() -> tuple[CommandLine, CommandLine]:
    """The two implementations, for tests that compare their output byte for byte."""
    return python_cli(), native_cli()


@pytest.fixture
def tmp_short() -> Iterator[Path]:
    """A directory with a short path (unix socket paths are limited to 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as d:
        yield Path(d)
