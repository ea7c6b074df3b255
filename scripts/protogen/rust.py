"""Rust messages and tonic client stubs, one ``<package>.rs`` file (``interrupt.v1.rs``).

The generator is ``clients/rust/codegen``, a tiny binary over ``tonic-prost-build`` whose
version is pinned exactly in its ``Cargo.toml`` and ``Cargo.lock`` (fetched from crates.io
by cargo). prost-build calls the compiler named by ``PROTOC``: grpcio-tools ships protoc
as a Python module, not an executable, so ``PROTOC`` points at a wrapper script that
execs the project's pinned protoc (``protoc()``, include paths included).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from . import PROTO_ROOT, ROOT, ToolchainMissing, protoc, protos

TARGET = ROOT / "clients" / "rust" / "src" / "gen"
CODEGEN = ROOT / "clients" / "rust" / "codegen" / "Cargo.toml"
#: Shared with the client and the conformance drivers, so dependencies build once.
CARGO_TARGET = ROOT / "build" / "cargo-target"


def generate(out: Path) -> None:
    """Write ``interrupt.v1.rs`` (messages, enums, ``tool_channel_service_client``, ...) into ``out``."""
    cargo = shutil.which("cargo")
    if cargo is None:
        raise ToolchainMissing("cargo is not on PATH (install Rust: https://rustup.rs)")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="protoc-") as tmp:
        wrapper = Path(tmp) / "protoc"
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(protoc())} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        env = {**os.environ, "PROTOC": str(wrapper), "CARGO_TARGET_DIR": str(CARGO_TARGET)}
        env.pop("PROTOC_INCLUDE", None)  # the wrapper carries the well-known types' path
        cmd = [
            cargo,
            "run",
            "--quiet",
            "--locked",
            f"--manifest-path={CODEGEN}",
            "--",
            str(out),
            str(PROTO_ROOT),
            *(str(PROTO_ROOT / proto) for proto in protos()),
        ]
        # prost-build prints cargo:rerun-if-changed lines meant for build scripts.
        subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
