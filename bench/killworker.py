"""The kill part's own process: ``python -m bench.killworker --address A --daemon-pid P``.

Its trees are started by ``bench.reaper``, a child subreaper in a process of its own, so
every process of every tree, grandchildren included, is reaped there by one thread blocked
in ``waitpid(-1)``, which stamps each reap on CLOCK_MONOTONIC and CLOCK_REALTIME (shared
with this process and the daemon). A tree is *gone* when its last member is reaped; the
daemon and the floors are timed to that same moment. Trees (each in a new process group,
started with ``posix_spawn``):

* ``polite``: ``sleep`` (dies of SIGTERM);
* ``ignores_term``: ``sh -c "trap '' TERM; exec sleep"`` (SIGTERM ignored; only SIGKILL);
* ``tree10``: ``sh`` → 3 × ``sh`` → 2 × ``sleep`` each: 10 processes in one group.

For each: the daemon (a tool attached EXTERNALLY_TERMINATED with the raw stubs registers
the group; ``Interrupt`` → reaped, and from its watch events the call → the trip and the
call → the group's signal), the floor (``os.killpg`` → reaped; for
``ignores_term``: SIGTERM, then SIGKILL from a loop timer at the grace), a pidfd floor
(``os.killpg`` → every member's pidfd readable) and, with ``--floor-address``, the gRPC
floor: a bare grpc.aio server's unary ``Kill`` → reaped, with its call → handler time,
the delivery that a kill asked for over gRPC cannot avoid (the call follows an echo, as
the daemon's ``Interrupt`` follows the group's registration). Prints one JSON object on
stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench.clients import RECV_TIMEOUT_S, _Outgoing, channel
from bench.procs import cpu_seconds

TREES: dict[str, list[str]] = {
    "polite": ["/bin/sleep", "1000"],
    "ignores_term": ["/bin/sh", "-c", "trap '' TERM; exec /bin/sleep 1000"],
    "tree10": [
        "/bin/sh",
        "-c",
        'for i in 1 2 3; do /bin/sh -c "/bin/sleep 1000 & /bin/sleep 1000 & wait" & done; wait',
    ],
}
SIZES = {"polite": 1, "ignores_term": 1, "tree10": 10}


class Reaper:
    """The client of ``bench.reaper``: starts trees there and learns when each member is reaped."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.reaped: dict[int, tuple[int, int]] = {}
        self.waiters: list[tuple[set[int], asyncio.Future[None]]] = []
        self.spawned: asyncio.Queue[int] = asyncio.Queue()
        #: Whether the reaping thread runs at a real-time priority (known after its first line).
        self.realtime: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls) -> Reaper:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.reaper", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        return cls(process)

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await asyncio.wait_for(self.process.wait(), 10)
        self.reader.cancel()

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            kind, *fields = line.split()
            if kind == b"spawned":
                self.spawned.put_nowait(int(fields[0]))
            elif kind == b"reaped":
                self._note(int(fields[0]), (int(fields[1]), int(fields[2])))
            elif kind == b"realtime":
                self.realtime.set_result(fields[0] == b"1")

    async def spawn(self, argv: list[str]) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write(f"spawn {json.dumps(argv)}\n".encode())
        await self.process.stdin.drain()
        return await asyncio.wait_for(self.spawned.get(), 10)

    def _note(self, pid: int, stamp: tuple[int, int]) -> None:
        self.reaped[pid] = stamp
        for pids, fut in list(self.waiters):
            if pids <= self.reaped.keys() and not fut.done():
                fut.set_result(None)
                self.waiters.remove((pids, fut))

    async def gone(self, pids: set[int]) -> tuple[int, int]:
        """(monotonic, wall) ns at which the last of ``pids`` was reaped."""
        if not pids <= self.reaped.keys():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.waiters.append((pids, fut))
            await asyncio.wait_for(fut, 30)
        last = max(pids, key=lambda p: self.reaped[p][0])
        stamp = self.reaped[last]
        for p in pids:
            del self.reaped[p]
        return stamp


async def _read_stamped(call: Any) -> tuple[Any, int]:
    """The stream's next message and the CLOCK_MONOTONIC moment it was read."""
    message = await call.read()
    return message, time.monotonic_ns()


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    comm = data[data.index(b"(") + 1 : data.rindex(b")")].decode()
    fields = data[data.rindex(b")") + 2 :].split()
    return comm, int(fields[2])  # comm, pgrp


