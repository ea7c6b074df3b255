"""A real daemon's /metrics after a real workload: values, exemplars, and `promtool check metrics`."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DaemonProcess, start_daemon
from tests.observability.support import binary, free_port, sample_value, scrape, workload_round


@pytest.fixture
def metrics_daemon() -> Iterator[tuple[DaemonProcess, int]]:
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as directory:
        daemon = start_daemon(Path(directory), "--metrics-listen", f"127.0.0.1:{port}")
        try:
            yield daemon, port
        finally:
            assert daemon.stop() == 0, daemon.stderr


def test_metrics_after_a_workload_are_right_and_promtool_clean(metrics_daemon: tuple[DaemonProcess, int]) -> None:
    daemon, port = metrics_daemon
    counts = asyncio.run(workload_round(daemon.address, daemon.pid))
    text = scrape(port)

    checked = subprocess.run(
        [binary("promtool"), "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

    p = "interrupt_sidecar"
    # Every reason tripped once through Interrupt, plus the daemon's own trips.
    for reason in ("USER_SIGINT", "NOW_PRIORITY_INPUT", "HOLDER_LOST", "SESSION_RELEASED"):
        assert sample_value(text, f"{p}_interrupts_total", reason=reason, outcome="tripped") is not None
    assert (
        sum(
            v
            for r in ("BUDGET_EXCEEDED", "LEASE_LOST", "PARENT_CANCELLED")
            if (v := sample_value(text, f"{p}_trips_total", reason=r))
        )
        >= 2 + counts.lease_losses
    )
    assert (sample_value(text, f"{p}_interrupts_total", reason="USER_SIGINT", outcome="already_tripped") or 0) >= 9
    assert sample_value(text, f"{p}_interrupts_total", reason="USER_SIGINT", outcome="not_found") == 1
    assert sample_value(text, f"{p}_interrupts_total", reason="USER_SIGINT", outcome="ended") == 1
    assert sample_value(text, f"{p}_lease_losses_total") == counts.lease_losses
    assert (
        sample_value(text, f"{p}_grace_overruns_total", reason="USER_SIGINT", behavior="COOPERATIVE") == counts.overruns
    )
    assert sample_value(text, f"{p}_sigkill_escalations_total", reason="USER_SIGINT") == counts.escalations
    assert sample_value(text, f"{p}_process_groups_signalled_total", reason="USER_SIGINT") == 2
    assert sample_value(text, f"{p}_process_groups_gone_total", reason="USER_SIGINT", escalated="true") == 1
    assert sample_value(text, f"{p}_process_groups_gone_total", reason="USER_SIGINT", escalated="false") == 1
    assert sample_value(text, f"{p}_process_group_kill_seconds_count", reason="USER_SIGINT") == 2
    assert sample_value(text, f"{p}_process_group_refusals_total", cause="own_group") == 1
    assert sample_value(text, f"{p}_process_group_refusals_total", cause="not_found") == 1
    assert sample_value(text, f"{p}_terminators_run_total", kind="callback") == 2
    assert sample_value(text, f"{p}_terminators_failed_total", kind="callback") == 1
    assert sample_value(text, f"{p}_terminators_run_total", kind="process_group") == 2
    # Every interruptible tool had its cancel written and reported unwound.
    for reason in ("USER_SIGINT", "SYSTEM_SHUTDOWN", "HOLDER_LOST"):
        labels = {"reason": reason, "behavior": "COOPERATIVE"}
        assert sample_value(text, f"{p}_cancel_delivery_seconds_count", **labels) is not None
        assert sample_value(text, f"{p}_unwind_seconds_count", **labels) is not None
    assert sample_value(text, f"{p}_unwind_seconds_count", reason="NOW_PRIORITY_INPUT", behavior="NON_INTERRUPTIBLE")
    assert sample_value(
        text, f"{p}_cancel_delivery_seconds_count", reason="NOW_PRIORITY_INPUT", behavior="THREAD_INTERRUPT"
    )
    # Everything ended and detached: the gauges are back at zero.
    assert sample_value(text, f"{p}_active_executions") == 0
    assert sample_value(text, f"{p}_attached_streams", behavior="COOPERATIVE") == 0
    assert sample_value(text, f"{p}_serving") == 1


def test_openmetrics_scrape_carries_execution_ids_as_exemplars(metrics_daemon: tuple[DaemonProcess, int]) -> None:
    daemon, port = metrics_daemon
    counts = asyncio.run(workload_round(daemon.address, daemon.pid))
    text = scrape(port, openmetrics=True)
    exemplar_lines = [line for line in text.splitlines() if "_seconds_bucket" in line and " # {" in line]
    assert any("cancel_delivery_seconds_bucket" in line for line in exemplar_lines)
    assert any("unwind_seconds_bucket" in line for line in exemplar_lines)
    assert any("process_group_kill_seconds_bucket" in line for line in exemplar_lines)
    ids = {line.split('execution_id="', 1)[1].split('"', 1)[0] for line in exemplar_lines}
    assert ids & set(counts.execution_ids), "no exemplar names an execution the workload began"


def test_what_a_restart_recovers_before_ready_is_in_its_first_scrape() -> None:
    """The daemon builds its registry only after "ready", but the journal's recovery runs
    before it: the executions it restores and the trip it replays are counted all the same."""
    import signal

    import grpc
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as directory:
        flags = ("--state-dir", f"{directory}/state", "--metrics-listen", f"127.0.0.1:{port}")
        first = start_daemon(Path(directory), *flags)
        try:
            with grpc.insecure_channel(first.address) as channel:
                stub = pb_grpc.CoordinatorServiceStub(channel)
                tripped = stub.BeginExecution(pb.BeginExecutionRequest(), timeout=10)
                stub.BeginExecution(pb.BeginExecutionRequest(), timeout=10)
                stub.Interrupt(
                    pb.InterruptRequest(
                        execution_id=tripped.execution_id, reason=pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT
                    ),
                    timeout=10,
                )
        finally:
            first.stop(signal.SIGKILL)
        second = start_daemon(Path(directory), *flags)
        try:
            text = scrape(port)
        finally:
            assert second.stop() == 0, second.stderr
    p = "interrupt_sidecar"
    assert sample_value(text, f"{p}_active_executions") == 2
    assert sample_value(text, f"{p}_trips_total", reason="NOW_PRIORITY_INPUT") == 1
    assert sample_value(text, f"{p}_serving") == 1
