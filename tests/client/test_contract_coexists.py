"""The client beside stubs a user generated from protos/: one process, both orders.

A tool may generate its own stubs from the published contract with protoc or buf (the plain
``interrupt.v1`` package) and also import interrupt_sidecar_client. Both register
``interrupt.v1``'s symbols in protobuf's default descriptor pool, which accepts the same
file twice under the same name but never the same symbols under two file names: if the
client's generated code named its file anything but ``interrupt/v1/interrupt.proto``, the
second import would die with ``duplicate symbol 'interrupt.v1.InterruptBehavior'``.

The stubs are generated here with the project's own grpcio-tools, as a user would, and
each order runs in a fresh interpreter (the pool is per process), making real calls with
both sets against a real daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import grpc_tools
import pytest

from tests.conftest import ROOT, DaemonProcess

SCENARIO = Path(__file__).resolve().parent / "contract_coexists_scenario.py"
CONTRACT = "interrupt/v1/interrupt.proto"
RUN_TIMEOUT_S = 30.0

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def protoc_stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``interrupt.v1`` generated from protos/ with plain protoc: no options, no rewriting."""
    out = tmp_path_factory.mktemp("protoc-stubs")
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{ROOT / 'protos'}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            CONTRACT,
        ],
        check=True,
        timeout=60,
    )
    assert (out / "interrupt" / "v1" / "interrupt_pb2.py").is_file()
    return out


@pytest.mark.parametrize("order", ["client-first", "protoc-first"])
def test_the_client_and_protoc_stubs_load_together_and_both_call(
    daemon: DaemonProcess, protoc_stubs: Path, order: str
) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(protoc_stubs), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(
        [sys.executable, str(SCENARIO), order, daemon.address],
        capture_output=True,
        text=True,
        env=env,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    # The traceback quotes the generated module's line, the whole serialized descriptor: keep
    # each line short, so the error itself (the last line) stays readable.
    code = result.returncode
    assert code == 0, "\n".join(line[:300] for line in result.stderr.splitlines()[-12:])
    report = json.loads(result.stdout)
    # One file, under the one name every language's stubs and protos/ use.
    assert report["files"] == [CONTRACT, CONTRACT]
    assert report["bare_package_imported_by_the_client"] == []
    assert report["begun_by_protoc_stubs"] == "by-protoc-stubs"
    assert report["seen_by_client"] == ["by-client", "by-protoc-stubs"]
    assert report["seen_by_protoc_stubs"] == ["by-client", "by-protoc-stubs"]
