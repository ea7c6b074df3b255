"""--health-listen: a TCP listener serving only grpc.health.v1, for Kubernetes grpc probes."""

from __future__ import annotations

import signal
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import free_port, start_daemon


async def test_health_listener_answers_health_and_nothing_else(tmp_short: Path) -> None:
    port = free_port()
    daemon = start_daemon(tmp_short, "--health-listen", f"127.0.0.1:{port}")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            answer = await health.Check(health_pb2.HealthCheckRequest())
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
            # The power to begin or interrupt executions is not on this listener.
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await pb_grpc.CoordinatorServiceStub(channel).BeginExecution(pb.BeginExecutionRequest())
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        assert daemon.stop(signal.SIGTERM) == 0


def test_health_listen_refuses_a_unix_socket(tmp_short: Path) -> None:
    with pytest.raises(RuntimeError, match="--health-listen must be HOST:PORT"):
        start_daemon(tmp_short, "--health-listen", f"unix://{tmp_short}/h.sock")
