"""helm lint --strict and helm template for every ci/*-values.yaml, and every
rendered object validated against the Kubernetes OpenAPI schemas."""

from __future__ import annotations

import tarfile
from pathlib import Path

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from tests.helm.chart import CHART, CI_VALUES, helm, render

# The oldest Kubernetes the native sidecar supports, and the newest schemas shipped.
KUBE_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
# Custom resources (Prometheus Operator): no OpenAPI schema in kubernetes-validate;
# tests/helm/test_properties.py checks them against the project's files instead.
CRD_GROUPS = ("monitoring.coreos.com/",)
VALUES = [None, *CI_VALUES]


def _id(values: Path | None) -> str:
    return values.name if values else "defaults"


def test_ci_values_cover_the_matrix() -> None:
    assert {p.name for p in CI_VALUES} >= {
        "native-values.yaml",
        "classic-values.yaml",
        "monitoring-values.yaml",
        "tcp-token-values.yaml",
    }


@pytest.mark.parametrize("values", VALUES, ids=_id)
def test_lint_strict(values: Path | None) -> None:
    args = ["lint", "--strict", str(CHART)] + (["--values", str(values)] if values else [])
    result = helm(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[ERROR]" not in result.stdout and "[WARNING]" not in result.stdout, result.stdout


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("values", VALUES, ids=_id)
def test_every_object_is_schema_valid(values: Path | None, kube_version: str) -> None:
    docs = render(*([values] if values else []), extra=("--kube-version", kube_version))
    assert docs
    checked = 0
    for doc in docs:
        if doc["apiVersion"].startswith(CRD_GROUPS):
            continue
        try:
            kubernetes_validate.validate(doc, kube_version, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']} is invalid for Kubernetes {kube_version}: {err}")
        checked += 1
    assert checked >= 3  # at least the workload, the test pod and a ConfigMap


def test_packaged_chart_carries_the_monitoring_files(tmp_path: Path) -> None:
    """The files/ symlinks are followed when Helm loads and packages the chart:
    the .tgz holds the contents, so an installed release needs no repository."""
    result = helm("package", str(CHART), "--destination", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (package,) = tmp_path.glob("interrupt-sidecar-*.tgz")
    with tarfile.open(package) as tar:
        members = {m.name: m for m in tar.getmembers()}
        for name in ("alerts.yaml", "interrupt-sidecar.json"):
            member = members[f"interrupt-sidecar/files/{name}"]
            assert member.isfile(), f"{name} packaged as a link, not its contents"
            extracted = tar.extractfile(member)
            assert extracted is not None
            assert extracted.read() == (CHART / "files" / name).read_bytes()
