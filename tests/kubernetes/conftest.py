"""The one-node cluster the e2e tests share, and the summary they print.

These tests run only under `make e2e-kubernetes` (INTERRUPT_SIDECAR_E2E_KUBERNETES=1):
building Kubernetes from source takes tens of minutes cold, more than CI's budget
(docs/kubernetes.md has the measured times)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kubernetes.cluster import ROOT, Cluster, new_cluster_dir, remove_cluster_dir

ENABLED = os.environ.get("INTERRUPT_SIDECAR_E2E_KUBERNETES") == "1"
# What the tests measured, printed at the end of the run (pytest_terminal_summary).
SUMMARY: dict[str, Any] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ENABLED:
        return
    skip = pytest.mark.skip(reason="the Kubernetes e2e runs under `make e2e-kubernetes` only")
    for item in items:
        if "tests/kubernetes/" in str(item.fspath):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not SUMMARY:
        return
    terminalreporter.section("Kubernetes e2e summary")
    width = max(len(k) for k in SUMMARY)
    for key, value in SUMMARY.items():
        shown = f"{value:.2f} s" if isinstance(value, float) else str(value)
        terminalreporter.write_line(f"{key:<{width}}  {shown}")


def _build(script: str) -> None:
    result = subprocess.run(["bash", str(ROOT / "scripts" / script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"scripts/{script} failed:\n{result.stderr[-4000:]}"


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    start = time.monotonic()
    for script in ("ensure_node.sh", "ensure_kubernetes.sh", "build_image.sh"):
        _build(script)
    SUMMARY["build/check of binaries and image"] = time.monotonic() - start
    c = Cluster(new_cluster_dir())
    left: list[str] = []
    try:
        start = time.monotonic()
        c.start_control_plane()
        c.start_containerd()
        c.start_kubelet()
        SUMMARY["cluster up (control plane, containerd, kubelet Ready)"] = time.monotonic() - start
        SUMMARY["versions"] = c.versions()
        yield c
    finally:
        start = time.monotonic()
        left = c.stop()
        SUMMARY["cluster down"] = time.monotonic() - start
        logs = ROOT / "build" / "kubernetes" / "last-run-logs"
        subprocess.run(["rm", "-rf", str(logs)], check=False)
        subprocess.run(["cp", "-r", str(c.dir / "logs"), str(logs)], check=False)
        remove_cluster_dir(c.dir)
    assert not left, f"left behind after the pods were deleted: {left}"
