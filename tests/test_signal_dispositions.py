"""The suite's children start with the signal dispositions of a terminal, whatever started it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

CHILD = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"


def test_a_child_of_the_suite_does_not_ignore_sigint() -> None:
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == "False", "a child of the suite starts with SIGINT ignored"


@pytest.mark.timeout(120)
def test_a_suite_started_with_sigint_ignored_still_gives_its_children_the_default() -> None:
    # As `make test &` in a script starts it: the suite inherits SIG_IGN for SIGINT (the
    # shell's `trap "" INT` sets it, and exec keeps it). The test above, run inside that
    # suite, must still see its child take SIGINT by default.
    inner = f"{__file__}::test_a_child_of_the_suite_does_not_ignore_sigint"
    result = subprocess.run(
        ["sh", "-c", 'trap "" INT; exec "$0" -m pytest -q -p no:cacheprovider "$1"', sys.executable, inner],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
