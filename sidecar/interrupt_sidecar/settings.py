"""Every setting of interrupt-sidecar, written once: flag, environment variable, default, parser, help.

``interrupt-sidecar serve``'s flags (argparse), its environment lookup (a flag beats its
``INTERRUPT_SIDECAR_*`` twin, which beats the default: DESIGN §8) and the tables of
``docs/configuration.md`` are all derived from :data:`SERVE` and :data:`CLIENT` below.
``tests/test_settings.py`` pins that no flag or variable is defined anywhere else and that the
committed page is what this table renders (``make docs`` regenerates it). uvicorn's
``auto_envvar_prefix`` is the model: the variable's name is the flag's, never typed twice.

What is here is the grammar of one value (a duration, a listen address) and the table;
the rules *between* settings (TLS needs a key, a TCP listener needs authentication) live
in :mod:`interrupt_sidecar.config`, which builds the frozen ``ServeConfig``.

Standard library only, and cheap to import: the CLI builds its parser from this before it
knows whether the command needs gRPC at all.
"""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Generic, Literal, TypeVar

from interrupt_sidecar.errors import InvalidArgument
from interrupt_sidecar.record import Record, init_field

ENV_PREFIX = "INTERRUPT_SIDECAR_"
LOOPS = ("auto", "uvloop", "asyncio")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
#: What a switch's variable accepts as "on" (anything else is off).
TRUE_WORDS = ("1", "true", "yes")
#: The longest path a unix socket address holds (sun_path is 108 bytes with its NUL).
MAX_SOCKET_PATH = 107

T = TypeVar("T", covariant=True)


class ConfigError(InvalidArgument):
    """A flag or environment variable has a value the daemon cannot use."""


# -- the grammar of one value -------------------------------------------------------

_DURATION = re.compile(r"(?P<value>\d+(?:\.\d+)?)(?P<unit>ns|us|µs|ms|s|m|h)")
_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}
_UNIT_NS["h"] = 60 * _UNIT_NS["m"]


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


class ListenAddress(Record):
    """Where to serve gRPC: a unix socket path, or a TCP host and port."""

    __slots__ = ("host", "port", "unix_path")
    unix_path: Path | None
    host: str
    port: int

    def __init__(self, unix_path: Path | None = None, host: str = "", port: int = 0) -> None:
        init_field(self, "unix_path", unix_path)
        init_field(self, "host", host)
        init_field(self, "port", port)

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
        if len(path.encode()) > MAX_SOCKET_PATH:
            raise ConfigError(f"--listen {text!r}: unix socket paths are limited to {MAX_SOCKET_PATH} bytes")
        return ListenAddress(unix_path=Path(path))
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"--listen {text!r} is neither unix:///path nor HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return ListenAddress(host=host, port=int(port_text))


def _tcp_only(why: str) -> Callable[[str], ListenAddress]:
    def parse(text: str) -> ListenAddress:
        address = parse_listen(text)
        if address.is_unix:
            raise ConfigError(why)
        return address

    return parse


def _duration(
    flag: str, low_ns: int | None = None, high_ns: int | None = None, bounds: str = ""
) -> Callable[[str], int]:
    def parse(text: str) -> int:
        ns = parse_duration(text, flag)
        if (low_ns is not None and ns < low_ns) or (high_ns is not None and ns > high_ns):
            raise ConfigError(f"{flag} must be between {bounds}")
        return ns

    return parse


def _read_secret(flag: str) -> Callable[[str], bytes]:
    def read(path: str) -> bytes:
        try:
            return Path(path).read_bytes()
        except OSError as err:
            raise ConfigError(f"{flag} {path}: {err.strerror}") from None

    return read


def _bearer_token(path: str) -> str:
    token = _read_secret("--auth-token-file")(path).decode().strip()
    if len(token) < 16:
        raise ConfigError(f"--auth-token-file {path}: the token is {len(token)} characters; use at least 16")
    return token


def _state_dir(text: str) -> Path:
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--state-dir {text!r} exists and is not a directory")
    return path


def _loop(text: str) -> str:
    if text not in LOOPS:
        raise ConfigError(f"--loop {text!r}: choose one of {', '.join(LOOPS)}")
    return text


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"--log-level {level!r}: choose DEBUG, INFO, WARNING or ERROR")
    return level


def _uid(text: str) -> int:
    try:
        uid = int(text.strip())
    except ValueError:
        raise ConfigError(f"--allow-uid {text!r}: a numeric uid, e.g. 1000") from None
    if uid < 0:
        raise ConfigError(f"--allow-uid {text!r}: uids are >= 0")
    return uid


def _text(text: str) -> str:
    return text


# -- the table ------------------------------------------------------------------------

