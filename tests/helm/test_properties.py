"""Properties of the rendered objects: the pod layout the daemon needs, least
privilege, probes, the shutdown budget, monitoring gated on values, and a strict
values schema."""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from interrupt_sidecar.cli import build_parser
from interrupt_sidecar.config import ListenAddress, ServeConfig, build_serve_config

from tests.helm.chart import (
    ALERTS,
    CHART,
    CI_VALUES,
    DASHBOARD,
    RELEASE,
    Doc,
    agents,
    arg,
    container,
    env,
    find,
    helm,
    kinds,
    mounts,
    pod_specs,
    render,
    render_error,
    sidecar,
    volumes,
)

CI = {p.name.removesuffix("-values.yaml"): p for p in CI_VALUES}
SOCKET_VOLUME = "interrupt-sidecar-socket"
# Flags the chart renders for daemon features still being built: --auth-token-file (issue 8).
PENDING_FLAGS = ("--auth-token-file",)


def _pods(*values: Path, **set_values: Any) -> list[tuple[str, Doc]]:
    pods = list(pod_specs(render(*values, **set_values)))
    assert {name.split("-test-")[0] for name, _ in pods} == {f"{RELEASE}-interrupt-sidecar"}
    assert len(pods) == 2  # the example Deployment and the helm test pod
    return pods


@pytest.mark.parametrize("name", sorted(CI))
def test_every_pod_shares_its_pid_namespace_and_socket(name: str) -> None:
    for _, spec in _pods(CI[name]):
        assert spec["shareProcessNamespace"] is True
        side = sidecar(spec)
        socket_dir = mounts(side)[SOCKET_VOLUME]
        assert "emptyDir" in volumes(spec)[SOCKET_VOLUME]
        (listen_unix,) = [a for a in arg(side, "--listen") if a.startswith("unix://")]
        assert listen_unix.startswith(f"unix://{socket_dir}/")
        # The socket sits one directory below the emptyDir: the daemon refuses a
        # socket directory it does not own that others may write to (emptyDir is 0777, root's).
        assert Path(listen_unix.removeprefix("unix://")).parent != Path(socket_dir)
        for agent in agents(spec):
            assert mounts(agent)[SOCKET_VOLUME] == socket_dir
            assert env(agent)["INTERRUPT_SIDECAR_ADDRESS"]["value"] == listen_unix


def test_native_sidecar_layout() -> None:
    for _, spec in _pods(CI["native"]):
        (init,) = spec["initContainers"]
        assert init["name"] == "interrupt-sidecar"
        assert init["restartPolicy"] == "Always"
        assert "startupProbe" in init  # the agent starts only once the daemon serves
        assert all(c["name"] != "interrupt-sidecar" for c in spec["containers"])


def test_classic_sidecar_layout() -> None:
    for _, spec in _pods(CI["classic"]):
        assert not spec.get("initContainers")
        side = container(spec, "interrupt-sidecar")
        assert side in spec["containers"]
        assert "restartPolicy" not in side


@pytest.mark.parametrize("name", sorted(CI))
def test_least_privilege(name: str) -> None:
    for _, spec in _pods(CI[name]):
        pod_sc = spec["securityContext"]
        assert pod_sc["runAsNonRoot"] is True
        assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"}
        side = sidecar(spec)
        sc = side["securityContext"]
        # Nothing added: KILL is inert for a non-root uid (tests/kubernetes measures it).
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["runAsNonRoot"] is True
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
        for agent in agents(spec):
            asc = agent["securityContext"]
            # Same uid as the daemon: the socket is 0600 and the daemon only kills its uid's groups.
            assert asc["runAsUser"] == sc["runAsUser"] == pod_sc["runAsUser"]
            assert asc["capabilities"] == {"drop": ["ALL"]}
            assert asc["allowPrivilegeEscalation"] is False


def test_state_dir_on_its_own_volume() -> None:
    for _, spec in _pods(CI["native"]):
        side = sidecar(spec)
        (state_dir,) = arg(side, "--state-dir")
        by_path = {path: name for name, path in mounts(side).items()}
        assert by_path[state_dir] not in (SOCKET_VOLUME,)
        assert by_path[state_dir] in volumes(spec)


def test_state_volume_is_configurable() -> None:
    docs = render(
        sidecar__stateVolume__persistentVolumeClaim__claimName="journal",
        extra=("--set", "sidecar.stateVolume.emptyDir=null"),
    )
    spec = dict(pod_specs(docs))[f"{RELEASE}-interrupt-sidecar"]
    assert volumes(spec)["interrupt-sidecar-state"] == {
        "name": "interrupt-sidecar-state",
        "persistentVolumeClaim": {"claimName": "journal"},
    }