def _ignores_term(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


async def spawn(kind: str, reaper: Reaper) -> tuple[int, set[int]]:
    """Start a tree and wait until every member runs its final program; (pgid, pids)."""
    pid = await reaper.spawn(TREES[kind])
    deadline = time.monotonic() + 10
    while True:
        members = set()
        sleeping = 0
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (st := _stat(int(entry))) is not None and st[1] == pid:
                members.add(int(entry))
                sleeping += st[0] == "sleep"
        want_sleep = {"polite": 1, "ignores_term": 1, "tree10": 6}[kind]
        if len(members) == SIZES[kind] and sleeping == want_sleep and (kind != "ignores_term" or _ignores_term(pid)):
            return pid, members
        if time.monotonic() > deadline:
            raise RuntimeError(f"{kind} tree did not come up: {members}")
        await asyncio.sleep(0.002)


class DaemonKill:
    def __init__(self, address: str, grace_ms: int) -> None:
        self.channel = channel(address)
        self.coordinator = pb_grpc.CoordinatorServiceStub(self.channel)
        self.tools = pb_grpc.ToolChannelServiceStub(self.channel)
        self.grace_ms = grace_ms

    async def trial(self, kind: str, reaper: Reaper) -> dict[str, float]:
        grace = Duration()
        grace.FromMilliseconds(self.grace_ms)
        begun = await self.coordinator.BeginExecution(pb.BeginExecutionRequest(grace=grace))
        watch = self.coordinator.WatchExecution(pb.WatchExecutionRequest(execution_id=begun.execution_id))
        first = await asyncio.wait_for(watch.read(), RECV_TIMEOUT_S)
        assert isinstance(first, pb.ExecutionEvent) and first.HasField("snapshot")
        out = _Outgoing()
        call: Any = self.tools.Attach(out.messages())
        hello = pb.Hello(
            attach_token=begun.attach_token, tool_name="kill", behavior=pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED
        )
        out.queue.put_nowait(pb.ToolMessage(hello=hello))
        assert (await asyncio.wait_for(call.read(), RECV_TIMEOUT_S)).HasField("attached")
        pgid, pids = await spawn(kind, reaper)
        register = pb.RegisterTerminator(terminator_id="g", process_group=pb.ProcessGroupTerminator(pgid=pgid))
        out.queue.put_nowait(pb.ToolMessage(register_terminator=register))
        registered = await asyncio.wait_for(call.read(), RECV_TIMEOUT_S)
        assert registered.HasField("terminator_registered"), registered
        # The tool's own cancel, read as it arrives: the kill must not delay it.
        cancel_read = asyncio.ensure_future(_read_stamped(call))
        # The daemon stamps its events on CLOCK_REALTIME: the same kernel's, so one offset
        # taken now turns them into CLOCK_MONOTONIC readings like ``fired``.
        wall_minus_mono = time.time_ns() - time.monotonic_ns()
        fired = time.monotonic_ns()
        await self.coordinator.Interrupt(
            pb.InterruptRequest(execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT)
        )
        gone_mono, gone_wall = await reaper.gone(pids)
        cancel, cancel_at = await asyncio.wait_for(cancel_read, RECV_TIMEOUT_S)
        assert cancel.HasField("cancel"), cancel
        result = {"trip_to_reaped": (gone_mono - fired) / 1e6, "trip_to_cancel": (cancel_at - fired) / 1e6}
        if kind == "ignores_term":
            result["grace_expiry_to_reaped"] = (gone_wall - cancel.cancel.grace_deadline.ToNanoseconds()) / 1e6
        while True:
            event = await asyncio.wait_for(watch.read(), RECV_TIMEOUT_S)
            assert isinstance(event, pb.ExecutionEvent), event
            if event.HasField("tripped"):
                tripped_at = event.tripped.tripped_at.ToNanoseconds() - wall_minus_mono
                result["call_to_trip"] = (tripped_at - fired) / 1e6
            elif event.HasField("process_group_signalled") and not event.process_group_signalled.escalation:
                signalled_at = event.occurred_at.ToNanoseconds() - wall_minus_mono
                result["call_to_signalled"] = (signalled_at - fired) / 1e6
            elif event.HasField("process_group_gone"):
                result["daemon_reported_gone"] = event.process_group_gone.latency.ToNanoseconds() / 1e6
                break
        out.queue.put_nowait(pb.ToolMessage(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_INTERRUPTED)))
        out.queue.put_nowait(None)
        while await asyncio.wait_for(call.read(), RECV_TIMEOUT_S) is not grpc.aio.EOF:
            pass
        await self.coordinator.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))
        watch.cancel()
        return result


