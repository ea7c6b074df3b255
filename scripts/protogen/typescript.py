"""TypeScript messages and @grpc/grpc-js service clients, by ts-proto.

The plugin (``protoc-gen-ts_proto``) is pinned in ``clients/typescript/package.json`` and
``package-lock.json`` and installed by ``npm ci`` there; protoc is the pinned one of
grpcio-tools, like every language's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from . import PROTO_ROOT, ROOT, ToolchainMissing, protoc, protos

CLIENT = ROOT / "clients" / "typescript"
TARGET = CLIENT / "gen"

#: ts-proto's options (https://github.com/stephenh/ts-proto#supported-options).
OPTIONS = ",".join(
    [
        "outputServices=grpc-js",  # service clients for @grpc/grpc-js
        "esModuleInterop=true",
        "env=node",
        "oneof=unions",  # `message?: { $case: "hello"; hello: Hello }`, narrowed by $case
        "useDate=true",  # google.protobuf.Timestamp as Date
        "forceLong=number",  # uint64 sequence numbers fit a double for any real execution
    ]
)


def _plugin() -> Path:
    plugin = CLIENT / "node_modules" / ".bin" / "protoc-gen-ts_proto"
    if plugin.exists():
        return plugin
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise ToolchainMissing("node and npm are not installed (ts-proto needs Node.js 20)")
    # The plugin's version comes from the committed package-lock.json.
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], check=True, cwd=CLIENT)
    if not plugin.exists():
        raise ToolchainMissing(f"npm ci did not install {plugin.relative_to(ROOT)}")
    return plugin


def generate(out: Path) -> None:
    """Write ``interrupt/v1/interrupt.ts`` and the well-known types it imports into ``out``."""
    plugin = _plugin()
    if shutil.which("node") is None:
        raise ToolchainMissing("node is not installed (ts-proto runs on Node.js 20)")
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        *protoc(),
        f"--plugin=protoc-gen-ts_proto={plugin}",
        f"--ts_proto_out={out}",
        f"--ts_proto_opt={OPTIONS}",
        *protos(),
    ]
    subprocess.run(cmd, check=True, cwd=PROTO_ROOT)
