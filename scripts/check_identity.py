"""One public identity for the whole repository: identity.toml at the root.

The identity is what a user types or a registry checks: the repository's home (the Go
module paths follow it), the npm scope, the Maven groupId and the image name. It is a TOML
file, not constants in Python, because nothing at run time needs it while every build and
release tool of every language does: each can read TOML (Python with the standard library's
tomllib), and none should have to import the daemon to learn where the project lives.

Every manifest, README, doc and chart default that names a part of it carries a copy,
because its format cannot read a file. This script finds the copies and fails when one
disagrees (``make identity-check``; ``tests/test_identity.py`` runs it in ``make test``):

    python scripts/check_identity.py    # exit 1 and list every copy that disagrees

A copy is recognised by a pattern below, wide enough to catch a misspelt or stale one (a
pattern that matches other projects' names too counts only values naming this one). Each
manifest a registry reads must hold its copies, so a field that loses its value is caught.

It also checks the license text each published package carries beside its manifest (npm,
cargo and setuptools take it only from the package's own folder): a byte-for-byte copy of
the root LICENSE, the one source.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from copycheck import Copy, missing, report, scan

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "identity.toml"
FACTS = ("repository", "npm_scope", "maven_group", "image")
_HOME = re.compile(r"https://github\.com/(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)")

#: The manifests a registry reads: each must name the repository's home.
MANIFESTS = (
    "pyproject.toml",
    "clients/python/pyproject.toml",
    "clients/typescript/package.json",
    "clients/rust/Cargo.toml",
    "clients/java/pom.xml",
    "clients/go/go.mod",
    "helm/interrupt-sidecar/Chart.yaml",
)
POMS = ("clients/java/pom.xml", "clients/java/conformance/pom.xml", "tests/conformance/pom.xml")
CHART_VALUES = "helm/interrupt-sidecar/values.yaml"
CHART_README = "helm/interrupt-sidecar/README.md"
#: The license beside each published package's manifest: copies of this one.
LICENSE = "LICENSE"
LICENSE_COPIES = ("clients/python/LICENSE", "clients/typescript/LICENSE", "clients/rust/LICENSE")

# A name in a URL or path (dots inside, as in a repository's name, never last), and where it
# ends: a sentence's full stop after it is not part of it.
_NAME = r"[\w.-]*[\w-]"
_END = r"(?![\w-]|\.[\w-])"

COPIES = (
    # URLs (https, git+https, ssh://git@), go.mod module paths and Go imports, raw file URLs.
    Copy(
        "GitHub repository",
        re.compile(rf"(?:github\.com[/:]|raw\.githubusercontent\.com/)(?P<v>[\w.-]+/[\w.-]*?[\w-])(?:\.git)?{_END}"),
        (*MANIFESTS, "scripts/protogen/go.py"),
        fact="repository path",
        about="interrupt",
    ),
    # The organization's own page (a maintainer's or developer's url).
    Copy("GitHub organization", re.compile(rf"github\.com/(?P<v>{_NAME})(?!/){_END}"), fact="owner", about="interrupt"),
    Copy(
        "Maven groupId",
        re.compile(r"<groupId>(?P<v>[^<]*)</groupId>\s*<artifactId>interrupt-sidecar"),
        POMS,
        fact="maven_group",
    ),
    # Coordinates in docs: GROUP:interrupt-sidecar-client (not git@host:owner/name).
    Copy(
        "Maven coordinates",
        re.compile(r"(?<![\w.-])(?P<v>[a-z][\w-]*(?:\.[\w-]+)+):interrupt-sidecar[\w-]*(?![\w/-])"),
        fact="maven_group",
    ),
    Copy(
        "npm scope",
        re.compile(r"(?<![\w.@])(?P<v>@[\w.-]+)/[\w.-]"),
        ("clients/typescript/package.json", "clients/typescript/package-lock.json"),
        fact="npm_scope",
        about="interrupt",
    ),
    # Any image of ours named on a public registry (REGISTRY/... and localhost/... are the
    # reader's own or a local build, not copies).
    Copy(
        "public image",
        re.compile(rf"(?<![\w.-])(?P<v>(?:ghcr\.io|docker\.io|quay\.io|gcr\.io|public\.ecr\.aws)(?:/{_NAME})+){_END}"),
        fact="image",
        about="interrupt",
    ),
    Copy(
        "chart default image",
        re.compile(r"^  repository: (?P<v>\S+)$", re.MULTILINE),
        (CHART_VALUES,),
        only_there=True,
        fact="image",
    ),
    Copy(
        "chart README's default image",
        re.compile(r"^\| `image\.repository` \| `(?P<v>[^`]+)` \|", re.MULTILINE),
        (CHART_README,),
        only_there=True,
        fact="image",
    ),
)


def identity(root: Path = ROOT) -> dict[str, str]:
    """The facts of identity.toml, and those derived from them (a copy's ``fact`` names one)."""
    facts = tomllib.loads((root / SOURCE).read_text())
    if sorted(facts) != sorted(FACTS) or not all(isinstance(value, str) for value in facts.values()):
        raise SystemExit(f"{SOURCE}: expected exactly the strings {', '.join(FACTS)}")
    home = _HOME.fullmatch(facts["repository"])
    if home is None:
        # The patterns above know GitHub's URL shapes; another host needs patterns of its own.
        raise SystemExit(f"{SOURCE}: repository is not https://github.com/OWNER/NAME")
    return {**facts, "repository path": f"{home['owner']}/{home['name']}", "owner": home["owner"]}


def check(root: Path = ROOT) -> list[str]:
    """Every problem found: copies that disagree, required copies missing, license copies that differ."""
    facts = identity(root)
    problems: dict[tuple[str, int], str] = {}
    found: dict[str, set[str]] = {}
    for rel, _text, copies in scan(root, COPIES):
        for copy in copies:
            found.setdefault(rel, set()).add(copy.copy.name)
            expected = facts[copy.copy.fact]
            # One problem per place: two patterns may match the same value.
            if copy.value != expected and (rel, copy.start) not in problems:
                problems[rel, copy.start] = (
                    f"{rel}:{copy.line}: {copy.copy.name} is {copy.value}, the identity says {expected}"
                )
    license_text = (root / LICENSE).read_bytes()
    differing = [
        f"{rel}: is not a copy of {LICENSE} (cp {LICENSE} {rel})"
        for rel in LICENSE_COPIES
        if not (root / rel).is_file() or (root / rel).read_bytes() != license_text
    ]
    return [*problems.values(), *missing(COPIES, found, "scripts/check_identity.py"), *differing]


def main() -> int:
    facts = identity()
    agreed = "every copy agrees: " + ", ".join(facts[fact] for fact in FACTS)
    return report(check(), f"The identity is {SOURCE}; every copy must say what it says.", agreed)


if __name__ == "__main__":
    sys.exit(main())
