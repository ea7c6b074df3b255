"""Prometheus metrics: the ``TripObserver`` that exports what the daemon observes.

Nothing is registered at import: build a :class:`PrometheusObserver` with the
``CollectorRegistry`` to register into (a fresh one per daemon, or per test).
"""

from interrupt_sidecar.metrics.prometheus import (
    KILL_BUCKETS,
    LATENCY_BUCKETS,
    METRIC_PREFIX,
    PrometheusObserver,
)

__all__ = ["KILL_BUCKETS", "LATENCY_BUCKETS", "METRIC_PREFIX", "PrometheusObserver"]
