"""A pod, simulated: run inside a private PID (and network) namespace made by
``unshare --pid --fork --mount-proc --net``. Not a test module: test_pod_simulation.py
renders the chart, turns the sidecar's args and the agent's env into a spec, and
runs ``python podsim.py pod SPEC`` as the namespace's PID 1.

The roles, each its own process, as the chart lays them out:

``pod``    PID 1: the pause container (reaps orphans) and the kubelet (brings up
           the pod's loopback, starts the sidecar, runs its startup probe, starts
           the agent; at deletion SIGTERMs the agent, waits, SIGTERMs the sidecar,
           waits out the grace, SIGKILLs).
``agent``  begins an execution and hands its attach token to a tool process.
``tool``   leads its own process group with a child ``sleep``, attaches
           EXTERNALLY_TERMINATED, registers its group, and records the cancel.
``grpc-probe``  the kubelet's native grpc probe: one grpc.health.v1.Health/Check
           over TCP; success only for SERVING.
``watch``  the kubelet's readiness probe, asked continuously from before the
           pod's deletion until the health listener is gone.

What this simulation leaves out, shown on a real node by tests/kubernetes: when
the agent container's main process exits, the container runtime SIGKILLs every
process left in that container. The ``tool`` here, which outlives the agent until
the sidecar's SIGTERM, stands for a tool the daemon can still reach then, such as
one in another container of the pod.

The kubelet dials the pod IP; the pod's own network namespace has only loopback
here, and the daemon binds the chart's 0.0.0.0:<port>, so the probes dial 127.0.0.1.

Everything the roles observe goes to JSON files in the spec's report directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

POLL_S = 0.005


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def _eventually(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


# -- agent and tool ------------------------------------------------------------


def agent(report: Path) -> None:
    from interrupt_sidecar_client import Coordinator

    with Coordinator() as coordinator:  # INTERRUPT_SIDECAR_ADDRESS, as the chart sets it
        turn = coordinator.begin(context_id="podsim", grace=0.5)
        tool = subprocess.Popen(
            [sys.executable, __file__, "tool", str(report)],
            env={**os.environ, **turn.tool_env()},
            start_new_session=True,  # the tool leads a process group of its own
        )
        _write(report / "agent.json", {"execution_id": turn.execution_id, "tool_pid": tool.pid})
        signal.pause()  # until the kubelet's SIGTERM (default action: exit)


def tool(report: Path) -> None:
    from interrupt_sidecar_client import InterruptBehavior, attach

    terminated: list[float] = []
    # Record the daemon's SIGTERM to the group instead of dying at once, so the
    # cancel (sent before the group is signalled) can still be written down.
    signal.signal(signal.SIGTERM, lambda *_: terminated.append(time.monotonic()))
    with attach(behavior=InterruptBehavior.EXTERNALLY_TERMINATED, tool_name="podsim-tool") as run:
        child = subprocess.Popen(["sleep", "300"])  # same group as the tool
        run.registrar.register_process_group(os.getpgid(0), kill_after=0.5)
        _write(report / "tool.json", {"pid": os.getpid(), "pgid": os.getpgid(0), "sleep_pid": child.pid})
        cancelled = run.signal.event.wait(60)
        # The cancel is written before the group is signalled, so the SIGTERM follows it
        # (within a millisecond or so); wait for it, but well before SIGKILL at kill_after.
        sigterm_by = time.monotonic() + 0.4
        while not terminated and time.monotonic() < sigterm_by:
            time.sleep(POLL_S)
        _write(
            report / "tool-cancel.json",
            {
                "cancelled": cancelled,
                "reason": run.signal.reason.name if run.signal.reason is not None else None,
                "detail": run.signal.detail,
                "sigterm": bool(terminated),
            },
        )
    child.wait()


# -- the kubelet's grpc probes ---------------------------------------------------

# No HTTP proxy from the environment: the kubelet dials the pod directly.
GRPC_OPTIONS = [("grpc.enable_http_proxy", 0)]


def grpc_probe(target: str, service: str, timeout: str) -> None:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(target, options=GRPC_OPTIONS) as channel:
        request = health_pb2.HealthCheckRequest(service=service)
        reply = health_pb2_grpc.HealthStub(channel).Check(request, timeout=float(timeout))
    print(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status), flush=True)
    sys.exit(0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1)


def watch(target: str, report: str) -> None:
    """Every distinct answer, in order, to ``readiness.json``; an RPC error (the
    listener gone) ends the watch."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    seen: list[str] = []
    deadline = time.monotonic() + 60
    with grpc.insecure_channel(target, options=GRPC_OPTIONS) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                answer = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            except grpc.RpcError as err:
                answer = err.code().name
            if not seen or seen[-1] != answer:
                seen.append(answer)
                _write(Path(report) / "readiness.json", {"seen": seen})
            if answer not in ("SERVING", "NOT_SERVING"):
                return
            time.sleep(POLL_S)


