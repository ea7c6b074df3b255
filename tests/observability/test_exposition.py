"""The /metrics endpoint's server (interrupt_sidecar.metrics.exposition): it serves the
registry, its thread sleeps between scrapes instead of polling, and close() releases it."""

from __future__ import annotations

import platform
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from interrupt_sidecar.metrics.exposition import MetricsServer
from prometheus_client import CollectorRegistry, Counter

from tests.polling import eventually

pytestmark = pytest.mark.timeout(20)


def switches(native_id: int) -> int:
    """Context switches of one thread of this process (each wake-up is one)."""
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    return sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)


#: The syscalls of select()/poll() (socketserver waits in poll, or ppoll where poll is not a
#: syscall), by machine: what /proc/.../syscall shows while a thread sleeps in one.
_POLL_SYSCALLS = {"x86_64": {7, 23, 270, 271}, "aarch64": {72, 73}}


def asleep_in_poll(native_id: int) -> bool:
    """The thread is blocked in select()/poll(): ``syscall`` shows the call it sleeps in
    ("running" while it is on a CPU)."""
    fields = Path(f"/proc/self/task/{native_id}/syscall").read_text().split()
    return bool(fields) and fields[0].isdigit() and int(fields[0]) in _POLL_SYSCALLS[platform.machine()]


def test_serves_the_registry_sleeps_between_scrapes_and_closes() -> None:
    registry = CollectorRegistry()
    Counter("footprint_probe", "a probe", registry=registry).inc(3)
    server = MetricsServer(socket.create_server(("127.0.0.1", 0)), registry)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as answer:
            assert "footprint_probe_total 3.0" in answer.read().decode()
        thread = next(t for t in threading.enumerate() if t.name == "metrics")
        assert thread.native_id is not None
        # Blocked in select() with no timeout: no wake-up however long nothing comes
        # (prometheus_client's own server polled twice a second: 2+ switches here).
        # The answer reaches the client before the thread has closed the connection and
        # gone back to poll(): counting from then would count its last switch into the wait
        # (seen under load). Count from when it sleeps in poll().
        native_id = thread.native_id
        eventually(lambda: asleep_in_poll(native_id), timeout=10, what="the metrics thread asleep in poll()")
        before = switches(native_id)
        time.sleep(1.2)
        assert switches(thread.native_id) == before
    finally:
        server.close()
    assert not any(t.name == "metrics" and t.is_alive() for t in threading.enumerate())
    with socket.socket() as probe:  # nothing listens on the port any more (a restart could bind it)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is no obstacle
        probe.bind(("127.0.0.1", server.port))
