"""The /metrics endpoint's server (interrupt_sidecar.metrics.exposition): it serves the
registry, its thread sleeps between scrapes instead of polling, and close() releases it."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from interrupt_sidecar.metrics.exposition import MetricsServer
from prometheus_client import CollectorRegistry, Counter

pytestmark = pytest.mark.timeout(20)


def switches(native_id: int) -> int:
    """Context switches of one thread of this process (each wake-up is one)."""
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    return sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)


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
        before = switches(thread.native_id)
        time.sleep(1.2)
        assert switches(thread.native_id) == before
    finally:
        server.close()
    assert not any(t.name == "metrics" and t.is_alive() for t in threading.enumerate())
    with socket.socket() as probe:  # nothing listens on the port any more (a restart could bind it)
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is no obstacle
        probe.bind(("127.0.0.1", server.port))
