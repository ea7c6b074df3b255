"""Server reflection under both names: ``grpc.reflection.v1`` and ``grpc.reflection.v1alpha``.

grpcio-reflection serves only v1alpha (grpc/grpc#38576 asks for v1); grpcurl falls back
to it, newer tools may not. The two protocols are one protocol under two package names:
v1 is v1alpha promoted, message for message and field for field (the same numbers and
types, which ``tests/daemon/test_reflection.py`` pins against grpc-go's own v1 client).
grpc-java serves v1alpha from its v1 definition the same way, renamed.

So v1 is served by the same grpcio-reflection servicer over the same descriptor pool:
its method reads and writes the v1alpha message classes, whose bytes are v1's. For
clients that reflect on the reflection service itself (``grpcurl describe
grpc.reflection.v1.ServerReflection``), the v1 file is added to the pool, derived from
v1alpha's with the package renamed and v1's file options.

Both are registered when the server is built, but grpcio-reflection's servicer (with
``descriptor_pb2``) and the v1 file are made on the first reflection call: most daemons
are never reflected on, and those ~2-3 ms were on the way to ``ready``. Registering
needs only the request and response classes (``reflection_pb2``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf import descriptor_pool
from grpc_reflection.v1alpha import reflection_pb2

if TYPE_CHECKING:
    from google.protobuf import descriptor_pb2

__all__ = ["SERVICE_NAMES", "enable_server_reflection"]

#: grpcio-reflection's ``reflection.SERVICE_NAME`` (tests/daemon/test_reflection.py lists it on the wire).
V1ALPHA_SERVICE = "grpc.reflection.v1alpha.ServerReflection"
V1_PACKAGE = "grpc.reflection.v1"
V1_SERVICE = f"{V1_PACKAGE}.ServerReflection"
#: The reflection services this module serves, v1 first (what current clients try first).
SERVICE_NAMES = (V1_SERVICE, V1ALPHA_SERVICE)
#: grpc/reflection/v1/reflection.proto's name and file options.
V1_FILE = "grpc/reflection/v1/reflection.proto"
_V1_OPTIONS = {
    "go_package": "google.golang.org/grpc/reflection/grpc_reflection_v1",
    "java_multiple_files": True,
    "java_package": "io.grpc.reflection.v1",
    "java_outer_classname": "ServerReflectionProto",
}


def v1_file() -> descriptor_pb2.FileDescriptorProto:
    """grpc/reflection/v1/reflection.proto, as v1alpha's file with the package renamed."""
    from google.protobuf import descriptor_pb2

    v1alpha = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(v1alpha)
    old = f".{v1alpha.package}."
    v1 = descriptor_pb2.FileDescriptorProto()
    v1.CopyFrom(v1alpha)
    v1.name, v1.package = V1_FILE, V1_PACKAGE
    v1.options.Clear()
    for option, value in _V1_OPTIONS.items():
        setattr(v1.options, option, value)
    for message in v1.message_type:
        for field in message.field:
            if field.type_name.startswith(old):
                field.type_name = f".{V1_PACKAGE}." + field.type_name.removeprefix(old)
    for service in v1.service:
        for method in service.method:
            method.input_type = f".{V1_PACKAGE}." + method.input_type.removeprefix(old)
            method.output_type = f".{V1_PACKAGE}." + method.output_type.removeprefix(old)
    return v1


def _add_v1_file(pool: descriptor_pool.DescriptorPool) -> None:
    try:
        pool.FindFileByName(V1_FILE)
    except KeyError:
        pool.AddSerializedFile(v1_file().SerializeToString())


class _Reflection:
    """Serves ``ServerReflectionInfo`` with grpcio-reflection's servicer, made on first use."""

    def __init__(self, service_names: tuple[str, ...]) -> None:
        self._service_names = service_names
        self._servicer: Any = None

    async def ServerReflectionInfo(
        self,
        requests: AsyncIterator[reflection_pb2.ServerReflectionRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[reflection_pb2.ServerReflectionResponse]:
        if self._servicer is None:
            # On the event loop's thread, so made once: nothing awaits between the check and here.
            from grpc_reflection.v1alpha import reflection

            _add_v1_file(descriptor_pool.Default())
            self._servicer = reflection.aio.ReflectionServicer(self._service_names)
        async for response in self._servicer.ServerReflectionInfo(requests, context):
            yield response


def enable_server_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection on ``server`` under v1 and v1alpha, listing ``service_names`` and both
    reflection services."""
    servicer = _Reflection((*service_names, *SERVICE_NAMES))
    info = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        tuple(grpc.method_handlers_generic_handler(name, {"ServerReflectionInfo": info}) for name in SERVICE_NAMES)
    )
