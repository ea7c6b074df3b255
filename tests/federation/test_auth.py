"""Authentication and roles on network listeners: bearer tokens, mTLS, attach tokens.

Every CoordinatorService RPC is tried without credentials, with the wrong role's
credential and with a wrong token; attach tokens grant exactly one execution; TLS and mTLS
run with a CA this test generates. Denials are counted in a metric.
"""

from __future__ import annotations

import datetime
import ipaddress
import signal
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess, free_port, start_daemon
from tests.daemon.wire import RawTool

TOKEN = "coordinator-credential-for-tests-0123456789"
BEARER = (("authorization", f"Bearer {TOKEN}"),)


@dataclass
class TcpDaemon:
    process: DaemonProcess
    address: str
    metrics_port: int

    def denials(self) -> dict[tuple[str, str], float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as response:
            text = response.read().decode()
        found: dict[tuple[str, str], float] = {}
        for line in text.splitlines():
            if line.startswith("interrupt_sidecar_auth_denials_total{"):
                labels, value = line.split("} ")
                parts = dict(item.split("=") for item in labels.split("{", 1)[1].split(","))
                found[(parts["role"].strip('"'), parts["code"].strip('"'))] = float(value)
        return found


@pytest.fixture
def token_daemon(tmp_short: Path) -> Iterator[TcpDaemon]:
    token_file = tmp_short / "token"
    token_file.write_text(TOKEN + "\n")
    port, metrics = free_port(), free_port()
    process = start_daemon(
        tmp_short,
        "--listen",
        f"127.0.0.1:{port}",
        "--auth-token-file",
        str(token_file),
        "--metrics-listen",
        f"127.0.0.1:{metrics}",
    )
    try:
        yield TcpDaemon(process, f"127.0.0.1:{port}", metrics)
    finally:
        assert process.stop(signal.SIGTERM) == 0


def coordinator_calls(stub: pb_grpc.CoordinatorServiceAsyncStub) -> dict[str, Callable[..., Awaitable[Any]]]:
    """Every CoordinatorService RPC, each with a well-formed request."""

    async def watch(**kwargs: Any) -> Any:
        call = stub.WatchExecution(pb.WatchExecutionRequest(execution_id="x"), **kwargs)
        return await call.read()

    return {
        "BeginExecution": lambda **kw: stub.BeginExecution(pb.BeginExecutionRequest(), **kw),
        "Interrupt": lambda **kw: stub.Interrupt(
            pb.InterruptRequest(execution_id="x", reason=pb.INTERRUPT_REASON_USER_SIGINT), **kw
        ),
        "EndExecution": lambda **kw: stub.EndExecution(pb.EndExecutionRequest(execution_id="x"), **kw),
        "KeepAlive": lambda **kw: stub.KeepAlive(pb.KeepAliveRequest(execution_id="x"), **kw),
        "GetExecution": lambda **kw: stub.GetExecution(pb.GetExecutionRequest(execution_id="x"), **kw),
        "ListExecutions": lambda **kw: stub.ListExecutions(pb.ListExecutionsRequest(), **kw),
        "WatchExecution": watch,
    }


async def refused_with(call: Callable[..., Awaitable[Any]], **kwargs: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call(**kwargs)
    return refused.value.code(), refused.value.details() or ""


async def test_every_coordinator_rpc_needs_the_coordinator_credential(token_daemon: TcpDaemon) -> None:
    async with grpc.aio.insecure_channel(token_daemon.address) as channel:
        stub = pb_grpc.CoordinatorServiceStub(channel)
        begun = await stub.BeginExecution(pb.BeginExecutionRequest(), metadata=BEARER)
        wrong_role = (("authorization", f"Bearer {begun.attach_token}"),)
        for name, call in coordinator_calls(stub).items():
            code, message = await refused_with(call)
            assert code == grpc.StatusCode.UNAUTHENTICATED and "authorization: Bearer" in message, name
            code, message = await refused_with(call, metadata=(("authorization", "Bearer not-the-token"),))
            assert code == grpc.StatusCode.UNAUTHENTICATED and "not the coordinator credential" in message, name
            code, message = await refused_with(call, metadata=(("authorization", TOKEN),))
            assert code == grpc.StatusCode.UNAUTHENTICATED and "Bearer <token>" in message, name
            code, message = await refused_with(call, metadata=wrong_role)
            assert code == grpc.StatusCode.PERMISSION_DENIED and "tool role only" in message, name
        # The denial is the same whatever the request names: existence never leaks.
        for execution_id in (begun.execution_id, "no-such-execution"):
            code, _ = await refused_with(
                lambda **kw: stub.GetExecution(pb.GetExecutionRequest(execution_id=execution_id), **kw)
            )
            assert code == grpc.StatusCode.UNAUTHENTICATED
        got = await stub.GetExecution(pb.GetExecutionRequest(execution_id=begun.execution_id), metadata=BEARER)
        assert got.execution.execution_id == begun.execution_id
    denials = token_daemon.denials()
    assert denials[("coordinator", "UNAUTHENTICATED")] == 7 * 3 + 2
    assert denials[("coordinator", "PERMISSION_DENIED")] == 7


async def test_an_attach_token_grants_exactly_its_execution(token_daemon: TcpDaemon) -> None:
    async with grpc.aio.insecure_channel(token_daemon.address) as channel:
        stub = pb_grpc.CoordinatorServiceStub(channel)
        first = await stub.BeginExecution(pb.BeginExecutionRequest(), metadata=BEARER)
        second = await stub.BeginExecution(pb.BeginExecutionRequest(), metadata=BEARER)
        # The tool role needs no bearer token: its attach token is its credential.
        tool = RawTool(channel)
        attached = (await tool.hello(first.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)).attached
        assert attached.execution_id == first.execution_id
        await stub.Interrupt(
            pb.InterruptRequest(execution_id=second.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT),
            metadata=BEARER,
        )
        await stub.Interrupt(
            pb.InterruptRequest(execution_id=first.execution_id, reason=pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT),
            metadata=BEARER,
        )
        # Only its own execution's cancel reaches it.
        assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_NOW_PRIORITY_INPUT
        # The coordinator credential is not an attach token; an ended execution's token is dead;
        # a malformed one is refused as such.
        cases = [
            (TOKEN, grpc.StatusCode.INVALID_ARGUMENT),
            ("ist1.0123456789abcdef.forged", grpc.StatusCode.PERMISSION_DENIED),
            ("", grpc.StatusCode.UNAUTHENTICATED),
        ]
        await stub.EndExecution(pb.EndExecutionRequest(execution_id=second.execution_id), metadata=BEARER)
        cases.append((second.attach_token, grpc.StatusCode.PERMISSION_DENIED))
        for token, code in cases:
            other = RawTool(channel)
            await other.send(hello=pb.Hello(attach_token=token))
            assert await other.status() == code, token
    denials = token_daemon.denials()
    assert denials[("tool", "PERMISSION_DENIED")] == 2
    assert denials[("tool", "UNAUTHENTICATED")] == 1


def test_a_tcp_listener_without_authentication_refuses_to_start(tmp_short: Path) -> None:
    with pytest.raises(RuntimeError, match="needs authentication"):
        start_daemon(tmp_short, "--listen", f"127.0.0.1:{free_port()}")


# -- TLS and mTLS ----------------------------------------------------------------------


@dataclass
class Pki:
    ca: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes
    stranger_cert: bytes
    stranger_key: bytes


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey] | None, *, ca: bool
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer is not None else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki() -> Pki:
    """A test CA with a server and a client certificate, and a client from another CA."""
    ca_key, other_ca_key = _key(), _key()
    ca = _cert("interrupt-sidecar test CA", ca_key, None, ca=True)
    server_key, client_key, stranger_key = _key(), _key(), _key()
    pem = serialization.Encoding.PEM
    return Pki(
        ca=ca.public_bytes(pem),
        server_cert=_cert("localhost", server_key, ("interrupt-sidecar test CA", ca_key), ca=False).public_bytes(pem),
        server_key=_pem_key(server_key),
        client_cert=_cert("agent", client_key, ("interrupt-sidecar test CA", ca_key), ca=False).public_bytes(pem),
        client_key=_pem_key(client_key),
        stranger_cert=_cert("stranger", stranger_key, ("another CA", other_ca_key), ca=False).public_bytes(pem),
        stranger_key=_pem_key(stranger_key),
    )


@pytest.fixture
def mtls_daemon(tmp_short: Path, pki: Pki) -> Iterator[str]:
    for name, data in (("ca.pem", pki.ca), ("cert.pem", pki.server_cert), ("key.pem", pki.server_key)):
        (tmp_short / name).write_bytes(data)
    port = free_port()
    process = start_daemon(
        tmp_short,
        "--listen",
        f"127.0.0.1:{port}",
        "--tls-cert",
        str(tmp_short / "cert.pem"),
        "--tls-key",
        str(tmp_short / "key.pem"),
        "--tls-client-ca",
        str(tmp_short / "ca.pem"),
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        assert process.stop(signal.SIGTERM) == 0


async def test_mtls_client_certificate_grants_the_coordinator_role(mtls_daemon: str, pki: Pki) -> None:
    credentials = grpc.ssl_channel_credentials(pki.ca, pki.client_key, pki.client_cert)
    async with grpc.aio.secure_channel(mtls_daemon, credentials) as channel:
        stub = pb_grpc.CoordinatorServiceStub(channel)
        begun = await stub.BeginExecution(pb.BeginExecutionRequest())
        tool = RawTool(channel)
        assert (await tool.hello(begun.attach_token, pb.INTERRUPT_BEHAVIOR_COOPERATIVE)).attached.execution_id
        await stub.Interrupt(
            pb.InterruptRequest(execution_id=begun.execution_id, reason=pb.INTERRUPT_REASON_USER_SIGINT)
        )
        assert (await tool.recv()).cancel.reason == pb.INTERRUPT_REASON_USER_SIGINT


@pytest.mark.parametrize("client", ["plaintext", "no certificate", "another CA"])
async def test_mtls_refuses_clients_without_a_certificate_of_its_ca(mtls_daemon: str, pki: Pki, client: str) -> None:
    if client == "plaintext":
        channel = grpc.aio.insecure_channel(mtls_daemon)
    elif client == "no certificate":
        channel = grpc.aio.secure_channel(mtls_daemon, grpc.ssl_channel_credentials(pki.ca))
    else:
        credentials = grpc.ssl_channel_credentials(pki.ca, pki.stranger_key, pki.stranger_cert)
        channel = grpc.aio.secure_channel(mtls_daemon, credentials)
    async with channel:
        stub = pb_grpc.CoordinatorServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.ListExecutions(pb.ListExecutionsRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # the handshake fails: no RPC at all
