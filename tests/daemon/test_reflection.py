"""Server reflection over the wire, under grpc.reflection.v1 and v1alpha.

The v1 check that matters is made by a client that is not ours: grpc-go's generated v1
reflection client (tests/daemon/reflection_v1_client), which speaks v1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from tests.conftest import DaemonProcess

HERE = Path(__file__).resolve().parent
V1_CLIENT = HERE / "reflection_v1_client"
REQUIRE_ALL = os.environ.get("INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES") == "1"

DAEMON_SERVICES = {"interrupt.v1.CoordinatorService", "interrupt.v1.ToolChannelService", "grpc.health.v1.Health"}
REFLECTION_SERVICES = {"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
#: The contract's file name in protos/, in every language's stubs, and so on the wire.
CONTRACT = "interrupt/v1/interrupt.proto"

# grpc/reflection/v1/reflection.proto (grpc-proto), as grpc-go's client decodes the file the
# daemon serves for it: every message, every field's number and type.
V1_MESSAGES = {
    "ServerReflectionRequest": [
        "host=1:TYPE_STRING",
        "file_by_filename=3:TYPE_STRING",
        "file_containing_symbol=4:TYPE_STRING",
        "file_containing_extension=5:.grpc.reflection.v1.ExtensionRequest",
        "all_extension_numbers_of_type=6:TYPE_STRING",
        "list_services=7:TYPE_STRING",
    ],
    "ExtensionRequest": ["containing_type=1:TYPE_STRING", "extension_number=2:TYPE_INT32"],
    "ServerReflectionResponse": [
        "valid_host=1:TYPE_STRING",
        "original_request=2:.grpc.reflection.v1.ServerReflectionRequest",
        "file_descriptor_response=4:.grpc.reflection.v1.FileDescriptorResponse",
        "all_extension_numbers_response=5:.grpc.reflection.v1.ExtensionNumberResponse",
        "list_services_response=6:.grpc.reflection.v1.ListServiceResponse",
        "error_response=7:.grpc.reflection.v1.ErrorResponse",
    ],
    "FileDescriptorResponse": ["file_descriptor_proto=1:TYPE_BYTES"],
    "ExtensionNumberResponse": ["base_type_name=1:TYPE_STRING", "extension_number=2:TYPE_INT32"],
    "ListServiceResponse": ["service=1:.grpc.reflection.v1.ServiceResponse"],
    "ServiceResponse": ["name=1:TYPE_STRING"],
    "ErrorResponse": ["error_code=1:TYPE_INT32", "error_message=2:TYPE_STRING"],
}


@pytest.fixture(scope="module")
def v1_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """grpc-go's v1 reflection client, built by the go command (from the module cache)."""
    go = shutil.which("go")
    if go is None:
        if REQUIRE_ALL:
            pytest.fail("the go command is not installed; INTERRUPT_SIDECAR_REQUIRE_ALL_LANGUAGES=1 requires it")
        pytest.skip("the go command is not installed")
    binary = tmp_path_factory.mktemp("reflection") / "reflection_v1_client"
    subprocess.run([go, "build", "-trimpath", "-o", str(binary), "."], cwd=V1_CLIENT, check=True, timeout=600)
    return binary


@pytest.mark.slow
@pytest.mark.timeout(660)
def test_grpc_gos_v1_client_lists_and_resolves(daemon: DaemonProcess, v1_client: Path) -> None:
    symbols = ["interrupt.v1.CoordinatorService", "grpc.reflection.v1.ServerReflection"]
    result = subprocess.run(
        [str(v1_client), daemon.address, *symbols], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["services"]) >= DAEMON_SERVICES | REFLECTION_SERVICES
    declaring = report["files"]["interrupt.v1.CoordinatorService"][0]
    assert declaring["name"] == CONTRACT
    assert declaring["package"] == "interrupt.v1"
    assert {"CoordinatorService", "ToolChannelService"} <= set(declaring["services"])
    reflection = report["files"]["grpc.reflection.v1.ServerReflection"][0]
    assert (reflection["name"], reflection["package"]) == ("grpc/reflection/v1/reflection.proto", "grpc.reflection.v1")
    assert reflection["services"] == ["ServerReflection"]
    assert reflection["messages"] == V1_MESSAGES


@pytest.mark.timeout(30)
def test_the_contract_is_served_under_its_own_file_name_and_resolves(daemon: DaemonProcess) -> None:
    """Reflection names the file as protos/ does, and what it serves is enough to call with.

    grpcio-reflection's own client (the descriptor database grpcurl-like tools build on)
    fetches the file by symbol and by name into a pool of its own; nothing generated is used.
    """
    with grpc.insecure_channel(daemon.address) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        assert set(database.get_services()) >= DAEMON_SERVICES | REFLECTION_SERVICES
        declaring = database.FindFileContainingSymbol("interrupt.v1.CoordinatorService")
        assert (declaring.name, declaring.package) == (CONTRACT, "interrupt.v1")
        assert database.FindFileByName(CONTRACT).name == CONTRACT
        pool = descriptor_pool.DescriptorPool(database)
        service = pool.FindServiceByName("interrupt.v1.CoordinatorService")
        assert service.file.name == CONTRACT
        assert pool.FindMessageTypeByName("interrupt.v1.ToolMessage").file.name == CONTRACT
        method = service.methods_by_name["BeginExecution"]
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        begin = channel.unary_unary(
            f"/{service.full_name}/{method.name}",
            request_serializer=request.SerializeToString,
            response_deserializer=response.FromString,
        )
        begun = begin(request(execution_id="by-reflection"), timeout=10)
        # Read by name: the class was built from the served descriptor, not generated.
        fields = {field.name: value for field, value in begun.ListFields()}
        assert fields["execution_id"] == "by-reflection"
        assert fields["execution"].execution_id == "by-reflection"


async def _list_services(channel: grpc.aio.Channel, service: str) -> set[str]:
    """list_services over ``service``'s ServerReflectionInfo (the two versions share messages)."""
    info = channel.stream_stream(
        f"/{service}/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )

    async def requests() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    async for response in info(requests()):
        return {s.name for s in response.list_services_response.service}
    raise AssertionError("no answer")


@pytest.mark.parametrize("service", sorted(REFLECTION_SERVICES))
async def test_both_versions_list_the_services(channel: grpc.aio.Channel, service: str) -> None:
    assert await _list_services(channel, service) >= DAEMON_SERVICES | REFLECTION_SERVICES


async def test_v1alpha_resolves_the_v1_service_too(channel: grpc.aio.Channel) -> None:
    """A client that reflects over v1alpha can still describe the v1 service."""
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)

    async def requests() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(file_containing_symbol="grpc.reflection.v1.ServerReflection")

    async for response in stub.ServerReflectionInfo(requests()):
        assert not response.HasField("error_response"), response.error_response
        assert response.file_descriptor_response.file_descriptor_proto
        break
