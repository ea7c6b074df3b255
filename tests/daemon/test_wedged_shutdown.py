"""SIGTERM with peers that never read: the daemon still trips, kills registered groups and
exits 0 in bounded time (docs/operations.md, "Shutdown").

The peers are real HTTP/2 connections whose stream window the daemon can never write into
(tests/daemon/wedged_h2.py): a health ``Watch``, a ``WatchExecution`` and an ``Attach``
stream, each with a write pending forever. Before the fix a wedged health watcher held
grpc_health's lock and shutdown's first step (NOT_SERVING) waited on it: SIGTERM did nothing
and Kubernetes would wait out its grace period, then SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import start_daemon
from tests.daemon.wedged_h2 import WedgedPeer
from tests.daemon.wire import group_owner
from tests.polling import eventually_async

#: Generous: the shutdown takes about a second here (grpc's stop grace); a hang never ends.
EXIT_DEADLINE_S = 30.0


async def test_sigterm_exits_0_and_kills_groups_with_wedged_peers_on_every_stream_kind(tmp_short: Path) -> None:
    daemon = start_daemon(tmp_short)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    peer: WedgedPeer | None = None
    try:
        async with grpc.aio.insecure_channel(daemon.address) as channel:
            stub = pb_grpc.CoordinatorServiceStub(channel)
            begun = await stub.BeginExecution(pb.BeginExecutionRequest())
            tool = await group_owner(channel, begun.attach_token, child.pid)

            peer = WedgedPeer(str(daemon.socket_path))
            peer.open_stream("/grpc.health.v1.Health/Watch", health_pb2.HealthCheckRequest().SerializeToString())
            watch = pb.WatchExecutionRequest(execution_id=begun.execution_id)
            peer.open_stream("/interrupt.v1.CoordinatorService/WatchExecution", watch.SerializeToString())
            hello = pb.ToolMessage(
                hello=pb.Hello(attach_token=begun.attach_token, behavior=pb.INTERRUPT_BEHAVIOR_THREAD_INTERRUPT)
            )
            peer.open_stream("/interrupt.v1.ToolChannelService/Attach", hello.SerializeToString(), end_stream=False)

            with grpc.insecure_channel(daemon.address) as sync_channel:
                get = pb_grpc.CoordinatorServiceStub(sync_channel).GetExecution
                request = pb.GetExecutionRequest(execution_id=begun.execution_id)
                # The wedged peer's streams are served in the order opened: its tool attached
                # means the health and execution watchers are in their first writes too.
                await eventually_async(lambda: get(request, timeout=5).execution.attached_tools == 2)
            daemon.process.send_signal(signal.SIGTERM)
            cancel = (await tool.recv()).cancel
            assert cancel.reason == pb.INTERRUPT_REASON_SYSTEM_SHUTDOWN
        await eventually_async(lambda: daemon.process.poll() is not None, EXIT_DEADLINE_S, what="exit after SIGTERM")
        assert daemon.process.returncode == 0, daemon.stderr
        assert child.wait(5) == -signal.SIGTERM, "the registered process group was killed at shutdown"
    finally:
        if peer is not None:
            peer.close()
        child.kill()
        child.wait()
        daemon.stop(signal.SIGKILL)
