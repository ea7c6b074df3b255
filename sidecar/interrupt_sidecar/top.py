"""``interrupt-sidecar top``: a live terminal view of one daemon, for a person on the box.

Executions and the tools attached to them (one ``ListExecutions`` with ``include_tools``
per refresh: a snapshot, so the tool table always agrees with the header's count, however
long ago the tools attached and across reconnects), and the recent trips with their
latencies (one ``WatchExecution`` per live execution: latencies exist only as events),
redrawn in place every ``--interval``. No Grafana needed: it talks to the daemon's own
gRPC API. A daemon that cannot be reached at the start is an error (exit 4); one lost
later is retried every refresh, and the view resumes when it answers again.

When stdout is not a terminal each refresh is printed as a plain frame after a blank
line instead (for logs and pipes); ``--iterations N`` stops after N refreshes.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from interrupt_sidecar_client._config import resolve_address

from interrupt_sidecar import settings
from interrupt_sidecar.exits import EXIT_OK, EXIT_UNREACHABLE
from interrupt_sidecar.settings import ConfigError, parse_duration

# grpc, asyncio and the generated code are imported when `top` runs: every command builds
# the parser that registers it.
if TYPE_CHECKING:
    import asyncio

    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

#: Live executions watched at once; beyond this, executions are listed but not followed.
MAX_WATCHES = 256
#: Trips kept for the "recent trips" table.
RECENT_TRIPS = 12
#: Tool rows shown.
MAX_TOOL_ROWS = 20
_CLEAR = "\x1b[H\x1b[2J"


def add_top(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``top`` subcommand."""
    p = sub.add_parser(
        "top",
        help="live view of executions, attached tools and recent trips",
        description="A live view of one daemon: executions, attached tools, recent trips with their latencies.",
    )
    settings.ADDRESS.add_to(p)
    p.add_argument("--interval", default="1s", help="time between refreshes (default 1s)")
    p.add_argument("--iterations", type=int, default=0, help="stop after this many refreshes (default: until Ctrl+C)")
    p.set_defaults(func=run_top)


def run_top(args: argparse.Namespace) -> int:
    """Entry point of ``interrupt-sidecar top``; returns the exit code."""
    interval_s = parse_duration(args.interval, "--interval") / 1e9
    if interval_s <= 0:
        raise ConfigError("--interval must be positive")
    if args.iterations < 0:
        raise ConfigError("--iterations must be 0 (forever) or more")
    address = resolve_address(args.address)
    import asyncio

    try:
        return asyncio.run(_run(address, interval_s, args.iterations, sys.stdout))
    except KeyboardInterrupt:
        return EXIT_OK


@dataclass
class _Trip:
    execution_id: str
    reason: str
    at: float  # wall-clock seconds
    unwound_ms: list[float] = field(default_factory=list)
    overruns: int = 0
    gone_ms: list[float] = field(default_factory=list)
    escalations: int = 0


@dataclass
class _State:
    """What the watches have seen, shared with the renderer (one event loop, no locks)."""

    trips: dict[str, _Trip] = field(default_factory=dict)
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT_TRIPS))

    def trip_of(self, execution_id: str) -> _Trip | None:
        return self.trips.get(execution_id)


def _name(enum: object, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix) if value else "-"  # type: ignore[attr-defined]


def _reason(value: int) -> str:
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

    return _name(pb.InterruptReason, value, "INTERRUPT_REASON_")


def _behavior(value: int) -> str:
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

    return _name(pb.InterruptBehavior, value, "INTERRUPT_BEHAVIOR_") if value else "NON_INTERRUPTIBLE"


