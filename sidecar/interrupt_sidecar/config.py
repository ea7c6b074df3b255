"""The daemon's configuration: one frozen object, built from flags over environment over defaults."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from interrupt_sidecar.errors import InvalidArgument

ENV_PREFIX = "INTERRUPT_SIDECAR_"
DEFAULT_GRACE = "500ms"
LOOPS = ("auto", "uvloop", "asyncio")
LoopName = Literal["auto", "uvloop", "asyncio"]

_DURATION = re.compile(r"(?P<value>\d+(?:\.\d+)?)(?P<unit>ns|us|µs|ms|s|m|h)")
_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}
_UNIT_NS["h"] = 60 * _UNIT_NS["m"]


class ConfigError(InvalidArgument):
    """A flag or environment variable has a value the daemon cannot use."""


def parse_duration(text: str, name: str) -> int:
    """'500ms', '2s', '1.5s', '1m30s' → nanoseconds."""
    pos, total = 0, 0
    text = text.strip()
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += int(float(match["value"]) * _UNIT_NS[match["unit"]])
        pos = match.end()
    if not text or pos != len(text):
        raise ConfigError(f"{name}: {text!r} is not a duration (examples: 500ms, 2s, 1m30s)")
    return total


@dataclass(frozen=True, slots=True)
class ListenAddress:
    """Where to serve gRPC: a unix socket path, or a TCP host and port."""

    unix_path: Path | None = None
    host: str = ""
    port: int = 0

    @property
    def is_unix(self) -> bool:
        return self.unix_path is not None

    @property
    def is_loopback(self) -> bool:
        if self.is_unix:
            return True
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def grpc_target(self, port: int | None = None) -> str:
        """The address as gRPC spells it (with the bound port once known)."""
        if self.unix_path is not None:
            return f"unix://{self.unix_path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port if port is None else port}"


def parse_listen(text: str) -> ListenAddress:
    """``unix:///abs/path.sock`` (or ``unix:/abs/path``) or ``HOST:PORT`` / ``[V6]:PORT``."""
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if path.startswith("//"):
            path = path[2:]
        if not path.startswith("/"):
            raise ConfigError(f"--listen {text!r}: a unix socket needs an absolute path, e.g. unix:///run/x.sock")
        if len(path.encode()) > 107:
            raise ConfigError(f"--listen {text!r}: unix socket paths are limited to 107 bytes")
        return ListenAddress(unix_path=Path(path))
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"--listen {text!r} is neither unix:///path nor HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return ListenAddress(host=host, port=int(port_text))


