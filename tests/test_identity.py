"""One public identity: every manifest, doc and chart default that names it agrees with identity.toml,
and each registry's manifest carries the metadata that registry wants, named from it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, load_script

SCRIPT = ROOT / "scripts" / "check_identity.py"
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


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
    for rel in {*required, check_identity.SOURCE, check_identity.LICENSE, *check_identity.LICENSE_COPIES}:
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


def test_a_license_copy_that_differs_is_named(repo: Path, check_identity: ModuleType) -> None:
    (repo / "clients" / "rust" / "LICENSE").write_text("MIT\n")
    (repo / "clients" / "python" / "LICENSE").unlink()
    assert check_identity.check(repo) == [
        "clients/python/LICENSE: is not a copy of LICENSE (cp LICENSE clients/python/LICENSE)",
        "clients/rust/LICENSE: is not a copy of LICENSE (cp LICENSE clients/rust/LICENSE)",
    ]


# -- what each registry wants, named from the identity ----------------------------------


def test_npm_package_can_be_published_with_provenance(facts: dict[str, str]) -> None:
    package = json.loads((ROOT / "clients" / "typescript" / "package.json").read_text())
    assert "private" not in package, "npm refuses to publish a private package (EPRIVATE)"
    assert package["name"].startswith(facts["npm_scope"] + "/")
    # Provenance is checked against repository.url; directory says where in it the package is.
    assert package["repository"] == {
        "type": "git",
        "url": f"git+{facts['repository']}.git",
        "directory": "clients/typescript",
    }
    assert package["homepage"].startswith(facts["repository"] + "/")
    assert package["bugs"] == {"url": f"{facts['repository']}/issues"}
    assert package["license"] == "Apache-2.0"
    assert package["publishConfig"] == {"access": "public"}  # a scoped package is restricted otherwise
    # A fresh clone has no dist/: packing builds it, so the package holds the built, typed code.
    assert "tsc" in package["scripts"]["prepack"]
    assert all(path.startswith("dist/") for path in package["files"])
    assert package["types"].startswith("dist/") and package["main"].startswith("dist/")


def test_crate_names_its_home(facts: dict[str, str]) -> None:
    package = tomllib.loads((ROOT / "clients" / "rust" / "Cargo.toml").read_text())["package"]
    assert package["repository"] == facts["repository"]
    assert package["homepage"].startswith(facts["repository"] + "/")
    assert package["documentation"] == f"https://docs.rs/{package['name']}"
    assert not any("LICENSE" in pattern for pattern in package.get("exclude", []))


def _pom(rel: str) -> ET.Element:
    return ET.parse(ROOT / rel).getroot()


def _text(element: ET.Element, path: str) -> str:
    found = element.find(path, POM_NS)
    assert found is not None and found.text is not None, path
    return found.text


def test_pom_has_what_maven_central_requires(facts: dict[str, str]) -> None:
    pom = _pom("clients/java/pom.xml")
    assert _text(pom, "m:groupId") == facts["maven_group"]
    assert _text(pom, "m:url").startswith(facts["repository"])
    assert _text(pom, "m:licenses/m:license/m:name") == "Apache-2.0"
    assert _text(pom, "m:developers/m:developer/m:name")
    assert _text(pom, "m:scm/m:url") == facts["repository"]
    assert _text(pom, "m:scm/m:connection") == f"scm:git:{facts['repository']}.git"
    (release,) = [p for p in pom.findall("m:profiles/m:profile", POM_NS) if _text(p, "m:id") == "release"]
    # Not active unless asked for: `make test` must not download the release plugins.
    assert release.find("m:activation", POM_NS) is None
    plugins = {_text(p, "m:artifactId") for p in release.findall("m:build/m:plugins/m:plugin", POM_NS)}
    # The sources and javadoc jars Maven Central requires; the profile may build more (an SBOM).
    assert {"maven-source-plugin", "maven-javadoc-plugin"} <= plugins


@pytest.mark.parametrize("rel", ["clients/java/conformance/pom.xml", "tests/conformance/pom.xml"])
def test_poms_that_use_the_client_follow_its_group(rel: str, facts: dict[str, str]) -> None:
    pom = _pom(rel)
    assert _text(pom, "m:groupId") == facts["maven_group"]
    for dependency in pom.findall("m:dependencies/m:dependency", POM_NS):
        if _text(dependency, "m:artifactId") == "interrupt-sidecar-client":
            assert _text(dependency, "m:groupId") == facts["maven_group"]


@pytest.mark.parametrize("rel", ["pyproject.toml", "clients/python/pyproject.toml"])
def test_python_distributions_name_their_home(rel: str, facts: dict[str, str]) -> None:
    project: dict[str, Any] = tomllib.loads((ROOT / rel).read_text())["project"]
    assert project["urls"]["Repository"] == facts["repository"]
    assert project["urls"]["Issues"] == f"{facts['repository']}/issues"
    assert "Programming Language :: Python :: 3 :: Only" in project["classifiers"]
    # PEP 639: with a license expression, a License classifier is an error.
    assert not any(c.startswith("License ::") for c in project["classifiers"])
    folder = (ROOT / rel).parent
    for pattern in project.get("license-files", []):
        assert list(folder.glob(pattern)), f"{rel}: license-files {pattern} matches nothing"


def test_chart_names_its_home_and_icon(facts: dict[str, str]) -> None:
    chart = yaml.safe_load((ROOT / "helm" / "interrupt-sidecar" / "Chart.yaml").read_text())
    assert chart["home"] == facts["repository"]
    assert all(source.startswith(facts["repository"] + "/") for source in chart["sources"])
    assert chart["maintainers"] and all(m["name"] for m in chart["maintainers"])
    # The icon is served from the repository itself: the file must be there, on main.
    prefix = f"{facts['repository']}/raw/main/"
    assert chart["icon"].startswith(prefix)
    assert (ROOT / chart["icon"].removeprefix(prefix)).is_file()
    values = yaml.safe_load((ROOT / "helm" / "interrupt-sidecar" / "values.yaml").read_text())
    assert values["image"]["repository"] == facts["image"]
