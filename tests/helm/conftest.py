"""The chart tests need the pinned Helm that `make install-test` builds."""

from __future__ import annotations

import pytest

from tests.helm.chart import HELM, helm


@pytest.fixture(scope="session", autouse=True)
def helm_binary() -> None:
    if not HELM.exists():
        pytest.fail(f"{HELM} is missing: run `make install-test` (scripts/ensure_helm.sh builds the pinned Helm)")
    version = helm("version", "--short").stdout.strip()
    assert version.startswith("v3."), f"unexpected helm version {version!r}"
