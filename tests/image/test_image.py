"""The daemon's image, built from the repository's Dockerfile by `make image` and run
with podman the way the chart runs it: as uid 65532 with every capability dropped,
a read-only root, the socket on a volume shared with a second container
in the daemon's PID namespace (the pod's shareProcessNamespace)."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shlex
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.image.podman import ROOT, build_image, podman, proc_status, processes_with, wait_for

pytestmark = [
    pytest.mark.slow,
    # The per-test limit covers the test functions alone: the module's first setup builds
    # the image (on a fresh machine: debootstrap of the stand-in base, then every layer,
    # downloads included), which has its own limit in build_image(), as every podman call
    # and wait in the fixtures has its own.
    pytest.mark.timeout(120, func_only=True),
    pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="podman's rootful store needs root"),
]

SOCKET = "unix:///run/interrupt-sidecar/sock/sidecar.sock"
HEALTH_CHECK = """
import sys, grpc
from grpc_health.v1 import health_pb2 as pb, health_pb2_grpc as rpc
with grpc.insecure_channel(sys.argv[1]) as channel:
    reply = rpc.HealthStub(channel).Check(pb.HealthCheckRequest(), timeout=5)
print(pb.HealthCheckResponse.ServingStatus.Name(reply.status))
"""


@dataclass
class Daemon:
    name: str
    volume: str
    image: str

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def exec(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *argv, timeout=timeout, check=False)

    def host_pid(self) -> int:
        return int(podman("inspect", "--format", "{{.State.Pid}}", self.name).stdout)


@pytest.fixture(scope="module")
def image() -> str:
    return build_image()


@pytest.fixture
def daemon(image: str) -> Iterator[Daemon]:
    name = f"isc-imagetest-{secrets.token_hex(4)}"
    volume, state = f"{name}-sock", f"{name}-state"
    try:
        # :U hands the volume to the container's uid, as the pod's fsGroup does an emptyDir.
        podman(
            "run", "--detach", "--name", name, "--network", "none", "--read-only", "--tmpfs", "/tmp",
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "--volume", f"{volume}:/run/interrupt-sidecar:U", "--volume", f"{state}:/var/lib/interrupt-sidecar:U",
            image, "serve", f"--listen={SOCKET}", "--state-dir=/var/lib/interrupt-sidecar", "--grace=200ms",
        )  # fmt: skip
        d = Daemon(name, volume, image)
        wait_for("the daemon's `ready` line", lambda: f"ready {SOCKET}" in d.logs(), timeout=60)
        yield d
    finally:
        podman("rm", "--force", "--time", "0", name, check=False)
        podman("volume", "rm", "--force", volume, state, check=False)


def test_the_daemon_runs_as_65532_without_capabilities(daemon: Daemon) -> None:
    pid = daemon.host_pid()
    assert proc_status(pid, "Uid").split() == ["65532"] * 4
    assert proc_status(pid, "Gid").split() == ["65532"] * 4
    assert int(proc_status(pid, "CapBnd"), 16) == 0
    assert int(proc_status(pid, "CapEff"), 16) == 0
    assert proc_status(pid, "NoNewPrivs") == "1"


def test_health_answers_serving_over_the_socket(daemon: Daemon) -> None:
    # What the chart's exec probe runs, inside the daemon's container.
    result = daemon.exec("python", "-c", HEALTH_CHECK, SOCKET)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "SERVING"


def test_a_tool_in_a_second_container_is_killed_with_its_setsid_grandchild(daemon: Daemon) -> None:
    begin = daemon.exec("interrupt-sidecar", "begin", f"--address={SOCKET}")
    assert begin.returncode == 0, begin.stderr
    exports = dict(
        shlex.split(line)[1].split("=", 1) for line in begin.stdout.splitlines() if line.startswith("export ")
    )
    execution, token = exports["INTERRUPT_SIDECAR_EXECUTION"], exports["INTERRUPT_SIDECAR_TOKEN"]
    marker = f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(1000)}"
    tool = f"{daemon.name}-tool"
    # The agent's container: the same image and uid, the socket volume, the daemon's PID namespace.
    podman(
        "run", "--detach", "--name", tool, "--network", "none", "--pid", f"container:{daemon.name}",
        "--cap-drop", "ALL", "--volume", f"{daemon.volume}:/run/interrupt-sidecar",
        "--env", f"INTERRUPT_SIDECAR_TOKEN={token}", "--env", f"INTERRUPT_SIDECAR_ADDRESS={SOCKET}",
        daemon.image, "run", "--tool-name=sleeper", "--",
        "sh", "-c", f"setsid sleep {marker} & sleep {marker}",
    )  # fmt: skip
    try:
        tree = f"sleep {marker}"
        wait_for("the tool and its setsid grandchild", lambda: len(processes_with(tree, exact=True)) == 2, 60)
        status = daemon.exec("interrupt-sidecar", "status", f"--address={SOCKET}", "--json", execution)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["execution"]["attached_tools"] == 1
        trip = daemon.exec("interrupt-sidecar", "interrupt", f"--address={SOCKET}", execution)
        assert trip.returncode == 0, trip.stderr
        wait_for("the tool's tree to be gone", lambda: not processes_with(f"sleep {marker}"), timeout=30)
        podman("wait", tool, timeout=60)
    finally:
        podman("rm", "--force", "--time", "0", tool, check=False)


def test_sigterm_ends_the_daemon_with_exit_0(daemon: Daemon) -> None:
    podman("kill", "--signal", "TERM", daemon.name)
    exit_code = podman("wait", daemon.name, timeout=60).stdout.strip()
    assert exit_code == "0", daemon.logs()
    assert signal.SIGTERM.name in daemon.logs()


def test_the_entrypoint_is_the_native_binary_and_serve_runs_as_pid_1(daemon: Daemon) -> None:
    """`interrupt-sidecar` is the native binary; it execs the Python daemon for `serve`, so
    PID 1 is the daemon itself (its signals and exit code are the container's)."""
    head = daemon.exec("python", "-c", "print(open('/usr/local/bin/interrupt-sidecar', 'rb').read(4))")
    assert head.stdout.strip() == repr(b"\x7fELF"), head
    pid1 = daemon.exec("cat", "/proc/1/cmdline").stdout.split("\0")
    assert pid1[1:3] == ["/usr/local/bin/interrupt-sidecar-py", "serve"], pid1
    versions = [daemon.exec(command, "--version").stdout for command in ("interrupt-sidecar", "interrupt-sidecar-py")]
    assert versions[0] == versions[1] != "", versions


def test_nothing_of_the_build_stage_is_in_the_image(image: str) -> None:
    """The wheels come in through a bind mount and the sources stay in the build stage.
    Prints what the image weighs, layer by layer (pytest -s shows it)."""
    history = json.loads(podman("history", "--format", "json", image).stdout)
    size = int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
    print(f"\n{image}: {size / 1e6:.1f} MB")
    for layer in history:
        print(f"  {layer.get('size', 0) / 1e6:8.1f} MB  {layer.get('CreatedBy', '')[:100]}")
    # /etc/pip.conf: the build must not leave this machine's settings (or an empty
    # mount point for them) behind.
    leaks = ("/wheels", "/src", "/root/.cache/pip", "/etc/pip.conf", "/run/build-ca")
    probe = f"import os; print(' '.join(p for p in {leaks!r} if os.path.lexists(p)))"
    result = podman("run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c", probe)
    assert result.stdout.strip() == "", f"the runtime image carries {result.stdout.strip()}"


def test_no_build_tools_in_the_runtime_image(image: str) -> None:
    """The build stage installs binutils to strip the wheels' extensions; none of it, nor
    any compiler, may reach the runtime stage."""
    tools = ("gcc", "cc", "make", "ld", "as", "strip", "objcopy")
    probe = f"import shutil; print(' '.join(t for t in {tools!r} if shutil.which(t)))"
    result = podman("run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c", probe)
    assert result.stdout.strip() == "", f"the runtime image carries {result.stdout.strip()}"


def test_the_image_installs_this_checkout(image: str) -> None:
    """Every module of the daemon in the image is the checkout's, byte for byte: podman's
    layer cache once kept the wheels of an earlier build (scripts/build_image.sh says why)."""
    package = ROOT / "sidecar" / "interrupt_sidecar"
    ours = {str(p.relative_to(package)): hashlib.sha256(p.read_bytes()).hexdigest() for p in package.rglob("*.py")}
    probe = (
        "import hashlib, json, pathlib, interrupt_sidecar as m; d = pathlib.Path(m.__file__).parent; "
        "h = lambda p: hashlib.sha256(p.read_bytes()).hexdigest(); "
        "print(json.dumps({str(p.relative_to(d)): h(p) for p in d.rglob('*.py')}))"
    )
    result = podman("run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c", probe)
    theirs = json.loads(result.stdout)
    differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
    assert not differ, f"the image's daemon differs from the checkout in {differ[:10]}"
