"""The Prometheus ``TripObserver``. Metric names, types and labels: ``docs/metrics.md``.

Cheap on purpose: each observation is a dict look-up for the labelled child
(cached per label tuple, so ``labels()`` and its string checks run once per
combination, not per trip) plus prometheus-client's own lock-protected add.
Counters that alerts take ``increase()`` of are created at zero for every label
value up front: a series first seen at 1 has no increase Prometheus can see.
"""

from __future__ import annotations

import platform
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from interrupt_sidecar import __version__
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason
from interrupt_sidecar.runtime.observer import (
    INTERRUPT_OUTCOMES,
    REFUSAL_CAUSES,
    TERMINATOR_KINDS,
    AuthRole,
    InterruptOutcomeLabel,
    RefusalCause,
    TerminatorKind,
)

METRIC_PREFIX: Final = "interrupt_sidecar"

#: Seconds. Fine below 10 ms (a healthy cancel lands in well under a millisecond)
#: and a boundary exactly at the default grace, 0.5 s, so "within grace" is a bucket.
LATENCY_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
#: Seconds from the trip to a whole process tree gone: a polite exit lands in
#: milliseconds; SIGKILL comes at kill_after (default the 0.5 s grace), so the
#: buckets just above 0.5 tell "killed at escalation" from "stuck after it".
KILL_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0)

#: OpenMetrics limits an exemplar's label names and values to 128 characters in all.
_EXEMPLAR_KEY: Final = "execution_id"
_EXEMPLAR_VALUE_MAX: Final = 128 - len(_EXEMPLAR_KEY)

_NS_PER_S: Final = 1e9
_INTERRUPTIBLE: Final = tuple(b for b in InterruptBehavior if b.receives_cancel)


def _exemplar(execution_id: str) -> dict[str, str]:
    return {_EXEMPLAR_KEY: execution_id[:_EXEMPLAR_VALUE_MAX]}