#: ``value``: one value; ``list``: a repeatable flag, a comma-separated variable; ``switch``:
#: a flag without a value, a variable that is on for 1/true/yes.
Kind = Literal["value", "list", "switch"]
#: Who reads it: ``serve`` (the daemon), ``client`` (the client subcommands, ``run`` and
#: every client library, in each language), or ``command`` (the two implementations of the
#: command line, choosing each other: docs/cli.md).
Scope = Literal["serve", "client", "command"]


class Setting(Record, Generic[T]):
    """One setting: its flag is ``--<name with dashes>``, its variable ``INTERRUPT_SIDECAR_<NAME>``."""

    __slots__ = ("choices", "default", "default_doc", "has_flag", "help", "kind", "metavar", "name", "parse", "scope")
    name: str
    scope: Scope
    #: What it does, for ``--help`` and the docs (one sentence, no trailing period).
    help: str
    #: Text → value; raises :class:`ConfigError` with a message naming the flag.
    parse: Callable[[str], T]
    #: The default as a user would write it; None: unset (a value of "" is unset too).
    default: str | None
    #: The default as the docs say it, when the literal default does not say enough.
    default_doc: str
    kind: Kind
    metavar: str | None
    choices: tuple[str, ...]
    #: False: only the environment variable exists (no flag).
    has_flag: bool

    def __init__(
        self,
        name: str,
        scope: Scope,
        help: str,
        parse: Callable[[str], T],
        default: str | None = None,
        default_doc: str = "",
        kind: Kind = "value",
        metavar: str | None = None,
        choices: tuple[str, ...] = (),
        has_flag: bool = True,
    ) -> None:
        init_field(self, "name", name)
        init_field(self, "scope", scope)
        init_field(self, "help", help)
        init_field(self, "parse", parse)
        init_field(self, "default", default)
        init_field(self, "default_doc", default_doc)
        init_field(self, "kind", kind)
        init_field(self, "metavar", metavar)
        init_field(self, "choices", choices)
        init_field(self, "has_flag", has_flag)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def described_default(self) -> str:
        if self.default_doc:
            return self.default_doc
        if self.kind == "switch":
            return "off"
        return f"`{self.default}`" if self.default is not None else "none"

    def text(self, flag: str | None, env: Mapping[str, str]) -> str | None:
        """The flag, else the variable, else the default; None when none is set.

        An empty value means "none" for a setting without a default (``--metrics-listen ""``
        disables metrics, as the docs say). For a setting with a default it is a value, and
        refused: ``INTERRUPT_SIDECAR_GRACE=`` is an error, not 500ms, so a deployment's
        missing value cannot pass for intent.
        """
        text = flag if flag is not None else env.get(self.env, self.default)
        if text == "" and self.default is None:
            return None
        return text

    def value(self, flag: str | None, env: Mapping[str, str]) -> T | None:
        """The parsed value of a ``value`` setting (None when unset and without a default)."""
        text = self.text(flag, env)
        return None if text is None else self.parse(text)

    def values(self, flags: Sequence[str] | None, env: Mapping[str, str]) -> tuple[T, ...]:
        """The parsed values of a ``list`` setting: the flags, else the variable's comma-separated items."""
        texts = list(flags) if flags else [s for s in env.get(self.env, "").split(",") if s.strip()]
        return tuple(self.parse(s.strip()) for s in texts)

    def enabled(self, flag: bool | None, env: Mapping[str, str]) -> bool:
        """Whether a ``switch`` is on: the flag, else the variable (1, true, yes)."""
        return flag if flag is not None else env.get(self.env, "").lower() in TRUE_WORDS

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """Declare the flag on ``parser``: its default stays None, so "not given" can fall to the variable."""
        if not self.has_flag:
            raise ValueError(f"{self.env} has no flag")
        help_text = f"{self.help}; repeatable [{self.env}, comma-separated" if self.kind == "list" else ""
        help_text = help_text or f"{self.help} [{self.env}"
        help_text += f"; default {_plain(self.described_default)}]"
        help_text = help_text.replace("%", "%%")  # argparse formats help with %
        if self.kind == "switch":
            parser.add_argument(self.flag, dest=self.name, action="store_const", const=True, help=help_text)
            return
        parser.add_argument(
            self.flag,
            dest=self.name,
            action="append" if self.kind == "list" else "store",
            metavar=self.metavar,
            choices=list(self.choices) or None,
            help=help_text,
        )


def _plain(markdown: str) -> str:
    """The docs' default without Markdown's backquotes and links, for ``--help``."""
    return re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", markdown).replace("`", "")


DEFAULT_SOCKET_DOC = (
    "`unix://$XDG_RUNTIME_DIR/interrupt-sidecar/sidecar.sock`, else `unix:///tmp/interrupt-sidecar-$UID/sidecar.sock`"
)

