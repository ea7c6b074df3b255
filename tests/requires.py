"""What a test needs from the machine (root, unshare, gcc, script): skip here, fail in CI.

``.ci/run`` sets ``INTERRUPT_SIDECAR_REQUIRE_ALL_TOOLS=1`` (beside
``INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES=1``): CI installs these (``make install-test`` runs
``scripts/ensure_system_tools.sh``) and runs as root, so a test that cannot run there has lost
its coverage silently, and that must fail the build. On a developer's machine it is a skip.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_ALL = os.environ.get("INTERRUPT_SIDECAR_REQUIRE_ALL_TOOLS") == "1" or bool(os.environ.get("CI"))


def unavailable(why: str) -> None:
    """Skip (or fail, when everything is required) a test that cannot run here."""
    if REQUIRE_ALL:
        pytest.fail(f"{why}; INTERRUPT_SIDECAR_REQUIRE_ALL_TOOLS=1 makes a skip a failure")
    pytest.skip(why)


def require_root(why: str = "needs root") -> None:
    if os.geteuid() != 0:
        unavailable(why)


def require_program(name: str, why: str = "") -> str:
    """The path of ``name`` on PATH, or skip/fail."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed{': ' + why if why else ''}")
        raise AssertionError("unreachable")
    return path
