"""8. Cross-sidecar cascade: trip at the root → a tool two daemons away holds the cancel,
beside single-daemon delivery measured against the same root daemon in the same run.

Three real daemons: the root listens on TCP with the coordinator credential (as across
pods), the middle and the bottom on unix sockets. Each trial begins parent (root) → child
(middle, ``remote_parent`` over TCP) → grandchild (bottom, ``remote_parent`` over the
middle's socket), attaches a raw tool to the grandchild, lets both followers subscribe,
interrupts the parent and times until the tool reads its cancel. A single-daemon trial
attaches a tool to an execution of the root itself, leaves the daemons the same quiet
(``SUBSCRIBE_S``) and times the same way: a daemon woken from idle delivers about 2-3x
slower than a busy one, so only like conditions make a fair yardstick. Goal (issue 8):
each hop adds no more than one single-daemon delivery.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench import stats
from bench.clients import channel
from bench.context import Context
from bench.procs import AUTH_METADATA, AUTH_TOKEN, Server, start_daemon

#: Time for the two followers to subscribe after a chain is begun. A benchmark set-up
#: pause, not a measurement: a trip before they subscribe is still caught (through the
#: snapshot), but its latency would include connecting.
SUBSCRIBE_S = 0.05


async def _tool_cancel_ns(call: Any) -> int:
    while True:
        message = await call.read()
        if message.HasField("cancel"):
            return time.monotonic_ns()


async def _attach(stub: Any, token: str) -> tuple[Any, asyncio.Queue[pb.ToolMessage | None]]:
    outgoing: asyncio.Queue[pb.ToolMessage | None] = asyncio.Queue()

    async def requests() -> Any:
        while (message := await outgoing.get()) is not None:
            yield message

    call = stub.Attach(requests())
    hello = pb.Hello(attach_token=token, tool_name="bench", behavior=pb.INTERRUPT_BEHAVIOR_COOPERATIVE)
    await outgoing.put(pb.ToolMessage(hello=hello))
    attached = await call.read()
    assert attached.HasField("attached"), attached
    return call, outgoing


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    loop = o.loops[0]
    trials = max(5, o.kill_trials)
    ctx.log(f"cascade: {o.repeats} x {trials} trials, root → child → grandchild over three daemons ({loop})")
    root: Server = start_daemon(loop, tcp=True)
    middle: Server = start_daemon(loop, tcp=False)
    bottom: Server = start_daemon(loop, tcp=False)
    channels = [channel(root.address("unix")), channel(middle.address("unix")), channel(bottom.address("unix"))]
    try:
        root_c, middle_c, bottom_c = (pb_grpc.CoordinatorServiceStub(c) for c in channels)
        root_t: Any = pb_grpc.ToolChannelServiceStub(channels[0])
        bottom_t: Any = pb_grpc.ToolChannelServiceStub(channels[2])
        cascade_repeats: list[list[float]] = []
        single_repeats: list[list[float]] = []
        for _ in range(o.repeats):
            cascade: list[float] = []
            single: list[float] = []
            for _ in range(trials):
                # Two hops.
                parent = await root_c.BeginExecution(pb.BeginExecutionRequest(), metadata=AUTH_METADATA)
                remote = pb.RemoteParent(
                    address=root.address("tcp"), execution_id=parent.execution_id, credential=AUTH_TOKEN
                )
                child = await middle_c.BeginExecution(pb.BeginExecutionRequest(remote_parent=remote))
                grandchild = await bottom_c.BeginExecution(
                    pb.BeginExecutionRequest(
                        remote_parent=pb.RemoteParent(address=middle.address("unix"), execution_id=child.execution_id)
                    )
                )
                call, outgoing = await _attach(bottom_t, grandchild.attach_token)
                await asyncio.sleep(SUBSCRIBE_S)
                heard = asyncio.ensure_future(_tool_cancel_ns(call))
                started = time.monotonic_ns()
                await root_c.Interrupt(
                    pb.InterruptRequest(execution_id=parent.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT),
                    metadata=AUTH_METADATA,
                )
                cascade.append((await heard - started) / 1e6)
                await outgoing.put(None)
                call.cancel()
                for stub, begun in ((bottom_c, grandchild), (middle_c, child), (root_c, parent)):
                    await stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id), metadata=())
                # One daemon, same root.
                alone = await root_c.BeginExecution(pb.BeginExecutionRequest())
                call, outgoing = await _attach(root_t, alone.attach_token)
                # The same quiet as before the cascade's trip: a daemon woken from idle is
                # slower (see delivery idle/busy), and like must be compared with like.
                await asyncio.sleep(SUBSCRIBE_S)
                heard = asyncio.ensure_future(_tool_cancel_ns(call))
                started = time.monotonic_ns()
                await root_c.Interrupt(
                    pb.InterruptRequest(execution_id=alone.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT)
                )
                single.append((await heard - started) / 1e6)
                await outgoing.put(None)
                call.cancel()
                await root_c.EndExecution(pb.EndExecutionRequest(execution_id=alone.execution_id))
            cascade_repeats.append(cascade)
            single_repeats.append(single)
    finally:
        for c in channels:
            await c.close()
        for server in (bottom, middle, root):
            server.stop()
    two_hops = stats.combine(cascade_repeats)
    one_daemon = stats.combine(single_repeats)
    ctx.log(f"  cascade p50 {two_hops['p50']:.2f} p99 {two_hops['p99']:.2f} | single p50 {one_daemon['p50']:.2f}")
    return {
        "loop": loop,
        "unit": "ms",
        "trials_per_repeat": trials,
        "two_hops": two_hops,
        "single_daemon": one_daemon,
        "ratio_to_single": stats.ratio(two_hops, one_daemon),
        # What each of the two hops adds, in single-daemon deliveries.
        "per_hop_in_deliveries_p50": (two_hops["p50"] - one_daemon["p50"]) / 2 / one_daemon["p50"],
        "per_hop_in_deliveries_p99": (two_hops["p99"] - one_daemon["p99"]) / 2 / one_daemon["p99"],
    }
