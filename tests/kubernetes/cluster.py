"""A real one-node Kubernetes cluster for the e2e tests, started and stopped by PID.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kubelet are
built from their pinned releases by scripts/ensure_kubernetes.sh; containerd, runc
and the CNI plugins are Debian's (scripts/ensure_node.sh). Every server listens on
loopback (the kubelet included: the node is named ``localhost`` and the apiserver
reaches it by that Hostname address); pods get addresses on a bridge of this
machine (CNI ``bridge``, no masquerading: nothing routes out). No kube-proxy and no
cluster DNS: the tests address pods by the IPs the EndpointSlices publish.

What this VM forces (a cgroup v1 machine with a cgroup2 mount, where lowering
``oom_score_adj`` is forbidden) is set below, each with its reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "build" / "kubernetes"
BIN = K8S / "bin"
HELM = ROOT / "build" / "tools" / "helm"
NODE = "localhost"
BRIDGE = "isce2e0"
POD_SUBNET = "10.244.77.0/24"
SERVICE_RANGE = "10.96.0.0/24"
PAUSE_IMAGE = "localhost/pause:e2e"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.2) -> Any:
    """Poll check() until it returns something truthy; fail naming `what` at the deadline."""
    return eventually(check, timeout, interval, what=what)


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    log: Path


@dataclass
class Cluster:
    """The cluster's processes, files and the clients the tests drive it with."""

    dir: Path
    servers: list[Server] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    # -- clients ---------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def containerd_socket(self) -> Path:
        return self.dir / "containerd" / "containerd.sock"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{BIN}:{HELM.parent}:{os.environ['PATH']}",
            "HELM_CACHE_HOME": str(self.dir / "helm" / "cache"),
            "HELM_CONFIG_HOME": str(self.dir / "helm" / "config"),
            "HELM_DATA_HOME": str(self.dir / "helm" / "data"),
        }

    def run(self, *argv: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, env=self.env(), cwd=ROOT, check=False
        )
        if check:
            assert result.returncode == 0, (
                f"{' '.join(argv)}: exit {result.returncode}\n{result.stdout}\n{result.stderr}"
            )
        return result

    def kubectl(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(BIN / "kubectl"), *args, timeout=timeout, check=check)

    def helm(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(HELM), *args, timeout=timeout, check=check)

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("ctr", "--address", str(self.containerd_socket), "-n", "k8s.io", *args, check=check)

    def versions(self) -> str:
        def first_line(*argv: str) -> str:
            return self.run(*argv, check=False).stdout.strip().splitlines()[0]

        return ", ".join(
            (
                first_line(str(BIN / "kubelet"), "--version"),
                "etcd " + first_line(str(BIN / "etcd"), "--version").split()[-1],
                first_line("containerd", "--version").split()[2],
                first_line("runc", "--version"),
            )
        )

    def log_of(self, name: str) -> str:
        return next(s.log for s in self.servers if s.name == name).read_text(errors="replace")

    # -- start -----------------------------------------------------------------
    def _start(self, name: str, argv: list[str]) -> Server:
        log = self.dir / "logs" / f"{name}.log"
        log.parent.mkdir(exist_ok=True)
        with log.open("wb") as out:
            # A session of its own: a signal meant for the test runner's group
            # does not reach it, and it is stopped by its PID alone.
            # TZ=UTC: the tests read klog's times (which carry no zone) as UTC.
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "TZ": "UTC"}
            )
        server = Server(name, process, log)
        self.servers.append(server)
        return server

    def _alive(self, server: Server) -> None:
        if server.process.poll() is not None:
            tail = "\n".join(server.log.read_text(errors="replace").splitlines()[-30:])
            raise AssertionError(f"{server.name} exited with {server.process.returncode}:\n{tail}")

    def _wait_serving(self, server: Server, what: str, check: Callable[[], Any], timeout: float = 180) -> None:
        def ok() -> Any:
            self._alive(server)
            return check()

        start = time.monotonic()
        wait_for(what, ok, timeout, interval=0.5)
        self.timings[f"{server.name} ready"] = time.monotonic() - start

    def _pki(self) -> None:
        pki = self.dir / "pki"
        pki.mkdir()
        p = str(pki)
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=isc-e2e-ca",
                 "-keyout", f"{p}/ca.key", "-out", f"{p}/ca.crt")  # fmt: skip
        sans = (
            "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1"
        )
        for name, subject, ext in (
            ("apiserver", "/CN=kube-apiserver", f"subjectAltName={sans}"),
            # The admin's client certificate: group system:masters. The control plane's
            # components and the kubelet use it too; this one-node cluster exists for
            # the length of a test run.
            ("admin", "/O=system:masters/CN=isc-e2e-admin", "extendedKeyUsage=clientAuth"),
        ):
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                     "-keyout", f"{p}/{name}.key", "-out", f"{p}/{name}.csr")  # fmt: skip
            (pki / f"{name}.ext").write_text(ext + "\n")
            _openssl("x509", "-req", "-in", f"{p}/{name}.csr", "-CA", f"{p}/ca.crt", "-CAkey", f"{p}/ca.key",
                     "-CAcreateserial", "-days", "2", "-extfile", f"{p}/{name}.ext",
                     "-out", f"{p}/{name}.crt")  # fmt: skip
        _openssl("genrsa", "-out", f"{p}/sa.key", "2048")
        _openssl("rsa", "-in", f"{p}/sa.key", "-pubout", "-out", f"{p}/sa.pub")

    def _kubeconfig(self) -> None:
        pki = self.dir / "pki"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": f"https://127.0.0.1:{self.ports['apiserver']}",
                        "certificate-authority": str(pki / "ca.crt"),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {"client-certificate": str(pki / "admin.crt"), "client-key": str(pki / "admin.key")},
                }
            ],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
            "current-context": "e2e",
        }
        self.kubeconfig.write_text(json.dumps(config))

    def start_control_plane(self) -> None:
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kubelet", "kubelet-healthz"):
            self.ports[name] = free_port()
        self._pki()
        self._kubeconfig()
        pki = self.dir / "pki"
        etcd_url = f"http://127.0.0.1:{self.ports['etcd']}"
        peer_url = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        etcd = self._start(
            "etcd",
            [
                str(BIN / "etcd"), "--name=e2e", f"--data-dir={self.dir / 'etcd'}",
                f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=e2e={peer_url}", "--unsafe-no-fsync", "--log-level=warn",
            ],
        )  # fmt: skip
        apiserver = self._start(
            "kube-apiserver",
            [
                str(BIN / "kube-apiserver"), f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.ports['apiserver']}",
                f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--kubelet-client-certificate={pki / 'admin.crt'}", f"--kubelet-client-key={pki / 'admin.key'}",
                # The node is named localhost: the apiserver reaches the kubelet on loopback.
                "--kubelet-preferred-address-types=Hostname",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_RANGE}", "--authorization-mode=Node,RBAC",
                # The kubernetes Service's endpoints would be 127.0.0.1, which endpoint
                # validation refuses; nothing here talks to the apiserver through it.
                "--endpoint-reconciler-type=none", "--profiling=false",
            ],
        )  # fmt: skip
        self._wait_serving(etcd, "etcd", lambda: self.ports["etcd"] and _tcp_open(self.ports["etcd"]))
        self._wait_serving(
            apiserver,
            "kube-apiserver /readyz",
            lambda: self.kubectl("get", "--raw=/readyz", check=False).returncode == 0,
        )
        common = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1"]
        self._start(
            "kube-controller-manager",
            [
                str(BIN / "kube-controller-manager"), *common, f"--secure-port={self.ports['controller-manager']}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
                f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
                "--use-service-account-credentials=false",
            ],
        )  # fmt: skip
        self._start(
            "kube-scheduler",
            [
                str(BIN / "kube-scheduler"), *common, f"--secure-port={self.ports['scheduler']}",
                f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            ],
        )  # fmt: skip

    def start_containerd(self) -> None:
        base = self.dir / "containerd"
        base.mkdir()
        netd = self.dir / "net.d"
        netd.mkdir()
        # No ipMasq and no portmap: pods reach each other and this machine, nothing else.
        (netd / "10-isc-e2e.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "0.4.0",
                    "name": "isc-e2e",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": BRIDGE,
                            "isGateway": True,
                            "ipMasq": False,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": POD_SUBNET}]],
                                "dataDir": str(self.dir / "cni-ipam"),
                            },
                        }
                    ],
                }
            )
        )
        config = f"""
version = 2
# The image store is a cache kept across runs (build/); the rest is this run's.
root = "{K8S / "containerd-root"}"
state = "{base / "state"}"
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{self.containerd_socket}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  # This VM forbids lowering oom_score_adj: without this every pod sandbox fails
  # with "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{netd}"
"""
        (base / "config.toml").write_text(config)
        server = self._start("containerd", ["containerd", "--config", str(base / "config.toml")])
        self._wait_serving(server, "containerd's socket", lambda: self.ctr("version", check=False).returncode == 0)
        start = time.monotonic()
        for archive in (K8S / "pause.tar", ROOT / "build" / "image" / "interrupt-sidecar.tar"):
            self.ctr("images", "import", "--no-unpack", str(archive))
        self.timings["images imported"] = time.monotonic() - start

    def start_kubelet(self) -> None:
        pki = self.dir / "pki"
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": "127.0.0.1",
            "port": self.ports["kubelet"],
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": self.ports["kubelet-healthz"],
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": False},
                "x509": {"clientCAFile": str(pki / "ca.crt")},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "podLogsDir": str(self.dir / "pod-logs"),
            # This VM: cgroup v1 controllers (the kubelet refuses v1 unless told), no
            # systemd, no QoS cgroup hierarchy it could set up, swap as it is.
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "localStorageCapacityIsolation": False,
            "failSwapOn": False,
            # A shared machine's disk and memory are not this node's to police.
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "resolvConf": "/etc/resolv.conf",
            "syncFrequency": "5s",
            "nodeStatusUpdateFrequency": "2s",
        }
        (self.dir / "kubelet.json").write_text(json.dumps(config))
        server = self._start(
            "kubelet",
            [
                str(BIN / "kubelet"), f"--config={self.dir / 'kubelet.json'}", f"--kubeconfig={self.kubeconfig}",
                f"--root-dir={self.dir / 'kubelet'}", f"--cert-dir={self.dir / 'kubelet-pki'}",
                f"--hostname-override={NODE}", "--v=2",
            ],
        )  # fmt: skip
        self._wait_serving(server, "the node to be Ready", self._node_ready, timeout=240)

    def _node_ready(self) -> bool:
        result = self.kubectl("get", "node", NODE, "-o", "json", check=False)
        if result.returncode != 0:
            return False
        node = json.loads(result.stdout)
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
        untainted = not any(t["effect"] == "NoSchedule" for t in node["spec"].get("taints", []))
        return ready and untainted

    # -- stop ------------------------------------------------------------------
    def stop(self) -> list[str]:
        """Stop everything by PID, in reverse order, and return what was left behind."""
        problems: list[str] = []
        by_name = {s.name: s for s in self.servers}
        if "kubelet" in by_name and by_name["kubelet"].process.poll() is None:
            # Pods first, through the API, so the kubelet tears down their networks
            # and volumes; then whatever is left in containerd.
            with contextlib.suppress(Exception):
                self.kubectl("delete", "namespace", "-l", "isc-e2e=1", "--wait=false", check=False, timeout=60)
                self.kubectl("delete", "pods", "--all", "-n", "default", "--wait=false", check=False, timeout=60)
                wait_for("every pod to be gone", self._no_pods, timeout=120, interval=1)
        kubelet = by_name.get("kubelet")
        if kubelet:
            _terminate(kubelet)
        if "containerd" in by_name and by_name["containerd"].process.poll() is None:
            problems += self._remove_containers()
        for server in reversed(self.servers):
            _terminate(server)
        problems += self._cleanup_host()
        return problems

    def _no_pods(self) -> bool:
        result = self.kubectl("get", "pods", "--all-namespaces", "-o", "name", check=False)
        return result.returncode == 0 and not result.stdout.strip()

    def _remove_containers(self) -> list[str]:
        left: list[str] = []
        tasks = self.ctr("tasks", "ls", "-q", check=False).stdout.split()
        for task in tasks:
            left.append(f"containerd task {task}")
            self.ctr("tasks", "kill", "-a", "-s", "SIGKILL", task, check=False)
        for task in tasks:

            def removed(t: str = task) -> bool:
                return self.ctr("tasks", "rm", t, check=False).returncode == 0

            with contextlib.suppress(AssertionError):
                wait_for(f"task {task} to stop", removed, 10)
        for container in self.ctr("containers", "ls", "-q", check=False).stdout.split():
            self.ctr("containers", "rm", container, check=False)
        return left

    def _cleanup_host(self) -> list[str]:
        left: list[str] = []
        # Mounts: the kubelet's volumes, containerd's rootfs overlays and sandbox netns.
        prefixes = (str(self.dir), str(K8S / "containerd-root"))
        for line in reversed(Path("/proc/self/mounts").read_text().splitlines()):
            target = line.split()[1].replace("\\040", " ")
            if target.startswith(prefixes):
                # The kubelet bind-mounts its root dir on itself (to make it rshared):
                # its own mount, not one of a pod's.
                if target != str(self.dir / "kubelet"):
                    left.append(f"mount {target}")
                subprocess.run(["umount", "-l", target], check=False, capture_output=True)
        # runc's state of a CRI container (namespace k8s.io) outlives no container.
        state = Path("/run/containerd/runc/k8s.io")
        if state.is_dir():
            left += [f"runtime state {p}" for p in state.iterdir()]
        if subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True, check=False).returncode == 0:
            subprocess.run(["ip", "link", "del", BRIDGE], check=False, capture_output=True)
        return left


def _tcp_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _terminate(server: Server, timeout: float = 30) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(10)


def new_cluster_dir() -> Path:
    # Short: containerd's socket paths must fit a sockaddr_un (108 bytes).
    return Path(tempfile.mkdtemp(prefix="isc-k8s-", dir="/tmp"))


def remove_cluster_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
