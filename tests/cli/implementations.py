"""The two implementations of ``interrupt-sidecar``, as tests run them.

The Python one is ``python -m interrupt_sidecar``; the native binary
(``clients/go/cmd/interrupt-sidecar``) is built once per run by :mod:`tests.native` and told
which Python to hand other subcommands to (``INTERRUPT_SIDECAR_PYTHON``), so that it
reaches this checkout's code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

from tests.conftest import ROOT
from tests.native import native_binary

PYTHON_COMMAND = (sys.executable, "-m", "interrupt_sidecar")


@dataclass(frozen=True)
class CommandLine:
    """One implementation of ``interrupt-sidecar``: its argv prefix and the environment it needs."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """Run ``interrupt-sidecar ARGS`` to completion."""
        return subprocess.run(
            [*self.argv, *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, **self.env, **(env or {})},
            timeout=timeout,
            check=False,
        )

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.argv, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, **self.env, **(env or {})},
        )


def python_cli() -> CommandLine:
    return CommandLine("python", PYTHON_COMMAND)


def native_cli() -> CommandLine:
    return CommandLine("native", (str(native_binary()),), {"INTERRUPT_SIDECAR_PYTHON": sys.executable})
