"""``interrupt-sidecar demo``: start a real daemon, attach Python tools, interrupt them, measure.

Everything is real: the daemon runs as its own process on a private unix socket, the
tools attach with the Python client over gRPC, and the process group is a real
``sleep`` that the daemon itself terminates.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

# The client (grpc.aio), asyncio, subprocess, tempfile and statistics are imported where the demo
# uses them: every command builds the parser that registers this one.
if TYPE_CHECKING:
    from interrupt_sidecar_client import aio

from interrupt_sidecar.exits import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE

READY_TIMEOUT_S = 20.0


def add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="start a daemon, attach Python tools, interrupt them, print the latency")
    p.add_argument("--interrupts", type=int, default=200, help="interrupts to time (default 200)")
    p.set_defaults(func=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    if args.interrupts < 1:
        print("interrupt-sidecar demo: --interrupts must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="interrupt-sidecar-demo-", dir="/tmp") as directory:
        address = f"unix://{Path(directory) / 'sidecar.sock'}"
        daemon = subprocess.Popen(
            [sys.executable, "-m", "interrupt_sidecar", "serve", "--listen", address, "--log-level", "WARNING"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert daemon.stdout is not None
            line = _readline(daemon.stdout, READY_TIMEOUT_S)
            if not line.startswith("ready "):
                print(f"interrupt-sidecar demo: the daemon did not start ({line!r})", file=sys.stderr)
                return EXIT_INTERNAL
            print(f"daemon ready on {address} (pid {daemon.pid})")
            import asyncio

            asyncio.run(_demo(address, args.interrupts))
        finally:
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(30)
            if daemon.stdout is not None:
                daemon.stdout.close()
        print(f"daemon stopped (exit {code})")
        return EXIT_OK if code == EXIT_OK else EXIT_INTERNAL


def _readline(stream: object, timeout: float) -> str:
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)  # type: ignore[arg-type]
        if not selector.select(timeout):
            return ""
    return str(stream.readline())  # type: ignore[attr-defined]


async def _demo(address: str, interrupts: int) -> None:

    from interrupt_sidecar_client import aio

    async with aio.AsyncCoordinator(address) as coordinator:
        await _cooperative_tool(coordinator, address)
        await _process_group(coordinator, address)
        await _delivery_latency(coordinator, address, interrupts)


async def _cooperative_tool(coordinator: aio.AsyncCoordinator, address: str) -> None:
    import asyncio

    from interrupt_sidecar_client import EventKind, InterruptBehavior, InterruptReason, aio

    """A cooperative tool waits on its signal and unwinds; the daemon measures the unwind."""
    turn = await coordinator.begin(context_id="demo")
    watch = coordinator.watch(turn.execution_id)
    assert (await anext(watch)).kind is EventKind.SNAPSHOT
    attached = asyncio.Event()

    async def tool() -> str:
        async with aio.attach(
            address=address, token=turn.attach_token, behavior=InterruptBehavior.COOPERATIVE, tool_name="scan"
        ) as run:
            attached.set()
            cancellation = await run.signal.wait()
            return f"cancelled with {cancellation.reason}"

    task = asyncio.create_task(tool())
    await attached.wait()
    await coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT, detail="Ctrl+C")
    said = await task
    async for event in watch:
        if event.kind is EventKind.TOOL_UNWOUND:
            latency_ms = event.proto.tool_unwound.latency.ToNanoseconds() / 1e6
            print(f"cooperative tool: {said}, unwound in {latency_ms:.1f} ms")
            break
    await watch.aclose()
    await coordinator.end(turn.execution_id)


async def _process_group(coordinator: aio.AsyncCoordinator, address: str) -> None:

    from interrupt_sidecar_client import EventKind, InterruptBehavior, InterruptReason, aio

    """An externally terminated tool hands over a process group; the daemon kills it."""
    turn = await coordinator.begin(context_id="demo")
    watch = coordinator.watch(turn.execution_id)
    assert (await anext(watch)).kind is EventKind.SNAPSHOT
    async with aio.attach(
        address=address, token=turn.attach_token, behavior=InterruptBehavior.EXTERNALLY_TERMINATED, tool_name="runner"
    ) as run:
        process = await run.registrar.create_subprocess_exec("sleep", "300")
        pid = process.process.pid
        await coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
        async for event in watch:
            if event.kind is EventKind.PROCESS_GROUP_GONE:
                latency_ms = event.proto.process_group_gone.latency.ToNanoseconds() / 1e6
                print(f"process group {pid} (sleep 300): gone {latency_ms:.1f} ms after the trip")
                break
        await process.wait()
    await watch.aclose()
    await coordinator.end(turn.execution_id)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    raise RuntimeError(f"process {pid} survived the trip")


async def _delivery_latency(coordinator: aio.AsyncCoordinator, address: str, interrupts: int) -> None:

    from interrupt_sidecar_client import InterruptBehavior, InterruptReason, aio

    """Interrupt call → the tool's client has the cancel, one attached tool per execution."""
    samples: list[float] = []
    for _ in range(interrupts):
        turn = await coordinator.begin()
        async with aio.attach(
            address=address, token=turn.attach_token, behavior=InterruptBehavior.COOPERATIVE, tool_name="probe"
        ) as run:
            started = time.perf_counter_ns()
            await coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
            await run.signal.wait()
            samples.append((time.perf_counter_ns() - started) / 1e6)
        await coordinator.end(turn.execution_id)
    samples.sort()
    import statistics

    p50 = statistics.median(samples)
    p99 = samples[min(len(samples) - 1, round(0.99 * (len(samples) - 1)))]
    print(f"delivery latency, Interrupt call -> tool receives cancel, {interrupts} interrupts over the unix socket:")
    print(f"  p50 {p50:.2f} ms   p99 {p99:.2f} ms   max {samples[-1]:.2f} ms")
