"""The daemon's configuration: one frozen object, built from flags over environment over defaults.

Each setting (its flag, variable, default, parser and help) is defined once, in
:mod:`interrupt_sidecar.settings`; this module resolves them and applies the rules
*between* settings, refusing combinations the daemon cannot run with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from interrupt_sidecar import settings
from interrupt_sidecar.record import Record, init_field
from interrupt_sidecar.settings import (
    ENV_PREFIX,
    LOOPS,
    MAX_SOCKET_PATH,
    ConfigError,
    ListenAddress,
    parse_duration,
    parse_listen,
)

# Re-exported: the value grammar is settings', but callers have always found it here.
__all__ = [
    "DEFAULT_GRACE",
    "ENV_PREFIX",
    "LOOPS",
    "ConfigError",
    "ListenAddress",
    "LoopName",
    "ServeConfig",
    "build_serve_config",
    "default_socket_path",
    "parse_duration",
    "parse_listen",
    "serve_config",
]

DEFAULT_GRACE = settings.GRACE.default
LoopName = Literal["auto", "uvloop", "asyncio"]


def default_socket_path(env: Mapping[str, str]) -> Path:
    """``$XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock``, else a per-uid dir under /tmp.

    The rule has one implementation, the Python client's, so the daemon listens where
    every client looks. Imported here, not at the top: the client package imports gRPC,
    and the configuration layer stays cheap to import (the CLI builds its parser from it).
    """
    from interrupt_sidecar_client._config import default_socket_path as client_rule

    return client_rule(env)


def _default_ns(setting: settings.Setting[int]) -> int:
    """A duration setting's default, in nanoseconds (the table's text is the one source)."""
    ns = setting.value(None, {})
    assert ns is not None, setting.name
    return ns


#: The defaults of the durations and the log level, from the settings table (its text is the one source).
_SHUTDOWN_TIMEOUT_NS = _default_ns(settings.SHUTDOWN_TIMEOUT)
_HOLDER_GRACE_NS = _default_ns(settings.HOLDER_GRACE)
_REMOTE_PARENT_TIMEOUT_NS = _default_ns(settings.REMOTE_PARENT_TIMEOUT)
_LOG_LEVEL = settings.LOG_LEVEL.default or ""
#: Secrets: never shown in a repr (logs, tracebacks).
_HIDDEN = frozenset({"auth_token", "tls_cert", "tls_key", "tls_client_ca"})


class ServeConfig(Record):
    """Everything ``interrupt-sidecar serve`` runs with. Frozen: read once at start."""

    __slots__ = (
        "allow_insecure_tcp",
        "allow_uids",
        "auth_token",
        "doorbell",
        "grace_ns",
        "health_listen",
        "holder_grace_ns",
        "listen",
        "log_level",
        "loop",
        "metrics_listen",
        "remote_parent_timeout_ns",
        "shutdown_timeout_ns",
        "state_dir",
        "tls_cert",
        "tls_client_ca",
        "tls_key",
    )
    listen: tuple[ListenAddress, ...]
    metrics_listen: ListenAddress | None
    state_dir: Path | None
    grace_ns: int
    loop: LoopName
    allow_insecure_tcp: bool
    shutdown_timeout_ns: int
    log_level: str
    #: Extra uids whose process groups tools may hand over (the daemon's own uid always may).
    allow_uids: frozenset[int]
    #: After a restart, how long a held execution without a lease waits for its holder.
    holder_grace_ns: int
    #: A TCP address serving only grpc.health.v1 (Kubernetes' grpc probes), on any host.
    health_listen: ListenAddress | None
    #: The coordinator role's bearer token, required on TCP listeners (``--auth-token-file``).
    auth_token: str | None
    #: TLS for TCP listeners: certificate chain and key (PEM bytes), and the CA whose client
    #: certificates are required (mTLS) — a verified client certificate grants the coordinator role.
    tls_cert: bytes | None
    tls_key: bytes | None
    tls_client_ca: bytes | None
    #: How long a remote parent's daemon may stay unreachable before its children trip.
    remote_parent_timeout_ns: int
    #: The cancel doorbell's unix socket (``--doorbell``), or None for none.
    doorbell: Path | None

    def __init__(
        self,
        listen: tuple[ListenAddress, ...],
        metrics_listen: ListenAddress | None,
        state_dir: Path | None,
        grace_ns: int,
        loop: LoopName,
        allow_insecure_tcp: bool = False,
        shutdown_timeout_ns: int = _SHUTDOWN_TIMEOUT_NS,
        log_level: str = _LOG_LEVEL,
        allow_uids: frozenset[int] = frozenset(),
        holder_grace_ns: int = _HOLDER_GRACE_NS,
        health_listen: ListenAddress | None = None,
        auth_token: str | None = None,
        tls_cert: bytes | None = None,
        tls_key: bytes | None = None,
        tls_client_ca: bytes | None = None,
        remote_parent_timeout_ns: int = _REMOTE_PARENT_TIMEOUT_NS,
        doorbell: Path | None = None,
    ) -> None:
        init_field(self, "listen", listen)
        init_field(self, "metrics_listen", metrics_listen)
        init_field(self, "state_dir", state_dir)
        init_field(self, "grace_ns", grace_ns)
        init_field(self, "loop", loop)
        init_field(self, "allow_insecure_tcp", allow_insecure_tcp)
        init_field(self, "shutdown_timeout_ns", shutdown_timeout_ns)
        init_field(self, "log_level", log_level)
        init_field(self, "allow_uids", allow_uids)
        init_field(self, "holder_grace_ns", holder_grace_ns)
        init_field(self, "health_listen", health_listen)
        init_field(self, "auth_token", auth_token)
        init_field(self, "tls_cert", tls_cert)
        init_field(self, "tls_key", tls_key)
        init_field(self, "tls_client_ca", tls_client_ca)
        init_field(self, "remote_parent_timeout_ns", remote_parent_timeout_ns)
        init_field(self, "doorbell", doorbell)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name not in _HIDDEN)
        return f"ServeConfig({shown})"

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
    Refuses values and combinations the daemon cannot run with. (Flags by keyword; see
    :func:`serve_config` for the same from parsed arguments.)"""
    flags = dict(locals())
    del flags["env"]
    flags["allow_uid"] = flags.pop("allow_uids")
    return serve_config(flags, env)


