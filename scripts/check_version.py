"""One version for the whole repository: ``__version__`` in sidecar/interrupt_sidecar/__init__.py.

The daemon's distribution reads it directly (pyproject ``dynamic = ["version"]``), and so
does the Python client from its own ``__version__``; every other manifest (the client's
``__version__`` and the daemon's pin on it, the Helm chart, Maven, Cargo and npm manifests
and their lock files, and the docs that name an image tag or a dependency) carries a copy,
because its format cannot read a file. This script finds the copies and fails when one
disagrees (``make version-check``; ``tests/test_version.py`` runs it in ``make test``):

    python scripts/check_version.py              # exit 1 and list every copy that disagrees
    python scripts/check_version.py --set 0.2.0  # write a new version into the source and every copy

The Go module carries no version in a file: Go takes it from the git tag
(``clients/go/vX.Y.Z``), which a release makes from this same version.

A copy is recognised by a pattern below. Any other occurrence of the version in a tracked
file is an error too: a new copy must be added here, so that it is checked.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from copycheck import Copy, line_of, missing, report, scan

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "sidecar/interrupt_sidecar/__init__.py"
_V = r"(?P<v>\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)"


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("{V}", _V), re.MULTILINE)


COPIES = (
    Copy(
        "Python __version__",
        _re(r'^__version__ = "{V}"$'),
        (SOURCE, "clients/python/src/interrupt_sidecar_client/__init__.py"),
        only_there=True,
    ),
    # The daemon's pin on the client, and pins in tests and docs (pip install interrupt-sidecar==...).
    Copy("pip pin", _re(r"interrupt-sidecar(?:-client)?==\s*{V}")),
    # Install lines in docs: npm install @interrupt-sidecar/client@..., a Cargo dependency.
    Copy("npm install", _re(r"@interrupt-sidecar/client@{V}\b")),
    Copy("Cargo dependency", _re(r'interrupt-sidecar-client = (?:\{ *version = )?"{V}"')),
    Copy("Helm chart version", _re(r"^version: {V}$"), ("helm/interrupt-sidecar/Chart.yaml",), only_there=True),
    Copy(
        "Helm appVersion (the image tag)",
        _re(r'^appVersion: "{V}"$'),
        ("helm/interrupt-sidecar/Chart.yaml",),
        only_there=True,
    ),
    # A chart that depends on ours (the test fixture, the chart README's snippet).
    Copy("Helm dependency", _re(r"- name: interrupt-sidecar\n\s+version: {V}$")),
    Copy(
        "Maven artifact",
        _re(r"<artifactId>interrupt-sidecar[a-z-]*</artifactId>\s*<version>{V}</version>"),
        ("clients/java/pom.xml", "clients/java/conformance/pom.xml", "tests/conformance/pom.xml"),
    ),
    Copy(
        "Cargo package (manifest or lock file)",
        _re(r'^name = "interrupt-sidecar[a-z-]*"\nversion = "{V}"$'),
        (
            "clients/rust/Cargo.toml",
            "clients/rust/codegen/Cargo.toml",
            "clients/rust/conformance-support/Cargo.toml",
            "tests/conformance/Cargo.toml",
            "clients/rust/Cargo.lock",
            "tests/conformance/Cargo.lock",
        ),
    ),
    Copy(
        "npm package (manifest or lock file)",
        _re(r'"name": "@interrupt-sidecar/client",\s*"version": "{V}"'),
        ("clients/typescript/package.json", "clients/typescript/package-lock.json"),
    ),
    # Image tags and Maven coordinates in docs and comments: REGISTRY/interrupt-sidecar:0.1.0.
    Copy("image tag or coordinates", _re(r"interrupt-sidecar(?:-client)?:{V}\b")),
)

#: Tracked files whose mentions of the version are history, not copies.
HISTORY = ("CHANGELOG.md",)


def source_version(root: Path = ROOT) -> str:
    match = COPIES[0].pattern.search((root / SOURCE).read_text())
    if match is None:
        raise SystemExit(f"{SOURCE}: no __version__ line")
    return match["v"]


def check(root: Path = ROOT) -> list[str]:
    """Every problem found: copies that disagree, required copies missing, unrecognised mentions."""
    version = source_version(root)
    problems: list[str] = []
    found: dict[str, set[str]] = {}
    mention = re.compile(rf"(?<![\w.]){re.escape(version)}(?![\w.])")
    for rel, text, copies in scan(root, COPIES, HISTORY):
        for copy in copies:
            found.setdefault(rel, set()).add(copy.copy.name)
            if copy.value != version:
                problems.append(f"{rel}:{copy.line}: {copy.copy.name} is {copy.value}, the version is {version}")
        for match in mention.finditer(text):
            if not any(copy.start <= match.start() < copy.end for copy in copies):
                problems.append(
                    f"{rel}:{line_of(text, match.start())}: mentions {version} in a way scripts/check_version.py "
                    "does not know; add a pattern for it there, so the copy is checked"
                )
    return problems + missing(COPIES, found, "scripts/check_version.py")


def set_version(new: str, root: Path = ROOT) -> int:
    """Write ``new`` into the source and every copy; returns how many were changed."""
    if not re.fullmatch(_V, new):
        raise SystemExit(f"{new!r} is not a version like 1.2.3")
    changed = 0
    for rel, text, copies in scan(root, COPIES, HISTORY):
        spans = sorted({(copy.start, copy.end) for copy in copies}, reverse=True)
        for start, end in spans:
            text = text[:start] + new + text[end:]
        if spans:
            (root / rel).write_text(text)
            changed += len(spans)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", metavar="VERSION", help="write VERSION into the source and every copy")
    args = parser.parse_args(argv)
    if args.set:
        print(f"{set_version(args.set)} copies now say {args.set}")
    version = source_version()
    return report(
        check(), f"The version is {version} ({SOURCE}); `--set` rewrites every copy.", f"every copy says {version}"
    )


if __name__ == "__main__":
    sys.exit(main())
