from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess


@pytest.fixture
async def channel(daemon: DaemonProcess) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(daemon.address) as ch:
        yield ch


@pytest.fixture
def stub(channel: grpc.aio.Channel) -> pb_grpc.CoordinatorServiceAsyncStub:
    return pb_grpc.CoordinatorServiceStub(channel)


@pytest.fixture
def tmp_short() -> Iterator[Path]:
    """A short private directory (unix socket paths are limited to 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as d:
        yield Path(d)
