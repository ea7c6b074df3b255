"""The chart on a real kubelet and container runtime: the README's Kubernetes path,
then what only a real node can show, each asserted from the kubelet's and the
daemon's own reports (pod status, kubelet log, container logs, /proc)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.kubernetes.cluster import BIN, Cluster, wait_for
from tests.kubernetes.conftest import SUMMARY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CHART = "./helm/interrupt-sidecar"
REPOSITORY = "localhost/interrupt-sidecar"  # the name `make image` gives it (REGISTRY=localhost)
AGENT = "app.kubernetes.io/component=agent"
SIDECAR = "interrupt-sidecar"
SOCKET = "unix:///run/interrupt-sidecar/sock/sidecar.sock"
# The example agent's turn interval in the `agents` release; its tool sleeps half of it.
INTERVAL = 10


# -- helpers ---------------------------------------------------------------------
def install(cluster: Cluster, release: str, namespace: str, *values: str) -> None:
    """`helm install` as the README shows it, into a namespace the cluster's teardown deletes."""
    cluster.helm(
        "install", release, CHART, "-n", namespace, "--create-namespace",
        "--set", f"image.repository={REPOSITORY}", *values,
    )  # fmt: skip
    cluster.kubectl("label", "namespace", namespace, "isc-e2e=1", "--overwrite")