def default_socket_path(env: Mapping[str, str]) -> Path:
    """``$XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock``, else a per-uid dir under /tmp."""
    runtime_dir = env.get("XDG_RUNTIME_DIR")
    base = Path(runtime_dir) if runtime_dir else Path(f"/tmp/interrupt-sidecar-{os.getuid()}")
    if runtime_dir:
        base = base / "interrupt-sidecar"
    return base / "sidecar.sock"


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Everything ``interrupt-sidecar serve`` runs with. Frozen: read once at start."""

    listen: tuple[ListenAddress, ...]
    metrics_listen: ListenAddress | None
    state_dir: Path | None
    grace_ns: int
    loop: LoopName
    allow_insecure_tcp: bool = False
    shutdown_timeout_ns: int = 10_000_000_000
    log_level: str = "INFO"
    #: Extra uids whose process groups tools may hand over (the daemon's own uid always may).
    allow_uids: frozenset[int] = frozenset()
    #: After a restart, how long a held execution without a lease waits for its holder.
    holder_grace_ns: int = 10_000_000_000
    #: A TCP address serving only grpc.health.v1 (Kubernetes' grpc probes), on any host.
    health_listen: ListenAddress | None = None
    #: The coordinator role's bearer token, required on TCP listeners (``--auth-token-file``).
    auth_token: str | None = field(default=None, repr=False)
    #: TLS for TCP listeners: certificate chain and key (PEM bytes), and the CA whose client
    #: certificates are required (mTLS) — a verified client certificate grants the coordinator role.
    tls_cert: bytes | None = field(default=None, repr=False)
    tls_key: bytes | None = field(default=None, repr=False)
    tls_client_ca: bytes | None = field(default=None, repr=False)
    #: How long a remote parent's daemon may stay unreachable before its children trip.
    remote_parent_timeout_ns: int = 10_000_000_000
    #: The cancel doorbell's unix socket (``--doorbell``), or None for none.
    doorbell: Path | None = None

    @property
    def mtls(self) -> bool:
        return self.tls_client_ca is not None


def build_serve_config(
    *,
    listen: list[str] | None,
    metrics_listen: str | None,
    state_dir: str | None,
    grace: str | None,
    loop: str | None,
    allow_insecure_tcp: bool | None,
    shutdown_timeout: str | None,
    log_level: str | None,
    env: Mapping[str, str],
    allow_uids: list[str] | None = None,
    holder_grace: str | None = None,
    health_listen: str | None = None,
    auth_token_file: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    tls_client_ca: str | None = None,
    remote_parent_timeout: str | None = None,
    doorbell: str | None = None,
) -> ServeConfig:
    """Resolve each setting: flag, else ``INTERRUPT_SIDECAR_*`` variable, else default.
    Refuses values and combinations the daemon cannot run with."""

    def pick(flag: str | None, name: str, default: str) -> str:
        return flag if flag is not None else env.get(ENV_PREFIX + name, default)

    listen_texts = listen if listen else [s for s in env.get(ENV_PREFIX + "LISTEN", "").split(",") if s.strip()]
    addresses = (
        tuple(parse_listen(s.strip()) for s in listen_texts)
        if listen_texts
        else (ListenAddress(unix_path=default_socket_path(env)),)
    )
    insecure = (
        allow_insecure_tcp
        if allow_insecure_tcp is not None
        else env.get(ENV_PREFIX + "ALLOW_INSECURE_TCP", "").lower() in ("1", "true", "yes")
    )
    token_path = pick(auth_token_file, "AUTH_TOKEN_FILE", "")
    token = _read_secret(token_path, "--auth-token-file").decode().strip() if token_path else None
    if token is not None and len(token) < 16:
        raise ConfigError(f"--auth-token-file {token_path}: the token is {len(token)} characters; use at least 16")
    cert = _read_secret(p, "--tls-cert") if (p := pick(tls_cert, "TLS_CERT", "")) else None
    key = _read_secret(p, "--tls-key") if (p := pick(tls_key, "TLS_KEY", "")) else None
    client_ca = _read_secret(p, "--tls-client-ca") if (p := pick(tls_client_ca, "TLS_CLIENT_CA", "")) else None
    if (cert is None) != (key is None):
        raise ConfigError("--tls-cert and --tls-key go together")
    if client_ca is not None and cert is None:
        raise ConfigError("--tls-client-ca (mTLS) needs the server's own --tls-cert and --tls-key")
    for address in addresses:
        if address.is_unix:
            continue
        if token is None and client_ca is None:
            raise ConfigError(
                f"--listen {address.grpc_target()}: a TCP listener needs authentication; give the coordinator "
                "role a bearer token (--auth-token-file) or require client certificates (--tls-client-ca)"
            )
        if cert is None and not address.is_loopback and not insecure:
            raise ConfigError(
                f"--listen {address.grpc_target()}: without TLS, tokens would cross the network in clear text; "
                "add --tls-cert/--tls-key, or pass --allow-insecure-tcp (e.g. inside a pod network you trust)"
            )
    metrics_text = pick(metrics_listen, "METRICS_LISTEN", "")
    metrics = parse_listen(metrics_text) if metrics_text else None
    if metrics is not None and metrics.is_unix:
        raise ConfigError("--metrics-listen must be HOST:PORT (Prometheus scrapes over TCP)")
    loop_name = pick(loop, "LOOP", "auto")
    if loop_name not in LOOPS:
        raise ConfigError(f"--loop {loop_name!r}: choose one of {', '.join(LOOPS)}")
    grace_ns = parse_duration(pick(grace, "GRACE", DEFAULT_GRACE), "--grace")
    if not 1_000_000 <= grace_ns <= 3600 * 1_000_000_000:
        raise ConfigError("--grace must be between 1ms and 1h")
    state_text = pick(state_dir, "STATE_DIR", "")
    state_path = Path(state_text) if state_text else None
    if state_path is not None and state_path.exists() and not state_path.is_dir():
        raise ConfigError(f"--state-dir {state_text!r} exists and is not a directory")
    shutdown_ns = parse_duration(pick(shutdown_timeout, "SHUTDOWN_TIMEOUT", "10s"), "--shutdown-timeout")
    if shutdown_ns < grace_ns:
        raise ConfigError("--shutdown-timeout must be at least --grace, or shutdown could not wait for tools to unwind")
    level = pick(log_level, "LOG_LEVEL", "INFO").upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError(f"--log-level {level!r}: choose DEBUG, INFO, WARNING or ERROR")
    uid_texts = allow_uids if allow_uids else [u for u in env.get(ENV_PREFIX + "ALLOW_UID", "").split(",") if u.strip()]
    uids: set[int] = set()
    for text in uid_texts:
        try:
            uid = int(text.strip())
        except ValueError:
            raise ConfigError(f"--allow-uid {text!r}: a numeric uid, e.g. 1000") from None
        if uid < 0:
            raise ConfigError(f"--allow-uid {text!r}: uids are >= 0")
        uids.add(uid)
    holder_grace_ns = parse_duration(pick(holder_grace, "HOLDER_GRACE", "10s"), "--holder-grace")
    remote_parent_ns = parse_duration(
        pick(remote_parent_timeout, "REMOTE_PARENT_TIMEOUT", "10s"), "--remote-parent-timeout"
    )
    health_text = pick(health_listen, "HEALTH_LISTEN", "")
    health_address = parse_listen(health_text) if health_text else None
    if health_address is not None and health_address.is_unix:
        # The health-only listener exists for probes that dial TCP; the main socket serves health already.
        raise ConfigError("--health-listen must be HOST:PORT (the unix socket in --listen serves health already)")
    doorbell_path = _doorbell_path(pick(doorbell, "DOORBELL", "auto"), addresses)
    return ServeConfig(
        doorbell=doorbell_path,
        auth_token=token,
        tls_cert=cert,
        tls_key=key,
        tls_client_ca=client_ca,
        remote_parent_timeout_ns=remote_parent_ns,
        health_listen=health_address,
        holder_grace_ns=holder_grace_ns,
        allow_uids=frozenset(uids),
        listen=addresses,
        metrics_listen=metrics,
        state_dir=state_path,
        grace_ns=grace_ns,
        loop=loop_name,  # type: ignore[arg-type]
        allow_insecure_tcp=insecure,
        shutdown_timeout_ns=shutdown_ns,
        log_level=level,
    )


def _doorbell_path(text: str, addresses: tuple[ListenAddress, ...]) -> Path | None:
    """``off``; ``auto`` (beside the first unix listener, none without one); or a path.

    The environment twin, ``INTERRUPT_SIDECAR_DOORBELL``, is also the clients' opt-out
    (``0``): so ``0``/``false``/``no`` mean off here too, and ``1``/``true``/``yes``/``on``
    mean auto, and one variable turns the doorbell off for daemon and tools alike.
    """
    word = text.strip().lower()
    if word in ("off", "0", "false", "no"):
        return None
    if word in ("auto", "on", "1", "true", "yes"):
        unix = next((a.unix_path for a in addresses if a.unix_path is not None), None)
        if unix is None:
            return None  # TCP only: tools elsewhere could not reach a unix socket anyway
        path = unix.with_name(unix.name + ".doorbell")
        # Too long for a socket address: no doorbell rather than a refusal to start.
        return path if len(str(path).encode()) <= 107 else None
    if text.startswith("unix:"):
        text = text[len("unix:") :]
        if text.startswith("//"):
            text = text[2:]
    if not text.startswith("/"):
        raise ConfigError(f"--doorbell {text!r}: auto, off, or an absolute socket path, e.g. /run/x.doorbell")
    if len(text.encode()) > 107:
        raise ConfigError(f"--doorbell {text!r}: unix socket paths are limited to 107 bytes")
    if any(a.unix_path == Path(text) for a in addresses):
        raise ConfigError(f"--doorbell {text!r} is also a --listen socket; give it a path of its own")
    return Path(text)


def _read_secret(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise ConfigError(f"{flag} {path}: {err.strerror}") from None