LISTEN: Setting[ListenAddress] = Setting(
    "listen",
    "serve",
    "where to serve gRPC: unix:///path/to.sock or HOST:PORT",
    parse_listen,
    default_doc=DEFAULT_SOCKET_DOC,
    kind="list",
    metavar="ADDRESS",
)
METRICS_LISTEN: Setting[ListenAddress] = Setting(
    "metrics_listen",
    "serve",
    "serve Prometheus metrics at /metrics on this HOST:PORT",
    _tcp_only("--metrics-listen must be HOST:PORT (Prometheus scrapes over TCP)"),
    default_doc="empty: disabled",
    metavar="HOST:PORT",
)
STATE_DIR: Setting[Path] = Setting(
    "state_dir",
    "serve",
    "directory for the daemon's journal, so executions survive a restart (created owner-only)",
    _state_dir,
    default_doc="none: state lives in memory only",
    metavar="DIR",
)
GRACE: Setting[int] = Setting(
    "grace",
    "serve",
    "default grace after a trip, for executions that do not choose their own (1ms to 1h)",
    _duration("--grace", 1_000_000, 3600 * 1_000_000_000, "1ms and 1h"),
    default="500ms",
    metavar="DURATION",
)
LOOP: Setting[str] = Setting(
    "loop",
    "serve",
    "event loop",
    _loop,
    default="auto",
    default_doc="`auto`: uvloop when installed, else asyncio",
    choices=LOOPS,
)
ALLOW_INSECURE_TCP: Setting[bool] = Setting(
    "allow_insecure_tcp",
    "serve",
    "allow plaintext TCP on non-loopback addresses (anyone who can connect can interrupt and kill)",
    bool,
    kind="switch",
)
SHUTDOWN_TIMEOUT: Setting[int] = Setting(
    "shutdown_timeout",
    "serve",
    "bound on the SIGTERM sequence (at least --grace)",
    _duration("--shutdown-timeout"),
    default="10s",
    metavar="DURATION",
)
ALLOW_UID: Setting[int] = Setting(
    "allow_uid",
    "serve",
    "also accept process groups whose members run as UID",
    _uid,
    default_doc="none: only the daemon's own uid",
    kind="list",
    metavar="UID",
)
AUTH_TOKEN_FILE: Setting[str] = Setting(
    "auth_token_file",
    "serve",
    "file holding the coordinator role's bearer token (at least 16 characters), required on TCP listeners "
    "unless mTLS; callers send `authorization: Bearer <token>` and clients read INTERRUPT_SIDECAR_AUTH_TOKEN",
    _bearer_token,
    default_doc="none (required with a TCP `--listen` unless mTLS)",
    metavar="PATH",
)
TLS_CERT: Setting[bytes] = Setting(
    "tls_cert",
    "serve",
    "PEM certificate chain for TCP listeners (TLS); goes with --tls-key",
    _read_secret("--tls-cert"),
    default_doc="none: plaintext",
    metavar="PATH",
)
TLS_KEY: Setting[bytes] = Setting(
    "tls_key",
    "serve",
    "PEM private key of --tls-cert",
    _read_secret("--tls-key"),
    default_doc="none: plaintext",
    metavar="PATH",
)
TLS_CLIENT_CA: Setting[bytes] = Setting(
    "tls_client_ca",
    "serve",
    "require client certificates signed by this CA on TCP listeners (mTLS; a verified certificate "
    "grants the coordinator role)",
    _read_secret("--tls-client-ca"),
    default_doc="none",
    metavar="PATH",
)
REMOTE_PARENT_TIMEOUT: Setting[int] = Setting(
    "remote_parent_timeout",
    "serve",
    "how long a remote parent's daemon may stay unreachable before its children trip",
    _duration("--remote-parent-timeout"),
    default="10s",
    metavar="DURATION",
)
HEALTH_LISTEN: Setting[ListenAddress] = Setting(
    "health_listen",
    "serve",
    "also serve only grpc.health.v1 on this HOST:PORT, for Kubernetes grpc probes (it grants nothing, "
    "so any host is allowed)",
    _tcp_only("--health-listen must be HOST:PORT (the unix socket in --listen serves health already)"),
    default_doc="empty: none",
    metavar="HOST:PORT",
)
DOORBELL: Setting[str] = Setting(
    "doorbell",
    "serve",
    "unix socket that rings each tool's cancel ahead of its stream, for tools that ask: auto (beside the "
    "first unix --listen socket, as PATH.doorbell; none on TCP only or beyond 107 bytes), off (also 0, "
    "false, no), or a socket path",
    _text,
    default="auto",
    metavar="auto|off|PATH",
)
HOLDER_GRACE: Setting[int] = Setting(
    "holder_grace",
    "serve",
    "after a restart, how long a held execution without a lease waits for its holder",
    _duration("--holder-grace"),
    default="10s",
    metavar="DURATION",
)
LOG_LEVEL: Setting[str] = Setting(
    "log_level",
    "serve",
    "DEBUG, INFO, WARNING or ERROR",
    _log_level,
    default="INFO",
    metavar="LEVEL",
)