def _record(state: _State, event: pb.ExecutionEvent) -> None:
    execution_id = event.execution_id
    kind = event.WhichOneof("event")
    if kind == "snapshot" and event.snapshot.cancelled:
        _remember_trip(state, execution_id, event.snapshot.reason, event.snapshot.tripped_at.ToNanoseconds() / 1e9)
    elif kind == "tripped":
        _remember_trip(state, execution_id, event.tripped.reason, event.tripped.tripped_at.ToNanoseconds() / 1e9)
    elif kind == "tool_unwound":
        u = event.tool_unwound
        trip = state.trip_of(execution_id)
        if trip is not None and u.HasField("latency"):
            trip.unwound_ms.append(u.latency.ToNanoseconds() / 1e6)
    elif kind == "grace_overrun":
        if (trip := state.trip_of(execution_id)) is not None:
            trip.overruns += 1
    elif kind == "process_group_signalled":
        if event.process_group_signalled.escalation and (trip := state.trip_of(execution_id)) is not None:
            trip.escalations += 1
    elif kind == "process_group_gone" and (trip := state.trip_of(execution_id)) is not None:
        trip.gone_ms.append(event.process_group_gone.latency.ToNanoseconds() / 1e6)


def _remember_trip(state: _State, execution_id: str, reason: int, at: float) -> None:
    if execution_id not in state.trips:
        state.trips[execution_id] = _Trip(execution_id, _reason(reason), at)
        state.recent.appendleft(execution_id)
        for old in set(state.trips) - set(state.recent):
            del state.trips[old]


async def _watch(stub: pb_grpc.CoordinatorServiceAsyncStub, execution_id: str, state: _State) -> None:
    import grpc
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

    call = stub.WatchExecution(pb.WatchExecutionRequest(execution_id=execution_id))
    try:
        async for event in call:
            _record(state, event)
    except grpc.aio.AioRpcError:
        pass  # the execution is gone or the daemon stopped: the list shows it, and the next
        # listing that has the execution live watches it again
    finally:
        call.cancel()


async def _run(address: str, interval_s: float, iterations: int, out: TextIO) -> int:
    import asyncio

    import grpc
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

    state = _State()
    watches: dict[str, asyncio.Task[None]] = {}
    clear = out.isatty()
    # A lost daemon is retried every refresh: reconnect at least that often, instead of
    # after grpc's backoff, which grows to minutes.
    backoff_ms = max(100, min(int(interval_s * 1000), 5_000))
    options = [("grpc.initial_reconnect_backoff_ms", backoff_ms), ("grpc.max_reconnect_backoff_ms", backoff_ms)]
    async with grpc.aio.insecure_channel(address, options=options) as channel:
        stub = pb_grpc.CoordinatorServiceStub(channel)
        refreshes = 0
        try:
            while True:
                request = pb.ListExecutionsRequest(include_ended=True, include_tools=True)
                try:
                    listed = await stub.ListExecutions(request, timeout=5)
                except grpc.aio.AioRpcError as err:
                    if not refreshes:
                        print(
                            f"interrupt-sidecar top: cannot reach the daemon at {address}: {err.details()}",
                            file=sys.stderr,
                        )
                        return EXIT_UNREACHABLE
                    frame = render_unreachable(address, err.details() or err.code().name, interval_s)
                else:
                    _follow(stub, listed, state, watches)
                    frame = render(address, list(listed.executions), state, interval_s)
                out.write((_CLEAR if clear else "\n") + frame)
                out.flush()
                refreshes += 1
                if iterations and refreshes >= iterations:
                    return EXIT_OK
                await asyncio.sleep(interval_s)
        finally:
            for task in watches.values():
                task.cancel()
            for task in watches.values():
                with contextlib.suppress(asyncio.CancelledError):
                    await task


def _follow(
    stub: pb_grpc.CoordinatorServiceAsyncStub,
    listed: pb.ListExecutionsResponse,
    state: _State,
    watches: dict[str, asyncio.Task[None]],
) -> None:
    """Watch the listed live executions not watched yet (again, after a watch ended), and
    remember the trips the listing shows."""
    import asyncio

    for execution_id in [e for e, task in watches.items() if task.done()]:
        del watches[execution_id]
    for execution in listed.executions:
        if not execution.ended and execution.execution_id not in watches and len(watches) < MAX_WATCHES:
            watches[execution.execution_id] = asyncio.create_task(_watch(stub, execution.execution_id, state))
        if execution.cancelled:
            _remember_trip(state, execution.execution_id, execution.reason, execution.tripped_at.ToNanoseconds() / 1e9)


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{max(values):.1f} ms ({len(values)})"