class GrpcFloorKill:
    """``bench.floor grpc``'s ``Kill``: the killpg floor with a gRPC unary call before it."""

    def __init__(self, address: str, grace_ms: int) -> None:
        self.channel = channel(address)
        self.echo: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary("/bench.Floor/Echo")
        self.kill: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary("/bench.Floor/Kill")
        self.grace_ms = grace_ms

    async def trial(self, kind: str, reaper: Reaper) -> dict[str, float]:
        pgid, pids = await spawn(kind, reaper)
        # One call right before, as the daemon's trial has its RegisterTerminator answered
        # right before its Interrupt.
        await self.echo(b"")
        fired = time.monotonic_ns()
        handled = int(await self.kill(f"{pgid} {self.grace_ms}".encode()))
        gone_mono, _ = await reaper.gone(pids)
        return {"trip_to_reaped": (gone_mono - fired) / 1e6, "call_to_handler": (handled - fired) / 1e6}


async def floor_trial(kind: str, reaper: Reaper, grace_ms: int) -> dict[str, float]:
    """Bare ``killpg`` → reaped, and ``killpg`` → every member's pidfd readable."""
    loop = asyncio.get_running_loop()
    pgid, pids = await spawn(kind, reaper)
    fds = [os.pidfd_open(p) for p in pids]
    readable: list[asyncio.Future[None]] = []
    for fd in fds:
        fut: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, _settle, fut)
        readable.append(fut)
    fired = time.monotonic_ns()
    os.killpg(pgid, signal.SIGTERM)
    deadline_mono = fired + grace_ms * 1_000_000
    if kind == "ignores_term":
        loop.call_at(loop.time() + grace_ms / 1e3, os.killpg, pgid, signal.SIGKILL)
    await asyncio.wait_for(asyncio.gather(*readable), 30)
    pidfd_ns = time.monotonic_ns()
    for fd in fds:
        loop.remove_reader(fd)
        os.close(fd)
    gone_mono, _ = await reaper.gone(pids)
    result = {"trip_to_reaped": (gone_mono - fired) / 1e6, "trip_to_pidfd": (pidfd_ns - fired) / 1e6}
    if kind == "ignores_term":
        result["grace_expiry_to_reaped"] = (gone_mono - deadline_mono) / 1e6
    return result


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    reaper = await Reaper.start()
    daemon = DaemonKill(args.address, args.grace_ms)
    grpc_floor = GrpcFloorKill(args.floor_address, args.grace_ms) if args.floor_address else None
    kinds: list[str] = args.kinds
    out: dict[str, Any] = {
        k: {"daemon": [], "floor": [], "grpc_floor": [], "daemon_cpu_s": [], "trials": args.trials} for k in kinds
    }
    out["reaper_realtime"] = await asyncio.wait_for(reaper.realtime, 10)
    for r in range(args.repeats):
        for kind in kinds:
            warm = 3 if r == 0 else 0
            for _ in range(warm):
                await daemon.trial(kind, reaper)
                await floor_trial(kind, reaper, args.grace_ms)
                if grpc_floor and kind != "ignores_term":
                    await grpc_floor.trial(kind, reaper)
            rows_d, rows_f, rows_g = [], [], []
            cpu0 = cpu_seconds(args.daemon_pid)
            for _ in range(args.trials):
                rows_d.append(await daemon.trial(kind, reaper))
            out[kind]["daemon_cpu_s"].append((cpu_seconds(args.daemon_pid) - cpu0) / args.trials)
            for _ in range(args.trials):
                rows_f.append(await floor_trial(kind, reaper, args.grace_ms))
            # SIGKILL after the grace is the floor's own timer: no gRPC floor for that one.
            if grpc_floor and kind != "ignores_term":
                for _ in range(args.trials):
                    rows_g.append(await grpc_floor.trial(kind, reaper))
                out[kind]["grpc_floor"].append(rows_g)
            out[kind]["daemon"].append(rows_d)
            out[kind]["floor"].append(rows_f)
    await daemon.channel.close()
    if grpc_floor:
        await grpc_floor.channel.close()
    await reaper.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.killworker")
    parser.add_argument("--address", required=True)
    parser.add_argument("--daemon-pid", type=int, required=True)
    parser.add_argument("--floor-address", help="a `bench.floor grpc` server for the gRPC kill floor")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grace-ms", type=int, default=100)
    parser.add_argument("--kinds", nargs="+", default=list(TREES))
    args = parser.parse_args(argv)
    result = asyncio.run(main_async(args))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
