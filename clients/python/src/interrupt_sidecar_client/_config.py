"""Where the daemon is, and the capability to attach: explicit arguments first, then the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ADDRESS_ENV = "INTERRUPT_SIDECAR_ADDRESS"
TOKEN_ENV = "INTERRUPT_SIDECAR_TOKEN"
#: The coordinator credential a daemon's TCP listener requires (agents, not tools).
AUTH_TOKEN_ENV = "INTERRUPT_SIDECAR_AUTH_TOKEN"
#: ``0`` (or ``false``, ``no``, ``off``): never ask the daemon for the cancel doorbell.
DOORBELL_ENV = "INTERRUPT_SIDECAR_DOORBELL"
_OFF = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class ToolConfig:
    """Where a tool attaches, and with which token."""

    address: str
    token: str
    #: Ask for the cancel doorbell (the daemon only grants it to tools that receive cancels).
    doorbell: bool = False


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def default_socket_path(env: Mapping[str, str] | None = None) -> Path:
    """Where ``interrupt-sidecar serve`` listens without ``--listen``.

    ``$XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock``, else ``/tmp/interrupt-sidecar-$UID/sidecar.sock``.
    The one implementation of the rule: the daemon imports it, so both always agree.
    ``env`` defaults to the process environment.
    """
    runtime_dir = (os.environ if env is None else env).get("XDG_RUNTIME_DIR", "").strip()
    base = Path(runtime_dir) / "interrupt-sidecar" if runtime_dir else Path(f"/tmp/interrupt-sidecar-{os.getuid()}")
    return base / "sidecar.sock"


def default_address(env: Mapping[str, str] | None = None) -> str:
    """The daemon's default socket as a gRPC target (``unix:///...``)."""
    return f"unix://{default_socket_path(env)}"


def resolve_address(address: str | None) -> str:
    """The daemon address: the argument, else ``INTERRUPT_SIDECAR_ADDRESS``, else the daemon's default socket."""
    if address:
        return address
    return _env(ADDRESS_ENV) or default_address()


def is_unix_address(address: str) -> bool:
    """True for a ``unix:`` target (``unix:///abs/path`` or ``unix:/abs/path``)."""
    return address.startswith("unix:")


def resolve_doorbell(doorbell: bool | None, address: str) -> bool:
    """Whether to ask for the cancel doorbell: never unless ``address`` is a unix socket; then the
    argument, else ``INTERRUPT_SIDECAR_DOORBELL`` (``0``, ``false``, ``no``, ``off``: no), else yes.

    The doorbell is a unix socket path on the daemon's host. Only a ``unix:`` address says
    the daemon is on this host: over TCP the path could name nothing here, or some other
    daemon's socket.
    """
    if not is_unix_address(address):
        return False
    if doorbell is not None:
        return doorbell
    value = _env(DOORBELL_ENV)
    return value is None or value.lower() not in _OFF


def resolve_tool(address: str | None, token: str | None, doorbell: bool | None = None) -> ToolConfig | None:
    """The attach configuration of a tool, or None when no sidecar is configured (no-op mode).

    The token is what makes a process a tool of some execution: without one the tool runs
    unchanged (an address alone is normal, e.g. any process in a pod with a sidecar). An
    explicit ``token=""`` is sent as is, so the daemon refuses it (UNAUTHENTICATED).
    """
    resolved_token = token if token is not None else _env(TOKEN_ENV)
    if resolved_token is None:
        return None
    resolved_address = resolve_address(address)
    return ToolConfig(resolved_address, resolved_token, resolve_doorbell(doorbell, resolved_address))


#: Channel options: ping an idle connection every 5 s and give up after 5 s more, so a
#: daemon that vanished without closing the connection is noticed within ~10 s (the
#: daemon allows pings this often). gRPC's default is two hours.
CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 5_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
