"""Go messages and grpc-go stubs (package ``interruptv1``) for clients/go.

The plugins (protoc-gen-go, protoc-gen-go-grpc) are pinned by the tools module
``clients/go/tools/go.mod`` (and its go.sum), built from the Go module proxy into
``clients/go/build/bin`` by the go command, and handed to the pinned protoc with
``--plugin``. The proto declares no ``go_package``; the import path is given here with
``M`` options, so the contract stays language-neutral.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from . import PROTO_ROOT, ROOT, ToolchainMissing, protoc, protos

CLIENT = ROOT / "clients" / "go"
TARGET = CLIENT / "gen"
MODULE = "github.com/interrupt-sidecar/interrupt-sidecar/clients/go"
TOOLS = CLIENT / "tools"
BIN = CLIENT / "build" / "bin"


def _plugins() -> dict[str, Path]:
    """Build the pinned plugins (a no-op when the go command's cache is warm)."""
    go = shutil.which("go")
    if go is None:
        raise ToolchainMissing("the go command is not installed (needed to build protoc-gen-go and protoc-gen-go-grpc)")
    BIN.mkdir(parents=True, exist_ok=True)
    subprocess.run([go, "build", "-trimpath", "-o", f"{BIN}/", "tool"], check=True, cwd=TOOLS)
    return {name: BIN / name for name in ("protoc-gen-go", "protoc-gen-go-grpc")}


def generate(out: Path) -> None:
    """Write ``interrupt/v1/*.pb.go`` (import path ``<MODULE>/gen/interrupt/v1``) into ``out``."""
    plugins = _plugins()
    files = protos()
    mappings = [f"M{name}={MODULE}/gen/{Path(name).parent};{_package(name)}" for name in files]
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        *protoc(),
        f"--plugin=protoc-gen-go={plugins['protoc-gen-go']}",
        f"--plugin=protoc-gen-go-grpc={plugins['protoc-gen-go-grpc']}",
        f"--go_out={out}",
        "--go_opt=paths=source_relative",
        *(f"--go_opt={mapping}" for mapping in mappings),
        f"--go-grpc_out={out}",
        "--go-grpc_opt=paths=source_relative",
        *(f"--go-grpc_opt={mapping}" for mapping in mappings),
        *files,
    ]
    subprocess.run(cmd, check=True, cwd=PROTO_ROOT)


def _package(proto: str) -> str:
    """The Go package name of a proto file: ``interrupt/v1/x.proto`` -> ``interruptv1``."""
    return "".join(Path(proto).parent.parts)
