"""``interrupt-sidecar top`` against a real daemon: it shows executions, attached tools and
the trip with its latencies, refreshed a bounded number of times."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

from interrupt_sidecar_client import InterruptBehavior, InterruptReason, aio

from tests.conftest import ROOT, DaemonProcess
from tests.observability.support import eventually


class _Top:
    """``top`` as a child process whose output is collected as it comes."""

    def __init__(self, address: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "interrupt_sidecar", "top", "--address", address, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.lines: list[str] = []
        assert self.process.stdout is not None
        stdout = self.process.stdout
        self._pump = threading.Thread(target=lambda: self.lines.extend(stdout), daemon=True)
        self._pump.start()

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def last_frame(self) -> str:
        return self.text.rsplit("interrupt-sidecar top — ", 1)[-1]

    def finish(self, timeout: float = 20) -> tuple[int, str]:
        try:
            code = self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(5)
        self._pump.join(5)
        assert self.process.stderr is not None
        stderr = self.process.stderr.read()
        self.process.stderr.close()
        assert self.process.stdout is not None
        self.process.stdout.close()
        return code, stderr


def test_top_shows_executions_tools_and_trips_live(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        async with aio.AsyncCoordinator(daemon.address) as coordinator:
            turn = await coordinator.begin(execution_id="top-turn-1", context_id="chat")
            top = _Top(daemon.address, "--interval", "100ms", "--iterations", "60")
            try:
                await asyncio.to_thread(eventually, lambda: "top-turn-1" in top.text, what="execution listed")
                async with aio.attach(
                    address=daemon.address,
                    token=turn.attach_token,
                    behavior=InterruptBehavior.COOPERATIVE,
                    tool_name="scan",
                ) as run:
                    await asyncio.to_thread(eventually, lambda: "scan" in top.last_frame(), what="tool shown")
                    frame = top.last_frame()
                    assert "COOPERATIVE" in frame and "attached" in frame
                    await coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
                    await run.signal.wait()
                await asyncio.to_thread(
                    eventually, lambda: "ms (1)" in top.last_frame(), what="trip with its unwind latency"
                )
                frame = top.last_frame()
                assert "cancelled USER_SIGINT" in frame
                trip_row = next(
                    line
                    for line in frame.splitlines()
                    if line.rstrip().endswith("top-turn-1") and "USER_SIGINT" in line and "ms (1)" in line
                )
                assert trip_row
            finally:
                code, stderr = await asyncio.to_thread(top.finish)
            assert code == 0, stderr
            # Bounded: exactly the asked number of frames, each a full redraw.
            assert top.text.count("interrupt-sidecar top — ") == 60
            await coordinator.end(turn.execution_id)

    asyncio.run(scenario())


def test_top_reports_an_unreachable_daemon_with_exit_4() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "interrupt_sidecar",
            "top",
            "--address",
            "unix:///tmp/isd-nobody-here.sock",
            "--iterations",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )
    assert result.returncode == 4, result.stderr
    assert "cannot reach the daemon" in result.stderr
