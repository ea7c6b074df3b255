"""One version: every manifest and doc that names it agrees with interrupt_sidecar.__version__."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import interrupt_sidecar
import interrupt_sidecar_client
import pytest

from tests.conftest import ROOT, load_script

SCRIPT = ROOT / "scripts" / "check_version.py"


@pytest.fixture(scope="module")
def check_version() -> ModuleType:
    return load_script("check_version")


def test_every_copy_in_the_repository_agrees() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert interrupt_sidecar_client.__version__ == interrupt_sidecar.__version__


@pytest.fixture
def repo(tmp_path: Path, check_version: ModuleType) -> Path:
    """A git repository holding the files that must carry the version, as they are here."""
    required = {rel for copy in check_version.COPIES for rel in copy.required_in}
    for rel in required:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp_path / rel)
    version = check_version.source_version(ROOT)
    (tmp_path / "README.md").write_text(f"docker build -t REGISTRY/interrupt-sidecar:{version} .\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=30)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True, timeout=30)
    assert check_version.check(tmp_path) == []
    return tmp_path


def test_a_copy_that_disagrees_is_named(repo: Path, check_version: ModuleType) -> None:
    version = check_version.source_version(repo)
    chart = repo / "helm" / "interrupt-sidecar" / "Chart.yaml"
    chart.write_text(chart.read_text().replace(f'appVersion: "{version}"', 'appVersion: "9.9.9"'))
    lock = repo / "clients" / "rust" / "Cargo.lock"
    lock.write_text(lock.read_text().replace(f'name = "interrupt-sidecar-client"\nversion = "{version}"', 'name = "x"'))
    problems = check_version.check(repo)
    assert any(p.startswith("helm/interrupt-sidecar/Chart.yaml:") and "9.9.9" in p for p in problems), problems
    assert any(p.startswith("clients/rust/Cargo.lock") and "no Cargo package" in p for p in problems), problems


def test_a_copy_the_check_does_not_know_is_refused(repo: Path, check_version: ModuleType) -> None:
    version = check_version.source_version(repo)
    (repo / "docs.md").write_text(f"Version {version} is out.\n")
    subprocess.run(["git", "add", "docs.md"], cwd=repo, check=True, timeout=30)
    (problem,) = check_version.check(repo)
    assert problem.startswith("docs.md:1: mentions") and "add a pattern" in problem


def test_set_rewrites_the_source_and_every_copy(repo: Path, check_version: ModuleType) -> None:
    old = check_version.source_version(repo)
    new = "1.2.3"  # not written next to a pattern: this file is scanned too
    count = check_version.set_version(new, repo)
    assert count >= 18
    assert check_version.source_version(repo) == new
    assert check_version.check(repo) == []
    assert old not in (repo / "clients" / "typescript" / "package-lock.json").read_text()[:400]
    assert f"REGISTRY/interrupt-sidecar:{new}" in (repo / "README.md").read_text()