#: ``interrupt-sidecar serve``, in the order of ``--help`` and the docs.
SERVE: tuple[Setting[object], ...] = (
    LISTEN,
    METRICS_LISTEN,
    STATE_DIR,
    GRACE,
    LOOP,
    ALLOW_INSECURE_TCP,
    SHUTDOWN_TIMEOUT,
    ALLOW_UID,
    AUTH_TOKEN_FILE,
    TLS_CERT,
    TLS_KEY,
    TLS_CLIENT_CA,
    REMOTE_PARENT_TIMEOUT,
    HEALTH_LISTEN,
    DOORBELL,
    HOLDER_GRACE,
    LOG_LEVEL,
)

# The clients' side. Every client library (Python, Go, TypeScript, Java, Rust) reads these
# variables itself; the Python client's rule (interrupt_sidecar_client._config) is the one
# the CLI uses, and the tests pin that its names are these.
ADDRESS: Setting[str] = Setting(
    "address",
    "client",
    "the daemon to talk to: unix:///path/to.sock or HOST:PORT",
    _text,
    default_doc="the default socket of `serve` (" + DEFAULT_SOCKET_DOC + ")",
)
TOKEN: Setting[str] = Setting(
    "token",
    "client",
    "the attach token of the execution a tool belongs to, as BeginExecution returned it; without one a tool "
    "runs unchanged (no sidecar)",
    _text,
    default_doc="none: no-op mode",
)
AUTH_TOKEN: Setting[str] = Setting(
    "auth_token",
    "client",
    "the coordinator role's bearer token, sent by agents and the CLI (the daemon's --auth-token-file)",
    _text,
    default_doc="none: no credential (enough on a unix socket)",
    has_flag=False,
)
CLIENT_DOORBELL: Setting[str] = Setting(
    "doorbell",
    "client",
    "0, false, no or off: tools do not ask for the cancel doorbell (the same variable turns the daemon's off)",
    _text,
    default_doc="ask, on a unix address",
    has_flag=False,
)

TOKEN_FILE: Setting[str] = Setting(
    "token_file",
    "client",
    "`interrupt-sidecar mcp` only: a file holding the current turn's attach token, which the agent rewrites at "
    "each turn (docs/mcp.md)",
    _text,
    default_doc="none",
    metavar="PATH",
)

#: What the client subcommands (begin, interrupt, end, status, top), ``run``, ``mcp`` and every
#: client library read (TOKEN_FILE: ``mcp`` alone).
CLIENT: tuple[Setting[str], ...] = (ADDRESS, TOKEN, AUTH_TOKEN, CLIENT_DOORBELL, TOKEN_FILE)

# The command line's two implementations: the native binary (clients/go/cmd/interrupt-sidecar)
# and the Python one, each handing the other the subcommands it does not run itself.
NATIVE: Setting[str] = Setting(
    "native",
    "command",
    "the native binary the Python `interrupt-sidecar` hands `run`, `begin`, `interrupt`, `end` and `status` "
    "to (a path), or `off` to run them in Python",
    _text,
    default_doc="`interrupt-sidecar-native` beside the Python interpreter, when it is there",
    has_flag=False,
)
PYTHON: Setting[str] = Setting(
    "python",
    "command",
    "the Python interpreter the native binary hands every other subcommand to (`serve`, `top`, `demo`, `mcp`, "
    "`--help`), as `$INTERRUPT_SIDECAR_PYTHON -m interrupt_sidecar`",
    _text,
    default_doc="`interrupt-sidecar-py` beside the binary, else on `PATH`, else `python3 -m interrupt_sidecar`",
    has_flag=False,
)

#: What chooses between the native and the Python command line.
COMMAND: tuple[Setting[str], ...] = (NATIVE, PYTHON)

#: Every setting, for the checks that nothing is defined elsewhere.
ALL: tuple[Setting[object], ...] = (*SERVE, *CLIENT, *COMMAND)

#: The variable ``begin`` *writes* for a shell (``eval "$(interrupt-sidecar begin)"``) beside
#: ``INTERRUPT_SIDECAR_TOKEN``; no code reads it.
EXECUTION_ENV = ENV_PREFIX + "EXECUTION"


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Every ``serve`` flag, from the table."""
    for setting in SERVE:
        setting.add_to(parser)
