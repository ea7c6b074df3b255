"""Helpers for the chart tests: the pinned Helm binary, rendering, and finding
things in the rendered objects."""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "interrupt-sidecar"
HELM = ROOT / "build" / "tools" / "helm"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
ALERTS = ROOT / "observability" / "prometheus" / "alerts.yaml"
DASHBOARD = ROOT / "observability" / "grafana" / "interrupt-sidecar.json"
RELEASE = "demo"
NAMESPACE = "agents"
SIDECAR = "interrupt-sidecar"  # the sidecar container's name (values: sidecar.name)

Doc = dict[str, Any]


class RenderError(Exception):
    """``helm template`` refused the values; the message is Helm's stderr."""


def helm(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    if not HELM.exists():
        raise RuntimeError(f"{HELM} is missing: run `make install-test` (it runs scripts/ensure_helm.sh)")
    return subprocess.run([str(HELM), *args], capture_output=True, text=True, timeout=timeout, check=False)


@functools.cache
def _template(args: tuple[str, ...]) -> str:
    result = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *args)
    if result.returncode != 0:
        raise RenderError(result.stderr)
    return result.stdout


def _args(values_files: Iterable[Path], set_values: Mapping[str, object], extra: Iterable[str]) -> tuple[str, ...]:
    args: list[str] = []
    for path in values_files:
        args += ["--values", str(path)]
    for key, value in set_values.items():
        args += ["--set-json", f"{key}={json.dumps(value)}"]
    return (*args, *extra)


def render(*values_files: Path, extra: Iterable[str] = (), **set_values: Any) -> list[Doc]:
    """The chart's objects for these values files and ``--set`` pairs (keys with
    dots are passed as ``a__b`` → ``a.b``)."""
    pairs = {key.replace("__", "."): value for key, value in set_values.items()}
    text = _template(_args(values_files, pairs, extra))
    return [doc for doc in yaml.safe_load_all(text) if doc]


def render_error(*values_files: Path, extra: Iterable[str] = (), **set_values: Any) -> str:
    """Helm's error for values that must be refused (fails the test if they render)."""
    try:
        render(*values_files, extra=extra, **set_values)
    except RenderError as err:
        return str(err)
    raise AssertionError(f"helm template accepted {values_files} {set_values}")


def find(docs: Iterable[Doc], kind: str, name_suffix: str = "") -> Doc:
    matches = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(name_suffix)]
    assert len(matches) == 1, f"expected one {kind} *{name_suffix}, got {[d['metadata']['name'] for d in matches]}"
    return matches[0]


def kinds(docs: Iterable[Doc]) -> set[str]:
    return {d["kind"] for d in docs}


def pod_specs(docs: Iterable[Doc]) -> Iterator[tuple[str, Doc]]:
    """(object name, pod spec) for every pod-bearing object: workloads and the test pod."""
    for doc in docs:
        if doc["kind"] == "Pod":
            yield doc["metadata"]["name"], doc["spec"]
        elif doc["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]


def container(spec: Doc, name: str) -> Doc:
    everything = [*(spec.get("initContainers") or []), *spec["containers"]]
    matches: list[Doc] = [c for c in everything if c["name"] == name]
    assert len(matches) == 1, f"no single container {name!r} in {[c['name'] for c in everything]}"
    return matches[0]


def sidecar(spec: Doc) -> Doc:
    return container(spec, SIDECAR)


def agents(spec: Doc) -> list[Doc]:
    """The pod's other (main) containers."""
    return [c for c in spec["containers"] if c["name"] != SIDECAR]


def arg(c: Doc, flag: str) -> list[str]:
    """Values of ``--flag=value`` in the container's args (repeatable flags give several)."""
    return [a.split("=", 1)[1] for a in c.get("args", []) if a.startswith(flag + "=")]


def env(c: Doc) -> dict[str, Doc]:
    return {e["name"]: e for e in c.get("env") or []}


def mounts(c: Doc) -> dict[str, str]:
    """volume name → mount path."""
    return {m["name"]: m["mountPath"] for m in c.get("volumeMounts") or []}


def volumes(spec: Doc) -> dict[str, Doc]:
    return {v["name"]: v for v in spec.get("volumes") or []}
