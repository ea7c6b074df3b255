"""One public identity: every manifest, doc and chart default that names it agrees with identity.toml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT, load_script

SCRIPT = ROOT / "scripts" / "check_identity.py"


@pytest.fixture(scope="module")
def check_identity() -> ModuleType:
    return load_script("check_identity")


@pytest.fixture(scope="module")
def facts(check_identity: ModuleType) -> dict[str, str]:
    result: dict[str, str] = check_identity.identity(ROOT)
    return result


def test_every_copy_in_the_repository_agrees() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr


@pytest.fixture
def repo(tmp_path: Path, check_identity: ModuleType) -> Path:
    """A git repository holding the identity and the files that must carry it, as they are here."""
    required = {rel for copy in check_identity.COPIES for rel in copy.required_in}
    for rel in {*required, check_identity.SOURCE}:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=30)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True, timeout=30)
    assert check_identity.check(tmp_path) == []
    return tmp_path


def _add(repo: Path, rel: str, text: str) -> None:
    (repo / rel).write_text(text)
    subprocess.run(["git", "add", rel], cwd=repo, check=True, timeout=30)


def test_a_copy_that_disagrees_is_named(repo: Path, check_identity: ModuleType, facts: dict[str, str]) -> None:
    # Written in pieces: this file is scanned too, and must hold no disagreeing copy itself.
    fork = "github.com/" + "a-fork/interrupt-sidecar"
    image = "docker.io/" + "someone/interrupt-sidecar"
    _add(repo, "docs.md", f"Clone https://{fork}.git.\n\nPull {image}:0.1.0.\n")
    values = repo / check_identity.CHART_VALUES
    values.write_text(values.read_text().replace(f"repository: {facts['image']}", "repository: interrupt-sidecar"))
    pom = repo / "tests" / "conformance" / "pom.xml"
    pom.write_text(pom.read_text().replace(f"<groupId>{facts['maven_group']}</groupId>", "<groupId>dev.x</groupId>", 1))
    problems = check_identity.check(repo)
    expected = facts["repository path"]
    assert f"docs.md:1: GitHub repository is a-fork/interrupt-sidecar, the identity says {expected}" in problems
    assert f"docs.md:3: public image is {image}, the identity says {facts['image']}" in problems
    assert any(p.startswith(f"{check_identity.CHART_VALUES}:") and "is interrupt-sidecar" in p for p in problems)
    assert any(p.startswith("tests/conformance/pom.xml:") and "Maven groupId is dev.x" in p for p in problems)
    assert len(problems) == 4, problems


def test_other_projects_names_are_not_copies(repo: Path, check_identity: ModuleType) -> None:
    """The wide patterns count only values naming this project: links to others are left alone."""
    _add(repo, "docs.md", "See https://github.com/grpc/grpc/issues/1, docker.io/library/python:3.11, @types/node.\n")
    assert check_identity.check(repo) == []


def test_a_manifest_that_loses_its_copy_is_named(repo: Path, check_identity: ModuleType, facts: dict[str, str]) -> None:
    cargo = repo / "clients" / "rust" / "Cargo.toml"
    cargo.write_text("\n".join(line for line in cargo.read_text().splitlines() if facts["repository"] not in line))
    (problem,) = check_identity.check(repo)
    assert problem.startswith("clients/rust/Cargo.toml: has no GitHub repository"), problem
