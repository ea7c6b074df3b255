"""One process that loads the client and stubs a user generated from protos/ with protoc::

    PYTHONPATH=<protoc's output> python contract_coexists_scenario.py client-first|protoc-first ADDRESS

Run by test_contract_coexists.py in a fresh interpreter per order, because the descriptor
pool is per process and the clash (if any) happens at import, in whichever module loads
second. The user's stubs are the plain ``interrupt.v1`` package protoc emits, with no
``__init__.py`` (namespace packages, as protoc leaves them); they are imported by name so
this file type-checks without them.

Prints one JSON line on stdout: what each set of stubs saw over the wire. A failure is a
traceback on stderr and a non-zero exit (the duplicate-symbol TypeError among them).
"""

from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType
from typing import Any

import grpc

CALL_TIMEOUT_S = 10.0


def _messages_and_stubs(package: str) -> tuple[ModuleType, ModuleType]:
    return importlib.import_module(f"{package}.interrupt_pb2"), importlib.import_module(f"{package}.interrupt_pb2_grpc")


def load_protoc_stubs() -> tuple[ModuleType, ModuleType]:
    """The user's ``interrupt.v1.interrupt_pb2`` and ``_pb2_grpc`` (protoc's own import lines)."""
    return _messages_and_stubs("interrupt.v1")


def load_client() -> tuple[ModuleType, ModuleType]:
    """The client and its generated code, imported explicitly: the package itself defers it."""
    importlib.import_module("interrupt_sidecar_client")
    return _messages_and_stubs("interrupt_sidecar_client._proto.interrupt.v1")


def main(order: str, address: str) -> dict[str, Any]:
    bare: list[str] = []
    if order == "client-first":
        ours, _ = load_client()
        # The client's modules import each other by its own package, never through the
        # user's ``interrupt`` (which is on the path, and would quietly satisfy them).
        bare = sorted(name for name in sys.modules if name == "interrupt" or name.startswith("interrupt."))
        theirs, theirs_grpc = load_protoc_stubs()
    elif order == "protoc-first":
        theirs, theirs_grpc = load_protoc_stubs()
        ours, _ = load_client()
    else:
        raise SystemExit(f"unknown order {order!r}")
    from interrupt_sidecar_client import Coordinator

    # With the user's stubs: begin one execution over a plain channel.
    with grpc.insecure_channel(address) as channel:
        stub = theirs_grpc.CoordinatorServiceStub(channel)
        begun = stub.BeginExecution(
            theirs.BeginExecutionRequest(execution_id="by-protoc-stubs", context_id="coexists"),
            timeout=CALL_TIMEOUT_S,
        )
    # With the client: begin another, and read back both through the client's API.
    with Coordinator(address) as coordinator:
        coordinator.begin(execution_id="by-client", context_id="coexists")
        seen_by_client = sorted(e.execution_id for e in coordinator.list(context_id="coexists"))
    # And the user's stubs see the client's execution.
    with grpc.insecure_channel(address) as channel:
        stub = theirs_grpc.CoordinatorServiceStub(channel)
        listed = stub.ListExecutions(theirs.ListExecutionsRequest(context_id="coexists"), timeout=CALL_TIMEOUT_S)
    return {
        "files": [ours.DESCRIPTOR.name, theirs.DESCRIPTOR.name],
        "bare_package_imported_by_the_client": bare,
        "begun_by_protoc_stubs": begun.execution_id,
        "seen_by_client": seen_by_client,
        "seen_by_protoc_stubs": sorted(e.execution_id for e in listed.executions),
    }


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:3])))
