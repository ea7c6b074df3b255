"""The daemon's Dockerfile, checked structurally (no container engine here), and
the wheel build it relies on, run for real."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def test_multi_stage_with_pinned_bases() -> None:
    steps = instructions()
    # ARGs before the first FROM are the only ones a FROM line can use; their
    # defaults are what a plain `docker build .` builds on.
    first_from = next(i for i, (k, _) in enumerate(steps) if k == "FROM")
    args = dict(rest.partition("=")[::2] for keyword, rest in steps[:first_from] if keyword == "ARG")
    froms = [rest for keyword, rest in steps if keyword == "FROM"]
    assert len(froms) >= 2, "multi-stage: a build stage and a runtime stage"
    stages: set[str] = set()
    for image in froms:
        ref = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), ""), image.split()[0])
        assert ref, f"FROM {image}: an ARG without a default"
        words = image.split()
        if len(words) == 3 and words[1].upper() == "AS":
            stages.add(words[2])
        if ref in stages - {words[-1]}:
            continue  # an earlier stage of this file (the wheels' alias), not a base image
        pinned_digest = re.search(r"@sha256:[0-9a-f]{64}$", ref)
        exact_tag = re.search(r":\d+\.\d+\.\d+[-\w.]*$", ref)
        assert pinned_digest or exact_tag, f"FROM {ref}: pin an exact version or digest"


def test_runs_as_a_non_root_user() -> None:
    users = [rest for keyword, rest in instructions() if keyword == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0") and user.isdigit() and int(user) > 0
    chart_uid = re.search(r"runAsUser: (\d+)", (ROOT / "helm/interrupt-sidecar/values.yaml").read_text())
    assert chart_uid and chart_uid.group(1) == user, "the image's uid and the chart's runAsUser differ"


def test_no_remote_add_and_no_fetch_in_the_runtime_stage() -> None:
    steps = instructions()
    for keyword, rest in steps:
        assert not (keyword == "ADD" and re.search(r"https?://", rest)), f"ADD of a URL: {rest}"
    last_from = max(i for i, (k, _) in enumerate(steps) if k == "FROM")
    runtime = [rest for keyword, rest in steps[last_from:] if keyword == "RUN"]
    assert any("--no-index" in r for r in runtime), "the runtime stage installs from the built wheels only"


def test_entrypoint_is_the_daemon() -> None:
    steps = dict(instructions())
    assert steps["ENTRYPOINT"] == '["interrupt-sidecar"]'
    assert steps["CMD"] == '["serve"]'


def test_build_context_holds_what_the_dockerfile_copies() -> None:
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*") + 1 :], ".dockerignore lets nothing in"
    for keyword, rest in instructions():
        if keyword == "COPY" and "--from" not in rest:
            for source in rest.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                assert f"!{source}" in ignore or f"!{source.rstrip('/')}" in ignore, f"{source} is ignored"


@pytest.mark.timeout(180)
def test_wheels_of_the_daemon_and_the_client_build(tmp_path: Path) -> None:
    """What the build stage runs, minus the dependencies (fetched from PyPI there)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--wheel-dir",
            str(tmp_path),
            str(ROOT / "clients" / "python"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    wheels = {p.name.split("-")[0]: p for p in tmp_path.glob("*.whl")}
    assert set(wheels) == {"interrupt_sidecar", "interrupt_sidecar_client"}
    with zipfile.ZipFile(wheels["interrupt_sidecar"]) as daemon:
        names = daemon.namelist()
        assert "interrupt_sidecar/cli.py" in names and "interrupt_sidecar/server.py" in names
        entry_points = daemon.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        assert "interrupt-sidecar = interrupt_sidecar.entry:main" in entry_points
        metadata = daemon.read(next(n for n in names if n.endswith("METADATA"))).decode()
        assert "Requires-Dist: interrupt-sidecar-client==0.1.0" in metadata
        assert "Requires-Dist: grpcio-health-checking" in metadata  # the exec probe imports it
    with zipfile.ZipFile(wheels["interrupt_sidecar_client"]) as client:
        names = client.namelist()
        assert "interrupt_sidecar_client/__init__.py" in names
        assert (
            "interrupt_sidecar_client/_proto/interrupt/v1/interrupt_pb2.py" in names
        )  # the generated code travels along
        assert not any(n.startswith(("interrupt/", "sidecar/")) for n in names)  # no top-level name but our own
