"""One root exception type; each subclass names the gRPC status it maps to.

The domain raises these without knowing about gRPC; ``services.status`` maps them
at the boundary. Messages are written for the person who will read them.
"""

from __future__ import annotations


class SidecarError(Exception):
    """Root of every error the daemon reports to a caller."""

    #: Name of the ``grpc.StatusCode`` member this error maps to.
    status_name = "UNKNOWN"

    def __init__(self, message: str = "", *, cause: str | None = None) -> None:
        super().__init__(message)
        #: A bounded, machine-readable why (e.g. the process-group refusal rule), for metrics.
        self.cause = cause


class InvalidArgument(SidecarError):
    """The request is malformed: a field is missing, out of range or too large."""

    status_name = "INVALID_ARGUMENT"


class NotFound(SidecarError):
    """The named execution, token or process group does not exist."""

    status_name = "NOT_FOUND"


class AlreadyExists(SidecarError):
    """An execution or terminator with that id exists already."""

    status_name = "ALREADY_EXISTS"


class FailedPrecondition(SidecarError):
    """The request is well-formed but not allowed in the current state."""

    status_name = "FAILED_PRECONDITION"


class PermissionDenied(SidecarError):
    """The caller presented a credential that does not grant this."""

    status_name = "PERMISSION_DENIED"


class Unauthenticated(SidecarError):
    """The caller presented no credential."""

    status_name = "UNAUTHENTICATED"


class ResourceExhausted(SidecarError):
    """A limit of the daemon was reached (executions, tools, terminators, outbox)."""

    status_name = "RESOURCE_EXHAUSTED"


class Internal(SidecarError):
    """A bug in the daemon; the message says what failed."""

    status_name = "INTERNAL"


class Unavailable(SidecarError):
    """The daemon is shutting down; retry against another (or a restarted) daemon."""

    status_name = "UNAVAILABLE"
