"""The daemon's layers point one way. This test pins it, so a shortcut fails CI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SIDECAR = Path(__file__).resolve().parent.parent / "sidecar" / "interrupt_sidecar"

# What each layer may import from the sidecar package (besides itself and interrupt_sidecar.errors).
ALLOWED = {
    "domain": set(),
    "osedge": set(),
    "runtime": {"domain", "osedge"},
    "services": {"domain", "osedge", "runtime"},
    # The Prometheus observer implements the runtime's TripObserver port.
    "metrics": {"domain", "runtime"},
}
# Third-party modules a layer must never import.
FORBIDDEN_EXTERNAL = {
    "domain": {"grpc", "interrupt_sidecar_client", "asyncio", "os", "subprocess", "signal", "google"},
    "osedge": {"grpc", "interrupt_sidecar_client", "google"},
    "runtime": {"grpc", "interrupt_sidecar_client", "google", "prometheus_client"},
    "services": {"prometheus_client"},
    "metrics": {"grpc", "interrupt_sidecar_client", "google"},
}


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_point_down(layer: str) -> None:
    for path in sorted((SIDECAR / layer).glob("*.py")):
        for name in imports_of(path):
            parts = name.split(".")
            if parts[0] == "interrupt_sidecar" and len(parts) > 1 and parts[1] not in (layer, "errors"):
                assert parts[1] in ALLOWED[layer], f"{path.name} ({layer}) imports {name}"
            assert parts[0] not in FORBIDDEN_EXTERNAL.get(layer, set()), f"{path.name} ({layer}) imports {name}"


# `interrupt-sidecar run` (sidecar/wrapper) is a top layer and a *client* of the daemon:
# it reaches the daemon over gRPC with the Python client, never through its internals. The
# one shared piece is the OS edge's /proc reader (interrupt_sidecar.osedge.procfs), which holds no
# daemon state: both kill trees the same way.
WRAPPER_ALLOWED = {"wrapper", "config", "errors", "osedge.procfs"}
DAEMON_LAYERS = ("domain", "osedge", "runtime", "services", "metrics")


def test_the_wrapper_is_a_client_of_the_daemon() -> None:
    for path in sorted((SIDECAR / "wrapper").glob("*.py")):
        for name in imports_of(path):
            parts = name.split(".")
            if parts[0] == "interrupt_sidecar" and len(parts) > 1:
                allowed = parts[1] in WRAPPER_ALLOWED or ".".join(parts[1:3]) in WRAPPER_ALLOWED
                assert allowed, f"wrapper/{path.name} imports daemon internals: {name}"


# `interrupt-sidecar mcp` (sidecar/mcp) is a top layer and a client of the daemon too, like the
# wrapper: the Python client over gRPC, the /proc reader, and the wrapper's process helpers
# (becoming a subreaper, the exit codes), which are the same for both top layers.
MCP_ALLOWED = {"mcp", "config", "errors", "osedge.procfs", "wrapper.spawn", "wrapper.exits"}


def test_the_mcp_bridge_is_a_client_of_the_daemon() -> None:
    paths = sorted((SIDECAR / "mcp").glob("*.py"))
    assert paths, "sidecar/interrupt_sidecar/mcp is missing"
    for path in paths:
        for name in imports_of(path):
            parts = name.split(".")
            if parts[0] == "interrupt_sidecar" and len(parts) > 1:
                allowed = parts[1] in MCP_ALLOWED or ".".join(parts[1:3]) in MCP_ALLOWED
                assert allowed, f"mcp/{path.name} imports daemon internals: {name}"


# The generated wire code ships inside the client's distribution (its `_proto` subpackage);
# that, and nothing else of the client, is the daemon's to import.
WIRE_CODE = "interrupt_sidecar_client._proto"


@pytest.mark.parametrize("layer", DAEMON_LAYERS)
def test_the_daemon_does_not_use_the_client_or_the_wrapper(layer: str) -> None:
    for path in sorted((SIDECAR / layer).glob("*.py")):
        for name in imports_of(path):
            if name == WIRE_CODE or name.startswith(WIRE_CODE + "."):
                continue
            assert not name.startswith(
                ("interrupt_sidecar_client", "interrupt_sidecar.wrapper", "interrupt_sidecar.mcp")
            ), f"{layer}/{path.name}: {name}"
