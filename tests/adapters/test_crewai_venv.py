"""The CrewAI adapter's tests, run in build/crewai-venv from the main suite.

crewai 1.15.30 requires ``mcp<2`` and the repository's test extra pins ``mcp==2.3.0``, so
the two cannot share a venv. ``make crewai-test-deps`` (part of ``make install-test``) makes
build/crewai-venv from tests/adapters/requirements-crewai.txt with the client and the daemon
installed editable; this test runs test_crewai.py and the docs page's CrewAI example there,
as one pytest run in a subprocess, and fails with its output when any of them fails.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

from tests.conftest import ROOT

VENV_PYTHON = ROOT / "build" / "crewai-venv" / "bin" / "python"
TESTS = ["tests/adapters/test_crewai.py", "tests/docs/test_adapters_crewai.py"]


@pytest.mark.timeout(240)
def test_the_crewai_adapter_tests_pass_in_their_own_venv() -> None:
    assert VENV_PYTHON.exists(), f"{VENV_PYTHON} is missing: run `make crewai-test-deps`"
    with tempfile.TemporaryDirectory(prefix="crewai-home-") as home:
        env = {
            **os.environ,
            # crewai writes its task-output database and settings under HOME: a fresh one per run.
            "HOME": home,
            "CREWAI_DISABLE_TELEMETRY": "true",
            "CREWAI_DISABLE_TRACKING": "true",
            "CREWAI_TRACING_ENABLED": "false",
            "OTEL_SDK_DISABLED": "true",
        }
        env.pop("VIRTUAL_ENV", None)
        result = subprocess.run(
            [
                str(VENV_PYTHON),
                "-m",
                "pytest",
                *TESTS,
                "-p",
                "no:cacheprovider",
                "-q",
                "-m",
                "slow or not slow",
                # crewai 1.15.30 warns at its own import (ImportWarning from crewai.rag) and in
                # its own validators (DeprecationWarning for fields it sets itself): the suite
                # turns warnings into errors, these two kinds are crewai's, not ours.
                "-W",
                "ignore::ImportWarning",
                "-W",
                "ignore::DeprecationWarning",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=220,
            check=False,
        )
    assert result.returncode == 0, f"crewai venv tests failed:\n{result.stdout[-8000:]}\n{result.stderr[-4000:]}"
    assert " passed" in result.stdout.splitlines()[-1], result.stdout[-2000:]
