"""``interrupt-sidecar``: serve the daemon, or drive it from a shell.

The flags and variables of ``serve`` (and ``--address``/``--token`` of the client
subcommands) come from the table in :mod:`interrupt_sidecar.settings`; the exit codes, the
same for every subcommand, from :mod:`interrupt_sidecar.exits`. Both are rendered into
``docs/configuration.md`` (``make docs``).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from interrupt_sidecar_client._config import resolve_address

from interrupt_sidecar import __version__, exits, settings
from interrupt_sidecar.config import ConfigError, serve_config
from interrupt_sidecar.domain.types import InterruptReason
from interrupt_sidecar.exits import EXIT_OK, EXIT_REFUSED, EXIT_SIGINT, EXIT_UNREACHABLE, EXIT_USAGE
from interrupt_sidecar.settings import parse_duration

# grpc, protobuf and the generated code are imported by the subcommands that use them:
# each command pays only for its own imports (see docs/performance-footprint.md).
if TYPE_CHECKING:
    from google.protobuf.duration_pb2 import Duration
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

#: The wire's reasons, in its order (tests/client pins the domain's enum to the proto's).
REASONS = [reason.name for reason in InterruptReason]


def _help_width() -> int:
    """The width argparse's formatter computes for itself: the terminal's columns, less 2.

    ``argparse.HelpFormatter`` reads it (importing ``shutil``, and with it ``bz2`` and
    ``lzma``: ~1.5 ms) each time it is built, and declaring a flag builds one: ``serve``'s
    start paid that for every flag. Its parser reads it once instead, as
    ``shutil.get_terminal_size`` would: ``COLUMNS``, else the terminal of ``sys.__stdout__``,
    else 80.
    """
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    stdout = sys.__stdout__
    if columns <= 0 and stdout is not None:
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns if columns > 0 else 80) - 2


def _formatter(kind: type[argparse.HelpFormatter], width: int) -> Callable[..., argparse.HelpFormatter]:
    """``kind`` with its width given, so that building one reads no terminal (:func:`_help_width`)."""
    return functools.partial(kind, width=width)


def _add_serve(sub: _Subcommands) -> None:
    p = sub.add_parser(
        "serve",
        formatter_class=_formatter(argparse.HelpFormatter, _help_width()),
        help="run the daemon",
        description=f"Run the daemon. Every flag has an {settings.ENV_PREFIX}* environment twin "
        f"({settings.GRACE.flag}: {settings.GRACE.env}); the flag wins.",
    )
    settings.add_serve_arguments(p)
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    try:
        config = serve_config(vars(args), os.environ)
    except ConfigError as err:
        print(f"interrupt-sidecar serve: {err}", file=sys.stderr)
        return EXIT_USAGE
    import asyncio
    import logging

    logging.basicConfig(level=config.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from interrupt_sidecar.loops import loop_factory
    from interrupt_sidecar.server import serve

    with asyncio.Runner(loop_factory=loop_factory(config.loop)) as runner:
        return runner.run(serve(config))


# -- client subcommands ------------------------------------------------------


def _address(args: argparse.Namespace) -> str:
    return resolve_address(args.address)


class _WithCredential:
    """A stub whose every call carries the coordinator credential (``settings.AUTH_TOKEN``)."""

    def __init__(self, stub: pb_grpc.CoordinatorServiceStub, token: str) -> None:
        self._stub = stub
        self._metadata = (("authorization", f"Bearer {token}"),)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._stub, name)
        return lambda request, **kwargs: method(request, metadata=self._metadata, **kwargs)


def _call(args: argparse.Namespace, fn: Callable[[Any], Any]) -> Any:
    import grpc
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

    token = os.environ.get(settings.AUTH_TOKEN.env, "").strip()
    with grpc.insecure_channel(_address(args)) as channel:
        stub = pb_grpc.CoordinatorServiceStub(channel)
        return fn(_WithCredential(stub, token) if token else stub)


def _duration(text: str | None, name: str) -> Duration | None:
    if text is None:
        return None
    from google.protobuf.duration_pb2 import Duration

    d = Duration()
    d.FromNanoseconds(parse_duration(text, name))
    return d


def _print(args: argparse.Namespace, message: Any, human: str) -> None:
    if args.json:
        import json

        from google.protobuf import json_format

        print(json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True), indent=2))
    else:
        print(human)


def _begin(args: argparse.Namespace) -> int:
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

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
        _shell_exports({settings.EXECUTION_ENV: response.execution_id, settings.TOKEN.env: response.attach_token}),
    )
    return EXIT_OK


def _shell_exports(values: dict[str, str]) -> str:
    """``export NAME=VALUE`` lines for ``eval "$(interrupt-sidecar begin)"``.

    Exported, so the tools the shell starts (``interrupt-sidecar run``, a client library)
    find the token without another step; quoted, because a caller-chosen execution id may
    hold any printable character but space (``;``, ``$``, backquotes), and ``eval`` must
    set it, not run it.
    """
    import shlex

    return "\n".join(f"export {name}={shlex.quote(value)}" for name, value in values.items())


def _interrupt(args: argparse.Namespace) -> int:
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

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
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

    response = _call(args, lambda stub: stub.EndExecution(pb.EndExecutionRequest(execution_id=args.execution_id)))
    _print(args, response, f"{response.execution.execution_id}\tended")
    return EXIT_OK


def _describe(e: pb.Execution) -> str:
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

    state = "ended" if e.ended else "live"
    if e.cancelled:
        state += f", cancelled ({pb.InterruptReason.Name(e.reason).removeprefix('INTERRUPT_REASON_')})"
    context = f"\tcontext={e.context_id}" if e.context_id else ""
    return f"{e.execution_id}\t{state}\ttools={e.attached_tools}\toverruns={e.grace_overruns}{context}"


def _status(args: argparse.Namespace) -> int:
    from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb

    if args.execution_id:
        response = _call(args, lambda stub: stub.GetExecution(pb.GetExecutionRequest(execution_id=args.execution_id)))
        _print(args, response, _describe(response.execution))
    else:
        request = pb.ListExecutionsRequest(context_id=args.context or "", include_ended=args.all)
        response = _call(args, lambda stub: stub.ListExecutions(request))
        _print(args, response, "\n".join(_describe(e) for e in response.executions) or "no executions")
    return EXIT_OK


def _client_common() -> argparse.ArgumentParser:
    """The flags every coordinator command shares (argparse ``parents``)."""
    common = argparse.ArgumentParser(add_help=False)
    settings.ADDRESS.add_to(common)
    common.add_argument("--json", action="store_true", help="print the response as JSON")
    return common


def _add_begin(sub: _Subcommands) -> None:
    p = sub.add_parser(
        "begin",
        parents=[_client_common()],
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


def _add_interrupt(sub: _Subcommands) -> None:
    p = sub.add_parser(
        "interrupt", parents=[_client_common()], help="trip an execution, or every execution of a context"
    )
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


def _add_end(sub: _Subcommands) -> None:
    p = sub.add_parser("end", parents=[_client_common()], help="end an execution")
    p.add_argument("execution_id")
    p.set_defaults(func=_end)


def _add_status(sub: _Subcommands) -> None:
    p = sub.add_parser("status", parents=[_client_common()], help="show one execution, or list them")
    p.add_argument("execution_id", nargs="?")
    p.add_argument("--context", help="only executions of this context")
    p.add_argument("--all", action="store_true", help="include recently ended executions")
    p.set_defaults(func=_status)


def _add_demo(sub: _Subcommands) -> None:
    from interrupt_sidecar.demo import add_demo

    add_demo(sub)


def _add_run(sub: _Subcommands) -> None:
    from interrupt_sidecar.wrapper import add_run

    add_run(sub)


def _add_top(sub: _Subcommands) -> None:
    from interrupt_sidecar.top import add_top

    add_top(sub)


def _add_mcp(sub: _Subcommands) -> None:
    from interrupt_sidecar.mcp.command import add_mcp

    add_mcp(sub)


#: Every subcommand, in the order ``--help`` lists them, and what declares its flags.
COMMANDS: dict[str, Callable[[_Subcommands], None]] = {
    "serve": _add_serve,
    "begin": _add_begin,
    "interrupt": _add_interrupt,
    "end": _add_end,
    "status": _add_status,
    "demo": _add_demo,
    "run": _add_run,
    "top": _add_top,
    "mcp": _add_mcp,
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command``, only that subcommand's parser.

    Declaring a flag formats it (argparse checks its metavar), and the subcommands'
    modules (the wrapper, ``top``, ``mcp``, ``demo``) are imported to declare theirs:
    building every subcommand cost ``serve`` ~10–20 ms of its start for flags it never
    reads. A line that names its subcommand parses the same with that subcommand
    alone (its flags, errors and ``--help`` are its own parser's); any other line
    (``--help``, ``--version``, a typo) gets the whole parser, so argparse lists and
    suggests every subcommand.
    """
    parser = argparse.ArgumentParser(
        prog="interrupt-sidecar",
        description="A language-neutral cancellation daemon over gRPC.",
        epilog=exits.epilog("cli"),
        formatter_class=_formatter(argparse.RawDescriptionHelpFormatter, _help_width()),
    )
    parser.add_argument("--version", action="version", version=f"interrupt-sidecar {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        if command is None or name == command:
            add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    named = args_list[0] if args_list and args_list[0] in COMMANDS else None
    args = build_parser(named).parse_args(args_list)
    try:
        return int(args.func(args))
    except ConfigError as err:
        print(f"interrupt-sidecar {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except Exception as err:
        # grpc is loaded only by the commands that call the daemon: an RpcError implies it.
        grpc = sys.modules.get("grpc")
        if grpc is None or not isinstance(err, grpc.RpcError):
            raise
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
