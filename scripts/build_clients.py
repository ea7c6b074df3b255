"""Build every language's client and conformance drivers, or say plainly why one was skipped.

    python scripts/build_clients.py              # all languages
    python scripts/build_clients.py go rust      # some
    python scripts/build_clients.py --check      # also run each client's own lint and unit tests

Each language builds with its own toolchain through ``make -C clients/<language> conformance``
(and ``check``; Go also ``native``, the native command line in ``build/native/``), which
writes ``build/conformance/<language>/driver`` for the conformance
runner. A language whose toolchain is not installed gets ``build/conformance/<language>/SKIPPED``
instead; with ``INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES=1`` (CI) that is an error. A build
that fails is always an error.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "conformance"
#: language -> the commands its build needs on PATH
TOOLCHAINS = {
    "go": ["go"],
    "typescript": ["node", "npm"],
    "java": ["java", "mvn"],
    "rust": ["cargo"],
}

#: language -> what else its Makefile builds: Go's native command line (docs/cli.md)
EXTRA_TARGETS = {"go": ["native"]}


def build(language: str, *, check: bool, require_all: bool) -> tuple[str, str]:
    """Build one language; returns (status, note) where status is built / skipped / FAILED."""
    out = BUILD / language
    out.mkdir(parents=True, exist_ok=True)
    skipped = out / "SKIPPED"
    skipped.unlink(missing_ok=True)
    missing = [tool for tool in TOOLCHAINS[language] if shutil.which(tool) is None]
    makefile = ROOT / "clients" / language / "Makefile"
    why = ""
    if missing:
        why = f"toolchain not installed: {', '.join(missing)} not on PATH"
    elif not makefile.is_file():
        why = f"clients/{language} has no Makefile"
    if why:
        (out / "driver").unlink(missing_ok=True)
        skipped.write_text(why + "\n")
        return ("FAILED" if require_all else "skipped", why)
    started = time.monotonic()
    targets = ["conformance", *EXTRA_TARGETS.get(language, []), *(["check"] if check else [])]
    for target in targets:
        result = subprocess.run(["make", "--no-print-directory", "-C", str(makefile.parent), target], check=False)
        if result.returncode != 0:
            return ("FAILED", f"`make -C clients/{language} {target}` exited {result.returncode}")
    return ("built", f"{' + '.join(targets)} in {time.monotonic() - started:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("languages", nargs="*", choices=[[], *TOOLCHAINS], help="default: all")
    parser.add_argument("--check", action="store_true", help="also run each client's lint and unit tests")
    args = parser.parse_args()
    require_all = os.environ.get("INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES") == "1"
    results = {
        language: build(language, check=args.check, require_all=require_all)
        for language in (args.languages or list(TOOLCHAINS))
    }
    print("\nclients:")
    for language, (status, note) in results.items():
        print(f"  {language:<11} {status:<8} {note}")
    if any(status == "skipped" for status, _ in results.values()):
        print("  (skipped languages are skipped by the conformance suite too; CI requires all)")
    return 1 if any(status == "FAILED" for status, _ in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
