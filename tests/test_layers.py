"""The daemon's layers point one way. This test pins it, so a shortcut fails CI.

Every module under ``sidecar/interrupt_sidecar`` belongs to a layer (a new module that
belongs to none fails here until it is given one), and every import of every module,
wherever it is written, goes to its own layer or to one the layer may use.
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from tests.import_graph import imported_names, modules_of

PACKAGE = "interrupt_sidecar"
SIDECAR = Path(__file__).resolve().parent.parent / "sidecar" / PACKAGE

# Each top-level module or subpackage of interrupt_sidecar (a subpackage with all its
# modules), and its layer.
LAYER_OF = {
    # The root exception type, the version, the immutable record type of the value
    # classes: no imports, usable by every layer.
    "__init__": "base",
    "errors": "base",
    "record": "base",
    # Pure semantics (signal, coordinator, registry): no gRPC, no OS.
    "domain": "domain",
    # Process groups, /proc, the journal: the OS calls.
    "osedge": "osedge",
    # The asyncio trip path, timers, the watch hub; the GC pacer is a loop timer too.
    "runtime": "runtime",
    "gc_pacer": "runtime",
    # The Prometheus observer implements the runtime's TripObserver port.
    "metrics": "metrics",
    # gRPC, with status codes mapped at the boundary: the services, and federation (the
    # gRPC client that follows a parent execution in another daemon).
    "services": "services",
    "federation": "services",
    # The frozen configuration: parsing and defaults only. The one table of settings and
    # the one table of exit codes are read by every subcommand, `run` included.
    "config": "config",
    "settings": "config",
    "exits": "config",
    # Wiring everything into a running daemon, on the loop chosen by name.
    "server": "server",
    "loops": "server",
    # Subcommands that are *clients* of the daemon: they reach it over gRPC (the Python
    # client, or the wire code), never through its internals.
    "wrapper": "clients",
    "mcp": "clients",
    "top": "clients",
    "demo": "clients",
    # The command line on top of it all.
    "cli": "cli",
    "entry": "cli",
    "__main__": "cli",
}

# What each layer may import from the package besides itself.
ALLOWED = {
    "base": set(),
    "domain": {"base"},
    "osedge": {"base"},
    "runtime": {"base", "domain", "osedge"},
    "metrics": {"base", "domain", "runtime"},
    "services": {"base", "domain", "osedge", "runtime"},
    "config": {"base"},
    "server": {"base", "domain", "osedge", "runtime", "metrics", "services", "config"},
    "clients": {"base", "config"},
    # The domain's enum of reasons names the choices of `interrupt --reason` without
    # loading the generated code (start-up of every command).
    "cli": {"base", "domain", "config", "server", "clients"},
}
# Single modules a layer may use beyond ALLOWED. The OS edge's /proc reader holds no
# daemon state, and `interrupt-sidecar run` kills a tree the same way the daemon does.
ALLOWED_MODULES = {"clients": {"interrupt_sidecar.osedge.procfs"}}

# Third-party and standard modules a layer must never import.
FORBIDDEN_EXTERNAL = {
    "base": {"grpc", "interrupt_sidecar_client", "google", "prometheus_client", "asyncio"},
    "domain": {"grpc", "interrupt_sidecar_client", "asyncio", "os", "subprocess", "signal", "google"},
    "osedge": {"grpc", "interrupt_sidecar_client", "google"},
    "runtime": {"grpc", "interrupt_sidecar_client", "google", "prometheus_client"},
    "services": {"prometheus_client"},
    "metrics": {"grpc", "interrupt_sidecar_client", "google"},
    "config": {"grpc", "interrupt_sidecar_client", "google", "prometheus_client", "asyncio"},
    "clients": {"prometheus_client"},
}

# The generated wire code ships inside the client's distribution (its `_proto` subpackage);
# that, and nothing else of the client, is the daemon's to import.
WIRE_CODE = "interrupt_sidecar_client._proto"
# The rule for the default socket address has one implementation, the client's, so the
# daemon listens where every client looks: the configuration may use that one module.
SHARED_CLIENT_MODULES = {"config": {"interrupt_sidecar_client._config"}}
DAEMON_LAYERS = ("base", "domain", "osedge", "runtime", "metrics", "services", "config", "server")

MODULES = modules_of(PACKAGE, SIDECAR)


def layer_of(module: str) -> str | None:
    """The layer of a dotted module name of the package, by its first component below it."""
    parts = module.split(".")
    return LAYER_OF.get(parts[1] if len(parts) > 1 else "__init__")


def violations(module: str, path: Path) -> list[str]:
    """What in ``path`` (the source of ``module``) breaks its layer's rules."""
    layer = layer_of(module)
    if layer is None:
        return [f"{module} belongs to no layer"]
    found = []
    names = set(imported_names(module, path))
    for imported in sorted(name for name in names if name in MODULES and name != module):
        target = layer_of(imported)
        if not (target == layer or target in ALLOWED[layer] or imported in ALLOWED_MODULES.get(layer, set())):
            found.append(f"{module} ({layer}) imports {imported} ({target})")
    shared = tuple(SHARED_CLIENT_MODULES.get(layer, set()))

    def is_shared(name: str) -> bool:
        return any(name == mod or name.startswith(mod + ".") for mod in shared)

    external = {name.split(".")[0] for name in names if not is_shared(name)} - {PACKAGE}
    found.extend(
        f"{module} ({layer}) imports {name}" for name in sorted(external & FORBIDDEN_EXTERNAL.get(layer, set()))
    )
    if layer in DAEMON_LAYERS:
        found.extend(
            f"{module} ({layer}, the daemon) imports the client: {name}"
            for name in sorted(names)
            if name.startswith("interrupt_sidecar_client")
            and not (name == WIRE_CODE or name.startswith(WIRE_CODE + ".") or is_shared(name))
        )
    return found