def agent_pod(cluster: Cluster, namespace: str, timeout: float = 240) -> dict[str, Any]:
    """The example agent's pod, once the kubelet reports it Ready."""

    def ready() -> dict[str, Any] | None:
        pods = cluster.get("pods", "-n", namespace, "-l", AGENT)["items"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if len(live) == 1 and any(
            c["type"] == "Ready" and c["status"] == "True" for c in live[0]["status"].get("conditions", [])
        ):
            found: dict[str, Any] = live[0]
            return found
        return None

    try:
        pod: dict[str, Any] = wait_for(f"the agent pod in {namespace} to be Ready", ready, timeout, interval=0.5)
    except AssertionError:
        print(cluster.kubectl("describe", "pods", "-n", namespace, check=False).stdout)
        raise
    return pod


def statuses(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status = pod["status"]
    return {c["name"]: c for c in status.get("initContainerStatuses", []) + status.get("containerStatuses", [])}


def container_id(pod: dict[str, Any], name: str) -> str:
    return str(statuses(pod)[name]["containerID"]).removeprefix("containerd://")


def task_pid(cluster: Cluster, cid: str) -> int:
    """The container's init process, as containerd reports it (a host PID)."""
    for line in cluster.ctr("tasks", "ls").stdout.splitlines()[1:]:
        task, pid, _status = line.split()
        if task == cid:
            return int(pid)
    raise AssertionError(f"no task for container {cid}")


def exec_in(cluster: Cluster, namespace: str, pod: str, container: str, *argv: str, check: bool = True) -> str:
    return cluster.kubectl("exec", "-n", namespace, pod, "-c", container, "--", *argv, check=check).stdout


def exports(text: str) -> dict[str, str]:

    return dict(shlex.split(line)[1].split("=", 1) for line in text.splitlines() if line.startswith("export "))


def proc_field(pid: int, key: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    raise KeyError(key)


def live_pids(predicate: Any) -> list[int]:
    """Host PIDs of live (not zombie) processes whose argv (a list) satisfies predicate."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().rstrip(b"\0").decode(errors="replace").split("\0")
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X") and predicate(argv):
            found.append(int(entry.name))
    return found


def tree(marker: str) -> list[int]:
    return live_pids(lambda argv: argv == ["sleep", marker])


def kubelet_time(line: str) -> float:
    """The wall-clock time of a klog line (Immdd hh:mm:ss.uuuuuu), this year, UTC."""
    match = re.match(r"[IWE](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)", line)
    assert match, line
    now = dt.datetime.now(dt.UTC)
    stamp = dt.datetime.strptime(f"{now.year}{match[1]}{match[2]} {match[3]}", "%Y%m%d %H:%M:%S.%f")
    return stamp.replace(tzinfo=dt.UTC).timestamp()


def log_time(stamp: str) -> float:
    """An RFC 3339 timestamp with nanoseconds, as `kubectl logs --timestamps` prints it."""
    head, _, frac = stamp.rstrip("Z").partition(".")
    base = dt.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()
    return base + float("0." + (frac or "0"))


def timestamped_logs(
    cluster: Cluster, namespace: str, pod: str, container: str, *flags: str
) -> list[tuple[float, str]]:
    out = cluster.kubectl("logs", "-n", namespace, pod, "-c", container, "--timestamps", *flags, check=False).stdout
    lines = []
    for line in out.splitlines():
        stamp, _, text = line.partition(" ")
        lines.append((log_time(stamp), text))
    return lines


def pod_ip(pod: dict[str, Any]) -> str:
    ip = pod["status"]["podIP"]
    assert ip.startswith("10.244.77."), ip  # on this run's bridge, nowhere else
    return str(ip)


# -- the README's path -----------------------------------------------------------
@pytest.fixture(scope="module")
def agents(cluster: Cluster) -> dict[str, Any]:
    """README step 3: the chart with its example agent (native sidecar), the dashboard
    ConfigMap (the PodMonitor and PrometheusRule need the Prometheus Operator's CRDs,
    which this cluster does not have). A turn every 10 s instead of 30 s: the values
    are the README's, the test only needs to see turns sooner."""
    start = time.monotonic()
    install(
        cluster, "agents", "agents",
        "--set", "monitoring.dashboard.enabled=true", "--set", f"example.agent.intervalSeconds={INTERVAL}",
    )  # fmt: skip
    pod = agent_pod(cluster, "agents")
    SUMMARY["helm install -> agent pod Ready (native)"] = time.monotonic() - start
    return pod


def test_readme_path_native(cluster: Cluster, agents: dict[str, Any]) -> None:
    """README step 4, verbatim: the pod is 2/2 ready, the agent runs turns with its
    tool, `status` answers from the agent container, `helm test` passes."""
    pods = cluster.kubectl("-n", "agents", "get", "pods", "-l", AGENT).stdout
    assert re.search(r"\s2/2\s+Running\s", pods), pods

    def two_turns() -> bool:
        logs = cluster.kubectl("-n", "agents", "logs", "deploy/agents-interrupt-sidecar", "-c", "agent").stdout
        return logs.count("agent: began") >= 2 and "tool: done" in logs

    wait_for("two turns of the example agent, one tool done", two_turns, timeout=90, interval=1)
    status = cluster.kubectl(
        "-n", "agents", "exec", "deploy/agents-interrupt-sidecar", "-c", "agent", "--", "interrupt-sidecar", "status"
    )  # fmt: skip
    assert status.returncode == 0
    start = time.monotonic()
    result = cluster.helm("test", "agents", "-n", "agents")
    SUMMARY["helm test (native)"] = time.monotonic() - start
    assert "Phase:          Succeeded" in result.stdout, result.stdout


def test_the_sidecar_passes_its_probes_before_the_agent_starts(cluster: Cluster, agents: dict[str, Any]) -> None:
    """From the kubelet's log: its startup probe of the sidecar succeeded, then the
    agent container was started; the daemon's own `ready` line came first of all."""
    name = agents["metadata"]["name"]
    kubelet = cluster.log_of("kubelet").splitlines()
    added = next(line for line in kubelet if '"SyncLoop ADD"' in line and name in line)
    probe = next(
        line
        for line in kubelet
        if '"SyncLoop (probe)"' in line and 'probe="startup"' in line and 'status="started"' in line and name in line
    )
    agent_cid = container_id(agents, "agent")
    started = next(line for line in kubelet if "ContainerStarted" in line and agent_cid in line)
    ready_at, ready_line = next(
        (t, text) for t, text in timestamped_logs(cluster, "agents", name, SIDECAR) if text.startswith("ready ")
    )
    first_agent_line = timestamped_logs(cluster, "agents", name, "agent")[0][0]
    t_add, t_probe, t_started = kubelet_time(added), kubelet_time(probe), kubelet_time(started)
    assert ready_at <= t_probe + 0.001, (ready_line, probe)
    assert t_probe < t_started, (probe, started)
    assert t_probe < first_agent_line
    sidecar, agent = statuses(agents)[SIDECAR], statuses(agents)["agent"]
    assert sidecar["started"] and sidecar["ready"] and agent["ready"]
    SUMMARY["pod start -> sidecar ready (startup probe passed)"] = t_probe - t_add
    SUMMARY["sidecar ready -> agent started"] = first_agent_line - t_probe


def test_an_interrupt_from_the_agent_container_kills_the_tool_group_and_its_setsid_grandchild(
    cluster: Cluster, agents: dict[str, Any]
) -> None:
    name = agents["metadata"]["name"]
    begin = exports(exec_in(cluster, "agents", name, "agent", "interrupt-sidecar", "begin"))
    marker = f"{secrets.randbelow(10**6) + 10**6}.5"
    tool = subprocess.Popen(
        [
            str(BIN / "kubectl"), "exec", "-n", "agents", name, "-c", "agent", "--",
            "env", f"INTERRUPT_SIDECAR_TOKEN={begin['INTERRUPT_SIDECAR_TOKEN']}",
            "interrupt-sidecar", "run", "--tool-name=sleeper", "--",
            "sh", "-c", f"setsid sleep {marker} & sleep {marker}",
        ],
        env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        pids = wait_for("the tool and its setsid grandchild", lambda: len(tree(marker)) == 2 and tree(marker), 60)
        # The pod's uid, as the kernel reports it, and two sessions: setsid took effect.
        assert {proc_field(p, "Uid").split()[0] for p in pids} == {"65532"}
        assert len({Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[3] for p in pids}) == 2
        start = time.monotonic()
        exec_in(
            cluster, "agents", name, "agent", "interrupt-sidecar", "interrupt", begin["INTERRUPT_SIDECAR_EXECUTION"]
        )
        wait_for("the tool's tree to be gone", lambda: not tree(marker), timeout=30, interval=0.02)
        SUMMARY["interrupt (kubectl exec) -> tree gone in the pod"] = time.monotonic() - start
        out, _ = tool.communicate(timeout=60)
        assert "interrupted USER_SIGINT" in out, out
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
    # The kernel's view of the daemon that just killed the tree: uid 65532 and no
    # capability at all (the chart adds none: KILL would be inert for a non-root uid).
    daemon = task_pid(cluster, container_id(agents, SIDECAR))
    assert proc_field(daemon, "Uid").split()[0] == "65532"
    assert int(proc_field(daemon, "CapEff"), 16) == 0 and int(proc_field(daemon, "CapBnd"), 16) == 0


def test_the_metrics_port_answers_a_scrape(cluster: Cluster, agents: dict[str, Any]) -> None:
    with urllib.request.urlopen(f"http://{pod_ip(agents)}:9464/metrics", timeout=10) as response:
        text = response.read().decode()
    assert "interrupt_sidecar_" in text and "# TYPE" in text


# -- classic mode ------------------------------------------------------------------
def test_classic_sidecar_runs_turns_and_passes_helm_test(cluster: Cluster) -> None:
    start = time.monotonic()
    install(cluster, "classic", "classic", "--set", "sidecar.mode=classic", "--set", "example.agent.intervalSeconds=4")
    pod = agent_pod(cluster, "classic")
    SUMMARY["helm install -> agent pod Ready (classic)"] = time.monotonic() - start
    assert set(statuses(pod)) == {"agent", SIDECAR}
    assert not pod["status"].get("initContainerStatuses")

    def a_turn() -> bool:
        logs = cluster.kubectl("-n", "classic", "logs", "deploy/classic-interrupt-sidecar", "-c", "agent").stdout
        return "tool: done" in logs

    wait_for("a turn of the example agent with its tool", a_turn, timeout=90, interval=1)
    result = cluster.helm("test", "classic", "-n", "classic")
    assert "Phase:          Succeeded" in result.stdout, result.stdout


# -- across pods: a TCP listener with the token Secret, a remote parent ------------
BEGIN_WITH_REMOTE_PARENT = """
import os, sys, grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb, interrupt_pb2_grpc as rpc
parent = pb.RemoteParent(address=sys.argv[1], execution_id=sys.argv[2], credential=sys.argv[3])
with grpc.insecure_channel(os.environ["INTERRUPT_SIDECAR_ADDRESS"]) as channel:
    request = pb.BeginExecutionRequest(remote_parent=parent)
    reply = rpc.CoordinatorServiceStub(channel).BeginExecution(request, timeout=20)
print(f"export INTERRUPT_SIDECAR_EXECUTION={reply.execution_id}")
print(f"export INTERRUPT_SIDECAR_TOKEN={reply.attach_token}")
"""


def test_a_remote_parent_in_another_pod_cascades_over_tcp_with_the_token(
    cluster: Cluster, agents: dict[str, Any]
) -> None:
    """The parent: a release with the TCP listener and the chart's token Secret. The
    child: the `agents` pod, whose execution names the parent's execution at the
    address the parent's Service publishes (its EndpointSlice: this cluster has no
    kube-proxy or DNS to resolve the Service's name). Interrupting the parent trips
    the child with PARENT_CANCELLED and kills the child's tool in the other pod."""
    install(
        cluster, "parent", "parents",
        "--set", "sidecar.tcp.enabled=true", "--set", "sidecar.auth.enabled=true", "--set", "tests.enabled=false",
    )  # fmt: skip
    parent = agent_pod(cluster, "parents")
    slices = cluster.get("endpointslices", "-n", "parents", "-l", "kubernetes.io/service-name=parent-interrupt-sidecar")
    endpoints = [(e["addresses"][0], p["port"]) for s in slices["items"] for e in s["endpoints"] for p in s["ports"]]
    assert endpoints == [(pod_ip(parent), 50051)], endpoints
    secret = cluster.get("secret", "-n", "parents", "parent-interrupt-sidecar-auth")

    token = base64.b64decode(secret["data"]["token"]).decode()
    p_name = parent["metadata"]["name"]
    parent_exec = exports(exec_in(cluster, "parents", p_name, "agent", "interrupt-sidecar", "begin"))
    c_name = agents["metadata"]["name"]
    address = f"{endpoints[0][0]}:{endpoints[0][1]}"
    # A wrong token is refused by the parent daemon, and the child says so.
    refused = cluster.kubectl(
        "exec", "-n", "agents", c_name, "-c", "agent", "--", "python", "-c", BEGIN_WITH_REMOTE_PARENT,
        address, parent_exec["INTERRUPT_SIDECAR_EXECUTION"], "not-the-token", check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "PERMISSION_DENIED" in refused.stderr, refused.stderr
    child = exports(
        exec_in(
            cluster, "agents", c_name, "agent", "python", "-c", BEGIN_WITH_REMOTE_PARENT,
            address, parent_exec["INTERRUPT_SIDECAR_EXECUTION"], token,
        )
    )  # fmt: skip
    marker = f"{secrets.randbelow(10**6) + 10**6}.25"
    tool = subprocess.Popen(
        [
            str(BIN / "kubectl"), "exec", "-n", "agents", c_name, "-c", "agent", "--",
            "env", f"INTERRUPT_SIDECAR_TOKEN={child['INTERRUPT_SIDECAR_TOKEN']}",
            "interrupt-sidecar", "run", "--", "sh", "-c", f"setsid sleep {marker} & sleep {marker}",
        ],
        env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for("the child's tool tree", lambda: len(tree(marker)) == 2, 60)
        start = time.monotonic()
        exec_in(
            cluster,
            "parents",
            p_name,
            "agent",
            "interrupt-sidecar",
            "interrupt",
            parent_exec["INTERRUPT_SIDECAR_EXECUTION"],
        )
        wait_for("the child's tool tree to be gone", lambda: not tree(marker), timeout=30, interval=0.02)
        SUMMARY["interrupt in pod A -> tree gone in pod B (remote parent)"] = time.monotonic() - start
        out, _ = tool.communicate(timeout=60)
        assert "interrupted PARENT_CANCELLED" in out, out
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
    status = json.loads(
        exec_in(
            cluster,
            "agents",
            c_name,
            "agent",
            "interrupt-sidecar",
            "status",
            "--json",
            "--all",
            child["INTERRUPT_SIDECAR_EXECUTION"],
        )
    )["execution"]
    assert status["reason"] == "INTERRUPT_REASON_PARENT_CANCELLED", status


# -- a wedged daemon: the kubelet's liveness probe, the restart, the journal --------
@pytest.fixture(scope="module")
def wedged(cluster: Cluster) -> str:
    """A release whose daemon the tests below bring down; returns its namespace."""
    install(
        cluster, "wedged", "wedged",
        "--set", "sidecar.probes.liveness.periodSeconds=1", "--set", "sidecar.probes.liveness.timeoutSeconds=1",
        "--set", "sidecar.probes.liveness.failureThreshold=2",
        # A short pod grace: the frozen daemon cannot act on SIGTERM, so the kubelet
        # waits it out before SIGKILL. Still above what the chart requires.
        "--set", "terminationGracePeriodSeconds=8", "--set", "agentShutdownSeconds=1",
        "--set", "sidecar.shutdownTimeoutSeconds=2", "--set", "tests.enabled=false",
    )  # fmt: skip
    return "wedged"


def sidecar_restarted(cluster: Cluster, namespace: str, name: str, restarts: int) -> dict[str, Any] | None:
    p = cluster.get("pod", "-n", namespace, name)
    s = statuses(p)[SIDECAR]
    return p if s.get("restartCount", 0) >= restarts and s.get("ready") else None


def test_a_daemon_killed_by_its_liveness_probe_restarts_and_recovers_its_executions(
    cluster: Cluster, wedged: str
) -> None:
    """The daemon is frozen (SIGSTOP): its grpc liveness probe times out, the kubelet
    kills the container and restarts it (a native sidecar restarts on its own), and
    the restarted daemon resumes from its state volume the execution begun before:
    same id, same token (a tool attaches with it)."""
    pod = agent_pod(cluster, "wedged")
    name = pod["metadata"]["name"]
    execution = f"survivor-{secrets.token_hex(3)}"
    begun = exports(exec_in(cluster, "wedged", name, "agent", "interrupt-sidecar", "begin", f"--id={execution}"))
    daemon = task_pid(cluster, container_id(pod, SIDECAR))
    agent_restarts = statuses(pod)["agent"].get("restartCount", 0)
    start = time.monotonic()

    os.kill(daemon, signal.SIGSTOP)

    restarts = statuses(pod)[SIDECAR].get("restartCount", 0) + 1
    pod = wait_for(
        "the sidecar to be restarted and Ready again",
        lambda: sidecar_restarted(cluster, "wedged", name, restarts),
        timeout=120,
        interval=0.5,
    )
    SUMMARY["daemon frozen -> restarted and Ready (liveness)"] = time.monotonic() - start
    last = statuses(pod)[SIDECAR]["lastState"]["terminated"]
    assert last["exitCode"] == 137, last  # SIGKILL after the grace: it was frozen
    # The kubelet's own word for why: its liveness probe, not a crash.
    kubelet = cluster.log_of("kubelet")
    assert f'"SyncLoop (probe)" probe="liveness" status="unhealthy" pod="wedged/{name}"' in kubelet
    # The example agent waits for its sidecar instead of exiting (its container would restart).
    assert statuses(pod)["agent"].get("restartCount", 0) == agent_restarts, statuses(pod)["agent"]
    status = json.loads(exec_in(cluster, "wedged", name, "agent", "interrupt-sidecar", "status", "--json", execution))
    assert status["execution"]["execution_id"] == execution and not status["execution"].get("cancelled"), status
    attached = exec_in(
        cluster, "wedged", name, "agent", "env", f"INTERRUPT_SIDECAR_TOKEN={begun['INTERRUPT_SIDECAR_TOKEN']}",
        "interrupt-sidecar", "run", "--", "true",
    )  # fmt: skip
    assert "interrupted" not in attached


GROW = """
import grpc, os, sys
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb, interrupt_pb2_grpc as rpc
with grpc.insecure_channel(os.environ["INTERRUPT_SIDECAR_ADDRESS"]) as channel:
    stub = rpc.CoordinatorServiceStub(channel)
    # The daemon's bounds: 64 labels of up to 256 characters each, ~16 KB an execution.
    labels = {f"ballast{k}": f"{k:03d}" + "x" * 250 for k in range(64)}
    for i in range(int(sys.argv[1])):
        stub.BeginExecution(pb.BeginExecutionRequest(labels=labels), timeout=10)
"""


def test_a_daemon_killed_by_the_oom_killer_restarts_and_recovers_its_executions(cluster: Cluster, wedged: str) -> None:
    """The kernel's OOM killer, in the daemon container's memory cgroup: its limit is
    lowered (from the node, cgroup v1) to just above what the daemon uses, and the
    daemon is made to grow (executions with large labels). The runtime reports
    OOMKilled, the kubelet restarts the sidecar, the execution begun before is back."""
    pod = agent_pod(cluster, "wedged")
    name = pod["metadata"]["name"]
    execution = f"oom-survivor-{secrets.token_hex(3)}"
    exec_in(cluster, "wedged", name, "agent", "interrupt-sidecar", "begin", f"--id={execution}")
    daemon = task_pid(cluster, container_id(pod, SIDECAR))
    memory = next(line.split(":", 2)[2] for line in Path(f"/proc/{daemon}/cgroup").read_text().splitlines()
                  if line.split(":")[1] == "memory")  # fmt: skip
    cgroup = Path("/sys/fs/cgroup/memory") / memory.lstrip("/")
    usage = int((cgroup / "memory.usage_in_bytes").read_text())
    (cgroup / "memory.limit_in_bytes").write_text(str(usage + 8 * 2**20))
    restarts = statuses(pod)[SIDECAR].get("restartCount", 0) + 1
    start = time.monotonic()
    grow = cluster.kubectl("exec", "-n", "wedged", name, "-c", "agent", "--", "python", "-c", GROW, "5000", check=False)
    pod = wait_for(
        "the sidecar to be restarted and Ready again",
        lambda: sidecar_restarted(cluster, "wedged", name, restarts),
        timeout=120,
        interval=0.5,
    )
    SUMMARY["daemon OOM-killed -> restarted and Ready"] = time.monotonic() - start
    last = statuses(pod)[SIDECAR]["lastState"]["terminated"]
    assert last["reason"] == "OOMKilled", (last, grow.stderr[-2000:])
    status = json.loads(exec_in(cluster, "wedged", name, "agent", "interrupt-sidecar", "status", "--json", execution))
    assert status["execution"]["execution_id"] == execution and not status["execution"].get("cancelled"), status


# -- pod deletion: the order of shutdown, and nothing left behind -------------------
def test_pod_deletion_stops_the_agent_then_the_daemon_and_leaves_nothing(
    cluster: Cluster, agents: dict[str, Any]
) -> None:
    name = agents["metadata"]["name"]
    uid = agents["metadata"]["uid"]
    grace = agents["spec"]["terminationGracePeriodSeconds"]
    pod = cluster.get("pod", "-n", "agents", name)
    begin = exports(exec_in(cluster, "agents", name, "agent", "interrupt-sidecar", "begin"))
    marker = f"{secrets.randbelow(10**6) + 10**6}.75"
    tool = subprocess.Popen(
        [
            str(BIN / "kubectl"), "exec", "-n", "agents", name, "-c", "agent", "--",
            "env", f"INTERRUPT_SIDECAR_TOKEN={begin['INTERRUPT_SIDECAR_TOKEN']}",
            "interrupt-sidecar", "run", "--", "sh", "-c", f"setsid sleep {marker} & sleep {marker}",
        ],
        env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    wait_for("the tool tree", lambda: len(tree(marker)) == 2, 60)
    agent_pid = task_pid(cluster, container_id(pod, "agent"))
    daemon_pid = task_pid(cluster, container_id(pod, SIDECAR))
    follow = subprocess.Popen(
        [str(BIN / "kubectl"), "logs", "-f", "--timestamps", "-n", "agents", name, "-c", SIDECAR],
        env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    follow_agent = subprocess.Popen(
        [str(BIN / "kubectl"), "logs", "-f", "--timestamps", "-n", "agents", name, "-c", "agent"],
        env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    # Delete while the example agent's own tool runs (its `sleep INTERVAL/2`).
    example_tool = ["sleep", str(INTERVAL / 2)]
    wait_for("the example agent's tool", lambda: live_pids(lambda argv: argv == example_tool), 3 * INTERVAL)
    gone: dict[str, float] = {}
    try:
        start = time.monotonic()
        cluster.kubectl("delete", "pod", "-n", "agents", name, "--wait=false")
        watched: dict[str, Callable[[], bool]] = {
            "agent": lambda: not _alive(agent_pid),
            "tool tree": lambda: not tree(marker),
            "daemon": lambda: not _alive(daemon_pid),
            "pod object": lambda: cluster.kubectl("get", "pod", "-n", "agents", name, check=False).returncode != 0,
        }
        deadline = start + grace + 30
        while len(gone) < len(watched) and time.monotonic() < deadline:
            for what, check in watched.items():
                if what not in gone and check():
                    gone[what] = time.monotonic() - start
            time.sleep(0.02)
        assert len(gone) == len(watched), f"still there after {grace + 30}s: {set(watched) - set(gone)}"
    finally:
        for f in (follow, follow_agent):
            f.terminate()
        daemon_log, _ = follow.communicate(timeout=30)
        agent_log, _ = follow_agent.communicate(timeout=30)
        tool_out, _ = tool.communicate(timeout=60)
    # The daemon's own report: SIGTERM, every live execution tripped with
    # SYSTEM_SHUTDOWN (the test's own, at least), then a clean end.
    tripped = re.search(r"shutdown: tripped (\d+) execution", daemon_log)
    assert tripped and int(tripped[1]) >= 1, daemon_log
    SUMMARY["delete -> agent gone / tree gone / daemon gone / pod gone"] = " / ".join(
        f"{gone[k]:.2f} s" for k in ("agent", "tool tree", "daemon", "pod object")
    )
    assert gone["agent"] <= gone["daemon"], gone  # the native sidecar outlives the agent
    assert gone["tool tree"] <= gone["daemon"], gone
    # The agent, on SIGTERM, tripped its turn with SYSTEM_SHUTDOWN and saw its tool
    # end before it exited: the daemon, not the runtime, stopped that tool.
    assert re.search(r"agent: SIGTERM: tripped exec-\w+ tool exit -?\d+", agent_log), agent_log
    # A tool the agent leaves running in its container is the runtime's: as the
    # agent's main process exits, containerd SIGKILLs what is left in the container
    # (it shares the pod's PID namespace), so the `interrupt-sidecar run` wrapper
    # dies by SIGKILL instead of reporting the daemon's SYSTEM_SHUTDOWN trip. This
    # is why the example agent trips its own turn on SIGTERM (docs/kubernetes.md).
    assert "interrupted" not in tool_out and "137" in tool_out, tool_out
    SUMMARY["tool left running by the agent at deletion"] = "SIGKILLed by the runtime as the agent exits"
    assert gone["pod object"] < grace, gone
    assert "SIGTERM: shutting down" in daemon_log and "shutdown: done" in daemon_log, daemon_log
    # Nothing of the pod on the node: no container, no mount, no process of it.
    assert uid not in cluster.ctr("containers", "ls").stdout
    assert not [line for line in Path("/proc/self/mounts").read_text().splitlines() if uid in line]
    assert not _alive(agent_pid) and not _alive(daemon_pid) and not tree(marker)
    # The Deployment's next pod takes over: the example keeps running.
    agent_pod(cluster, "agents")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")
