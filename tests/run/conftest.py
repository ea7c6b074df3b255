"""The two implementations of ``interrupt-sidecar run``, held to the same assertions.

``implementation`` parametrizes every test that starts a wrapper: ``python`` is
``python -m interrupt_sidecar`` (the specification), ``native`` the static Go binary of
``clients/go/cmd/interrupt-sidecar`` (built once per run by :func:`tests.native.native_binary`).
"""

from __future__ import annotations

import sys

import pytest

from tests.native import native_binary


@pytest.fixture(params=["python", "native"])
def implementation(request: pytest.FixtureRequest) -> list[str]:
    """The argv that runs ``interrupt-sidecar`` (``run ...`` follows)."""
    if request.param == "native":
        return [str(native_binary())]
    return [sys.executable, "-m", "interrupt_sidecar"]
