"""The Grafana dashboard: parses, every panel queries, every query names exported metrics."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_daemon
from tests.observability.support import (
    DASHBOARD,
    dashboard_expressions,
    exported_names,
    free_port,
    load_rules,
    scrape,
)

#: Metric names in a query: ours (and recording rules, with colons) and Prometheus' own ``up``.
_NAME = re.compile(r"\b(interrupt_sidecar[a-z0-9_:]*|up)\b(?!\s*\()")


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    loaded = json.loads(DASHBOARD.read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.fixture(scope="module")
def exported() -> Iterator[set[str]]:
    """Names from a real scrape of a real daemon (histogram families count before any observation)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as directory:
        daemon = start_daemon(Path(directory), "--metrics-listen", f"127.0.0.1:{port}")
        try:
            yield exported_names(scrape(port))
        finally:
            assert daemon.stop() == 0


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def test_datasource_namespace_and_pod_variables(dashboard: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("namespace", "pod"):
        assert variables[name]["type"] == "query"
        assert variables[name]["includeAll"] and variables[name]["allValue"] == ".*"
    assert dashboard["uid"] == "interrupt-sidecar"


def test_every_panel_has_a_query_on_the_dashboard_datasource(dashboard: dict[str, Any]) -> None:
    ids = set()
    for panel in _panels(dashboard["panels"]):
        assert panel["id"] not in ids, f"duplicate panel id {panel['id']}"
        ids.add(panel["id"])
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert target["expr"].strip(), f"panel {panel['title']!r} has an empty query"
            assert "$namespace" in target["expr"] or "interrupt_sidecar:" in target["expr"], (
                f"panel {panel['title']!r} ignores the namespace/pod selection: {target['expr']}"
            )


def test_every_query_names_only_metrics_the_daemon_exports(dashboard: dict[str, Any], exported: set[str]) -> None:
    recorded = {rule["record"] for group in load_rules()["groups"] for rule in group["rules"] if "record" in rule}
    for where, expr in dashboard_expressions(dashboard):
        names = set(_NAME.findall(expr))
        assert names, f"{where} names no metric: {expr}"
        unknown = names - exported - recorded - {"up"}
        assert not unknown, f"{where} names {sorted(unknown)}, which the daemon does not export"


def test_the_panels_the_issue_asks_for(dashboard: dict[str, Any]) -> None:
    exprs = " ".join(expr for _, expr in dashboard_expressions(dashboard))
    types = {panel["type"] for panel in _panels(dashboard["panels"])}
    assert "heatmap" in types
    for needed in (
        "histogram_quantile(0.5, sum by (le, reason, behavior) (rate(interrupt_sidecar_cancel_delivery_seconds_bucket",
        "histogram_quantile(0.99, sum by (le, reason, behavior) (rate(interrupt_sidecar_unwind_seconds_bucket",
        "interrupt_sidecar_grace_overruns_total",
        "interrupt_sidecar_sigkill_escalations_total",
        "interrupt_sidecar_process_group_refusals_total",
        "interrupt_sidecar_active_executions",
        "interrupt_sidecar_attached_streams",
        "interrupt_sidecar_holder_losses_total",
        "interrupt_sidecar_lease_losses_total",
    ):
        assert needed in exprs, needed
