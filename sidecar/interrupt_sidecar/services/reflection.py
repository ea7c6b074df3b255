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
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

__all__ = ["SERVICE_NAMES", "enable_server_reflection"]

V1ALPHA_SERVICE = reflection.SERVICE_NAME
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


def enable_server_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection on ``server`` under v1 and v1alpha, listing ``service_names`` and both
    reflection services."""
    _add_v1_file(descriptor_pool.Default())
    servicer = reflection.aio.ReflectionServicer((*service_names, *SERVICE_NAMES))
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1_info = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE, {"ServerReflectionInfo": v1_info}),)
    )
