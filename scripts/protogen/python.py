"""Python messages, gRPC stubs and their typing stubs (.pyi)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import PROTO_ROOT, ROOT, protoc, protos

TARGET = ROOT / "clients" / "python" / "gen"


def generate(out: Path) -> None:
    """Write the generated Python package ``interrupt.v1`` into ``out``."""
    # mypy-protobuf's plugins are console scripts installed beside this interpreter.
    bindir = Path(sys.executable).parent
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        *protoc(),
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *protos(),
    ]
    subprocess.run(cmd, check=True, cwd=PROTO_ROOT)