def test_every_module_belongs_to_a_layer() -> None:
    assert len(MODULES) > 20, f"found too few modules under {SIDECAR}"
    orphans = sorted(module for module in MODULES if layer_of(module) is None)
    assert not orphans, f"modules in no layer (add them to LAYER_OF): {orphans}"
    present = {module.split(".")[1] if "." in module else "__init__" for module in MODULES}
    stale = sorted(set(LAYER_OF) - present)
    assert not stale, f"LAYER_OF names modules that do not exist: {stale}"
    assert set(LAYER_OF.values()) == set(ALLOWED)


def test_the_layers_point_one_way() -> None:
    """ALLOWED itself has no circle: every arrow points down."""
    try:
        order = list(TopologicalSorter(ALLOWED).static_order())
    except CycleError as error:
        pytest.fail(f"the layer rules have a circle: {error.args[1]}")
    assert order[0] == "base"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    assert violations(module, MODULES[module]) == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # A lazy import inside a function counts: the rules cannot be dodged that way.
        (
            "interrupt_sidecar.runtime.watch",
            "def f():\n    from interrupt_sidecar import server\n",
            "interrupt_sidecar.runtime.watch (runtime) imports interrupt_sidecar.server (server)",
        ),
        (
            "interrupt_sidecar.config",
            "from interrupt_sidecar.wrapper.exits import EXIT_USAGE\n",
            "interrupt_sidecar.config (config) imports interrupt_sidecar.wrapper.exits (clients)",
        ),
        (
            "interrupt_sidecar.top",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from interrupt_sidecar.runtime import watch\n",
            [
                "interrupt_sidecar.top (clients) imports interrupt_sidecar.runtime (runtime)",
                "interrupt_sidecar.top (clients) imports interrupt_sidecar.runtime.watch (runtime)",
            ],
        ),
        (
            "interrupt_sidecar.server",
            "import interrupt_sidecar_client\n",
            "interrupt_sidecar.server (server, the daemon) imports the client: interrupt_sidecar_client",
        ),
        ("interrupt_sidecar.errors", "import grpc\n", "interrupt_sidecar.errors (base) imports grpc"),
        ("interrupt_sidecar.brand_new", "", "interrupt_sidecar.brand_new belongs to no layer"),
    ],
)
def test_the_check_finds_violations(tmp_path: Path, module: str, source: str, expected: str | list[str]) -> None:
    path = tmp_path / "module.py"
    path.write_text(source)
    assert violations(module, path) == (expected if isinstance(expected, list) else [expected])
