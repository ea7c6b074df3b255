"""What the Python drivers share: the runner conversation of PROTOCOL.md."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from interrupt_sidecar_client import SidecarError

TOOL_NAME = "conformance-python"
WAIT = 10.0


def emit(step: str, **fields: object) -> None:
    """Print one step as a JSON line, flushed at once."""
    print(json.dumps({"step": step, **fields}), flush=True)


def fail(message: str) -> NoReturn:
    emit("error", message=message)
    sys.exit(1)


def wait_go() -> None:
    """Block until the runner sends ``go`` (with the driver's time limit)."""
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(sys.stdin.readline()), daemon=True)
    reader.start()
    reader.join(WAIT)
    if not line or line[0].strip() != "go":
        fail(f"expected 'go' on stdin within {WAIT}s, got {line!r}")


def wait_for(event: threading.Event, what: str) -> None:
    if not event.wait(WAIT):
        fail(f"timed out after {WAIT}s waiting for {what}")


def refusal_code(register: Callable[[], object]) -> str:
    """Run a registration that must be refused; return the gRPC code name it was refused with."""
    try:
        register()
    except SidecarError as refused:
        return refused.code.name if refused.code is not None else "UNKNOWN"
    fail("the registration was accepted")
