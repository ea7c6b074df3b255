"""Helpers of the observability tests: scrapes, promtool, a real Prometheus server, a workload.

Everything is real: the daemon is a process started by ``tests.conftest.start_daemon``,
tools attach with the Python client, process groups are real children, and
Prometheus is the Debian ``prometheus`` binary (``scripts/ensure_prometheus.sh``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from interrupt_sidecar_client import (
    CancelledExecution,
    EventKind,
    InterruptBehavior,
    InterruptReason,
    SidecarError,
    aio,
)
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "observability" / "prometheus" / "alerts.yaml"
RULES_TEST = ROOT / "observability" / "prometheus" / "alerts_test.yaml"
DASHBOARD = ROOT / "observability" / "grafana" / "interrupt-sidecar.json"
RUNBOOK = ROOT / "docs" / "runbook.md"
WAIT_S = 20.0


def binary(name: str) -> str:
    """Path of ``prometheus``/``promtool``; fails (not skips) when missing: CI installs them."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run `make install-test` (scripts/ensure_prometheus.sh)")
    return found


def free_port() -> int:
    """A loopback port free right now (bind to 0, read it, release it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int, *, openmetrics: bool = False) -> str:
    """GET /metrics, in the Prometheus text format or (``openmetrics``) OpenMetrics."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if openmetrics:
        request.add_header("Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8")
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(response.read().decode())


def exported_names(text: str) -> set[str]:
    """Every series name a scrape exports, including the names of histogram
    children not observed yet (their families are announced by # TYPE)."""
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.update(sample.name for sample in family.samples)
        if family.type == "histogram":
            names.update(f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count"))
        elif family.type == "counter":
            names.add(f"{family.name}_total")
        elif family.type == "info":
            names.add(f"{family.name}_info")
        else:
            names.add(family.name)
    return names


def sample_value(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample of a scrape, or None."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def eventually(check: Callable[[], Any], *, timeout: float = WAIT_S, interval: float = 0.1, what: str = "") -> Any:
    """Poll ``check`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or check} (last {result!r})")
        time.sleep(interval)


def load_rules() -> dict[str, Any]:
    loaded = yaml.safe_load(RULES.read_text())
    assert isinstance(loaded, dict)
    return loaded


def rule_expressions(rules: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, expr) of every alerting and recording rule."""
    return [(rule.get("alert") or rule["record"], str(rule["expr"])) for g in rules["groups"] for rule in g["rules"]]


def dashboard_expressions(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, expr) of every panel target and every template variable query."""
    found: list[tuple[str, str]] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            for target in panel.get("targets", []):
                found.append((f"panel {panel['title']!r} {target['refId']}", str(target["expr"])))
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            found.append((f"variable ${variable['name']}", str(query["query"] if isinstance(query, dict) else query)))
    return found


def label_values_selector(expr: str) -> str:
    """``label_values(SELECTOR, label)`` (a Grafana variable query) → SELECTOR, which is PromQL."""
    if expr.startswith("label_values(") and expr.endswith(")"):
        inner = expr[len("label_values(") : -1]
        return inner[: inner.rindex(",")].strip()
    return expr


def substitute_grafana(expr: str, variables: dict[str, str]) -> str:
    """Replace Grafana's template variables the way Grafana would for one selection."""
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace(f"${{{name}}}", variables[name]).replace(f"${name}", variables[name])
    return expr


def comparison_left(expr: str) -> str | None:
    """The left operand of the top-level comparison of ``expr`` (an alert condition), or None.

    An alert expression filters: below the threshold it returns nothing, so
    "returns data" is asserted on what it compares."""
    depth = 0
    quote: str | None = None
    i = 0
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in "<>=!":
            two = expr[i : i + 2]
            if two in ("==", "!=", ">=", "<=") or c in "<>":
                return expr[:i].strip()
        i += 1
    return None


# -- Prometheus server ---------------------------------------------------------


@dataclass
class PrometheusServer:
    """A real Prometheus on loopback, with its own config and storage; stopped by PID."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; the result as a list of samples (a scalar becomes one sample)."""
        data = self.api("/api/v1/query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        result = data["result"]
        assert isinstance(result, list)
        return result

    def values(self, expr: str) -> list[float]:
        return [float(sample["value"][1]) for sample in self.query(expr)]

    def has_number(self, expr: str) -> bool:
        """True when the query returns at least one sample that is a number (not NaN)."""
        return any(not math.isnan(v) for v in self.values(expr))

    def firing(self) -> set[str]:
        return {a["labels"]["alertname"] for a in self.api("/api/v1/alerts")["alerts"] if a["state"] == "firing"}

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(5)

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextlib.contextmanager
def prometheus_server(
    directory: Path, metrics_port: int, rules: Path, labels: dict[str, str]
) -> Iterator[PrometheusServer]:
    """Start Prometheus scraping ``127.0.0.1:metrics_port`` every second, evaluating
    ``rules`` every second, with ``labels`` on the target (as Kubernetes discovery would)."""
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": "interrupt-sidecar",
                "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"], "labels": labels}],
            }
        ],
    }
    config_path = directory / "prometheus.yml"
    config_path.write_text(json.dumps(config))  # JSON is YAML
    log_path = directory / "prometheus.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                binary("prometheus"),
                f"--config.file={config_path}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = PrometheusServer(process, port, log_path)
    try:

        def ready() -> bool:
            assert process.poll() is None, f"prometheus exited:\n{server.log}"
            try:
                with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as response:
                    return bool(response.status == 200)
            except (urllib.error.URLError, ConnectionError):
                return False

        eventually(ready, what="prometheus ready")
        yield server
    finally:
        server.stop()


