"""Domain errors to gRPC status codes: the one place that mapping lives."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Never, TypeVar

import grpc

from interrupt_sidecar.errors import SidecarError

Context = grpc.aio.ServicerContext[object, object]
_S = TypeVar("_S")
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


def status_code(err: SidecarError) -> grpc.StatusCode:
    return grpc.StatusCode[err.status_name]


async def abort(context: Context, err: SidecarError) -> Never:
    """End the RPC with the error's status code and its message."""
    await context.abort(status_code(err), str(err))


def maps_errors(
    handler: Callable[[_S, _Req, Context], Awaitable[_Resp]],
) -> Callable[[_S, _Req, Context], Awaitable[_Resp]]:
    """A unary handler whose SidecarErrors end the call with their status code."""

    @functools.wraps(handler)
    async def wrapper(self: _S, request: _Req, context: Context) -> _Resp:
        try:
            return await handler(self, request, context)
        except SidecarError as err:
            await abort(context, err)

    return wrapper
