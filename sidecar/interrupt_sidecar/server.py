"""Wiring: build the daemon from its config, serve, and shut down in order."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import ipaddress
import logging
import os
import resource
import signal
import socket
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from interrupt_sidecar.config import ListenAddress, ServeConfig
from interrupt_sidecar.domain.coordinator import Coordinator
from interrupt_sidecar.domain.types import InterruptReason, SystemClock
from interrupt_sidecar.errors import SidecarError, Unavailable
from interrupt_sidecar.exits import EXIT_FORCED, EXIT_OK, EXIT_STARTUP
from interrupt_sidecar.federation import RemoteParentFollower
from interrupt_sidecar.gc_pacer import GcPacer
from interrupt_sidecar.osedge.journal import Journal, JournalError
from interrupt_sidecar.osedge.process_groups import ProcessGroups
from interrupt_sidecar.runtime.journal_health import JournalHealth
from interrupt_sidecar.runtime.observer import NOOP_OBSERVER, DeferredObserver, TripObserver
from interrupt_sidecar.runtime.recovery import recover
from interrupt_sidecar.runtime.trip_path import TripPath
from interrupt_sidecar.runtime.watch import WatchHub
from interrupt_sidecar.services import reflection
from interrupt_sidecar.services.coordinator import CoordinatorService
from interrupt_sidecar.services.doorbell import DoorbellListener
from interrupt_sidecar.services.health import HealthServicer
from interrupt_sidecar.services.tool_channel import ToolChannelService

if TYPE_CHECKING:
    from interrupt_sidecar.metrics import PrometheusObserver
    from interrupt_sidecar.metrics.exposition import MetricsServer
    from interrupt_sidecar.services.auth import CoordinatorAuth

log = logging.getLogger("sidecar")

SERVICE_NAMES = (
    pb.DESCRIPTOR.services_by_name["CoordinatorService"].full_name,
    pb.DESCRIPTOR.services_by_name["ToolChannelService"].full_name,
)

#: The journal's file in the state directory.
_JOURNAL_FILE = "journal.sqlite3"

#: The metrics port's listen queue (socketserver's default): scrapes are one at a time.
_METRICS_BACKLOG = 5

# Dead peers must be noticed: gRPC's default server keepalive is two hours.
#: Garbage-collector thresholds (CPython's defaults: 700, 10, 10). See _tune_garbage_collector.
_GC_GEN0, _GC_GEN1, _GC_GEN2 = 5_000, 50, 100

# A crashed local peer closes its socket at once; keepalive is for the peer that vanished
# without closing (a partitioned network, a frozen VM): a ping every 4 s answered within
# 5 s bounds its detection below 10 s, which in turn bounds how long a lost holder goes
# unnoticed. Clients ping every 5 s at most (min_recv_ping_interval below lets them).
GRPC_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_receive_message_length", 64 * 1024),
    ("grpc.keepalive_time_ms", 4_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", 4_000),
    ("grpc.http2.max_pings_without_data", 0),
]


class StartupError(SidecarError):
    """The daemon cannot start: a socket in use, a directory it cannot create."""

    status_name = "FAILED_PRECONDITION"


class Daemon:
    """The running daemon: domain, runtime and services wired to a gRPC server."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.clock = SystemClock()
        self.process_groups = ProcessGroups(allowed_uids=frozenset({os.getuid(), *config.allow_uids}))
        self.hub = WatchHub(self.clock)
        # Metrics off means no registry at all (prometheus_client is not even imported:
        # it is a fifth of the daemon's memory): the trip path then calls a no-op. Metrics
        # on, the registry is built right after "ready" (serve_metrics): prometheus_client
        # and the HTTP stack it imports are a fifth of the start-up too. Until then the
        # port is bound (a taken port still fails the start) and observations are recorded.
        self.metrics: PrometheusObserver | None = None
        self._deferred_metrics: DeferredObserver | None = None
        observer: TripObserver = NOOP_OBSERVER
        if config.metrics_listen is not None:
            self._deferred_metrics = DeferredObserver()
            observer = self._deferred_metrics
        self.trip_path = TripPath(self.clock, self.process_groups, self.hub, observer)
        self.coordinator = Coordinator(self.trip_path, self.clock, default_grace_ns=config.grace_ns)
        self.remote_parents = RemoteParentFollower(
            self.trip_path,
            default_unreachable_ns=config.remote_parent_timeout_ns,
            root_certificates=config.tls_client_ca,
        )
        self.health = HealthServicer()
        self.addresses: list[str] = []
        self._servers: list[grpc.aio.Server] = []
        self._tool_channel = ToolChannelService(self.coordinator, self.trip_path, self.hub, self.process_groups)
        self._metrics_server: MetricsServer | None = None
        self._metrics_listener: socket.socket | None = None
        self._serving = False
        self._state_lock: int | None = None
        self._health_server: grpc.aio.Server | None = None
        self._journal_health: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Bind every listener and start serving. Raises StartupError, having
        released whatever it had bound."""
        # The journal opens on a thread while the listeners are built and bound: on a fresh
        # state directory its file switches to WAL with six fdatasync calls (~4 ms on a quiet
        # disk, tens of ms on a busy one), waits that now overlap that work. It is waited
        # for before anything is served and before recovery, and its error is the one
        # reported when both fail, as when it was opened first. The directory and its lock
        # are taken here, before the thread: _bind and the doorbell narrow the process-wide
        # umask for a moment, and a directory made then would lack its owner's x bit
        # (the journal's file is made there too, with its mode).
        opening: _JournalOpening | None = None
        if self.config.state_dir is not None:
            self._lock_state_dir(self.config.state_dir)
            opening = _JournalOpening(self._open_journal, self.config.state_dir)
        # Unix sockets and TCP listeners are served by separate servers over the same
        # services: the socket's file mode guards the first, the coordinator credential
        # (and TLS) the second — grpc cannot tell an interceptor which listener a call used.
        coordinator_service = CoordinatorService(self.coordinator, self.trip_path, self.hub, self.remote_parents)
        local = [a for a in self.config.listen if a.is_unix]
        network = [a for a in self.config.listen if not a.is_unix]
        servers: list[tuple[grpc.aio.Server, list[ListenAddress]]] = []
        if local:
            servers.append((self._grpc_server(coordinator_service), local))
        if network:
            # Only a network listener has an interceptor: its module (hmac, hashlib) stays unloaded otherwise.
            from interrupt_sidecar.services.auth import CoordinatorAuth

            auth = CoordinatorAuth(self.config.auth_token, mtls=self.config.mtls, observer=self.trip_path.observer)
            servers.append((self._grpc_server(coordinator_service, auth), network))
        health_server: grpc.aio.Server | None = None
        try:
            # Metrics first: a taken port then fails the start before gRPC serves anything.
            if self.config.metrics_listen is not None:
                self._bind_metrics(self.config.metrics_listen)
            for server, addresses in servers:
                for address in addresses:
                    self.addresses.append(self._bind(server, address))
            if self.config.health_listen is not None:
                # A server of its own, carrying only the health service (the same servicer,
                # so shutdown's NOT_SERVING shows here too): safe on the pod IP, where the
                # kubelet's grpc probe dials, because it grants no power over executions.
                health_server = grpc.aio.server(options=GRPC_OPTIONS)
                health_pb2_grpc.add_HealthServicer_to_server(self.health, health_server)
                self._bind(health_server, self.config.health_listen, plaintext=True)
            # After the gRPC binds: a live daemon on the same socket is reported as such.
            if self.config.doorbell is not None:
                self._start_doorbell(self.config.doorbell)
            if opening is not None:
                opening.wait()
        except StartupError as err:
            failure = err
            if opening is not None:
                try:
                    opening.wait()  # before closing what it opened
                except StartupError as journal_error:
                    failure = journal_error
            self._stop_doorbell()
            self._stop_metrics()
            self._close_journal()
            for server, _ in servers:
                await server.stop(None)
            if health_server is not None:
                await health_server.stop(None)
            # The sockets this start bound (each checked to be free first) go with it: a
            # journal that failed after the binds leaves no socket file behind.
            for address in self.config.listen:
                if address.unix_path is not None and address.grpc_target() in self.addresses:
                    with contextlib.suppress(FileNotFoundError):
                        address.unix_path.unlink()
            self.addresses.clear()
            if failure is not err:
                raise failure from None
            raise
        except BaseException:
            if opening is not None:
                with contextlib.suppress(BaseException):
                    opening.wait()
                self._close_journal()
            raise
        if self.trip_path.journal is not None:
            # After the binds (no other daemon answers here) and under the state-dir lock
            # (no other daemon owns this journal), before any RPC can be served.
            report = recover(
                self.coordinator, self.trip_path, self.trip_path.journal, holder_grace_ns=self.config.holder_grace_ns
            )
            for execution_id in report.restored:
                execution = self.coordinator.get(execution_id)
                if execution.remote_parent is not None and not execution.signal.cancelled and not execution.ended:
                    self.remote_parents.follow(execution)
        for server, _ in servers:
            await server.start()
        self._servers = [server for server, _ in servers]
        if health_server is not None:
            await health_server.start()
            self._health_server = health_server
        for address in self.config.listen:
            if address.unix_path is not None:
                # Only the owner may connect: the socket grants the power to kill.
                os.chmod(address.unix_path, stat.S_IRUSR | stat.S_IWUSR)
        await self._set_serving(True)
        if self.trip_path.journal is not None:
            # NOT_SERVING while the journal cannot write, SERVING again once it can.
            self._journal_health = asyncio.create_task(JournalHealth(self.trip_path.journal, self._set_serving).run())

    async def _set_serving(self, serving: bool) -> None:
        # After enter_graceful_shutdown the servicer ignores set(): shutdown's NOT_SERVING stays.
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, status)
        self._serving = serving
        if self.metrics is not None:
            self.metrics.set_serving(serving)

    def _grpc_server(
        self, coordinator_service: CoordinatorService, auth: CoordinatorAuth | None = None
    ) -> grpc.aio.Server:
        server = grpc.aio.server(options=GRPC_OPTIONS, interceptors=[auth] if auth is not None else None)
        pb_grpc.add_CoordinatorServiceServicer_to_server(coordinator_service, server)
        pb_grpc.add_ToolChannelServiceServicer_to_server(self._tool_channel, server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection((*SERVICE_NAMES, health.SERVICE_NAME), server)
        return server

    def _start_doorbell(self, path: Path) -> None:
        # The same checks as the gRPC socket's: an owner-only directory nobody else may
        # write to, a stale socket replaced, a live one or a non-socket file refused.
        try:
            _prepare_unix_socket(path, flag="--doorbell")
        except StartupError as err:
            raise StartupError(f"cannot open the doorbell socket {path}: {err} (or pass --doorbell off)") from err
        listener = DoorbellListener(path)
        try:
            listener.start()
        except OSError as err:
            raise StartupError(
                f"cannot open the doorbell socket {path}: {err.strerror or err} (choose another --doorbell, or off)"
            ) from err
        self._tool_channel.doorbell = listener

    def _stop_doorbell(self) -> None:
        if self._tool_channel.doorbell is not None:
            self._tool_channel.doorbell.close()
            self._tool_channel.doorbell = None

    def _lock_state_dir(self, state_dir: Path) -> None:
        """Create the state dir (owner-only) and take its lock."""
        try:
            state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock = os.open(state_dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as err:
            raise StartupError(f"cannot use --state-dir {state_dir}: {err}") from err
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            raise StartupError(
                f"--state-dir {state_dir} is in use by another running daemon; give each daemon its own"
            ) from None
        self._state_lock = lock
        try:
            # Owner-only (token digests, remote parents' credentials), and made here so its
            # mode is not the moment's umask's (see start); sqlite's -wal and -shm copy it.
            os.close(os.open(state_dir / _JOURNAL_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        except OSError as err:
            self._close_journal()
            raise StartupError(f"cannot use --state-dir {state_dir}: {err}") from err

    def _open_journal(self, state_dir: Path) -> None:
        """Open the journal in the locked state dir (on a thread of its own: see :meth:`start`)."""
        try:
            self.trip_path.journal = Journal(state_dir / _JOURNAL_FILE)
        except JournalError as err:
            raise StartupError(str(err)) from err  # start() releases the lock, on its own thread

    def _close_journal(self) -> None:
        if self.trip_path.journal is not None:
            self.trip_path.journal.close()
            self.trip_path.journal = None
        if self._state_lock is not None:
            os.close(self._state_lock)  # releases the flock
            self._state_lock = None

    def _bind(self, server: grpc.aio.Server, address: ListenAddress, *, plaintext: bool = False) -> str:
        if address.unix_path is not None:
            _prepare_unix_socket(address.unix_path)
            # Create the socket file with no access beyond the owner from the
            # first instant, before the chmod after start makes it explicit.
            old_umask = os.umask(0o177)
            try:
                server.add_insecure_port(address.grpc_target())
            except RuntimeError as err:
                raise StartupError(f"cannot listen on {address.grpc_target()}: {err}") from err
            finally:
                os.umask(old_umask)
            return address.grpc_target()
        try:
            # The health-only listener stays plaintext: the kubelet's grpc probe speaks no TLS.
            if not plaintext and self.config.tls_cert is not None and self.config.tls_key is not None:
                credentials = grpc.ssl_server_credentials(
                    [(self.config.tls_key, self.config.tls_cert)],
                    root_certificates=self.config.tls_client_ca,
                    require_client_auth=self.config.mtls,
                )
                port = server.add_secure_port(address.grpc_target(), credentials)
            else:
                port = server.add_insecure_port(address.grpc_target())
        except RuntimeError as err:
            raise StartupError(f"cannot listen on {address.grpc_target()}: {err} (is the port in use?)") from err
        return address.grpc_target(port)

    def _bind_metrics(self, address: ListenAddress) -> None:
        """Bind and listen on the metrics port; :meth:`serve_metrics` serves it after ready.

        As socketserver would bind it (SO_REUSEADDR, the address's own family), so
        scrapes that come before the server thread runs wait in the listen queue.
        """
        host = address.host
        try:
            listener = socket.socket(_address_family(host, address.port), socket.SOCK_STREAM)
        except OSError as err:
            raise StartupError(f"cannot serve metrics on {address.grpc_target()}: {err}") from err
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, address.port))
            listener.listen(_METRICS_BACKLOG)
        except OSError as err:
            listener.close()
            raise StartupError(f"cannot serve metrics on {address.grpc_target()}: {err}") from err
        self._metrics_listener = listener

    def serve_metrics(self) -> None:
        """Build the Prometheus registry, hand it what was observed so far, serve ``/metrics``.

        Called once, after ``ready`` (by :func:`serve`; a no-op without ``--metrics-listen``).
        """
        if self._deferred_metrics is None or self._metrics_listener is None:
            return
        from prometheus_client import CollectorRegistry, disable_created_metrics

        from interrupt_sidecar.metrics import PrometheusObserver
        from interrupt_sidecar.metrics.exposition import MetricsServer

        # Prometheus 2.x stores each counter's _created sample as a series of its
        # own: it would double the series for nothing a query here uses.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.metrics = PrometheusObserver(CollectorRegistry())
        self.metrics.set_serving(self._serving)
        self._deferred_metrics.hand_over(self.metrics)
        self.trip_path.observer = self.metrics
        self._metrics_server = MetricsServer(self._metrics_listener, self.metrics.registry)
        self._metrics_listener = None  # the server owns it now

    def _stop_metrics(self) -> None:
        if self._metrics_server is not None:
            self._metrics_server.close()
            self._metrics_server = None
        if self._metrics_listener is not None:
            self._metrics_listener.close()
            self._metrics_listener = None

    async def shutdown(self) -> None:
        """Ordered and bounded: stop taking work, trip everything with
        SYSTEM_SHUTDOWN, give tools the grace to unwind and groups time to die,
        end the streams ourselves, then stop the server."""
        if not self._servers:
            return
        if self._journal_health is not None:
            self._journal_health.cancel()
        await self.health.enter_graceful_shutdown()
        if self.metrics is not None:
            self.metrics.set_serving(False)
        outcomes = self.coordinator.interrupt_all(InterruptReason.SYSTEM_SHUTDOWN, "the sidecar is shutting down")
        log.info("shutdown: tripped %d execution(s)", sum(o.tripped for o in outcomes))
        budget_s = self.config.shutdown_timeout_ns / 1e9
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget_s
        # Tools get the longest grace among live executions, within the budget.
        longest_grace = max((e.grace_ns for e in self.coordinator.list()), default=0) / 1e9
        grace_end = loop.time() + min(longest_grace, budget_s)
        while loop.time() < grace_end and self._tools_unwinding():
            await asyncio.sleep(0.01)
        if not await self.trip_path.wait_kills(max(0.0, deadline - loop.time())):
            log.error("shutdown: %d process group kill(s) still in flight", self.trip_path.kills_in_flight)
        for execution in self.coordinator.list():
            self.coordinator.end(execution.execution_id)
        # grpc's server.stop(grace) does not drain bidi streams: end them first.
        self._tool_channel.close_all(Unavailable("the sidecar is shutting down"))
        streams_deadline = loop.time() + 1.0
        while self._tool_channel.open_streams and loop.time() < streams_deadline:
            await asyncio.sleep(0.01)
        await asyncio.gather(*(server.stop(grace=1.0) for server in self._servers))
        self._servers = []
        await self.remote_parents.close()
        if self._health_server is not None:
            await self._health_server.stop(None)
            self._health_server = None
        self._stop_metrics()
        self._stop_doorbell()
        for address in self.config.listen:
            if address.unix_path is not None:
                with contextlib.suppress(FileNotFoundError):
                    address.unix_path.unlink()
        self._close_journal()
        log.info("shutdown: done")

    def _tools_unwinding(self) -> bool:
        return any(
            tool.behavior.receives_cancel and tool.unwound_at is None and not tool.detached and not tool.overran
            for execution in self.coordinator.list()
            for tool in execution.tools.values()
        )


class _JournalOpening:
    """``open_journal(state_dir)`` run on a thread of its own (see :meth:`Daemon.start`)."""

    def __init__(self, open_journal: Callable[[Path], None], state_dir: Path) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(open_journal, state_dir), name="journal-open", daemon=True
        )
        self._thread.start()

    def _run(self, open_journal: Callable[[Path], None], state_dir: Path) -> None:
        try:
            open_journal(state_dir)
        except BaseException as err:  # handed to the thread that waits
            self._error = err

    def wait(self) -> None:
        """Wait until it is done; raise what opening raised (once: a second call returns)."""
        self._thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error


def _address_family(host: str, port: int) -> socket.AddressFamily:
    """The family to bind ``host`` with: an IP literal's own, else the resolver's first answer.

    The resolver's first call in a process loads its modules (~3.5 ms here), on the way to
    ``ready``, for nothing when the address is a literal (``127.0.0.1``, the chart's ``0.0.0.0``).
    """
    try:
        return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:  # a name, or "" (every interface): as socketserver would resolve it
        return socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]


def _prepare_unix_socket(path: Path, flag: str = "--listen") -> None:
    """Create the socket's directory (owner-only) and clear a stale socket file,
    refusing to start when a live daemon still answers on it."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        parent = path.parent.stat()
    except OSError as err:
        raise StartupError(f"cannot create {path.parent}: {err}") from err
    # Someone else's directory that others may write to (and without the sticky
    # bit, so they may also replace our socket) would let them hijack the socket.
    shared_writable = parent.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not parent.st_mode & stat.S_ISVTX
    if parent.st_uid != os.getuid() and shared_writable:
        raise StartupError(
            f"{path.parent} belongs to uid {parent.st_uid} and others can write to it; "
            "choose a socket directory you own"
        )
    if not path.exists() and not path.is_symlink():
        return
    if not stat.S_ISSOCK(path.lstat().st_mode):
        raise StartupError(f"{path} exists and is not a socket; refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink()  # stale: nobody listens
        return
    finally:
        probe.close()
    raise StartupError(f"another process is serving on {path}; stop it or choose another {flag}")


async def serve(config: ServeConfig) -> int:
    """Run until SIGTERM or SIGINT; a second signal forces exit. Returns the exit code."""
    _raise_open_file_limit()
    daemon = Daemon(config)
    try:
        await daemon.start()
    except SidecarError as err:
        print(f"interrupt-sidecar: {err}", file=sys.stderr)
        return EXIT_STARTUP
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals_seen = 0

    def on_signal(signum: int) -> None:
        nonlocal signals_seen
        signals_seen += 1
        if signals_seen > 1:
            log.error("second %s: exiting now without finishing shutdown", signal.Signals(signum).name)
            os._exit(EXIT_FORCED)
        log.info("%s: shutting down", signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    print(f"ready {' '.join(daemon.addresses)}", flush=True)
    # After "ready": a pod's agent waits for it, and nothing here must precede serving.
    # Metrics first, so the objects of their import are frozen with the others.
    daemon.serve_metrics()
    _tune_garbage_collector()
    # Quiet after a burst (streams gone, a second of little allocation): glibc keeps what
    # they freed in its arenas; the trimmer gives it back once RSS grew enough to matter.
    # Imported here, after "ready": it loads ctypes (~1.3 ms) to reach malloc_trim.
    from interrupt_sidecar.osedge.heap import HeapTrimmer

    pacer = GcPacer(loop, (_GC_GEN0, _GC_GEN1, _GC_GEN2), on_quiet=HeapTrimmer().maybe_trim)
    pacer.start()
    await stop.wait()
    # The sequence bounds every step it knows of; this bounds the ones it does not (a peer's
    # stream some library awaits without a limit): past it, exit 6 as a second SIGTERM would,
    # rather than leave Kubernetes to wait out the pod's grace and SIGKILL.
    limit_s = config.shutdown_timeout_ns / 1e9 + SHUTDOWN_OVERRUN_S
    watchdog = loop.call_later(limit_s, _shutdown_overran, limit_s)
    await daemon.shutdown()
    watchdog.cancel()
    pacer.stop()
    return EXIT_OK


#: How long the steps after ``--shutdown-timeout``'s budget may take (ending the streams: 1 s;
#: grpc's stop grace: 1 s; closing the listeners and the journal) before the daemon gives up.
SHUTDOWN_OVERRUN_S = 5.0


def _shutdown_overran(limit_s: float) -> None:
    log.error("shutdown did not finish within %.1fs: exiting without finishing it", limit_s)
    logging.shutdown()
    os._exit(EXIT_FORCED)


def _raise_open_file_limit() -> None:
    """Each attached tool is a socket: 5,000 tools need more than the usual 1,024 descriptors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _tune_garbage_collector() -> None:
    """Keep full collections off the trip path.

    With thousands of streams the heap holds hundreds of thousands of long-lived objects,
    and a full (generation 2) collection walks every one of them: a pause that grows with
    the heap, and every interrupt in flight would wait for it. Objects made at start-up are
    frozen out of every collection, and generations 1 and 2 run rarely; reference counting
    still frees everything that is not in a cycle at once (grpc leaves a small cycle per
    RPC, so generation 0 must still run).

    A generation-0 pass costs in proportion to the young objects it walks, so its threshold
    sets the pause: a high one gives rare, long passes that set the tail latency under
    load; ``_GC_GEN0`` trades them for shorter ones, more often (``python -m bench``
    measures the tail). While the daemon is busy those passes run from a loop timer
    (interrupt_sidecar.gc_pacer), not inside whichever allocation crosses the threshold.

    The entry point disables the collector for ``serve``'s start-up (its imports make
    tens of thousands of long-lived objects, and automatic passes over them would walk
    them again and again); it is enabled here, after one full collection.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(_GC_GEN0, _GC_GEN1, _GC_GEN2)
    gc.enable()