# -- workload ------------------------------------------------------------------

#: sh that ignores SIGTERM and execs sleep, which inherits the ignored disposition:
#: a process group only SIGKILL ends.
STUBBORN = ["sh", "-c", 'trap "" TERM; exec sleep 30']


@dataclass
class RoundCounts:
    """What one workload round did, for the assertions that follow it."""

    trips: int = 0
    overruns: int = 0
    escalations: int = 0
    refusals: int = 0
    lease_losses: int = 0
    execution_ids: list[str] = field(default_factory=list)


class _Watch:
    """A WatchExecution opened before the action it observes (events after the snapshot)."""

    def __init__(self, coordinator: aio.AsyncCoordinator, execution_id: str) -> None:
        self._events = coordinator.watch(execution_id)
        self.execution_id = execution_id
        self.cancelled_at_start = False

    async def start(self) -> _Watch:
        first = await anext(self._events)
        assert first.kind is EventKind.SNAPSHOT and first.snapshot is not None
        self.cancelled_at_start = first.snapshot.cancelled
        return self

    async def until(self, kind: EventKind, count: int = 1) -> None:
        seen = 0
        async for event in self._events:
            if event.kind is kind:
                seen += 1
                if seen >= count:
                    await self._events.aclose()
                    return
        raise AssertionError(f"{self.execution_id} ended before {count} {kind} event(s)")


async def _watch(coordinator: aio.AsyncCoordinator, execution_id: str) -> _Watch:
    return await _Watch(coordinator, execution_id).start()


