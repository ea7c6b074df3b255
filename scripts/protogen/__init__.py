"""One module per language that has generated code, each exposing ``TARGET`` and ``generate``.

``TARGET`` is the committed directory the language's generated code lives in (nothing
hand-written may live there: the directory is replaced wholesale); ``generate(out)`` writes
freshly generated code into ``out``. Modules listed in ``LANGUAGES`` are imported by
``scripts/gen_protos.py``; a language whose toolchain is absent raises
``ToolchainMissing`` so the script can say so instead of failing obscurely.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PROTO_ROOT = ROOT / "protos"

#: Module names under scripts/protogen, in the order they run.
LANGUAGES = ["python", "go", "typescript", "java", "rust"]


class ToolchainMissing(RuntimeError):
    """The language's compiler or package manager is not installed on this machine."""


def protos() -> list[str]:
    """Every .proto file, relative to ``protos/`` (which is also their import path)."""
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))


def protoc() -> list[str]:
    """The pinned protoc (grpcio-tools' bundled compiler) as an argv prefix, with include paths."""
    import grpc_tools  # the pinned grpcio-tools carries protoc and the well-known types

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    return [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"-I{well_known}"]
