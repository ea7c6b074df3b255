"""One root exception for everything the sidecar refuses or cannot do, mapped at the gRPC boundary.

``SidecarError`` carries the ``grpc.StatusCode``; each subclass names one. A refused
``Attach`` (the stream ends with a status) and a refused request on the stream (a
``ChannelError`` message) map to the same classes.

``CancelledExecution`` is deliberately *not* a ``SidecarError``: it is the normal way a
tool learns it was cancelled, not a failure of the sidecar, and code that falls back on
``except SidecarError`` (daemon unreachable, say) must never swallow it.
"""

from __future__ import annotations

import grpc

from interrupt_sidecar_client._types import Cancellation, InterruptReason

__all__ = [
    "AlreadyExists",
    "CancelledExecution",
    "ConnectionLost",
    "DeadlineExceeded",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "SidecarError",
    "ThreadInterrupted",
    "Unauthenticated",
    "Unavailable",
]


class SidecarError(Exception):
    """Root of every error the client raises about the sidecar.

    ``code`` is the gRPC status the daemon answered with (``None`` for errors raised by
    the client itself); ``terminator_id`` names the
    terminator concerned, when there is one.
    """

    code: grpc.StatusCode | None = None

    def __init__(self, message: str, *, code: grpc.StatusCode | None = None, terminator_id: str = "") -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.terminator_id = terminator_id

    def __str__(self) -> str:
        return self.message if self.code is None else f"{self.message} ({self.code.name})"


class InvalidArgument(SidecarError):
    """The request was malformed: a field missing, out of range or too large."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(SidecarError):
    """The execution, attach token or process group does not exist (or has ended)."""

    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(SidecarError):
    """An execution or terminator with that id exists already."""

    code = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(SidecarError):
    """Well-formed but not allowed now: the behaviour forbids it, or the run has closed."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class PermissionDenied(SidecarError):
    """The credential (the attach token's secret) does not grant this."""

    code = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(SidecarError):
    """No credential was presented (an empty attach token)."""

    code = grpc.StatusCode.UNAUTHENTICATED


class ResourceExhausted(SidecarError):
    """A limit of the daemon was reached (executions, tools, terminators)."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(SidecarError):
    """The daemon could not be reached at the configured address."""

    code = grpc.StatusCode.UNAVAILABLE


class ConnectionLost(Unavailable):
    """The tool's stream to the daemon ended before the tool's run did."""


class DeadlineExceeded(SidecarError):
    """The daemon did not answer in time."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


_BY_CODE: dict[grpc.StatusCode, type[SidecarError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        NotFound,
        AlreadyExists,
        FailedPrecondition,
        PermissionDenied,
        Unauthenticated,
        ResourceExhausted,
        Unavailable,
        DeadlineExceeded,
    )
    if cls.code is not None
}
_BY_NUMBER: dict[int, grpc.StatusCode] = {code.value[0]: code for code in grpc.StatusCode}


def error_for(code: grpc.StatusCode | int, message: str, *, terminator_id: str = "") -> SidecarError:
    """The exception for a gRPC status code (a ``grpc.StatusCode`` or its number)."""
    if isinstance(code, int):
        status = _BY_NUMBER.get(code, grpc.StatusCode.UNKNOWN)
        if status is grpc.StatusCode.UNKNOWN and code != status.value[0]:
            message = f"{message} [status {code}]"
    else:
        status = code
    cls = _BY_CODE.get(status, SidecarError)
    return cls(message, code=status, terminator_id=terminator_id)


def error_from_rpc(error: grpc.aio.AioRpcError | grpc.RpcError, what: str) -> SidecarError:
    """Map a failed RPC to the client's hierarchy; ``what`` says what was being done."""
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    details = error.details() if callable(getattr(error, "details", None)) else str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, f"{what}: {details or 'no details'}")


class CancelledExecution(Exception):
    """The execution a tool runs in was cancelled.

    Raised by ``CancellationSignal.checkpoint()``, and by ``attach`` scopes when a
    THREAD_INTERRUPT tool is interrupted. A subclass of ``Exception`` and *not* of
    ``SidecarError``: catch it to turn the cancel into the tool's "interrupted" result.
    """

    def __init__(self, cancellation: Cancellation | None = None, message: str | None = None) -> None:
        self.cancellation = cancellation
        if message is None:
            reason = cancellation.reason.name if cancellation is not None else "UNKNOWN"
            message = f"execution cancelled: {reason}"
            if cancellation is not None and cancellation.detail:
                message += f" ({cancellation.detail})"
        super().__init__(message)

    @property
    def reason(self) -> InterruptReason | None:
        """The execution's reason, ``None`` when not known at the point it was raised."""
        return self.cancellation.reason if self.cancellation is not None else None

    @property
    def detail(self) -> str:
        """The free-text detail of the interrupt, if any."""
        return self.cancellation.detail if self.cancellation is not None else ""


class ThreadInterrupted(CancelledExecution):
    """Raised *inside* a THREAD_INTERRUPT worker thread that is not the main thread.

    The interpreter raises it asynchronously (``PyThreadState_SetAsyncExc``) and
    instantiates it without arguments, so it carries no reason; leaving the ``attach``
    scope turns it into a ``CancelledExecution`` that does.
    """

    def __init__(self) -> None:
        super().__init__(None, "execution cancelled: the worker thread was interrupted")
