"""Fixtures of the termination suite: a real daemon (tests/conftest.py) and a channel to it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.conftest import channel, stub

__all__ = ["channel", "stub", "workdir"]


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A short private directory for kitchen-sink reports (readable by a foreign-uid child too)."""
    with tempfile.TemporaryDirectory(prefix="ist-", dir="/tmp") as directory:
        Path(directory).chmod(0o777)
        yield Path(directory)