def serve_config(flags: Mapping[str, Any], env: Mapping[str, str]) -> ServeConfig:
    """The configuration from ``flags`` (each setting's name → the flag's value, or None when
    not given: argparse's namespace as ``vars(args)``) over ``env`` over the defaults."""
    s = settings

    def flag(setting: settings.Setting[object]) -> Any:
        return flags.get(setting.name)

    addresses = s.LISTEN.values(flag(s.LISTEN), env) or (ListenAddress(unix_path=default_socket_path(env)),)
    insecure = s.ALLOW_INSECURE_TCP.enabled(flag(s.ALLOW_INSECURE_TCP), env)
    token = s.AUTH_TOKEN_FILE.value(flag(s.AUTH_TOKEN_FILE), env)
    cert = s.TLS_CERT.value(flag(s.TLS_CERT), env)
    key = s.TLS_KEY.value(flag(s.TLS_KEY), env)
    client_ca = s.TLS_CLIENT_CA.value(flag(s.TLS_CLIENT_CA), env)
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
    metrics = s.METRICS_LISTEN.value(flag(s.METRICS_LISTEN), env)
    loop_name = s.LOOP.value(flag(s.LOOP), env)
    grace_ns = s.GRACE.value(flag(s.GRACE), env)
    state_path = s.STATE_DIR.value(flag(s.STATE_DIR), env)
    shutdown_ns = s.SHUTDOWN_TIMEOUT.value(flag(s.SHUTDOWN_TIMEOUT), env)
    # Settings with a default are never None; the asserts say so to the type checker.
    assert grace_ns is not None and shutdown_ns is not None and loop_name is not None
    if shutdown_ns < grace_ns:
        raise ConfigError("--shutdown-timeout must be at least --grace, or shutdown could not wait for tools to unwind")
    level = s.LOG_LEVEL.value(flag(s.LOG_LEVEL), env)
    uids = frozenset(s.ALLOW_UID.values(flag(s.ALLOW_UID), env))
    holder_grace_ns = s.HOLDER_GRACE.value(flag(s.HOLDER_GRACE), env)
    remote_parent_ns = s.REMOTE_PARENT_TIMEOUT.value(flag(s.REMOTE_PARENT_TIMEOUT), env)
    health_address = s.HEALTH_LISTEN.value(flag(s.HEALTH_LISTEN), env)
    doorbell_text = s.DOORBELL.value(flag(s.DOORBELL), env)
    assert level is not None and holder_grace_ns is not None and remote_parent_ns is not None
    assert doorbell_text is not None
    return ServeConfig(
        doorbell=_doorbell_path(doorbell_text, addresses),
        auth_token=token,
        tls_cert=cert,
        tls_key=key,
        tls_client_ca=client_ca,
        remote_parent_timeout_ns=remote_parent_ns,
        health_listen=health_address,
        holder_grace_ns=holder_grace_ns,
        allow_uids=uids,
        listen=addresses,
        metrics_listen=metrics,
        state_dir=state_path,
        grace_ns=grace_ns,
        loop=loop_name,  # type: ignore[arg-type]
        allow_insecure_tcp=insecure,
        shutdown_timeout_ns=shutdown_ns,
        log_level=level,
    )


def _doorbell_path(text: str, addresses: Sequence[ListenAddress]) -> Path | None:
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
        return path if len(str(path).encode()) <= MAX_SOCKET_PATH else None
    if text.startswith("unix:"):
        text = text[len("unix:") :]
        if text.startswith("//"):
            text = text[2:]
    if not text.startswith("/"):
        raise ConfigError(f"--doorbell {text!r}: auto, off, or an absolute socket path, e.g. /run/x.doorbell")
    if len(text.encode()) > MAX_SOCKET_PATH:
        raise ConfigError(f"--doorbell {text!r}: unix socket paths are limited to {MAX_SOCKET_PATH} bytes")
    if any(a.unix_path == Path(text) for a in addresses):
        raise ConfigError(f"--doorbell {text!r} is also a --listen socket; give it a path of its own")
    return Path(text)
