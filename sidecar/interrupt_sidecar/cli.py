"""``interrupt-sidecar``: serve the daemon, or drive it from a shell.

Exit codes (the same for every subcommand):

====  =====================================================================
0     success
1     unexpected internal error
2     usage error: a bad flag, argument or environment variable
3     ``serve`` could not start (socket in use, directory not creatable)
4     cannot reach the daemon (client subcommands)
5     the daemon refused the request (its status and message are printed)
6     ``serve`` was forced down by a second SIGTERM/SIGINT
====  =====================================================================
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.duration_pb2 import Duration
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from interrupt_sidecar import __version__
from interrupt_sidecar.config import ENV_PREFIX, ConfigError, build_serve_config, default_socket_path, parse_duration

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_STARTUP, EXIT_UNREACHABLE, EXIT_REFUSED, EXIT_FORCED = range(7)
REASONS = [name.removeprefix("INTERRUPT_REASON_") for name in pb.InterruptReason.keys()[1:]]


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the daemon",
        description="Run the daemon. Every flag has an INTERRUPT_SIDECAR_* environment twin; the flag wins.",
    )
    p.add_argument(
        "--listen",
        action="append",
        metavar="ADDRESS",
        help="unix:///path/to.sock or HOST:PORT; repeatable (env INTERRUPT_SIDECAR_LISTEN, comma-separated; "
        "default: a unix socket under $XDG_RUNTIME_DIR or /tmp)",
    )
    p.add_argument("--metrics-listen", metavar="HOST:PORT", help="serve /metrics here; empty disables (default)")
    p.add_argument("--state-dir", metavar="DIR", help="directory for the daemon's state (created owner-only)")
    p.add_argument("--grace", metavar="DURATION", help="default grace after a trip (default 500ms)")
    p.add_argument("--loop", choices=["auto", "uvloop", "asyncio"], help="event loop (default auto: uvloop if present)")
    p.add_argument(
        "--allow-insecure-tcp",
        action="store_const",
        const=True,
        help="allow plaintext TCP on non-loopback addresses (anyone who can connect can interrupt and kill)",
    )
    p.add_argument("--shutdown-timeout", metavar="DURATION", help="bound on the SIGTERM sequence (default 10s)")
    p.add_argument(
        "--allow-uid",
        action="append",
        metavar="UID",
        help="also accept process groups whose members run as UID (repeatable; the daemon's own uid always)",
    )
    p.add_argument(
        "--auth-token-file",
        metavar="PATH",
        help="bearer token of the coordinator role, required on TCP listeners (callers send it as "
        "`authorization: Bearer <token>`; clients read INTERRUPT_SIDECAR_AUTH_TOKEN)",
    )
    p.add_argument("--tls-cert", metavar="PATH", help="PEM certificate chain for TCP listeners (TLS)")
    p.add_argument("--tls-key", metavar="PATH", help="PEM private key of --tls-cert")
    p.add_argument(
        "--tls-client-ca",
        metavar="PATH",
        help="require client certificates signed by this CA on TCP listeners (mTLS; grants the coordinator role)",
    )
    p.add_argument(
        "--remote-parent-timeout",
        metavar="DURATION",
        help="how long a remote parent's daemon may stay unreachable before its children trip (default 10s)",
    )
    p.add_argument(
        "--health-listen",
        metavar="HOST:PORT",
        help="also serve only grpc.health.v1 here (for Kubernetes grpc probes; grants nothing, any host allowed)",
    )
    p.add_argument(
        "--doorbell",
        metavar="auto|off|PATH",
        help="unix socket that rings each tool's cancel ahead of its stream, for tools that ask "
        "(default auto: beside the first unix --listen socket, as PATH.doorbell)",
    )
    p.add_argument(
        "--holder-grace",
        metavar="DURATION",
        help="after a restart, how long a held execution without a lease waits for its holder (default 10s)",
    )
    p.add_argument("--log-level", metavar="LEVEL", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    try:
        config = build_serve_config(
            listen=args.listen,
            metrics_listen=args.metrics_listen,
            state_dir=args.state_dir,
            grace=args.grace,
            loop=args.loop,
            allow_insecure_tcp=args.allow_insecure_tcp,
            shutdown_timeout=args.shutdown_timeout,
            log_level=args.log_level,
            env=os.environ,
            allow_uids=args.allow_uid,
            holder_grace=args.holder_grace,
            health_listen=args.health_listen,
            auth_token_file=args.auth_token_file,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            tls_client_ca=args.tls_client_ca,
            remote_parent_timeout=args.remote_parent_timeout,
            doorbell=args.doorbell,
        )
    except ConfigError as err:
        print(f"interrupt-sidecar serve: {err}", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from interrupt_sidecar.loops import loop_factory
    from interrupt_sidecar.server import serve

    with asyncio.Runner(loop_factory=loop_factory(config.loop)) as runner:
        return runner.run(serve(config))


# -- client subcommands ------------------------------------------------------


def _address(args: argparse.Namespace) -> str:
    if args.address:
        return str(args.address)
    env = os.environ.get(ENV_PREFIX + "ADDRESS")
    return env or f"unix://{default_socket_path(os.environ)}"


class _WithCredential:
    """A stub whose every call carries the coordinator credential (INTERRUPT_SIDECAR_AUTH_TOKEN)."""

    def __init__(self, stub: pb_grpc.CoordinatorServiceStub, token: str) -> None:
        self._stub = stub
        self._metadata = (("authorization", f"Bearer {token}"),)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._stub, name)
        return lambda request, **kwargs: method(request, metadata=self._metadata, **kwargs)


def _call(args: argparse.Namespace, fn: Callable[[Any], Any]) -> Any:
    token = os.environ.get("INTERRUPT_SIDECAR_AUTH_TOKEN", "").strip()
    with grpc.insecure_channel(_address(args)) as channel:
        stub = pb_grpc.CoordinatorServiceStub(channel)
        return fn(_WithCredential(stub, token) if token else stub)


def _duration(text: str | None, name: str) -> Duration | None:
    if text is None:
        return None
    d = Duration()
    d.FromNanoseconds(parse_duration(text, name))
    return d


def _print(args: argparse.Namespace, message: Any, human: str) -> None:
    if args.json:
        print(json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True), indent=2))
    else:
        print(human)


def _begin(args: argparse.Namespace) -> int:
    labels = {}
    for item in args.label or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--label {item!r}: expected KEY=VALUE")
        labels[key] = value
    request = pb.BeginExecutionRequest(
        execution_id=args.execution_id or "",
        parent_execution_id=args.parent or "",
        context_id=args.context or "",
        grace=_duration(args.grace, "--grace"),
        budget=_duration(args.budget, "--budget"),
        lease_ttl=_duration(args.lease_ttl, "--lease-ttl"),
        labels=labels,
        session_id=args.session or "",
        task_id=args.task or "",
    )
    response = _call(args, lambda stub: stub.BeginExecution(request))
    _print(
        args,
        response,
        _shell_exports(
            {"INTERRUPT_SIDECAR_EXECUTION": response.execution_id, "INTERRUPT_SIDECAR_TOKEN": response.attach_token}
        ),
    )
    return EXIT_OK


def _shell_exports(values: dict[str, str]) -> str:
    """``export NAME=VALUE`` lines for ``eval "$(interrupt-sidecar begin)"``.

    Exported, so the tools the shell starts (``interrupt-sidecar run``, a client library)
    find the token without another step; quoted, because a caller-chosen execution id may
    hold any printable character but space (``;``, ``$``, backquotes), and ``eval`` must
    set it, not run it.
    """
    return "\n".join(f"export {name}={shlex.quote(value)}" for name, value in values.items())


def _interrupt(args: argparse.Namespace) -> int:
    targets = {
        "execution_id": args.execution_id,
        "context_id": args.context,
        "session_id": args.session,
        "task_id": args.task,
    }
    named = {field: value for field, value in targets.items() if value}
    if len(named) != 1:
        raise ConfigError("name one target: an execution id, --context, --session or --task")
    # A session or a task names its own reason (SESSION_RELEASED, TASK_CANCELLED) unless one is given.
    default = "USER_SIGINT" if ("execution_id" in named or "context_id" in named) else None
    reason_name = args.reason or default
    reason = pb.InterruptReason.Value("INTERRUPT_REASON_" + reason_name) if reason_name else 0
    request = pb.InterruptRequest(reason=reason, detail=args.detail or "", **named)  # type: ignore[arg-type]
    response = _call(args, lambda stub: stub.Interrupt(request))
    lines = [
        f"{o.execution_id}\t{'tripped' if o.tripped else 'already tripped'}\t"
        f"{pb.InterruptReason.Name(o.reason).removeprefix('INTERRUPT_REASON_')}"
        for o in response.outcomes
    ]
    _print(args, response, "\n".join(lines) if lines else "no live execution matched")
    return EXIT_OK


def _end(args: argparse.Namespace) -> int:
    response = _call(args, lambda stub: stub.EndExecution(pb.EndExecutionRequest(execution_id=args.execution_id)))
    _print(args, response, f"{response.execution.execution_id}\tended")
    return EXIT_OK


def _describe(e: pb.Execution) -> str:
    state = "ended" if e.ended else "live"
    if e.cancelled:
        state += f", cancelled ({pb.InterruptReason.Name(e.reason).removeprefix('INTERRUPT_REASON_')})"
    context = f"\tcontext={e.context_id}" if e.context_id else ""
    return f"{e.execution_id}\t{state}\ttools={e.attached_tools}\toverruns={e.grace_overruns}{context}"


def _status(args: argparse.Namespace) -> int:
    if args.execution_id:
        response = _call(args, lambda stub: stub.GetExecution(pb.GetExecutionRequest(execution_id=args.execution_id)))
        _print(args, response, _describe(response.execution))
    else:
        request = pb.ListExecutionsRequest(context_id=args.context or "", include_ended=args.all)
        response = _call(args, lambda stub: stub.ListExecutions(request))
        _print(args, response, "\n".join(_describe(e) for e in response.executions) or "no executions")
    return EXIT_OK


def _add_client(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", help="the daemon (default $INTERRUPT_SIDECAR_ADDRESS, else the default socket)")
    common.add_argument("--json", action="store_true", help="print the response as JSON")

    p = sub.add_parser(
        "begin",
        parents=[common],
        help='begin an execution; prints its id and attach token as export lines: eval "$(interrupt-sidecar begin)"',
    )
    p.add_argument("--id", dest="execution_id", help="caller-chosen execution id")
    p.add_argument("--parent", help="parent execution id (cascade)")
    p.add_argument("--context", help="context id (for targeted interrupts)")
    p.add_argument("--grace", help="grace after the trip, e.g. 500ms")
    p.add_argument("--budget", help="wall-clock budget, e.g. 30s")
    p.add_argument("--lease-ttl", help="lease; renew with KeepAlive or it trips with LEASE_LOST")
    p.add_argument("--label", action="append", metavar="KEY=VALUE")
    p.add_argument("--session", help="session id (Interrupt --session trips the session's executions)")
    p.add_argument("--task", help="scheduled task id (Interrupt --task trips the task's executions)")
    p.set_defaults(func=_begin)

    p = sub.add_parser("interrupt", parents=[common], help="trip an execution, or every execution of a context")
    p.add_argument("execution_id", nargs="?")
    p.add_argument("--context", help="trip every live execution of this context instead")
    p.add_argument("--session", help="trip every live execution of this session (default reason SESSION_RELEASED)")
    p.add_argument("--task", help="trip every live execution of this task (default reason TASK_CANCELLED)")
    p.add_argument(
        "--reason",
        choices=REASONS,
        help="why (default USER_SIGINT; for --session SESSION_RELEASED, for --task TASK_CANCELLED)",
    )
    p.add_argument("--detail", help="free text for people and logs")
    p.set_defaults(func=_interrupt)

    p = sub.add_parser("end", parents=[common], help="end an execution")
    p.add_argument("execution_id")
    p.set_defaults(func=_end)

    p = sub.add_parser("status", parents=[common], help="show one execution, or list them")
    p.add_argument("execution_id", nargs="?")
    p.add_argument("--context", help="only executions of this context")
    p.add_argument("--all", action="store_true", help="include recently ended executions")
    p.set_defaults(func=_status)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="interrupt-sidecar",
        description="A language-neutral cancellation daemon over gRPC.",
        epilog="Exit codes: 0 ok, 1 internal error, 2 usage, 3 serve could not start, 4 daemon unreachable, "
        "5 request refused, 6 forced shutdown.",
    )
    parser.add_argument("--version", action="version", version=f"interrupt-sidecar {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_serve(sub)
    _add_client(sub)
    from interrupt_sidecar.demo import add_demo
    from interrupt_sidecar.mcp import add_mcp
    from interrupt_sidecar.top import add_top
    from interrupt_sidecar.wrapper import add_run

    add_demo(sub)
    add_run(sub)
    add_top(sub)
    add_mcp(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ConfigError as err:
        print(f"interrupt-sidecar {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except grpc.RpcError as err:
        code = err.code() if isinstance(err, grpc.Call) else None
        details = err.details() if isinstance(err, grpc.Call) else str(err)
        if code == grpc.StatusCode.UNAVAILABLE:
            print(
                f"interrupt-sidecar {args.command}: cannot reach the daemon at {_address(args)}: {details}",
                file=sys.stderr,
            )
            return EXIT_UNREACHABLE
        print(f"interrupt-sidecar {args.command}: {code.name if code else 'ERROR'}: {details}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130