class PrometheusObserver:
    """Exports the daemon's observations as ``interrupt_sidecar_*`` metrics.

    Every metric is registered into ``registry`` here, never at import, so each
    daemon (and each test) owns its registry.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        p = METRIC_PREFIX
        reason_behavior = ("reason", "behavior")
        self.registry = registry
        self._build = Info(f"{p}_build", "Build of the daemon (value 1; the labels say which).", registry=registry)
        self._build.info({"version": __version__, "python": platform.python_version()})
        self._serving = Gauge(
            f"{p}_serving",
            "1 while the daemon serves gRPC; 0 once it has started shutting down.",
            registry=registry,
        )
        self._active = Gauge(f"{p}_active_executions", "Executions begun and not yet ended.", registry=registry)
        self._streams = Gauge(
            f"{p}_attached_streams", "Tool streams attached now, by behaviour.", ["behavior"], registry=registry
        )
        self._interrupts = Counter(
            f"{p}_interrupts",
            "Interrupt requests, per targeted execution, by reason and outcome "
            "(tripped, already_tripped, not_found, ended).",
            ["reason", "outcome"],
            registry=registry,
        )
        self._trips = Counter(
            f"{p}_trips",
            "Executions tripped, by any path (Interrupt, budget, lease, cascade, shutdown), by reason.",
            ["reason"],
            registry=registry,
        )
        self._delivery = Histogram(
            f"{p}_cancel_delivery_seconds",
            "Trip (or a late tool's attach) to the cancel written to the tool's stream.",
            reason_behavior,
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._unwind = Histogram(
            f"{p}_unwind_seconds",
            "Trip (or a late tool's attach) to the tool reporting unwound.",
            reason_behavior,
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._overruns = Counter(
            f"{p}_grace_overruns",
            "Tools that did not report unwound within the grace, by reason and behaviour.",
            reason_behavior,
            registry=registry,
        )
        self._terminators_run = Counter(
            f"{p}_terminators_run", "Terminators run, by kind (callback, process_group).", ["kind"], registry=registry
        )
        self._terminators_failed = Counter(
            f"{p}_terminators_failed",
            "Terminators that failed, by kind: a callback error reported by its tool, "
            "a group that could not be signalled or survived SIGKILL.",
            ["kind"],
            registry=registry,
        )
        self._signalled = Counter(
            f"{p}_process_groups_signalled",
            "Process groups sent their polite signal at the trip, by reason.",
            ["reason"],
            registry=registry,
        )
        self._escalations = Counter(
            f"{p}_sigkill_escalations",
            "Process groups that outlived kill_after and were sent SIGKILL, by reason.",
            ["reason"],
            registry=registry,
        )
        self._gone = Counter(
            f"{p}_process_groups_gone",
            "Signalled process groups whose every process is gone, by reason and whether SIGKILL was needed.",
            ["reason", "escalated"],
            registry=registry,
        )
        self._kill_latency = Histogram(
            f"{p}_process_group_kill_seconds",
            "Trip to every process of a signalled group gone, by reason.",
            ["reason"],
            buckets=KILL_BUCKETS,
            registry=registry,
        )
        self._refusals = Counter(
            f"{p}_process_group_refusals",
            "Process groups the daemon refused to register or to signal, by cause.",
            ["cause"],
            registry=registry,
        )
        self._doorbell_rings = Counter(
            f"{p}_doorbell_cancels",
            "Cancels written to a tool's doorbell socket, ahead of its stream (tools that asked for one).",
            registry=registry,
        )
        self._holder_losses = Counter(
            f"{p}_holder_losses", "Executions tripped because their holder was lost (HOLDER_LOST).", registry=registry
        )
        self._lease_losses = Counter(
            f"{p}_lease_losses", "Executions tripped because their lease ran out (LEASE_LOST).", registry=registry
        )
        self._auth_denials = Counter(
            f"{p}_auth_denials",
            "Callers refused for lack of the right credential, by role needed and gRPC status code.",
            ["role", "code"],
            registry=registry,
        )

        # Children cached by enum: the hot path never formats a label value.
        self._stream_children = {b: self._streams.labels(b.name) for b in InterruptBehavior}
        self._trip_children = {r: self._trips.labels(r.name) for r in InterruptReason}
        self._signalled_children = {r: self._signalled.labels(r.name) for r in InterruptReason}
        self._escalation_children = {r: self._escalations.labels(r.name) for r in InterruptReason}
        self._overrun_children = {
            (r, b): self._overruns.labels(r.name, b.name) for r in InterruptReason for b in _INTERRUPTIBLE
        }
        self._refusal_children = {c: self._refusals.labels(c) for c in REFUSAL_CAUSES}
        self._run_children = {k: self._terminators_run.labels(k) for k in TERMINATOR_KINDS}
        self._failed_children = {k: self._terminators_failed.labels(k) for k in TERMINATOR_KINDS}
        self._interrupt_children = {
            (r, o): self._interrupts.labels(r.name, o) for r in InterruptReason for o in INTERRUPT_OUTCOMES
        }
        # Histograms are created on first use: 27 label pairs x 20 series each,
        # up front, would be most of a scrape for combinations never seen.
        self._delivery_children: dict[tuple[InterruptReason, InterruptBehavior], Histogram] = {}
        self._unwind_children: dict[tuple[InterruptReason, InterruptBehavior], Histogram] = {}
        self._kill_children: dict[InterruptReason, Histogram] = {}
        self._gone_children: dict[tuple[InterruptReason, bool], Counter] = {}

    # -- set by the server -------------------------------------------------------

    def set_serving(self, serving: bool) -> None:
        """Whether the daemon serves (health SERVING) or has begun shutting down."""
        self._serving.set(1 if serving else 0)

    # -- TripObserver ------------------------------------------------------------

    def execution_begun(self) -> None:
        self._active.inc()

    def execution_ended(self) -> None:
        self._active.dec()

    def tool_attached(self, behavior: InterruptBehavior) -> None:
        self._stream_children[behavior].inc()

    def tool_detached(self, behavior: InterruptBehavior) -> None:
        self._stream_children[behavior].dec()

    def interrupt_requested(self, reason: InterruptReason, outcome: InterruptOutcomeLabel) -> None:
        self._interrupt_children[(reason, outcome)].inc()

    def doorbell_rung(self) -> None:
        self._doorbell_rings.inc()

    def tripped(self, reason: InterruptReason) -> None:
        self._trip_children[reason].inc()

    def cancel_delivered(
        self, reason: InterruptReason, behavior: InterruptBehavior, latency_ns: int, execution_id: str
    ) -> None:
        key = (reason, behavior)
        child = self._delivery_children.get(key)
        if child is None:
            child = self._delivery_children[key] = self._delivery.labels(reason.name, behavior.name)
        child.observe(latency_ns / _NS_PER_S, _exemplar(execution_id))

    def tool_unwound(
        self, reason: InterruptReason, behavior: InterruptBehavior, latency_ns: int, execution_id: str
    ) -> None:
        key = (reason, behavior)
        child = self._unwind_children.get(key)
        if child is None:
            child = self._unwind_children[key] = self._unwind.labels(reason.name, behavior.name)
        child.observe(latency_ns / _NS_PER_S, _exemplar(execution_id))

    def grace_overrun(self, reason: InterruptReason, behavior: InterruptBehavior) -> None:
        child = self._overrun_children.get((reason, behavior))
        if child is None:  # NON_INTERRUPTIBLE tools cannot overrun; counted anyway if one is reported
            child = self._overrun_children[(reason, behavior)] = self._overruns.labels(reason.name, behavior.name)
        child.inc()

    def terminator_run(self, kind: TerminatorKind) -> None:
        self._run_children[kind].inc()

    def terminator_failed(self, kind: TerminatorKind) -> None:
        self._failed_children[kind].inc()

    def process_group_signalled(self, reason: InterruptReason) -> None:
        self._signalled_children[reason].inc()

    def escalated(self, reason: InterruptReason) -> None:
        self._escalation_children[reason].inc()

    def process_tree_gone(self, reason: InterruptReason, latency_ns: int, escalated: bool, execution_id: str) -> None:
        gone = self._gone_children.get((reason, escalated))
        if gone is None:
            gone = self._gone_children[(reason, escalated)] = self._gone.labels(
                reason.name, "true" if escalated else "false"
            )
        gone.inc()
        kill = self._kill_children.get(reason)
        if kill is None:
            kill = self._kill_children[reason] = self._kill_latency.labels(reason.name)
        kill.observe(latency_ns / _NS_PER_S, _exemplar(execution_id))

    def process_group_refused(self, cause: RefusalCause) -> None:
        self._refusal_children.get(cause, self._refusal_children["other"]).inc()

    def holder_lost(self) -> None:
        self._holder_losses.inc()

    def lease_lost(self) -> None:
        self._lease_losses.inc()

    def auth_denied(self, role: AuthRole, code: str) -> None:
        self._auth_denials.labels(role, code).inc()
