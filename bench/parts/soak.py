"""Soak: a daemon under steady churn for ``--soak-seconds`` (30 min by default, 60 s with
--quick): ``--soak-rate`` interrupts a second, each tripping a turn of 10 attached
cooperative tools held attached long enough that ``--soak-tools`` (1,000; --quick 200)
are attached at any moment, every tenth turn with a real process group
(``sleep``) registered by an EXTERNALLY_TERMINATED tool; each turn is ended once its tools
have their cancels and its group is gone.

Per window (a minute; 10 s with --quick): the daemon's RSS, open fds and threads, and the
delivery p50/p99 (Interrupt sent → each tool's cancel read, on the same host clock).
Totals: lost cancels (a tool with no cancel within 5 s; must be 0), survivors (a group
alive 5 s after the trip; must be 0), and the RSS and fd drift per hour after the
warm-up (the time to fill the daemon's memory of 4,096 ended executions, plus a window). A plot, soak.png, in --out."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench.context import Context
from bench.parts.hostile import fds, threads
from bench.procs import start_daemon

TOOLS_PER_TURN = 10
GROUP_EVERY = 10
DEADLINE_S = 5.0
#: CoordinatorLimits.ended_retention: ended executions the daemon remembers.
ENDED_RETENTION = 4_096


class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.lost = 0
        self.survivors = 0
        self.turns = 0
        self.groups = 0
        self.errors: list[str] = []
        #: How far the launches fell behind the rate (the client could not keep up).
        self.behind_s = 0.0


async def _tool(tools: pb_grpc.ToolChannelServiceAsyncStub, token: str, behavior: int, pgid: int = 0) -> Any:
    queue: asyncio.Queue[pb.ToolMessage | None] = asyncio.Queue()

    async def messages() -> Any:
        while (m := await queue.get()) is not None:
            yield m

    call = tools.Attach(messages())
    queue.put_nowait(pb.ToolMessage(hello=pb.Hello(attach_token=token, tool_name="soak", behavior=behavior)))  # type: ignore[arg-type]
    if pgid:
        queue.put_nowait(
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(
                    terminator_id="pg", process_group=pb.ProcessGroupTerminator(pgid=pgid)
                )
            )
        )
    first = await asyncio.wait_for(call.read(), DEADLINE_S)
    assert isinstance(first, pb.SidecarMessage) and first.HasField("attached"), first
    if pgid:
        ack = await asyncio.wait_for(call.read(), DEADLINE_S)
        assert isinstance(ack, pb.SidecarMessage) and ack.HasField("terminator_registered"), ack
    return call, queue


async def _cancel_at(call: Any) -> float | None:
    try:
        while True:
            m = await asyncio.wait_for(call.read(), DEADLINE_S)
            if m is grpc.aio.EOF:
                return None
            if m.HasField("cancel"):
                return time.monotonic()
    except (TimeoutError, grpc.RpcError):
        return None


async def turn(
    stub: pb_grpc.CoordinatorServiceAsyncStub,
    tools: pb_grpc.ToolChannelServiceAsyncStub,
    index: int,
    tally: Tally,
    hold_s: float,
) -> None:
    group: subprocess.Popen[bytes] | None = None
    streams: list[tuple[Any, Any]] = []
    try:
        begun = await stub.BeginExecution(pb.BeginExecutionRequest())
        for _ in range(TOOLS_PER_TURN):
            streams.append(await _tool(tools, begun.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE))
        if index % GROUP_EVERY == 0:
            group = subprocess.Popen(["sleep", "600"], start_new_session=True)
            streams.append(
                await _tool(tools, begun.attach_token, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED, group.pid)
            )
            tally.groups += 1
        await asyncio.sleep(hold_s)
        waits = [asyncio.ensure_future(_cancel_at(call)) for call, _ in streams]
        await asyncio.sleep(0)
        sent = time.monotonic()
        await stub.Interrupt(
            pb.InterruptRequest(execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT)
        )
        for at in await asyncio.gather(*waits):
            if at is None:
                tally.lost += 1
            else:
                tally.latencies.append((at - sent) * 1e3)
        if group is not None:
            deadline = time.monotonic() + DEADLINE_S
            while group.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if group.poll() is None:
                tally.survivors += 1
        await stub.EndExecution(pb.EndExecutionRequest(execution_id=begun.execution_id))
        tally.turns += 1
    except Exception as err:  # a failed turn is reported, the soak goes on
        tally.errors.append(f"{type(err).__name__}: {err}"[:300])
    finally:
        for call, queue in streams:
            queue.put_nowait(None)
            call.cancel()
        if group is not None and group.poll() is None:
            group.kill()
        if group is not None:
            group.wait(5)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    daemon = start_daemon(o.loops[0], tcp=False)
    address = daemon.address("unix")
    channel = grpc.aio.insecure_channel(address)
    stub: pb_grpc.CoordinatorServiceAsyncStub = pb_grpc.CoordinatorServiceStub(channel)
    tools: pb_grpc.ToolChannelServiceAsyncStub = pb_grpc.ToolChannelServiceStub(channel)
    tally = Tally()
    windows: list[dict[str, Any]] = []
    pending: set[asyncio.Task[None]] = set()
    # Each turn's tools stay attached ``hold_s`` before its trip, so about soak_tools are
    # attached at any moment whatever the rate; a client that cannot keep up (turns pile
    # up beyond twice that) waits, and the rate it achieved is reported.
    hold_s = o.soak_tools / (o.soak_rate * TOOLS_PER_TURN)
    max_in_flight = max(1, int(2 * o.soak_rate * (hold_s + 0.5)))
    ctx.log(
        f"soak: {o.soak_seconds:g} s at {o.soak_rate:g} interrupts/s, ~{o.soak_tools} tools attached "
        f"(each turn held {hold_s:.2f} s), windows of {o.soak_window_s:g} s"
    )
    started = time.monotonic()
    try:
        index = 0
        window_start, window_from = started, 0
        while (now := time.monotonic()) - started < o.soak_seconds:
            if len(pending) >= max_in_flight:
                await asyncio.sleep(0.01)
                continue
            task = asyncio.create_task(turn(stub, tools, index, tally, hold_s))
            pending.add(task)
            task.add_done_callback(pending.discard)
            index += 1
            if now - window_start >= o.soak_window_s:
                window = tally.latencies[window_from:]
                windows.append(
                    {
                        "t_s": round(now - started, 1),
                        "rss_mib": daemon.rss() / 2**20,
                        "fds": fds(daemon.pid),
                        "threads": threads(daemon.pid),
                        "delivery_p50_ms": _pct(window, 0.5),
                        "delivery_p99_ms": _pct(window, 0.99),
                        "cancels": len(window),
                        "turns_in_flight": len(pending),
                    }
                )
                ctx.log(f"  soak {windows[-1]}")
                window_start, window_from = now, len(tally.latencies)
            await asyncio.sleep(max(0.0, started + index / o.soak_rate - time.monotonic()))
            if time.monotonic() > started + index / o.soak_rate + 1.0:
                # Behind schedule (throttled above): do not burst to catch up.
                started_behind = time.monotonic() - (started + index / o.soak_rate)
                tally.behind_s = max(tally.behind_s, started_behind)
        if pending:
            await asyncio.wait(pending, timeout=3 * DEADLINE_S + hold_s)
    finally:
        await channel.close()
        code = daemon.stop()
    elapsed = time.monotonic() - started
    out: dict[str, Any] = {
        "seconds": round(elapsed, 1),
        "interrupts": tally.turns,
        "interrupts_per_s": tally.turns / elapsed,
        "target_rate": o.soak_rate,
        "tools_attached_target": o.soak_tools,
        "client_behind_s_max": round(tally.behind_s, 1),
        "cancels": len(tally.latencies),
        "lost_cancels": tally.lost,
        "process_groups": tally.groups,
        "survivors": tally.survivors,
        "failed_turns": len(tally.errors),
        "errors": tally.errors[:10],
        "delivery_p50_ms": _pct(tally.latencies, 0.5),
        "delivery_p99_ms": _pct(tally.latencies, 0.99),
        "windows": windows,
        "daemon_exit_code": code,
    }
    # Warm-up: until the daemon's memory of ended executions (the last 4,096) is full, RSS
    # grows by design; drift is measured over the windows after it.
    warmup_s = ENDED_RETENTION / max(o.soak_rate, 1e-9) + o.soak_window_s
    steady = [w for w in windows if w["t_s"] >= warmup_s]
    out["warmup_s"] = round(warmup_s, 1)
    if len(steady) >= 2:
        hours = (steady[-1]["t_s"] - steady[0]["t_s"]) / 3600
        out["rss_drift_mib_per_hour"] = (steady[-1]["rss_mib"] - steady[0]["rss_mib"]) / hours
        out["fd_drift_per_hour"] = (steady[-1]["fds"] - steady[0]["fds"]) / hours
        out["rss_mib_median_after_warmup"] = statistics.median(w["rss_mib"] for w in steady)
    ctx.log(
        f"  soak: {tally.turns} interrupts, {len(tally.latencies)} cancels, lost {tally.lost}, "
        f"{tally.groups} groups, survivors {tally.survivors}, failed turns {len(tally.errors)}"
    )
    if o.plots and windows:
        _plot(windows, Path(o.out))
    return out


def _plot(windows: list[dict[str, Any]], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    t = [w["t_s"] / 60 for w in windows]
    fig, axes = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
    axes[0].plot(t, [w["delivery_p50_ms"] for w in windows], label="p50")
    axes[0].plot(t, [w["delivery_p99_ms"] for w in windows], label="p99")
    axes[0].set_ylabel("delivery (ms)")
    axes[0].legend()
    axes[1].plot(t, [w["rss_mib"] for w in windows])
    axes[1].set_ylabel("RSS (MiB)")
    axes[2].plot(t, [w["fds"] for w in windows], label="fds")
    axes[2].plot(t, [w["threads"] for w in windows], label="threads")
    axes[2].set_ylabel("count")
    axes[2].set_xlabel("minutes")
    axes[2].legend()
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "soak.png", dpi=110)
    plt.close(fig)
