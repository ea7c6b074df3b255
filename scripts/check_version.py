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
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "sidecar/interrupt_sidecar/__init__.py"
_V = r"(?P<v>\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)"


@dataclass(frozen=True)
class Copy:
    """Where a copy of the version is, recognised by ``pattern`` (its group ``v`` is the version)."""

    name: str
    pattern: re.Pattern[str]
    #: Files that must hold at least one such copy (relative to the root).
    required_in: tuple[str, ...] = ()
    #: True: the pattern means a copy only in ``required_in`` (``version: 1.0.0`` in another
    #: chart is that chart's); False: it is looked for in every tracked file.
    only_there: bool = False


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


def _applying(rel: str) -> list[Copy]:
    return [copy for copy in COPIES if not copy.only_there or rel in copy.required_in]


def source_version(root: Path = ROOT) -> str:
    match = COPIES[0].pattern.search((root / SOURCE).read_text())
    if match is None:
        raise SystemExit(f"{SOURCE}: no __version__ line")
    return match["v"]


def _tracked_text_files(root: Path) -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    files = []
    for name in filter(None, names):
        path = root / name
        if name in HISTORY or not path.is_file():
            continue
        try:
            files.append((path, path.read_text()))
        except UnicodeDecodeError:
            continue
    return [p for p, _ in files]


def check(root: Path = ROOT) -> list[str]:
    """Every problem found: copies that disagree, required copies missing, unrecognised mentions."""
    version = source_version(root)
    problems: list[str] = []
    found: dict[str, set[str]] = {}
    mention = re.compile(rf"(?<![\w.]){re.escape(version)}(?![\w.])")
    for path in _tracked_text_files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        spans: list[tuple[int, int]] = []
        for copy in _applying(rel):
            for match in copy.pattern.finditer(text):
                found.setdefault(rel, set()).add(copy.name)
                spans.append(match.span("v"))
                if match["v"] != version:
                    line = text.count("\n", 0, match.start("v")) + 1
                    problems.append(f"{rel}:{line}: {copy.name} is {match['v']}, the version is {version}")
        for match in mention.finditer(text):
            if not any(start <= match.start() < end for start, end in spans):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(
                    f"{rel}:{line}: mentions {version} in a way scripts/check_version.py does not know; "
                    "add a pattern for it there, so the copy is checked"
                )
    for copy in COPIES:
        for rel in copy.required_in:
            if copy.name not in found.get(rel, set()):
                problems.append(
                    f"{rel}: has no {copy.name} (the pattern in scripts/check_version.py no longer matches)"
                )
    return problems


def set_version(new: str, root: Path = ROOT) -> int:
    """Write ``new`` into the source and every copy; returns how many were changed."""
    if not re.fullmatch(_V, new):
        raise SystemExit(f"{new!r} is not a version like 1.2.3")
    changed = 0
    for path in _tracked_text_files(root):
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        spans = sorted({m.span("v") for copy in _applying(rel) for m in copy.pattern.finditer(text)}, reverse=True)
        for start, end in spans:
            text = text[:start] + new + text[end:]
        if spans:
            path.write_text(text)
            changed += len(spans)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", metavar="VERSION", help="write VERSION into the source and every copy")
    args = parser.parse_args(argv)
    if args.set:
        print(f"{set_version(args.set)} copies now say {args.set}")
    problems = check()
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"\nThe version is {source_version()} ({SOURCE}); `--set` rewrites every copy.", file=sys.stderr)
        return 1
    print(f"every copy says {source_version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
