"""Who may do what on a network listener: the coordinator role and the tool role.

* **Coordinator role** (``CoordinatorService``: begin, interrupt, end, watch, ...): a bearer
  token (``authorization: Bearer <token>``, the daemon's ``--auth-token-file``), or — with
  mTLS (``--tls-client-ca``) and no token configured — a client certificate the TLS
  handshake verified.
* **Tool role** (``ToolChannelService.Attach``): the execution's attach token, checked in
  ``hello`` by the coordinator; it grants exactly one execution. No bearer token needed.
* Health and reflection are open: they grant nothing.

Unix-socket listeners are not intercepted: the socket's file mode (0600) is their access
control. Every denial is UNAUTHENTICATED (no or an unusable credential) or
PERMISSION_DENIED (a credential of the wrong role), with a message a person can act on,
and is counted (``interrupt_sidecar_auth_denials_total``). A denial never depends on what
the request names, so it reveals nothing about which executions exist.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from interrupt_sidecar.domain.coordinator import TOKEN_PREFIX
from interrupt_sidecar.runtime.observer import TripObserver

_COORDINATOR_PREFIX = "/interrupt.v1.CoordinatorService/"


class CoordinatorAuth(grpc.aio.ServerInterceptor):
    """Refuses coordinator-role calls without the coordinator credential."""

    def __init__(self, token: str | None, *, mtls: bool, observer: TripObserver) -> None:
        self._token = token.encode() if token is not None else None
        self._mtls = mtls
        self._observer = observer

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(details)
        if handler is None or not details.method.startswith(_COORDINATOR_PREFIX):
            return handler
        refusal = self._refusal(details.invocation_metadata)
        if refusal is None:
            return handler
        code, message = refusal
        self._observer.auth_denied("coordinator", code.name)
        return _denying(handler, code, message)

    def _refusal(self, metadata: Any) -> tuple[grpc.StatusCode, str] | None:
        if self._token is None:
            # mTLS only: the handshake already verified the client's certificate.
            return None if self._mtls else (grpc.StatusCode.UNAUTHENTICATED, "no coordinator credential configured")
        values = [v for k, v in (metadata or ()) if k == "authorization"]
        if not values:
            return (
                grpc.StatusCode.UNAUTHENTICATED,
                "this listener requires the coordinator credential: send `authorization: Bearer <token>` "
                "(the daemon's --auth-token-file; clients read INTERRUPT_SIDECAR_AUTH_TOKEN)",
            )
        value = values[0] if isinstance(values[0], str) else values[0].decode(errors="replace")
        scheme, _, presented = value.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return (grpc.StatusCode.UNAUTHENTICATED, "the authorization header must be `Bearer <token>`")
        presented = presented.strip()
        if hmac.compare_digest(presented.encode(), self._token):
            return None
        if presented.startswith(f"{TOKEN_PREFIX}."):
            return (
                grpc.StatusCode.PERMISSION_DENIED,
                "an attach token grants the tool role only (ToolChannelService.Attach); the coordinator role "
                "needs the coordinator credential",
            )
        return (grpc.StatusCode.UNAUTHENTICATED, "the bearer token is not the coordinator credential")


def _denying(
    handler: grpc.RpcMethodHandler[Any, Any], code: grpc.StatusCode, message: str
) -> grpc.RpcMethodHandler[Any, Any]:
    """A handler of the same shape as ``handler`` that aborts with ``code``."""

    async def deny(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(code, message)

    async def deny_stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(code, message)
        yield  # pragma: no cover - makes this an async generator, as the stream handler type needs

    kwargs = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(deny_stream, **kwargs)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(deny_stream, **kwargs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(deny, **kwargs)
    return grpc.unary_unary_rpc_method_handler(deny, **kwargs)