def _serve_config(side: Doc, volume: Path) -> ServeConfig:
    """The sidecar's args through the daemon's own parser and config checks. Only
    the flags still being built may be unknown to the parser."""
    args, unknown = build_parser().parse_known_args(side["args"])
    assert {u.split("=", 1)[0] for u in unknown} <= set(PENDING_FLAGS), unknown
    assert args.func.__name__ == "_serve"
    env = {}
    if arg(side, "--auth-token-file"):
        # The rendered path is in the Secret's volume: a stand-in token file takes its
        # place, through the flag's environment twin (read once the daemon knows the flag).
        token = volume / "token"
        token.write_text(secrets.token_urlsafe(32))
        env["INTERRUPT_SIDECAR_AUTH_TOKEN_FILE"] = str(token)
    return build_serve_config(
        listen=args.listen,
        metrics_listen=args.metrics_listen,
        state_dir=args.state_dir,
        grace=args.grace,
        loop=args.loop,
        allow_insecure_tcp=args.allow_insecure_tcp,
        shutdown_timeout=args.shutdown_timeout,
        log_level=args.log_level,
        env=env,
        allow_uids=args.allow_uid,
        holder_grace=args.holder_grace,
        health_listen=args.health_listen,
    )


@pytest.mark.parametrize("name", sorted(CI))
def test_daemon_accepts_the_rendered_arguments(name: str, tmp_path: Path) -> None:
    """The sidecar's args go through the daemon's own parser and config checks."""
    for _, spec in _pods(CI[name]):
        side = sidecar(spec)
        config = _serve_config(side, tmp_path)
        assert config.grace_ns == 500_000_000
        assert config.shutdown_timeout_ns == 10_000_000_000
        # The health-only listener on every address, where the kubelet dials the pod IP.
        assert config.health_listen == ListenAddress(host="0.0.0.0", port=9465)
        tcp = [a for a in config.listen if not a.is_unix]
        assert tcp == ([ListenAddress(host="0.0.0.0", port=50051)] if name == "tcp-token" else [])
        # Only the full-API TCP listener needs --allow-insecure-tcp (and the token);
        # the health listener off loopback is accepted without it.
        assert ("--allow-insecure-tcp" in side["args"]) == bool(tcp)
        assert bool(arg(side, "--auth-token-file")) == bool(tcp)


def test_daemon_accepts_the_exec_fallback_arguments(tmp_path: Path) -> None:
    for _, spec in _pods(sidecar__probes__mode="exec"):
        config = _serve_config(sidecar(spec), tmp_path)
        assert config.health_listen is None
        assert all(a.is_unix for a in config.listen)


def test_durations_render_in_the_daemons_format() -> None:
    spec = dict(_pods(sidecar__graceSeconds=1.5, sidecar__shutdownTimeoutSeconds=7))[f"{RELEASE}-interrupt-sidecar"]
    assert arg(sidecar(spec), "--grace") == ["1500ms"]
    assert arg(sidecar(spec), "--shutdown-timeout") == ["7000ms"]


PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def _ports(side: Doc) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for p in side.get("ports") or []}


def _assert_native_grpc_probes(side: Doc, port: int) -> None:
    """Kubernetes' grpc probes, all on the health-only listener the args open."""
    assert arg(side, "--health-listen") == [f"0.0.0.0:{port}"]
    assert _ports(side)["health"] == port
    for probe in PROBES:
        assert "exec" not in side[probe]
        assert side[probe]["grpc"] == {"port": port}  # service "": the daemon's overall health


@pytest.mark.parametrize("name", sorted(CI))
def test_probes_are_native_grpc_probes_on_the_health_listener(name: str) -> None:
    for _, spec in _pods(CI[name]):
        side = sidecar(spec)
        _assert_native_grpc_probes(side, 9465)
        # Not the full API: with TCP on, probes still avoid the token-guarded port.
        assert 50051 not in {side[probe]["grpc"]["port"] for probe in PROBES}


def test_health_port_is_configurable() -> None:
    for _, spec in _pods(sidecar__health__port=8086):
        _assert_native_grpc_probes(sidecar(spec), 8086)


def test_exec_probe_fallback_asks_over_the_socket_and_opens_no_port() -> None:
    for _, spec in _pods(sidecar__probes__mode="exec"):
        side = sidecar(spec)
        (address,) = [a for a in arg(side, "--listen") if a.startswith("unix://")]
        assert arg(side, "--health-listen") == []
        assert "health" not in _ports(side)
        for probe in PROBES:
            assert "grpc" not in side[probe]
            command = side[probe]["exec"]["command"]
            assert command[:2] == ["python", "-c"]
            assert "grpc.health.v1" in command[2].replace("grpc_health.v1", "grpc.health.v1")
            assert command[3] == address
    for _, spec in _pods(CI["tcp-token"], sidecar__probes__mode="exec"):
        # With TCP on, the exec probe passes the token the daemon requires.
        side = sidecar(spec)
        assert side["livenessProbe"]["exec"]["command"][5] == arg(side, "--auth-token-file")[0]


