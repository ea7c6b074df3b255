"""The pod simulation: the daemon, an agent and a tool as separate processes in one
private PID namespace (a pod with shareProcessNamespace), configured from the
rendered chart, terminated the way the kubelet terminates a pod."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import other_uid
from tests.helm.chart import CI_VALUES, Doc, agents, env, find, mounts, render, sidecar, volumes
from tests.requires import require_program, require_root

ROOT = Path(__file__).resolve().parents[2]
PODSIM = Path(__file__).with_name("podsim.py")
CI = {p.name.removesuffix("-values.yaml"): p for p in CI_VALUES}


@pytest.fixture(autouse=True)
def _root_and_unshare() -> None:
    require_root("the pod simulation needs root for a private PID namespace")
    require_program("unshare", "the pod simulation needs a private PID namespace")


@pytest.fixture
def pod_dir() -> Iterator[Path]:
    # Short: unix socket paths are limited to 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="isp-", dir="/tmp"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class Mapper:
    """Maps the container paths the chart mounts onto host directories standing in
    for the pod's volumes (emptyDir: created by root, mode 0777, like the kubelet's)."""

    def __init__(self, base: Path, spec: Doc, container: Doc) -> None:
        self.prefixes: list[tuple[str, str]] = []
        for name, mount_path in mounts(container).items():
            if "emptyDir" not in volumes(spec)[name] or mount_path == "/tmp":
                continue
            host = base / "volumes" / name
            host.mkdir(parents=True, exist_ok=True)
            host.chmod(0o777)
            self.prefixes.append((mount_path.rstrip("/"), str(host)))
        self.prefixes.sort(key=lambda p: -len(p[0]))

    def __call__(self, text: str) -> str:
        for container_path, host_path in self.prefixes:
            for lead in ("unix://", "="):
                text = text.replace(lead + container_path + "/", lead + host_path + "/")
                if text.endswith(lead + container_path):
                    text = text[: -len(container_path)] + host_path
            if text == container_path or text.startswith(container_path + "/"):
                text = host_path + text[len(container_path) :]
        return text


def pod_spec(values: Path, base: Path, **set_values: Any) -> dict[str, Any]:
    docs = render(values, **set_values)
    deployment = find(docs, "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    side, (agent,) = sidecar(spec), agents(spec)
    daemon_paths, agent_paths = Mapper(base, spec, side), Mapper(base, spec, agent)
    assert daemon_paths.prefixes, "the sidecar mounts no emptyDir"
    bin_dir = Path(sys.executable).parent
    report = base / "report"
    report.mkdir()
    report.chmod(0o777)
    path_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": "/nonexistent"}
    agent_env = {name: agent_paths(e["value"]) for name, e in env(agent).items() if "value" in e}
    uid = side["securityContext"]["runAsUser"]
    assert agent["securityContext"]["runAsUser"] == uid
    startup = side["startupProbe"]
    probe: dict[str, Any]
    if "grpc" in startup:
        # Kubernetes' native grpc probe: the kubelet dials the port itself.
        grpc = startup["grpc"]
        probe = {
            "kind": "grpc",
            "port": grpc["port"],
            "service": grpc.get("service", ""),
            "timeout": startup["timeoutSeconds"],
        }
    else:
        command = [daemon_paths(a) for a in startup["exec"]["command"]]
        assert command[0] == "python"
        probe = {"kind": "exec", "argv": [sys.executable, *command[1:]]}
    ports = {p["name"]: p["containerPort"] for p in side.get("ports", [])}
    return {
        "report": str(report),
        "mode": "native" if spec.get("initContainers") else "classic",
        "uid": uid,
        "gid": side["securityContext"]["runAsGroup"],
        # The image's ENTRYPOINT is `interrupt-sidecar` (Dockerfile); the chart gives the args.
        "daemon": {"argv": [str(bin_dir / "interrupt-sidecar"), *map(daemon_paths, side["args"])], "env": path_env},
        "agent": {"argv": [sys.executable, str(PODSIM), "agent", str(report)], "env": {**path_env, **agent_env}},
        "probe": probe,
        "metrics_port": ports.get("metrics"),
        "agent_shutdown_s": 10,
        "termination_grace_s": spec["terminationGracePeriodSeconds"],
        "address": agent_env["INTERRUPT_SIDECAR_ADDRESS"],
    }


def run_pod(spec: dict[str, Any], base: Path) -> dict[str, Any]:
    spec_path = base / "spec.json"
    spec_path.write_text(json.dumps(spec))
    # --kill-child: if this test dies, the namespace's PID 1 dies, and the kernel kills the rest.
    argv = ["unshare", "--pid", "--fork", "--mount-proc", "--net", "--kill-child=SIGKILL"]
    # The pod's uid runs the interpreter, the venv and the checkout, wherever they live:
    # --mount-proc made a private mount namespace, in which they are made reachable.
    pod = other_uid.argv([sys.executable, str(PODSIM), "pod", str(spec_path)])
    subprocess.run([*argv, *pod], cwd=ROOT, timeout=50, check=True)
    report = Path(spec["report"])
    result: dict[str, Any] = json.loads((report / "pod.json").read_text())
    for name in ("daemon", "agent", "tool"):
        path = report / f"{name}.err"
        result[f"{name}_stderr"] = path.read_text()[-3000:] if path.exists() else None
    for name in ("agent", "tool", "tool-cancel", "readiness"):
        path = report / f"{name}.json"
        result[name] = json.loads(path.read_text()) if path.exists() else None
    return result


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("name", "probes"),
    [("native", "grpc"), ("classic", "grpc"), ("native", "exec")],
    ids=["native", "classic", "native-exec-probe"],
)
def test_pod_terminates_like_the_kubelet_says(name: str, probes: str, pod_dir: Path) -> None:
    # grpc is the default: only the fallback is set explicitly.
    spec = pod_spec(CI[name], pod_dir, **({"sidecar__probes__mode": "exec"} if probes == "exec" else {}))
    assert spec["probe"]["kind"] == probes
    result = run_pod(spec, pod_dir)
    context = json.dumps(result, indent=1)
    assert "error" not in result, context
    assert result["daemon_ready_line"] == f"ready {spec['address']}", context
    # The probe the chart renders reaches grpc.health.v1.Health: the kubelet's grpc
    # probe over TCP on the rendered --health-listen, or the exec fallback over the socket.
    assert result["probe"]["returncode"] == 0, context
    if probes == "grpc":
        assert result["probe"]["stdout"] == "SERVING\n", context
        # Readiness through the deletion: SERVING, NOT_SERVING as soon as shutdown
        # begins (the pod leaves its Services' endpoints), then the listener is gone.
        seen = result["readiness"]["seen"]
        assert seen[:2] == ["SERVING", "NOT_SERVING"] and len(seen) == 3, context
        assert seen[2] in ("UNAVAILABLE", "CANCELLED"), context
    else:
        assert result["readiness"] is None, context
    # The metrics port the chart renders serves Prometheus text, with the tool attached.
    families = {f.name: f for f in text_string_to_metric_families(result["metrics"])}
    assert sum(s.value for s in families["interrupt_sidecar_attached_streams"].samples) == 1, context
    tool = result["tool"]
    assert tool is not None, context
    assert {p["pid"] for p in result["tool_group_before"]} == {tool["pid"], tool["sleep_pid"]}, context
    # The tool heard why: the sidecar's SIGTERM tripped its execution.
    assert result["tool-cancel"] == {
        "cancelled": True,
        "reason": "SYSTEM_SHUTDOWN",
        "detail": "the sidecar is shutting down",
        "sigterm": True,
    }, context
    # Its whole process group was gone before the daemon exited, and the daemon exited 0.
    assert result["tool_group_at_daemon_exit"] == [], context
    assert result["group_gone_before_daemon_exit"] is True, context
    assert result["daemon_exit_code"] == 0, context
    # Well within the pod's terminationGracePeriodSeconds, and nothing was left for SIGKILL.
    assert result["shutdown_seconds"] < spec["termination_grace_s"], context
    assert result["survivors"] == [], context
    assert result["after_sigkill"] == [], context
