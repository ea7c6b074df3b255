"""Fixtures of the client tests. The real daemon fixture (``daemon``) is in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from interrupt_sidecar_client import Coordinator

from tests.client.support import FakeSidecar
from tests.conftest import DaemonProcess


@pytest.fixture(autouse=True)
def _no_sidecar_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts outside an agent, whatever the environment running the suite."""
    monkeypatch.delenv("INTERRUPT_SIDECAR_ADDRESS", raising=False)
    monkeypatch.delenv("INTERRUPT_SIDECAR_TOKEN", raising=False)


@pytest.fixture
def fake_sidecar() -> Iterator[FakeSidecar]:
    fake = FakeSidecar()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def coordinator(daemon: DaemonProcess) -> Iterator[Coordinator]:
    """The blocking agent API on the test's daemon."""
    with Coordinator(daemon.address) as client:
        yield client
