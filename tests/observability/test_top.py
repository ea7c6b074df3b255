"""``interrupt-sidecar top`` against a real daemon: it shows executions, attached tools and
the trip with its latencies, refreshed a bounded number of times."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from interrupt_sidecar_client import InterruptBehavior, InterruptReason, aio

from tests.conftest import ROOT, DaemonProcess, start_daemon
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
        assert self.process.stdout is not None and self.process.stderr is not None
        try:
            code = self.process.wait(timeout)
            self._pump.join(5)
            stderr = self.process.stderr.read()
        finally:
            # Killed, reaped and its pipes closed even when the wait fails: a pipe left open
            # raises its ResourceWarning later, in whichever test the collector runs in.
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(5)
            self._pump.join(5)
            self.process.stderr.close()
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


def _tool_table(frame: str) -> list[str]:
    """The rows of the frame's tool table (between its header and the next blank line)."""
    lines = frame.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TOOL "))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line)
    return rows


def _header_tools(frame: str) -> int:
    return int(frame.split("tools attached: ", 1)[1].split()[0])


def test_top_started_after_the_tools_attached_lists_them(daemon: DaemonProcess) -> None:
    """The tools come from a snapshot: a tool that attached before top started is in its
    first frame, and the table agrees with the header's count."""

    async def scenario() -> None:
        async with aio.AsyncCoordinator(daemon.address) as coordinator:
            turn = await coordinator.begin(execution_id="top-before", context_id="chat")
            async with aio.attach(
                address=daemon.address,
                token=turn.attach_token,
                behavior=InterruptBehavior.EXTERNALLY_TERMINATED,
                tool_name="early-bird",
            ):
                top = _Top(daemon.address, "--iterations", "1")
                code, stderr = await asyncio.to_thread(top.finish)
                assert code == 0, stderr
                frame = top.last_frame()
                assert _header_tools(frame) == 1, frame
                rows = _tool_table(frame)
                assert len(rows) == 1, frame
                assert rows[0].split()[:2] == ["early-bird", "EXTERNALLY_TERMINATED"], frame
                assert rows[0].split()[-2:] == ["attached", "top-before"], frame
            await coordinator.end(turn.execution_id)

    asyncio.run(scenario())


def test_top_follows_the_daemon_through_a_restart() -> None:
    """A daemon lost after top started is retried; when one answers again at the address,
    the view comes back from a fresh snapshot, tools included."""
    # Unix socket paths are limited to 107 bytes: keep the directory short.
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as directory:
        first = start_daemon(Path(directory))
        top: _Top | None = None
        second: DaemonProcess | None = None
        try:

            async def before() -> None:
                async with aio.AsyncCoordinator(first.address) as coordinator:
                    await coordinator.begin(execution_id="before-restart")

            asyncio.run(before())
            top = _Top(first.address, "--interval", "100ms", "--iterations", "600")
            eventually(lambda: "before-restart" in top.last_frame(), what="the first daemon's execution")
            assert first.stop() == 0, first.stderr
            eventually(lambda: "cannot reach the daemon" in top.last_frame(), what="the lost daemon reported")
            assert top.process.poll() is None, "top gave up on a daemon it had reached"
            second = start_daemon(Path(directory))

            async def after() -> None:
                async with aio.AsyncCoordinator(second.address) as coordinator:
                    turn = await coordinator.begin(execution_id="after-restart")
                    async with aio.attach(
                        address=second.address,
                        token=turn.attach_token,
                        behavior=InterruptBehavior.COOPERATIVE,
                        tool_name="comeback",
                    ):
                        frame = await asyncio.to_thread(
                            eventually, lambda: "comeback" in top.last_frame() and top.last_frame(), what="tool shown"
                        )
                        assert _header_tools(frame) == 1, frame
                        assert len(_tool_table(frame)) == 1, frame
                        assert "before-restart" not in frame.split("RECENT TRIPS")[0], frame
                    await coordinator.end(turn.execution_id)

            asyncio.run(after())
            top.process.send_signal(signal.SIGINT)
            code, stderr = top.finish()
            assert code == 0, stderr
        finally:
            if top is not None and top.process.poll() is None:
                top.finish(timeout=0.1)
            for daemon in (first, second):
                if daemon is not None:
                    daemon.stop()
