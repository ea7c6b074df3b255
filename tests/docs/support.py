"""What the documentation tests share: the environment a reader's shell would have."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.docs.blocks import ROOT, docblock

#: The interpreter (and `interrupt-sidecar`, `python`, `pip`) the tests run with: the
#: checkout's installed virtual environment, first on PATH as after `. .venv/bin/activate`.
BIN = Path(sys.executable).parent
HELM = ROOT / "build" / "tools" / "helm"


def shell_env(address: str | None = None, **extra: str) -> dict[str, str]:
    """A reader's environment: the venv's tools first on PATH, the daemon's address, and
    nothing of the test run's own sidecar variables."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("INTERRUPT_SIDECAR_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if address is not None:
        env["INTERRUPT_SIDECAR_ADDRESS"] = address
    env.update(extra)
    return env


def shape(line: str) -> str:
    """A line with what changes from run to run blanked: temporary directories, numbers,
    execution ids."""
    line = re.sub(r"exec-[0-9a-f]{32}", "exec-ID", line)
    line = re.sub(r"/tmp/[^/\s]+/", "/tmp/DIR/", line)
    return re.sub(r"\d+(\.\d+)?", "N", line)


def helm_install_as_template(block: str) -> str:
    """Run a docs block of ``helm install`` lines as ``helm template`` with the repository's
    helm (there is no cluster here); returns the rendered manifests."""
    if not HELM.exists():
        raise AssertionError(f"{HELM} is missing: run `make install-test` (scripts/ensure_helm.sh)")
    shim = f'helm() {{ if [ "$1" = install ]; then shift; "{HELM}" template "$@"; else "{HELM}" "$@"; fi; }}\n'
    result = subprocess.run(
        ["bash", "-c", shim + docblock(block).text],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
