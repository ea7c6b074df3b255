"""Build every publishable artifact of one version into dist/, with SHA256SUMS (`make release`).

    make release VERSION=X.Y.Z                  # what it runs:
    python scripts/release.py X.Y.Z

From a clean tree at the version the repository already says (``scripts/check_version.py``;
``--set`` there makes a new one), each ecosystem's own tool builds its artifact:

    python/   the sdists and pure wheels of the client and the daemon (python -m build,
              twine check --strict)
    npm/      the client's tarball (npm pack: its prepack compiles dist/)
    cargo/    the crate (cargo publish --dry-run: packages it and builds the packaged copy)
    maven/    the jar, sources jar, javadoc jar and POM, each with a detached signature .asc
    go/       the Go module as a module proxy serves it: <module>/@v/vX.Y.Z.{info,mod,zip}
    helm/     the chart (helm package)
    sbom/     CycloneDX SBOMs, each from its ecosystem's own tool (npm, Maven, Python)
    SHA256SUMS  every file above, in `sha256sum -c` format

Everything is built in a staging directory and moved to dist/ as a whole at the end: a
failure leaves dist/ as it was. Before building, each precondition is checked and a failure
is one line naming it (exit 2): a missing toolchain, a version that disagrees with the
source or a copy, an identity copy that disagrees, a dirty tree, no signing key.

Signing: the Maven artifacts are signed with ``gpg --local-user $RELEASE_GPG_KEY`` from the
keyring of ``$GNUPGHOME`` (gpg's own variable; its default keyring without it), with
``$RELEASE_GPG_PASSPHRASE`` when the key has one. There is no unsigned mode: Maven Central
refuses unsigned artifacts, so an unsigned dist/ would be a release that cannot be
published; a rehearsal makes a throwaway key instead (CONTRIBUTING.md, "Releasing").
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import check_identity
import check_version

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
#: Beside dist/ on the same file system, so that moving it into place is a rename.
STAGING = ROOT / "build" / "release"
HELM_BUILT = ROOT / "build" / "tools" / "helm"

#: command -> what installs it, for the one-line error when it is missing.
TOOLCHAINS = {
    "git": "git (apt-get install git)",
    "go": "Go (https://go.dev/dl)",
    "node": "Node.js 20+ (with npm)",
    "npm": "npm (comes with Node.js 20+)",
    "cargo": "Rust (https://rustup.rs)",
    "java": "Java 17 (apt-get install openjdk-17-jdk-headless)",
    "mvn": "Maven (apt-get install maven)",
    "gpg": "GnuPG (apt-get install gnupg; scripts/ensure_system_tools.sh)",
    "helm": "Helm (bash scripts/ensure_helm.sh builds it into build/tools)",
}
#: Python modules run with this interpreter -> what installs them.
PYTHON_TOOLS = {
    "build": "pip install -e '.[release]'",
    "twine": "pip install -e '.[release]'",
    "cyclonedx_py": "pip install -e '.[release]'",
}


class ReleaseError(Exception):
    """A precondition that does not hold: its message is the one line the user sees."""


def which(command: str) -> str | None:
    # Helm is built into the repository by scripts/ensure_helm.sh, not installed on PATH.
    found = shutil.which(command)
    if found is None and command == "helm" and os.access(HELM_BUILT, os.X_OK):
        return str(HELM_BUILT)
    return found


def check_toolchains() -> dict[str, str]:
    tools: dict[str, str] = {}
    for command, install in TOOLCHAINS.items():
        path = which(command)
        if path is None:
            raise ReleaseError(f"`{command}` is not on PATH: install {install}")
        tools[command] = path
    for module, install in PYTHON_TOOLS.items():
        if importlib.util.find_spec(module) is None:
            raise ReleaseError(f"the Python module {module} is missing from {sys.executable}: {install}")
    return tools


def check_version_and_identity(version: str) -> None:
    source = check_version.source_version(ROOT)
    if version != source:
        raise ReleaseError(
            f"version {version} is not the repository's {source} ({check_version.SOURCE}); "
            f"to release {version}, run scripts/check_version.py --set {version} and commit"
        )
    checks = {"check_version": check_version.check, "check_identity": check_identity.check}
    for script, check in checks.items():
        problems = check(ROOT)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ReleaseError(f"{problems[0]}{more}: see `python scripts/{script}.py`")


def check_clean_tree() -> None:
    status = git("status", "--porcelain", "--untracked-files=normal").splitlines()
    if status:
        more = f" and {len(status) - 1} more" if len(status) > 1 else ""
        raise ReleaseError(f"the tree is not clean ({status[0].strip()}{more}): commit or stash first")


def check_signing_key() -> str:
    key = os.environ.get("RELEASE_GPG_KEY", "")
    if not key:
        raise ReleaseError(
            "no signing key: set RELEASE_GPG_KEY to the key's id (and GNUPGHOME to its keyring); "
            "CONTRIBUTING.md, 'Releasing', shows a throwaway key for a rehearsal"
        )
    found = subprocess.run(["gpg", "--batch", "--list-secret-keys", key], capture_output=True, check=False, timeout=60)
    if found.returncode != 0:
        raise ReleaseError(f"RELEASE_GPG_KEY={key}: gpg has no such secret key (GNUPGHOME={gnupghome()})")
    return key


def gnupghome() -> str:
    return os.environ.get("GNUPGHOME", "~/.gnupg")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout


def run(
    command: Sequence[str | Path],
    *,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    stdout: IO[str] | int | None = None,
    stdin_text: str | None = None,
) -> None:
    print("release: $", " ".join(str(part) for part in command), flush=True)
    subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        stdout=stdout,
        input=stdin_text,
        text=True,
        check=True,
    )


def build_python(out: Path, sbom: Path, version: str) -> None:
    python = out / "python"
    for project in (ROOT / "clients" / "python", ROOT):
        run([sys.executable, "-m", "build", "--quiet", "--sdist", "--wheel", "--outdir", python, project])
    run([sys.executable, "-m", "twine", "check", "--strict", *sorted(python.iterdir())])
    # The daemon's SBOM is what installing its wheel brings (for this platform): the wheels
    # are installed into a venv of their own and cyclonedx-py describes that environment.
    # The venv has no pip of its own (this one installs into it), so the SBOM lists only
    # what the wheels need.
    venv = STAGING / "sbom-venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    pip: list[str | Path] = [
        sys.executable,
        "-m",
        "pip",
        "--disable-pip-version-check",
        "--python",
        venv / "bin" / "python",
    ]
    run([*pip, "install", "-q", *sorted(python.glob("*.whl"))])
    run(
        [
            sys.executable,
            "-m",
            "cyclonedx_py",
            "environment",
            "--pyproject",
            ROOT / "pyproject.toml",
            "--output-format",
            "JSON",
            "--output-file",
            sbom / f"interrupt-sidecar-{version}.python.cdx.json",
            venv / "bin" / "python",
        ]
    )
    shutil.rmtree(venv)


def build_npm(out: Path, sbom: Path, version: str) -> None:
    client = ROOT / "clients" / "typescript"
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=client)
    (out / "npm").mkdir()
    run(["npm", "pack", "--pack-destination", out / "npm", "--loglevel=error"], cwd=client, stdout=subprocess.DEVNULL)
    with (sbom / f"interrupt-sidecar-client-{version}.npm.cdx.json").open("w") as file:
        run(["npm", "sbom", "--sbom-format", "cyclonedx", "--omit", "dev"], cwd=client, stdout=file)


def build_cargo(out: Path) -> None:
    client = ROOT / "clients" / "rust"
    # `cargo package` makes the .crate and builds the packaged copy (the one slow step);
    # `publish --dry-run` then checks what the registry would, without building it again.
    # The target directory is the one clients/rust/Makefile shares: a warm checkout reuses it.
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "build" / "cargo-target"))
    env = {**os.environ, "CARGO_TARGET_DIR": target}
    manifest = client / "Cargo.toml"
    run(["cargo", "package", "--locked", "--manifest-path", manifest], env=env)
    run(["cargo", "publish", "--dry-run", "--locked", "--no-verify", "--manifest-path", manifest], env=env)
    metadata = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version=1", "--manifest-path", manifest],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    package = json.loads(metadata)["packages"][0]
    crate = Path(target) / "package" / f"{package['name']}-{package['version']}.crate"
    (out / "cargo").mkdir()
    shutil.copy2(crate, out / "cargo")


def build_maven(out: Path, sbom: Path, key: str) -> None:
    client = ROOT / "clients" / "java"
    # clean: a jar must hold only what the tree compiles to, never a class left from before.
    # The tests ran in `make test`; the release profile adds the sources and javadoc jars
    # and the CycloneDX SBOM.
    run(["mvn", "-q", "-B", "-Dstyle.color=never", "-P", "release", "-DskipTests", "clean", "package"], cwd=client)
    target = client / "target"
    coordinates = json.loads((target / "bom.json").read_text())["metadata"]["component"]
    stem = f"{coordinates['name']}-{coordinates['version']}"
    maven = out / "maven"
    maven.mkdir()
    artifacts = [target / f"{stem}{suffix}.jar" for suffix in ("", "-sources", "-javadoc")]
    for artifact in artifacts:
        shutil.copy2(artifact, maven)
    # The POM as published is the project's own (Central requires it beside the jars).
    shutil.copyfile(client / "pom.xml", maven / f"{stem}.pom")
    shutil.copyfile(target / "bom.json", sbom / f"{stem}.maven.cdx.json")
    for artifact in sorted(maven.iterdir()):
        sign(artifact, key)


def sign(artifact: Path, key: str) -> None:
    command = ["gpg", "--batch", "--yes", "--local-user", key, "--armor", "--detach-sign"]
    passphrase = os.environ.get("RELEASE_GPG_PASSPHRASE")
    if passphrase is not None:
        command += ["--pinentry-mode", "loopback", "--passphrase-fd", "0"]
    run([*command, "--output", f"{artifact}.asc", artifact], stdin_text=passphrase or "")


def build_go(out: Path, version: str) -> None:
    # tools/modzip: golang.org/x/mod/zip, the go command's own module zip code.
    run(
        ["go", "run", ".", "-repo", ROOT, "-subdir", "clients/go", "-version", f"v{version}", "-out", out / "go"],
        cwd=ROOT / "tools" / "modzip",
    )


def build_helm(out: Path, helm: str) -> None:
    run([helm, "lint", "--quiet", ROOT / "helm" / "interrupt-sidecar"])
    run([helm, "package", ROOT / "helm" / "interrupt-sidecar", "--destination", out / "helm"])


def write_sums(out: Path) -> None:
    lines = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(out).as_posix()}\n")
    (out / "SHA256SUMS").write_text("".join(lines))


def build_all(version: str, tools: dict[str, str], key: str) -> None:
    shutil.rmtree(STAGING, ignore_errors=True)
    out = STAGING / "dist"
    sbom = out / "sbom"
    sbom.mkdir(parents=True)
    build_python(out, sbom, version)
    build_npm(out, sbom, version)
    build_cargo(out)
    build_maven(out, sbom, key)
    build_go(out, version)
    build_helm(out, tools["helm"])
    write_sums(out)
    # dist/ changes in two renames: the old one aside, the new one in.
    old = STAGING / "previous-dist"
    if DIST.exists():
        DIST.rename(old)
    out.rename(DIST)
    shutil.rmtree(STAGING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("version", help="the version to release: the one the repository already says, X.Y.Z")
    args = parser.parse_args(argv)
    try:
        tools = check_toolchains()
        check_version_and_identity(args.version)
        check_clean_tree()
        key = check_signing_key()
    except ReleaseError as error:
        print(f"release: {error}", file=sys.stderr)
        return 2
    try:
        build_all(args.version, tools, key)
    except subprocess.CalledProcessError as error:
        command = " ".join(str(part) for part in error.cmd)
        print(f"release: failed (exit {error.returncode}): {command}; dist/ is unchanged", file=sys.stderr)
        return 1
    finally:
        # Whatever failed, no half-made release stays behind (dist/ itself is untouched).
        shutil.rmtree(STAGING, ignore_errors=True)
    print(f"release: {args.version} is in {DIST.relative_to(ROOT)}/ (SHA256SUMS beside it)")
    for line in (DIST / "SHA256SUMS").read_text().splitlines():
        name = line.split("  ", 1)[1]
        print(f"  {(DIST / name).stat().st_size:>10}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
