"""`make release` (scripts/release.py), run in fresh clones of the committed HEAD.

Bad input is refused before anything is built: one line on stderr naming what is wrong,
exit 2, no dist/ and no staging left. The slow test runs the whole release and checks each
artifact with the tool its users would use (sha256sum, tar, gpg, the go command).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT, load_script
from tests.helm.chart import HELM


@pytest.fixture(scope="module")
def release() -> ModuleType:
    return load_script("release")


@pytest.fixture(scope="module")
def version() -> str:
    return str(load_script("check_version").source_version(ROOT))


@pytest.fixture(scope="module")
def gnupghome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A throwaway signing key, as a release rehearsal makes one (CONTRIBUTING.md)."""
    home = tmp_path_factory.mktemp("gnupg")
    home.chmod(0o700)
    env = {**os.environ, "GNUPGHOME": str(home)}
    subprocess.run(
        ["gpg", "--batch", "--passphrase", "", "--quick-gen-key", KEY, "ed25519", "sign", "never"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    yield home
    # gpg-agent was started for this home; it exits when its socket's directory goes.
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, check=False, timeout=30)


KEY = "Release rehearsal <rehearsal@example.invalid>"


def clone(into: Path) -> Path:
    """A fresh clone of this checkout's HEAD (its working tree's changes are not in it)."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()
    repo = into / "repo"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(repo)], check=True, timeout=120)
    subprocess.run(["git", "checkout", "-q", "--detach", head], cwd=repo, check=True, timeout=120)
    return repo


def commit_all(repo: Path, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, timeout=30)
    subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-qm", message],
        cwd=repo,
        check=True,
        timeout=30,
    )


def environment(gnupghome: Path, path: str | None = None) -> dict[str, str]:
    # Helm as `make install-test` built it, in this checkout (a clone has none of its own).
    search = path if path is not None else f"{HELM.parent}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": search, "GNUPGHOME": str(gnupghome), "RELEASE_GPG_KEY": KEY}


def run_release(repo: Path, version: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(repo / "scripts" / "release.py"), version],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess[str], repo: Path, says: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert says in result.stderr
    assert not (repo / "dist").exists()
    assert not (repo / "build" / "release").exists()


def test_an_untracked_file_is_refused(tmp_path: Path, version: str, gnupghome: Path) -> None:
    repo = clone(tmp_path)
    (repo / "notes.txt").write_text("not committed\n")
    result = run_release(repo, version, environment(gnupghome))
    assert_refused(result, repo, "the tree is not clean (?? notes.txt)")


def test_a_modified_file_is_refused(tmp_path: Path, version: str, gnupghome: Path) -> None:
    repo = clone(tmp_path)
    with (repo / "README.md").open("a") as readme:
        readme.write("\nan edit\n")
    result = run_release(repo, version, environment(gnupghome))
    assert_refused(result, repo, "the tree is not clean (M README.md)")


def test_another_version_than_the_repositorys_is_refused(tmp_path: Path, version: str, gnupghome: Path) -> None:
    repo = clone(tmp_path)
    other = f"{version}.1"
    result = run_release(repo, other, environment(gnupghome))
    assert_refused(result, repo, f"version {other} is not the repository's {version}")


def test_a_manifest_that_disagrees_is_refused(tmp_path: Path, version: str, gnupghome: Path) -> None:
    repo = clone(tmp_path)
    manifest = repo / "clients" / "typescript" / "package.json"
    manifest.write_text(manifest.read_text().replace(f'"version": "{version}"', '"version": "0.0.0"', 1))
    commit_all(repo, "a stale copy")
    result = run_release(repo, version, environment(gnupghome))
    assert_refused(result, repo, "clients/typescript/package.json:3: npm package (manifest or lock file) is 0.0.0")


@pytest.mark.parametrize("command", ["cargo", "gpg", "helm"])
def test_a_missing_toolchain_is_named(
    tmp_path: Path, version: str, gnupghome: Path, release: ModuleType, command: str
) -> None:
    repo = clone(tmp_path)
    # A PATH with every toolchain but one, each linked from where it is installed here.
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in release.TOOLCHAINS:
        found = shutil.which(name, path=environment(gnupghome)["PATH"])
        assert found is not None, f"{name} must be installed for this test"
        if name != command:
            (tools / name).symlink_to(found)
    result = run_release(repo, version, environment(gnupghome, path=str(tools)))
    assert_refused(result, repo, f"`{command}` is not on PATH: install {release.TOOLCHAINS[command]}")


def test_no_signing_key_is_refused(tmp_path: Path, version: str, gnupghome: Path) -> None:
    repo = clone(tmp_path)
    env = environment(gnupghome)
    del env["RELEASE_GPG_KEY"]
    assert_refused(run_release(repo, version, env), repo, "no signing key: set RELEASE_GPG_KEY")
    env["RELEASE_GPG_KEY"] = "nobody@example.invalid"
    assert_refused(run_release(repo, version, env), repo, "gpg has no such secret key")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_failed_build_leaves_dist_as_it_was(tmp_path: Path, version: str, gnupghome: Path) -> None:
    repo = clone(tmp_path)
    # The first build step fails: the client's pyproject is no longer TOML.
    with (repo / "clients" / "python" / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n[unclosed\n")
    commit_all(repo, "a broken build")
    (repo / "dist").mkdir()
    (repo / "dist" / "earlier").write_text("a release made before\n")
    result = run_release(repo, version, environment(gnupghome), timeout=240)
    assert result.returncode == 1, result.stderr
    assert "dist/ is unchanged" in result.stderr.splitlines()[-1]
    assert [path.name for path in (repo / "dist").iterdir()] == ["earlier"]
    assert not (repo / "build" / "release").exists()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_release_makes_every_artifact(tmp_path: Path, version: str, gnupghome: Path) -> None:
    repo = clone(tmp_path)
    env = environment(gnupghome)
    result = run_release(repo, version, env, timeout=840)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    dist = repo / "dist"
    module = (repo / "clients" / "go" / "go.mod").read_text().split()[1]
    maven = [f"maven/interrupt-sidecar-client-{version}{suffix}" for suffix in (".jar", "-sources.jar", "-javadoc.jar")]
    maven.append(f"maven/interrupt-sidecar-client-{version}.pom")
    expected = {
        f"python/interrupt_sidecar-{version}-py3-none-any.whl",
        f"python/interrupt_sidecar-{version}.tar.gz",
        f"python/interrupt_sidecar_client-{version}-py3-none-any.whl",
        f"python/interrupt_sidecar_client-{version}.tar.gz",
        f"npm/interrupt-sidecar-client-{version}.tgz",
        f"cargo/interrupt-sidecar-client-{version}.crate",
        *maven,
        *(f"{name}.asc" for name in maven),
        *(f"go/{module}/@v/v{version}.{kind}" for kind in ("info", "mod", "zip")),
        f"go/{module}/@v/list",
        f"helm/interrupt-sidecar-{version}.tgz",
        f"sbom/interrupt-sidecar-{version}.python.cdx.json",
        f"sbom/interrupt-sidecar-client-{version}.npm.cdx.json",
        f"sbom/interrupt-sidecar-client-{version}.maven.cdx.json",
        "SHA256SUMS",
    }
    assert {path.relative_to(dist).as_posix() for path in dist.rglob("*") if path.is_file()} == expected
    # Building dirtied nothing: the next release from this tree is not refused.
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, timeout=30)
    assert status.stdout == ""

    summed = [line.split("  ", 1)[1] for line in (dist / "SHA256SUMS").read_text().splitlines()]
    assert set(summed) == expected - {"SHA256SUMS"}
    subprocess.run(["sha256sum", "--quiet", "--strict", "-c", "SHA256SUMS"], cwd=dist, check=True, timeout=60)

    with tarfile.open(dist / f"npm/interrupt-sidecar-client-{version}.tgz") as npm:
        names = npm.getnames()
    assert "package/LICENSE" in names and "package/package.json" in names
    assert "package/dist/src/index.js" in names and "package/dist/src/index.d.ts" in names

    for name in maven:
        subprocess.run(
            ["gpg", "--batch", "--verify", f"{name}.asc", name], cwd=dist, env=env, check=True, capture_output=True
        )

    prefix = f"{module}@v{version}/"
    with zipfile.ZipFile(dist / f"go/{module}/@v/v{version}.zip") as gozip:
        names = gozip.namelist()
        assert gozip.read(f"{prefix}go.mod") == (dist / f"go/{module}/@v/v{version}.mod").read_bytes()
    assert all(name.startswith(prefix) for name in names)
    # The go command itself fetches the module from dist/go as from a proxy, and checks it.
    gopath = tmp_path / "gopath"
    goenv = {
        **env,
        "GOPROXY": f"file://{dist / 'go'}",
        "GOSUMDB": "off",
        "GOPATH": str(gopath),
        "GOFLAGS": "-modcacherw",
    }
    goenv.pop("GOMODCACHE", None)

    def go(*args: str) -> str:
        result = subprocess.run(
            ["go", *args], cwd=tmp_path, env=goenv, capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    go("mod", "download", "-json", f"{module}@v{version}")
    assert (gopath / "pkg" / "mod" / f"{module}@v{version}" / "go.mod").is_file()
    # And finds the version as the latest, from the list the proxy serves.
    latest = go("list", "-m", "-json", f"{module}@latest")
    assert json.loads(latest)["Version"] == f"v{version}"