# -- the pod ---------------------------------------------------------------------


class Pod:
    """PID 1: spawns processes as the pod's uid and reaps every child, orphans included."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.report = Path(spec["report"])
        self.exits: dict[int, tuple[int, float]] = {}  # pid → (status, monotonic time)
        self.events: list[tuple[float, str]] = []
        self.t0 = time.monotonic()

    def log(self, what: str) -> None:
        self.events.append((round(time.monotonic() - self.t0, 4), what))

    def spawn(self, argv: list[str], env: dict[str, str], name: str) -> int:
        out = open(self.report / f"{name}.out", "w")  # noqa: SIM115 - the child owns it
        err = open(self.report / f"{name}.err", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            argv,
            env=env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            user=self.spec["uid"],
            group=self.spec["gid"],
            extra_groups=[],
            cwd="/",
        )
        proc.returncode = 0  # reaped below with waitpid(-1), not by Popen
        out.close()
        err.close()
        self.log(f"started {name} pid {proc.pid}")
        return proc.pid

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.exits[pid] = (os.waitstatus_to_exitcode(status), time.monotonic())

    def exited(self, pid: int) -> bool:
        self.reap()
        return pid in self.exits

    def settled(self) -> bool:
        """Every child reaped and nothing but PID 1 left."""
        self.reap()
        return not self.alive()

    def wait(self, pid: int, timeout: float) -> bool:
        return _eventually(lambda: self.exited(pid), timeout)

    @staticmethod
    def alive(pgid: int | None = None) -> list[dict[str, Any]]:
        """Live (non-zombie) processes other than PID 1, optionally of one group."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or entry == "1":
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            state, group = fields[0], int(fields[2])
            if state in "ZX" or (pgid is not None and group != pgid):
                continue
            found.append({"pid": int(entry), "pgid": group, "state": state, "cmdline": cmdline})
        return found

    def run(self) -> dict[str, Any]:
        spec = self.spec
        result: dict[str, Any] = {}
        # A new network namespace starts with loopback down: the probes and the
        # metrics scrape need it, as a pod's sandbox has it up.
        lo = subprocess.run(["ip", "link", "set", "lo", "up"], capture_output=True, text=True, timeout=5, check=False)
        if lo.returncode != 0:
            result["error"] = f"cannot bring up the pod's loopback: {lo.stderr}"
            return result
        daemon = self.spawn(spec["daemon"]["argv"], spec["daemon"]["env"], "daemon")
        ready = _eventually(
            lambda: (self.report / "daemon.out").read_text().startswith("ready ") or self.exited(daemon), 20
        )
        result["daemon_ready_line"] = (self.report / "daemon.out").read_text().strip()
        if not ready or self.exited(daemon):
            return result
        self.log("daemon ready")
        # The kubelet's startup probe, exactly as the chart renders it.
        as_pod = {"user": spec["uid"], "group": spec["gid"], "extra_groups": []}
        grpc_target = None
        if spec["probe"]["kind"] == "grpc":
            grpc_target = f"127.0.0.1:{spec['probe']['port']}"
            argv = [sys.executable, __file__, "grpc-probe", grpc_target, spec["probe"]["service"]]
            argv.append(str(spec["probe"]["timeout"]))
        else:
            argv = spec["probe"]["argv"]
        probe = subprocess.run(argv, capture_output=True, text=True, timeout=15, check=False, **as_pod)
        result["probe"] = {"returncode": probe.returncode, "stdout": probe.stdout, "stderr": probe.stderr[-2000:]}
        self.log("startup probe done")
        agent_pid = self.spawn(spec["agent"]["argv"], spec["agent"]["env"], "agent")
        registered = _eventually(lambda: (self.report / "tool.json").exists() or self.exited(agent_pid), 20)
        if not registered or self.exited(agent_pid):
            result["error"] = "the tool never registered its process group"
            return result
        tool_info = json.loads((self.report / "tool.json").read_text())
        pgid = tool_info["pgid"]
        result["tool_group_before"] = self.alive(pgid)
        self.log("tool registered")
        if spec.get("metrics_port"):
            url = f"http://127.0.0.1:{spec['metrics_port']}/metrics"
            direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy from the env
            try:
                result["metrics"] = direct.open(url, timeout=5).read().decode()
            except OSError as err:
                result["metrics"] = f"scrape failed: {err!r}"
        watcher = None
        if grpc_target is not None:
            # The readiness probe through the deletion: from SERVING on.
            watcher = self.spawn(
                [sys.executable, __file__, "watch", grpc_target, str(self.report)], spec["daemon"]["env"], "watch"
            )
            if not _eventually(lambda: (self.report / "readiness.json").exists() or self.exited(watcher), 20):
                result["error"] = "the readiness watch never answered"
                return result
        # Pod deletion, the kubelet's way: a native sidecar is stopped after the main
        # containers have exited; classic containers are all stopped at once.
        start = time.monotonic()
        os.kill(agent_pid, signal.SIGTERM)
        self.log("SIGTERM agent")
        if spec["mode"] == "native":
            if not self.wait(agent_pid, spec["agent_shutdown_s"]):
                os.kill(agent_pid, signal.SIGKILL)
                self.wait(agent_pid, 5)
            self.log("agent exited")
        os.kill(daemon, signal.SIGTERM)
        self.log("SIGTERM sidecar")
        group_gone_at: float | None = None
        deadline = start + spec["termination_grace_s"]
        while time.monotonic() < deadline:
            if group_gone_at is None and not self.alive(pgid):
                group_gone_at = time.monotonic()
                self.log("tool group gone")
            if self.exited(daemon):
                # At the instant the daemon is seen gone, nothing of the tool may live.
                result["tool_group_at_daemon_exit"] = self.alive(pgid)
                break
            time.sleep(POLL_S)
        else:
            self.log("grace over: SIGKILL")
        daemon_exit = self.exits.get(daemon)
        result["daemon_exit_code"] = daemon_exit[0] if daemon_exit else None
        self.log("sidecar exited" if daemon_exit else "sidecar still running")
        result["group_gone_before_daemon_exit"] = (
            group_gone_at is not None and daemon_exit is not None and group_gone_at <= daemon_exit[1]
        )
        result["shutdown_seconds"] = round((daemon_exit[1] if daemon_exit else time.monotonic()) - start, 3)
        if watcher is not None and not self.wait(watcher, 5):
            self.log("the readiness watch did not end")
        _eventually(self.settled, 1.0)
        result["survivors"] = self.alive()  # what the kubelet's SIGKILL would have to take
        for proc in result["survivors"]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc["pid"], signal.SIGKILL)
        _eventually(self.settled, 5.0)
        result["after_sigkill"] = self.alive()
        return result


def pod(spec_path: Path) -> None:
    spec = json.loads(spec_path.read_text())
    the_pod = Pod(spec)
    try:
        result = the_pod.run()
    except Exception:
        result = {"error": traceback.format_exc()}
    finally:
        for pid in [int(p["pid"]) for p in Pod.alive()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    result["events"] = the_pod.events
    _write(Path(spec["report"]) / "pod.json", result)


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    if role == "grpc-probe":
        grpc_probe(*args)
    elif role == "watch":
        watch(*args)
    else:
        {"pod": pod, "agent": agent, "tool": tool}[role](Path(args[0]))