def test_tcp_listener_beside_the_health_listener() -> None:
    for _, spec in _pods(CI["tcp-token"]):
        side = sidecar(spec)
        assert "0.0.0.0:50051" in arg(side, "--listen")
        assert "--allow-insecure-tcp" in side["args"]
        assert _ports(side) == {"grpc": 50051, "health": 9465, "metrics": 9464}


def test_tcp_token_comes_from_a_secret() -> None:
    docs = render(CI["tcp-token"])
    secret = find(docs, "Secret")
    (key,) = secret["data"]
    spec = find(docs, "Deployment")["spec"]["template"]["spec"]
    side = sidecar(spec)
    (token_file,) = arg(side, "--auth-token-file")
    secret_volume = volumes(spec)["interrupt-sidecar-auth"]["secret"]
    assert secret_volume["secretName"] == secret["metadata"]["name"]
    assert token_file == f"{mounts(side)['interrupt-sidecar-auth']}/{key}"
    (agent,) = agents(spec)
    ref = env(agent)["INTERRUPT_SIDECAR_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": secret["metadata"]["name"], "key": key}
    service = find(docs, "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "grpc"


def test_existing_secret_is_used_and_none_created() -> None:
    docs = render(CI["tcp-token"], sidecar__auth__existingSecret="agents-token", sidecar__auth__secretKey="bearer")
    assert "Secret" not in kinds(docs)
    spec = find(docs, "Deployment")["spec"]["template"]["spec"]
    (agent,) = agents(spec)
    ref = env(agent)["INTERRUPT_SIDECAR_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "agents-token", "key": "bearer"}
    assert arg(sidecar(spec), "--auth-token-file") == ["/var/run/secrets/interrupt-sidecar/bearer"]


def test_termination_grace_covers_the_shutdown_budget() -> None:
    spec = dict(_pods(CI["native"]))[f"{RELEASE}-interrupt-sidecar"]
    assert spec["terminationGracePeriodSeconds"] == 30
    # native: 10 (agent) + 0.5 + 10 + 2 = 22.5
    message = render_error(CI["native"], terminationGracePeriodSeconds=22)
    assert "terminationGracePeriodSeconds (22) must exceed 22.5 s" in message
    assert "agentShutdownSeconds" in message
    render(CI["native"], terminationGracePeriodSeconds=23)
    # classic: the agent and the daemon are signalled together: 0.5 + 10 + 2 = 12.5
    render(CI["classic"], terminationGracePeriodSeconds=13)
    message = render_error(CI["classic"], terminationGracePeriodSeconds=12)
    assert "terminationGracePeriodSeconds (12) must exceed 12.5 s" in message
    # A longer grace needs a longer period.
    assert "must exceed" in render_error(CI["native"], sidecar__graceSeconds=9)


def test_invalid_combinations_are_refused_with_a_reason() -> None:
    assert "must be at least sidecar.graceSeconds" in render_error(
        sidecar__graceSeconds=5, sidecar__shutdownTimeoutSeconds=2
    )
    assert "needs sidecar.auth.enabled" in render_error(sidecar__tcp__enabled=True)
    # grpc probes need no TCP API listener: the health-only listener serves them.
    render(sidecar__probes__mode="grpc", sidecar__tcp__enabled=False)
    for message in (
        render_error(CI["tcp-token"], sidecar__metrics__port=9465),
        render_error(CI["tcp-token"], sidecar__tcp__port=9465),
    ):
        assert "sidecar.health.port" in message and "are both 9465" in message
    # Without the health listener (exec probes) its port is free for the others.
    render(sidecar__probes__mode="exec", sidecar__metrics__port=9465)
    message = render_error(extra=("--kube-version", "1.28.0"))
    assert "use sidecar.mode=classic" in message
    render(CI["classic"], extra=("--kube-version", "1.28.0"))
    assert "nothing to scrape" in render_error(monitoring__podMonitor__enabled=True, sidecar__metrics__enabled=False)


MONITORING = {"PodMonitor", "PrometheusRule"}


def test_monitoring_objects_only_when_enabled() -> None:
    for name in ("native", "classic", "tcp-token"):
        docs = render(CI[name])
        assert not kinds(docs) & MONITORING
        assert not [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")]
    docs = render(CI["monitoring"])
    assert kinds(docs) >= MONITORING
    find(docs, "ConfigMap", "-dashboard")
    # Each switch on its own.
    only_rule = render(monitoring__prometheusRule__enabled=True)
    assert kinds(only_rule) & MONITORING == {"PrometheusRule"}


def test_prometheus_rule_is_the_projects_rules_file() -> None:
    rule = find(render(CI["monitoring"]), "PrometheusRule")
    assert rule["spec"] == {"groups": yaml.safe_load(ALERTS.read_text())["groups"]}
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_dashboard_configmap_carries_the_dashboard_unchanged() -> None:
    cm = find(render(CI["monitoring"]), "ConfigMap", "-dashboard")
    (key,) = cm["data"]
    assert key.endswith(".json")
    assert cm["data"][key] == DASHBOARD.read_text()
    json.loads(cm["data"][key])
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"


def test_pod_monitor_scrapes_the_metrics_port() -> None:
    docs = render(CI["monitoring"])
    monitor = find(docs, "PodMonitor")
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    spec = find(docs, "Deployment")["spec"]["template"]
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= spec["metadata"]["labels"].items()
    ports = {p["name"]: p["containerPort"] for p in sidecar(spec["spec"])["ports"]}
    assert endpoint["port"] in ports
    assert arg(sidecar(spec["spec"]), "--metrics-listen") == [f"0.0.0.0:{ports[endpoint['port']]}"]


def test_monitoring_files_are_single_sourced() -> None:
    for name, target in (("alerts.yaml", ALERTS), ("interrupt-sidecar.json", DASHBOARD)):
        link = CHART / "files" / name
        assert link.is_symlink(), f"{link} must link to {target}, not copy it"
        assert link.resolve() == target.resolve()


@pytest.mark.parametrize(
    "key",
    [
        "bogus",
        "image.bogus",
        "sidecar.bogus",
        "sidecar.tcp.service.bogus",
        "sidecar.probes.liveness.bogus",
        "sidecar.metrics.bogus",
        "sidecar.health.bogus",
        "monitoring.podMonitor.bogus",
        "monitoring.dashboard.bogus",
        "example.agent.bogus",
        "serviceAccount.bogus",
        "tests.bogus",
    ],
)
def test_values_schema_rejects_unknown_keys(key: str) -> None:
    result = helm("template", "x", str(CHART), "--set", f"{key}=1")
    assert result.returncode != 0
    assert "additional properties 'bogus' not allowed" in result.stderr


def test_values_schema_declares_global() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert "global" in schema["properties"] and schema["additionalProperties"] is False
    render(extra=("--set", "global.imageRegistry=registry.example"))


def test_values_schema_checks_types_and_enums() -> None:
    for key, value in (
        ("sidecar.mode", "sideways"),
        ("sidecar.graceSeconds", "-1"),
        ("sidecar.probes.mode", "tcp"),
        ("sidecar.probes.mode", "auto"),
        ("sidecar.health.port", "0"),
        ("sidecar.health.port", "65536"),
    ):
        result = helm("template", "x", str(CHART), "--set", f"{key}={value}")
        assert result.returncode != 0, key


def test_injection_into_a_parent_chart(tmp_path: Path) -> None:
    """The named templates inject the sidecar into someone else's StatefulSet."""
    parent = tmp_path / "agent-app"
    shutil.copytree(Path(__file__).parent / "fixtures" / "agent-app", parent)
    (parent / "charts").mkdir()
    (parent / "charts" / "interrupt-sidecar").symlink_to(CHART)
    result = helm("template", "prod", str(parent), "--namespace", "agents")
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    sts = find(docs, "StatefulSet")
    spec = sts["spec"]["template"]["spec"]
    assert spec["shareProcessNamespace"] is True
    (init,) = spec["initContainers"]
    assert init["name"] == "interrupt-sidecar" and init["restartPolicy"] == "Always"
    agent = container(spec, "coder")
    assert env(agent)["INTERRUPT_SIDECAR_ADDRESS"]["value"] == "unix:///run/interrupt-sidecar/sock/sidecar.sock"
    assert env(agent)["OPENAI_BASE_URL"]["value"]  # the parent's own settings survive
    assert mounts(agent)[SOCKET_VOLUME] == "/run/interrupt-sidecar"
    assert set(volumes(spec)) >= {SOCKET_VOLUME, "interrupt-sidecar-state", "workspace"}
    assert spec["terminationGracePeriodSeconds"] == 60
    # The subchart's own example workload is off; its PodMonitor finds the parent's pods.
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"] == []
    monitor = find(docs, "PodMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= sts["spec"]["template"]["metadata"]["labels"].items()
    kubernetes_validate.validate(sts, "1.29.0", strict=True)