async def workload_round(address: str, daemon_pid: int) -> RoundCounts:
    """Interrupts of every reason (over the API and by the daemon's own timers and
    cascade), tools of every behaviour, grace overruns, a polite and a SIGKILLed
    process group, refused registrations, repeated and unknown interrupts."""
    counts = RoundCounts()
    async with asyncio.timeout(WAIT_S), aio.AsyncCoordinator(address) as coordinator:
        # Every reason through Interrupt, a cooperative tool each.
        for reason in InterruptReason:
            turn = await coordinator.begin(context_id="obs")
            counts.execution_ids.append(turn.execution_id)
            attached = asyncio.Event()

            async def tool(token: str) -> None:
                async with aio.attach(
                    address=address, token=token, behavior=InterruptBehavior.COOPERATIVE, tool_name="scan"
                ) as run:
                    attached.set()
                    await run.signal.wait()

            task = asyncio.create_task(tool(turn.attach_token))
            await attached.wait()
            (outcome,) = await coordinator.interrupt(turn.execution_id, reason=reason)
            assert outcome.tripped
            await task
            (again,) = await coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT)
            assert not again.tripped
            await coordinator.end(turn.execution_id)
            counts.trips += 1

        # A non-interruptible tool, a thread-interrupt tool whose worker is interrupted
        # (with a callback terminator) and one that stays to report a failing callback.
        turn = await coordinator.begin()
        ready = asyncio.Event()
        callback_ran = asyncio.Event()
        registered = asyncio.Event()
        release = asyncio.Event()

        async def quiet(token: str) -> None:
            async with aio.attach(address=address, token=token, tool_name="quiet"):
                ready.set()
                await callback_ran.wait()

        async def threaded(token: str) -> None:
            with contextlib.suppress(CancelledExecution):
                async with aio.attach(
                    address=address, token=token, behavior=InterruptBehavior.THREAD_INTERRUPT, tool_name="fetch"
                ) as run:
                    await run.registrar.register(callback_ran.set)
                    registered.set()
                    await asyncio.sleep(WAIT_S)  # interrupted by the trip

        async def failing(token: str) -> None:
            # interrupt_worker=False: the block stays until the daemon has the failure report.
            async with aio.attach(
                address=address,
                token=token,
                behavior=InterruptBehavior.THREAD_INTERRUPT,
                tool_name="cleanup",
                interrupt_worker=False,
            ) as run:
                await run.registrar.register(_failing_terminator)
                await release.wait()

        attaches = await _watch(coordinator, turn.execution_id)
        quiet_task = asyncio.create_task(quiet(turn.attach_token))
        await ready.wait()
        tool_tasks = [asyncio.create_task(tool(turn.attach_token)) for tool in (threaded, failing)]
        await registered.wait()
        await attaches.until(EventKind.TOOL_ATTACHED, 3)
        failure = await _watch(coordinator, turn.execution_id)
        await coordinator.interrupt(turn.execution_id, reason=InterruptReason.NOW_PRIORITY_INPUT)
        await failure.until(EventKind.TERMINATOR_FAILED)
        release.set()
        await asyncio.gather(quiet_task, *tool_tasks)
        await coordinator.end(turn.execution_id)
        counts.trips += 1

        # The daemon's own trips: budget, cascade, leases nobody renews.
        budget = await coordinator.begin(budget=0.05)
        async with aio.attach(
            address=address, token=budget.attach_token, behavior=InterruptBehavior.COOPERATIVE
        ) as run:
            await run.signal.wait()
        parent = await coordinator.begin()
        child = await coordinator.begin(parent_execution_id=parent.execution_id)
        await coordinator.interrupt(parent.execution_id, reason=InterruptReason.TASK_CANCELLED)
        leases = [await coordinator.begin(lease_ttl=0.1) for _ in range(4)]
        for lease in leases:
            lease_watch = await _watch(coordinator, lease.execution_id)
            if not lease_watch.cancelled_at_start:
                await lease_watch.until(EventKind.TRIPPED)
        for begun in (budget, parent, child, *leases):
            await coordinator.end(begun.execution_id)
        counts.trips += 3 + len(leases)
        counts.lease_losses += len(leases)

        # Interrupts that find nothing, or an ended execution.
        with contextlib.suppress(SidecarError):
            await coordinator.interrupt("obs-no-such-execution", reason=InterruptReason.USER_SIGINT)
        with contextlib.suppress(SidecarError):
            await coordinator.interrupt(budget.execution_id, reason=InterruptReason.USER_SIGINT)

        # Two tools that overrun a short grace.
        slow = await coordinator.begin(grace=0.05)
        overran = asyncio.Event()

        async def overrunning(token: str) -> None:
            async with aio.attach(
                address=address, token=token, behavior=InterruptBehavior.COOPERATIVE, tool_name="slow"
            ) as run:
                await run.signal.wait()
                await overran.wait()  # unwinds only once the daemon has counted the overrun

        slow_watch = await _watch(coordinator, slow.execution_id)
        slow_tasks = [asyncio.create_task(overrunning(slow.attach_token)) for _ in range(2)]
        await slow_watch.until(EventKind.TOOL_ATTACHED, 2)
        overrun_watch = await _watch(coordinator, slow.execution_id)
        await coordinator.interrupt(slow.execution_id, reason=InterruptReason.USER_SIGINT)
        await overrun_watch.until(EventKind.GRACE_OVERRUN, 2)
        overran.set()
        await asyncio.gather(*slow_tasks)
        await coordinator.end(slow.execution_id)
        counts.trips += 1
        counts.overruns += 2

        # Process groups: one exits on SIGTERM, one needs SIGKILL; two refused registrations.
        kill = await coordinator.begin()
        async with aio.attach(
            address=address, token=kill.attach_token, behavior=InterruptBehavior.EXTERNALLY_TERMINATED, tool_name="run"
        ) as run:
            polite = await run.registrar.create_subprocess_exec("sleep", "30", kill_after=2.0)
            stubborn = await run.registrar.create_subprocess_exec(*STUBBORN, kill_after=0.2)
            for pgid in (os.getpgid(daemon_pid), _exited_pid()):
                try:
                    await run.registrar.register_process_group(pgid)
                except SidecarError:
                    counts.refusals += 1
                else:
                    raise AssertionError(f"the daemon registered process group {pgid}")
            gone = await _watch(coordinator, kill.execution_id)
            await coordinator.interrupt(kill.execution_id, reason=InterruptReason.USER_SIGINT)
            await gone.until(EventKind.PROCESS_GROUP_GONE, 2)
            await polite.wait()
            await stubborn.wait()
        await coordinator.end(kill.execution_id)
        counts.trips += 1
        counts.escalations += 1
    return counts


def _failing_terminator() -> None:
    raise RuntimeError("this terminator fails on purpose")


def _exited_pid() -> int:
    """The PID of a child that has exited and been reaped: a group with no live member."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid
