"""Fixtures of the termination suite: a real daemon (tests/conftest.py) and a channel to it."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess


@pytest.fixture
async def channel(daemon: DaemonProcess) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(daemon.address) as ch:
        yield ch


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> pb_grpc.CoordinatorServiceAsyncStub:
    return pb_grpc.CoordinatorServiceStub(channel)


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A short private directory for kitchen-sink reports (readable by a foreign-uid child too)."""
    with tempfile.TemporaryDirectory(prefix="ist-", dir="/tmp") as directory:
        Path(directory).chmod(0o777)
        yield Path(directory)
