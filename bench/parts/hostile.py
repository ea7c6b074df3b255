"""Hostile peers at scale: while a worker process holds 1,000 tools that stop reading (each
left with a trip's cancel and 20 terminator runs unread), 200 streams that never send hello,
200 watchers that never read, and a coordinator's 10,000 open WatchExecution streams, one
well-behaved tool's delivery (trip → cancel) is measured beside the same measure with no
hostile peer. Then the worker is SIGKILLed (the coordinator vanishes) and the daemon's
recovery is measured (RSS, fds, threads, delivery). Last, the open-file limit: the daemon's
RLIMIT_NOFILE is lowered (prlimit) to just above what it holds, connections are opened
until accept fails with EMFILE, and the daemon must still answer once they are closed.

Reports the peak RSS (the memory bound), fds and threads, the p50/p99 the probe saw in each
phase, and whether the daemon answered after each phase."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench import stats
from bench.clients import DaemonTarget
from bench.context import Context
from bench.parts.delivery import measure, ms
from bench.procs import ROOT, Server, raise_nofile, start_daemon

WEDGED, SILENT, WATCHERS, VANISHING = 1_000, 200, 200, 10_000
TERMINATORS = 20


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def snapshot(server: Server) -> dict[str, float]:
    return {"rss_mib": server.rss() / 2**20, "fds": fds(server.pid), "threads": threads(server.pid)}


async def healthy(address: str) -> bool:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            got = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        except grpc.RpcError:
            return False
        return got.status == health_pb2.HealthCheckResponse.SERVING  # type: ignore[no-any-return]


async def probe(target: DaemonTarget, trials: int) -> dict[str, Any]:
    return stats.combine([ms(await measure(target, trials, 3, False, random.Random(3)))])


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    scale = 10 if o.quick else 1
    trials = 30 if o.quick else 200
    daemon = start_daemon(o.loops[0], tcp=False)
    address = daemon.address("unix")
    target = DaemonTarget(address)
    out: dict[str, Any] = {"unit": "ms", "peers": {}}
    worker: subprocess.Popen[str] | None = None
    try:
        out["baseline"] = await probe(target, trials)
        out["baseline_process"] = snapshot(daemon)
        peers = {"wedged": WEDGED // scale, "silent": SILENT // scale, "watchers": WATCHERS // scale}
        peers["vanishing"] = VANISHING // scale
        out["peers"] = peers
        ctx.log(f"hostile: starting {peers}")
        worker = subprocess.Popen(
            [sys.executable, "-m", "bench.parts.hostile", "--address", address, *_args(peers)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert worker.stdout is not None
        line = await asyncio.to_thread(worker.stdout.readline)
        if line.strip() != "ready":
            raise RuntimeError(f"the hostile worker did not get ready: {line!r}")
        peak = snapshot(daemon)
        during = await probe(target, trials)
        for _ in range(10):
            now = snapshot(daemon)
            peak = {k: max(peak[k], now[k]) for k in peak}
            await asyncio.sleep(0.2)
        out["during"] = during
        out["peak_process"] = peak
        out["ratio_during_to_baseline"] = stats.ratio(during, out["baseline"])
        ctx.log(
            f"  peak RSS {peak['rss_mib']:.0f} MiB, {peak['fds']:.0f} fds, {peak['threads']:.0f} threads; "
            f"probe p50 {during['p50']:.2f} p99 {during['p99']:.2f} ms "
            f"(baseline {out['baseline']['p50']:.2f} / {out['baseline']['p99']:.2f})"
        )
        worker.kill()  # the coordinator and every hostile tool vanish at once
        worker.wait(10)
        settle_until = time.monotonic() + 30
        while fds(daemon.pid) > out["baseline_process"]["fds"] + 20 and time.monotonic() < settle_until:
            await asyncio.sleep(0.2)
        out["after_process"] = snapshot(daemon)
        out["after"] = await probe(target, trials)
        out["healthy_after"] = await healthy(address)
        out["emfile"] = await emfile(daemon, address)
        out["healthy_after_emfile"] = await healthy(address)
        out["after_emfile"] = await probe(target, max(10, trials // 4))
        ctx.log(
            f"  after: RSS {out['after_process']['rss_mib']:.0f} MiB, {out['after_process']['fds']} fds, "
            f"probe p50 {out['after']['p50']:.2f} ms; EMFILE {out['emfile']}"
        )
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait(10)
        if worker is not None and worker.stdout is not None:
            worker.stdout.close()
        await target.close()
        out["daemon_exit_code"] = daemon.stop()
    return out


def _args(peers: dict[str, int]) -> list[str]:
    return [x for k, v in peers.items() for x in (f"--{k}", str(v))]


async def emfile(daemon: Server, address: str) -> dict[str, Any]:
    """Lower the daemon's open-file limit to just above what it holds, connect until accept
    fails, check it survives and serves again once the connections close."""
    path = address.removeprefix("unix://")
    held = fds(daemon.pid)
    limit = held + 30
    original = next(
        line.split()[3:5]
        for line in Path(f"/proc/{daemon.pid}/limits").read_text().splitlines()
        if line.startswith("Max open files")
    )
    # The soft limit only: a hard limit lowered could not be raised back here.
    subprocess.run(["prlimit", "--pid", str(daemon.pid), f"--nofile={limit}:{original[1]}"], check=True)
    sockets: list[socket.socket] = []
    try:
        for _ in range(200):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(path)
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                break
            sockets.append(s)
        await asyncio.sleep(1.0)
        at_limit = fds(daemon.pid)
        alive_at_limit = daemon.process.poll() is None
    finally:
        for s in sockets:
            s.close()
    await asyncio.sleep(1.0)
    subprocess.run(["prlimit", "--pid", str(daemon.pid), f"--nofile={original[0]}:{original[1]}"], check=True)
    return {"limit": limit, "fds_at_limit": at_limit, "connections": len(sockets), "alive": alive_at_limit}


# -- the hostile worker (python -m bench.parts.hostile) ----------------------------------------


async def worker(args: argparse.Namespace) -> None:
    raise_nofile()
    channel = grpc.aio.insecure_channel(args.address)
    stub = pb_grpc.CoordinatorServiceStub(channel)
    tools = pb_grpc.ToolChannelServiceStub(channel)
    keep: list[Any] = []
    begun = await stub.BeginExecution(pb.BeginExecutionRequest())
    # Tools that stop reading: each registers terminators, then the trip sends a cancel and
    # a run_terminator per terminator to streams nobody reads.
    for _ in range(args.wedged):
        queue: asyncio.Queue[pb.ToolMessage | None] = asyncio.Queue()
        queue.put_nowait(
            pb.ToolMessage(
                hello=pb.Hello(attach_token=begun.attach_token, behavior=pb.INTERRUPT_BEHAVIOR_THREAD_INTERRUPT)
            )
        )
        for t in range(TERMINATORS):
            queue.put_nowait(
                pb.ToolMessage(
                    register_terminator=pb.RegisterTerminator(terminator_id=f"t{t}", callback=pb.CallbackTerminator())
                )
            )
        keep.append(tools.Attach(_messages(queue)))
        keep.append(queue)
    # Watchers that never read, of the execution whose tools make events.
    for _ in range(args.watchers):
        keep.append(stub.WatchExecution(pb.WatchExecutionRequest(execution_id=begun.execution_id)))
    # Streams that never say hello (the daemon closes them after its hello timeout).
    for _ in range(args.silent):
        queue = asyncio.Queue()
        keep.append(tools.Attach(_messages(queue)))
        keep.append(queue)
    # A coordinator's many streams, then (when this process is killed) gone at once.
    others = [await stub.BeginExecution(pb.BeginExecutionRequest()) for _ in range(10)]
    for i in range(args.vanishing):
        keep.append(stub.WatchExecution(pb.WatchExecutionRequest(execution_id=others[i % 10].execution_id)))
    await asyncio.sleep(2.0)
    await stub.Interrupt(pb.InterruptRequest(execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT))
    await asyncio.sleep(1.0)
    print("ready", flush=True)
    await asyncio.Event().wait()


async def _messages(queue: asyncio.Queue[pb.ToolMessage | None]) -> Any:
    while (message := await queue.get()) is not None:
        yield message


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    for name in ("wedged", "silent", "watchers", "vanishing"):
        p.add_argument(f"--{name}", type=int, default=0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    asyncio.run(worker(p.parse_args()))


if __name__ == "__main__":
    main()
