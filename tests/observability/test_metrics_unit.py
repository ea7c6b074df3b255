"""The Prometheus observer, one observation at a time, each test on a fresh registry."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason
from interrupt_sidecar.errors import FailedPrecondition, SidecarError
from interrupt_sidecar.metrics import LATENCY_BUCKETS, PrometheusObserver
from interrupt_sidecar.osedge.process_groups import GroupIdentity, ProcessGroups
from interrupt_sidecar.runtime.observer import (
    NOOP_OBSERVER,
    OBSERVATIONS,
    REFUSAL_CAUSES,
    DeferredObserver,
    TripObserver,
    refusal_cause,
)
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

P = "interrupt_sidecar"
USER = InterruptReason.USER_SIGINT
COOP = InterruptBehavior.COOPERATIVE


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def observer(registry: CollectorRegistry) -> PrometheusObserver:
    return PrometheusObserver(registry)


def _openmetrics(registry: CollectorRegistry) -> str:
    """The OpenMetrics exposition (the format that carries exemplars)."""
    return str(generate_openmetrics(registry).decode())  # type: ignore[no-untyped-call]


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_both_implement_the_port() -> None:
    ports: list[TripObserver] = [NOOP_OBSERVER, PrometheusObserver(CollectorRegistry())]
    assert len(ports) == 2


def test_nothing_is_registered_at_import_and_registries_are_independent() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    a, b = PrometheusObserver(first), PrometheusObserver(second)
    a.tripped(USER)
    assert first.get_sample_value(f"{P}_trips_total", {"reason": "USER_SIGINT"}) == 1
    assert second.get_sample_value(f"{P}_trips_total", {"reason": "USER_SIGINT"}) == 0
    b.lease_lost()
    assert first.get_sample_value(f"{P}_lease_losses_total") == 0


def test_delivery_latency_lands_in_its_bucket_with_the_execution_as_exemplar(
    registry: CollectorRegistry, observer: PrometheusObserver
) -> None:
    observer.cancel_delivered(USER, COOP, 700_000, "exec-abc")  # 0.7 ms
    labels = {"reason": "USER_SIGINT", "behavior": "COOPERATIVE"}
    assert value(registry, f"{P}_cancel_delivery_seconds_count", **labels) == 1
    assert value(registry, f"{P}_cancel_delivery_seconds_sum", **labels) == pytest.approx(0.0007)
    assert value(registry, f"{P}_cancel_delivery_seconds_bucket", **labels, le="0.0005") == 0
    assert value(registry, f"{P}_cancel_delivery_seconds_bucket", **labels, le="0.001") == 1
    exposition = _openmetrics(registry)
    bucket = next(
        line for line in exposition.splitlines() if "cancel_delivery_seconds_bucket" in line and "0.001" in line
    )
    assert '# {execution_id="exec-abc"} 0.0007' in bucket


def test_buckets_are_fine_below_10ms_and_have_a_boundary_at_the_default_grace() -> None:
    assert 0.5 in LATENCY_BUCKETS
    assert len([b for b in LATENCY_BUCKETS if b < 0.01]) >= 6


def test_unwind_latency_at_exactly_the_grace_is_within_the_grace_bucket(
    registry: CollectorRegistry, observer: PrometheusObserver
) -> None:
    observer.tool_unwound(InterruptReason.BUDGET_EXCEEDED, InterruptBehavior.THREAD_INTERRUPT, 500_000_000, "e")
    labels = {"reason": "BUDGET_EXCEEDED", "behavior": "THREAD_INTERRUPT"}
    assert value(registry, f"{P}_unwind_seconds_bucket", **labels, le="0.25") == 0
    assert value(registry, f"{P}_unwind_seconds_bucket", **labels, le="0.5") == 1


def test_a_long_execution_id_is_cut_to_fit_an_exemplar(
    observer: PrometheusObserver, registry: CollectorRegistry
) -> None:
    observer.cancel_delivered(USER, COOP, 1, "x" * 128)  # 128 is the longest id the daemon accepts
    assert 'execution_id="' + "x" * 116 + '"' in _openmetrics(registry)


def test_alerted_counters_exist_at_zero_before_anything_happens(registry: CollectorRegistry) -> None:
    PrometheusObserver(registry)
    for cause in REFUSAL_CAUSES:
        assert value(registry, f"{P}_process_group_refusals_total", cause=cause) == 0
    for reason in InterruptReason:
        assert value(registry, f"{P}_sigkill_escalations_total", reason=reason.name) == 0
        assert value(registry, f"{P}_process_groups_signalled_total", reason=reason.name) == 0
        assert value(registry, f"{P}_grace_overruns_total", reason=reason.name, behavior="COOPERATIVE") == 0
    assert value(registry, f"{P}_holder_losses_total") == 0
    assert value(registry, f"{P}_lease_losses_total") == 0


def test_counters_by_reason_outcome_kind_and_cause(registry: CollectorRegistry, observer: PrometheusObserver) -> None:
    observer.interrupt_requested(USER, "tripped")
    observer.interrupt_requested(USER, "already_tripped")
    observer.interrupt_requested(USER, "already_tripped")
    observer.interrupt_requested(InterruptReason.HOLDER_LOST, "not_found")
    observer.grace_overrun(InterruptReason.LEASE_LOST, InterruptBehavior.EXTERNALLY_TERMINATED)
    observer.terminator_run("callback")
    observer.terminator_failed("process_group")
    observer.process_group_signalled(USER)
    observer.escalated(USER)
    observer.process_group_refused("foreign_uid")
    observer.holder_lost()
    observer.lease_lost()
    observer.lease_lost()
    assert value(registry, f"{P}_interrupts_total", reason="USER_SIGINT", outcome="tripped") == 1
    assert value(registry, f"{P}_interrupts_total", reason="USER_SIGINT", outcome="already_tripped") == 2
    assert value(registry, f"{P}_interrupts_total", reason="HOLDER_LOST", outcome="not_found") == 1
    overrun = {"reason": "LEASE_LOST", "behavior": "EXTERNALLY_TERMINATED"}
    assert value(registry, f"{P}_grace_overruns_total", **overrun) == 1
    assert value(registry, f"{P}_terminators_run_total", kind="callback") == 1
    assert value(registry, f"{P}_terminators_failed_total", kind="process_group") == 1
    assert value(registry, f"{P}_process_groups_signalled_total", reason="USER_SIGINT") == 1
    assert value(registry, f"{P}_sigkill_escalations_total", reason="USER_SIGINT") == 1
    assert value(registry, f"{P}_process_group_refusals_total", cause="foreign_uid") == 1
    assert value(registry, f"{P}_holder_losses_total") == 1
    assert value(registry, f"{P}_lease_losses_total") == 2


def test_process_tree_gone_counts_and_times_the_kill(registry: CollectorRegistry, observer: PrometheusObserver) -> None:
    observer.process_tree_gone(USER, 600_000_000, True, "exec-k")
    observer.process_tree_gone(USER, 2_000_000, False, "exec-p")
    assert value(registry, f"{P}_process_groups_gone_total", reason="USER_SIGINT", escalated="true") == 1
    assert value(registry, f"{P}_process_groups_gone_total", reason="USER_SIGINT", escalated="false") == 1
    assert value(registry, f"{P}_process_group_kill_seconds_bucket", reason="USER_SIGINT", le="0.5") == 1
    assert value(registry, f"{P}_process_group_kill_seconds_bucket", reason="USER_SIGINT", le="0.75") == 2


def test_gauges_follow_executions_and_streams(registry: CollectorRegistry, observer: PrometheusObserver) -> None:
    observer.execution_begun()
    observer.execution_begun()
    observer.execution_ended()
    observer.tool_attached(COOP)
    observer.tool_attached(COOP)
    observer.tool_attached(InterruptBehavior.NON_INTERRUPTIBLE)
    observer.tool_detached(COOP)
    observer.set_serving(True)
    assert value(registry, f"{P}_active_executions") == 1
    assert value(registry, f"{P}_attached_streams", behavior="COOPERATIVE") == 1
    assert value(registry, f"{P}_attached_streams", behavior="NON_INTERRUPTIBLE") == 1
    assert value(registry, f"{P}_attached_streams", behavior="THREAD_INTERRUPT") == 0
    assert value(registry, f"{P}_serving") == 1
    observer.set_serving(False)
    assert value(registry, f"{P}_serving") == 0
    assert (
        registry.get_sample_value(
            f"{P}_build_info",
            {"version": __import__("interrupt_sidecar").__version__, "python": __import__("platform").python_version()},
        )
        == 1
    )


def test_no_label_carries_an_execution_id_or_pid(registry: CollectorRegistry, observer: PrometheusObserver) -> None:
    observer.cancel_delivered(USER, COOP, 1, "exec-secret-id")
    observer.process_tree_gone(USER, 1, False, "exec-secret-id")
    text = generate_latest(registry).decode()
    assert "exec-secret-id" not in text  # exemplars only, which the classic text format does not carry
    assert "pid" not in {name for line in text.splitlines() if "{" in line for name in _label_names(line)}


def _label_names(line: str) -> list[str]:
    inner = line[line.index("{") + 1 : line.rindex("}")]
    return [part.split("=", 1)[0] for part in inner.split('",') if "=" in part]


def _refusal(pgid: int) -> SidecarError:
    with pytest.raises(SidecarError) as caught:
        ProcessGroups().pin(pgid)
    return caught.value


def test_refusals_of_the_real_os_edge_map_to_bounded_causes() -> None:
    assert refusal_cause(_refusal(1)) == "invalid_pgid"
    assert refusal_cause(_refusal(os.getpgid(0))) == "own_group"
    reaped = os.fork()
    if reaped == 0:
        os._exit(0)
    os.waitpid(reaped, 0)
    assert refusal_cause(_refusal(reaped)) == "not_found"


def test_a_recycled_group_is_refused_as_identity_changed() -> None:
    groups = ProcessGroups()
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        pinned = groups.pin(child.pid)
        # The same pgid with a leader start time it never had: what a recycled PID looks like.
        recycled = GroupIdentity(pinned.pgid, (pinned.leader_start or 0) + 1, pinned.session)
        with pytest.raises(FailedPrecondition) as caught:
            groups.signal_tree(groups.tree(recycled), signal.SIGTERM)
        assert refusal_cause(caught.value) == "identity_changed"
    finally:
        child.kill()
        child.wait()


def test_the_cause_an_error_names_is_used_and_unknown_ones_are_other() -> None:
    assert refusal_cause(SidecarError("whatever the message says", cause="foreign_uid")) == "foreign_uid"
    assert refusal_cause(SidecarError("a cause no metric knows", cause="made_up")) == "other"
    assert refusal_cause(RuntimeError("unknown")) == "other"


def test_observations_before_the_registry_exists_are_counted_once_it_does(registry: CollectorRegistry) -> None:
    """The daemon builds its registry after "ready": what was observed before (recovery,
    the first RPCs) is replayed into it in order, and later calls go straight to it."""
    deferred = DeferredObserver()
    port: TripObserver = deferred
    port.execution_begun()
    port.execution_begun()
    port.tripped(USER)
    port.cancel_delivered(USER, COOP, 2_000_000, "exec-1")
    port.execution_ended()
    with pytest.raises(AttributeError):
        deferred.not_an_observation  # noqa: B018 - only the port's methods are recorded

    observer = PrometheusObserver(registry)
    assert value(registry, f"{P}_trips_total", reason="USER_SIGINT") == 0
    deferred.hand_over(observer)
    assert value(registry, f"{P}_active_executions") == 1
    assert value(registry, f"{P}_trips_total", reason="USER_SIGINT") == 1
    assert value(registry, f"{P}_cancel_delivery_seconds_count", reason="USER_SIGINT", behavior="COOPERATIVE") == 1

    port.tripped(USER)
    assert value(registry, f"{P}_trips_total", reason="USER_SIGINT") == 2
    # Bound on the instance: no recording, no __getattr__ on the trip path from here on.
    for name in OBSERVATIONS:
        assert getattr(deferred, name) == getattr(observer, name), name


def test_the_deferred_observer_knows_every_method_of_the_port() -> None:
    protocol = {name for name, member in vars(TripObserver).items() if callable(member) and not name.startswith("_")}
    assert protocol == OBSERVATIONS
