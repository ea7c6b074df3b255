"""Regenerate every language's code from protos/, or check that it has not drifted.

    python scripts/gen_protos.py           # write generated code
    python scripts/gen_protos.py --check   # exit 1 when committed code differs

Generated code is never edited by hand: protos/ is laid out so that the import
path of each file ("interrupt/v1/interrupt.proto") is its package path, so the
generated imports (``from interrupt.v1 import interrupt_pb2``) work as emitted.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
PYTHON_OUT = ROOT / "clients" / "python" / "gen"


def _protos() -> list[str]:
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))


def generate_python(out: Path) -> None:
    """Python messages, gRPC stubs and their typing stubs (.pyi) into ``out``."""
    import grpc_tools  # the pinned grpcio-tools carries protoc and the well-known types

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    # mypy-protobuf's plugins are console scripts installed beside this interpreter.
    bindir = Path(sys.executable).parent
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *_protos(),
    ]
    subprocess.run(cmd, check=True, cwd=PROTO_ROOT)


GENERATORS = {PYTHON_OUT: generate_python}


def _diff(expected: Path, actual: Path) -> list[str]:
    """Relative paths that differ between two trees (missing on either side included)."""
    problems: list[str] = []

    def walk(cmp: filecmp.dircmp[str], prefix: str) -> None:
        problems.extend(f"{prefix}{name} (missing)" for name in cmp.left_only)
        problems.extend(f"{prefix}{name} (not generated from protos/)" for name in cmp.right_only)
        problems.extend(f"{prefix}{name} (differs)" for name in cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(expected, actual, ignore=["__pycache__"]), "")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when committed generated code drifts")
    args = parser.parse_args()
    failed = False
    for target, generate in GENERATORS.items():
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Path(tmp) / "out"
                generate(fresh)
                if not target.exists():
                    problems = [f"{target.relative_to(ROOT)} does not exist"]
                else:
                    problems = _diff(fresh, target)
            for problem in problems:
                print(f"drift: {target.relative_to(ROOT)}/{problem}", file=sys.stderr)
            failed |= bool(problems)
        else:
            if target.exists():
                shutil.rmtree(target)
            generate(target)
            print(f"generated {target.relative_to(ROOT)}")
    if failed:
        print("generated code drifted from protos/: run `make protos` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
