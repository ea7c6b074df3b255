"""A stream that never says hello is ended by the daemon's hello timer.

In process, so the timer can be shortened: the daemon's own ``Daemon`` on a unix socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from interrupt_sidecar.config import ServeConfig
from interrupt_sidecar.server import Daemon
from interrupt_sidecar.services import tool_channel
from interrupt_sidecar.settings import parse_listen
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.polling import eventually_async


async def _silent(stop: asyncio.Event) -> AsyncIterator[pb.ToolMessage]:
    await stop.wait()  # opens the stream and sends nothing
    return
    yield  # pragma: no cover (makes this an async generator)


@pytest.mark.timeout(30)
async def test_a_stream_without_hello_is_ended_after_the_hello_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_short: Path
) -> None:
    monkeypatch.setattr(tool_channel, "HELLO_TIMEOUT_S", 0.3)
    config = ServeConfig(
        listen=(parse_listen(f"unix://{tmp_short / 's.sock'}"),),
        metrics_listen=None,
        state_dir=None,
        grace_ns=500_000_000,
        loop="asyncio",
    )
    daemon = Daemon(config)
    await daemon.start()
    stop = asyncio.Event()
    try:
        async with grpc.aio.insecure_channel(daemon.addresses[0]) as ch:
            call = pb_grpc.ToolChannelServiceStub(ch).Attach(_silent(stop))
            code = await asyncio.wait_for(call.code(), 10)
            assert code == grpc.StatusCode.FAILED_PRECONDITION
            assert "no hello within 0.3s" in await call.details()
            # The daemon holds no stream for it any more. Soon rather than now: grpc.aio's
            # abort sends the status before it raises, so the client can read the code while
            # the handler's `finally`, which forgets the session, has yet to run (seen under
            # stress-ng: open_streams was still 1).
            await eventually_async(
                lambda: daemon._tool_channel.open_streams == 0, timeout=10, what="the stream to be forgotten"
            )
    finally:
        stop.set()
        await daemon.shutdown()
