"""11. Image: the daemon's container image beside its floor, the same base with only grpcio
and protobuf installed.

Opt-in (``--parts image``): it builds images. The daemon's image is built as ``make image``
builds it (``scripts/build_image.sh``: podman, layer cache on, the pinned base or its
offline stand-in); the floor from ``bench/image/floor.Containerfile`` on the same base,
at the grpcio and protobuf versions the daemon's image installed. Both are builds of
podman's layer cache after the first run. Reported: each image's size and layers (podman
counts uncompressed bytes), the ratio to the floor, what the app's layer carries by
distribution, and the build tools found in the runtime image (there should be none).
Skipped, with the reason, when podman is absent. Issue 22's target: ≤ 1.2× the floor.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.procs import ROOT

FLOOR_FILE = ROOT / "bench" / "image" / "floor.Containerfile"
#: What a runtime stage should not carry: compilers, linkers, binutils, make.
BUILD_TOOLS = ("gcc", "cc", "c++", "make", "ld", "as", "strip", "objcopy")

#: Run inside the daemon's image: the installed size of every distribution in bytes.
_BY_DISTRIBUTION = """
import importlib.metadata as m, json, os
out = {}
for d in m.distributions():
    total = 0
    for f in d.files or ():
        try:
            total += os.path.getsize(f.locate())
        except OSError:
            pass
    out[d.metadata["Name"]] = total
print(json.dumps(out))
"""


def _podman(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])} … exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _in_image(image: str, env: dict[str, str], *argv: str) -> str:
    return _podman(["run", "--rm", "--network", "none", "--entrypoint", argv[0], image, *argv[1:]], env)


def _describe(image: str, env: dict[str, str]) -> dict[str, Any]:
    inspect = json.loads(_podman(["image", "inspect", image], env))[0]
    history = json.loads(_podman(["history", "--format", "json", "--no-trunc", image], env))
    layers = [
        {"bytes": int(h.get("size", 0)), "created_by": str(h.get("CreatedBy") or h.get("createdBy") or "")[:120]}
        for h in history
        if int(h.get("size", 0)) > 0
    ]
    return {
        "image": image,
        "id": inspect["Id"][:12],
        "bytes": int(inspect["Size"]),
        "layers": len(inspect["RootFS"]["Layers"]),
        "layer_sizes": layers,
    }


def _floor(base: str, grpcio: str, protobuf: str, env: dict[str, str]) -> str:
    name = f"localhost/interrupt-sidecar-floor:grpcio{grpcio}-protobuf{protobuf}"
    mounts: list[str] = []
    cert = os.environ.get("PIP_CERT", "")
    if cert and Path(cert).is_file():
        # As scripts/build_image.sh: the machine's CA bundle for the RUN step only, when TLS
        # here is re-signed by a proxy; nothing of this machine stays in the image.
        mounts = ["--volume", f"{Path(cert).resolve()}:/etc/ssl/certs/ca-certificates.crt:ro"]
    with tempfile.TemporaryDirectory(prefix="isf-floor-") as context:  # the floor copies nothing
        _podman(
            [
                *("build", "--network", "host", "--layers", "--build-arg", f"BASE={base}"),
                *("--build-arg", f"GRPCIO={grpcio}", "--build-arg", f"PROTOBUF={protobuf}", *mounts),
                *("-t", name, "-f", str(FLOOR_FILE), context),
            ],
            env,
        )
    return name


async def run(ctx: Context) -> dict[str, Any]:
    return await asyncio.to_thread(measure, ctx)  # builds take minutes: off the loop


def measure(ctx: Context) -> dict[str, Any]:
    """Build (from podman's layer cache when nothing changed) and describe both images."""
    if shutil.which("podman") is None:
        reason = "podman is not installed (scripts/ensure_podman.sh installs it; needs root)"
        ctx.log(f"image: skipped: {reason}")
        return {"skipped": reason}
    ctx.log("image: building the daemon's image (scripts/build_image.sh) and its floor with podman")
    built = subprocess.run(
        ["nice", "-n", "10", "bash", str(ROOT / "scripts" / "build_image.sh")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if built.returncode != 0:
        raise RuntimeError(f"scripts/build_image.sh exited {built.returncode}: {built.stderr[-2000:]}")
    image = built.stdout.strip().splitlines()[-1]
    env = os.environ | {"CONTAINERS_CONF": str(ROOT / "build" / "podman" / "containers.conf")}
    base = (ROOT / "build" / "image" / "base").read_text().strip()
    versions = _in_image(
        image, env, "python", "-c", "import importlib.metadata as m; print(m.version('grpcio'), m.version('protobuf'))"
    )
    grpcio, protobuf = versions.split()
    floor = _floor(base, grpcio, protobuf, env)
    out: dict[str, Any] = {
        "base": _describe(base, env),
        "floor": _describe(floor, env),
        "daemon": _describe(image, env),
    }
    out["grpcio"], out["protobuf"] = grpcio, protobuf
    out["ratio_to_floor"] = out["daemon"]["bytes"] / out["floor"]["bytes"]
    out["app_over_base_bytes"] = out["daemon"]["bytes"] - out["base"]["bytes"]
    out["floor_over_base_bytes"] = out["floor"]["bytes"] - out["base"]["bytes"]
    base_dists = json.loads(_in_image(base, env, "python3", "-c", _BY_DISTRIBUTION))
    dists = json.loads(_in_image(image, env, "python", "-c", _BY_DISTRIBUTION))
    out["app_distributions_bytes"] = dict(
        sorted(((k, v) for k, v in dists.items() if k not in base_dists), key=lambda kv: -kv[1])
    )
    found = _in_image(image, env, "sh", "-c", " ".join(f"command -v {t};" for t in BUILD_TOOLS) + " true")
    out["build_tools_in_runtime"] = found.split()
    ctx.log(
        f"  image {out['daemon']['bytes'] / 1e6:.1f} MB ({out['daemon']['layers']} layers), floor "
        f"{out['floor']['bytes'] / 1e6:.1f} MB ({out['floor']['layers']}): {out['ratio_to_floor']:.3f}x; "
        f"build tools in the runtime: {out['build_tools_in_runtime'] or 'none'}"
    )
    return out
