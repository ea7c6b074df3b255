from __future__ import annotations

from collections.abc import AsyncIterator

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