def _age(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def _tool_state(tool: pb.AttachedTool) -> str:
    if tool.grace_overrun:
        return "OVERRAN"
    return "unwound" if tool.unwound else "attached"


def render_unreachable(address: str, details: str, interval_s: float) -> str:
    """The frame shown while a daemon that answered before cannot be reached."""
    return (
        f"interrupt-sidecar top — {address} — {time.strftime('%H:%M:%S')} (every {interval_s:g}s; Ctrl+C quits)\n"
        f"cannot reach the daemon: {details}; retrying every {interval_s:g}s\n"
    )


def render(address: str, executions: list[pb.Execution], state: _State, interval_s: float) -> str:
    """One frame of the view, as text."""
    now = time.time()
    live = [e for e in executions if not e.ended]
    lines = [
        f"interrupt-sidecar top — {address} — {time.strftime('%H:%M:%S')} (every {interval_s:g}s; Ctrl+C quits)",
        f"executions: {len(live)} live, {sum(e.cancelled for e in live)} cancelled   "
        f"tools attached: {sum(e.attached_tools for e in live)}   "
        f"grace overruns: {sum(e.grace_overruns for e in executions)}",
        "",
        f"{'EXECUTION':<40} {'STATE':<28} {'CONTEXT':<16} {'TOOLS':>5} {'OVERRUNS':>8} {'AGE':>7}",
    ]
    live.sort(key=lambda e: e.begun_at.ToNanoseconds())
    for e in live:
        state_text = f"cancelled {_reason(e.reason)}" if e.cancelled else "live"
        age = _age(now - e.begun_at.ToNanoseconds() / 1e9)
        lines.append(
            f"{e.execution_id[:40]:<40} {state_text[:28]:<28} {e.context_id[:16]:<16} "
            f"{e.attached_tools:>5} {e.grace_overruns:>8} {age:>7}"
        )
    if not live:
        lines.append("(no live executions)")
    lines += ["", f"{'TOOL':<24} {'BEHAVIOR':<22} {'PID':>7} {'STATE':<9} EXECUTION"]
    # From the same listing as the header's count, so the two always agree.
    rows = [(e.execution_id, tool) for e in live for tool in e.tools]
    for execution_id, tool in rows[:MAX_TOOL_ROWS]:
        name = tool.tool_name or tool.tool_id
        lines.append(
            f"{name[:24]:<24} {_behavior(tool.behavior):<22} {tool.pid or '-':>7} {_tool_state(tool):<9} {execution_id}"
        )
    if not rows:
        lines.append("(no attached tools)")
    elif len(rows) > MAX_TOOL_ROWS:
        lines.append(f"… and {len(rows) - MAX_TOOL_ROWS} more")
    lines += [
        "",
        "RECENT TRIPS (latency from the trip: slowest, and how many)",
        f"{'TIME':<9} {'REASON':<20} {'UNWOUND':>16} {'OVERRUNS':>8} {'GROUPS GONE':>16} {'SIGKILL':>7} EXECUTION",
    ]
    for execution_id in state.recent:
        trip = state.trips[execution_id]
        lines.append(
            f"{time.strftime('%H:%M:%S', time.localtime(trip.at)):<9} {trip.reason:<20} {_ms(trip.unwound_ms):>16} "
            f"{trip.overruns:>8} {_ms(trip.gone_ms):>16} {trip.escalations:>7} {execution_id}"
        )
    if not state.recent:
        lines.append("(no trips yet)")
    return "\n".join(lines) + "\n"
