"""Regenerate every language's code from protos/, or check that it has not drifted.

    python scripts/gen_protos.py           # write generated code
    python scripts/gen_protos.py --check   # exit 1 when committed code differs

Generated code is never edited by hand: protos/ is laid out so that the import
path of each file ("interrupt/v1/interrupt.proto") is its package path, and every
language compiles it under that name, the one its descriptor carries. Only Python's
import lines are then moved, by its generator, below the client's own package
(interrupt_sidecar_client._proto): see protogen/python.py.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from protogen import LANGUAGES, ToolchainMissing  # noqa: E402


def _generators() -> list[tuple[str, Path, Callable[[Path], None]]]:
    found = []
    for name in LANGUAGES:
        try:
            module = importlib.import_module(f"protogen.{name}")
        except ModuleNotFoundError as missing:
            if missing.name == f"protogen.{name}":
                continue  # that language has no generated code (yet)
            raise
        found.append((name, module.TARGET, module.generate))
    return found


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
    parser.add_argument("languages", nargs="*", help="only these languages (default: all)")
    args = parser.parse_args()
    # CI sets this so a missing toolchain fails the check instead of skipping a language.
    require_all = os.environ.get("INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES") == "1"
    failed = False
    for name, target, generate in _generators():
        if args.languages and name not in args.languages:
            continue
        try:
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
                with tempfile.TemporaryDirectory() as tmp:
                    fresh = Path(tmp) / "out"
                    generate(fresh)
                    if target.exists():
                        shutil.rmtree(target)
                    shutil.copytree(fresh, target)
                print(f"generated {target.relative_to(ROOT)} ({name})")
        except ToolchainMissing as missing:
            print(f"skipped {name}: {missing}", file=sys.stderr)
            failed |= require_all
    if failed:
        print("generated code drifted from protos/: run `make protos` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
