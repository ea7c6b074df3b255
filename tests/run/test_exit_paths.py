"""``interrupt-sidecar run``'s exit codes for the paths no ordinary run takes on its own.

- **124 for a trip during the registration.** The wrapper checks for a trip after the
  attach and again after registering the command's group (docs/run.md, steps 3 and 4). A
  real wrapper against a real daemon cannot be made to trip between the two by timing, so
  the test puts a real gRPC proxy between them (:class:`TripOnRegister`): it forwards the
  tool's stream to the daemon as is, except that when the wrapper's ``register_terminator``
  arrives it first interrupts the execution and waits for the cancel to pass on its way to
  the wrapper. The daemon so sees the registration strictly after the trip — the order is
  forced, not raced — and the wrapper's first check strictly before it (the register is
  sent only after that check).
- **124 for a trip the wrapper never read before the command died.** The daemon writes the
  cancel to the tool's stream and then signals the group, but the wrapper may reap the killed
  command before it reads the cancel. A real gRPC proxy (:class:`HoldCancels`) forwards the
  tool's stream but never passes a cancel on (and forwards ``GetExecution``), so that order is
  forced: the command dies of the daemon's SIGTERM with no cancel read, and only the daemon's
  stamped trip time, asked for with ``GetExecution``, tells 124 from 128+15.
- **1 for an internal error**, the documented example: no ``prctl(PR_SET_CHILD_SUBREAPER)``
  (``noreaper.c`` runs the wrapper under a seccomp filter that makes it fail with EPERM, as
  a container's policy would: a filter reaches the Python wrapper's libc call and the static
  native binary's raw system call alike, where an ``LD_PRELOAD`` shim would reach only the first).

Both run against both implementations (``implementation``, conftest.py).
"""

from __future__ import annotations

import queue
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from interrupt_sidecar.wrapper import EXIT_INTERNAL, EXIT_INTERRUPTED
from interrupt_sidecar_client import BegunExecution, Coordinator, EventKind, InterruptReason
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess
from tests.polling import eventually
from tests.requires import require_program
from tests.run.test_run import Wrappers, script, start

#: Every wait of the proxy; a wait that runs out fails the test through what it left undone.
WAIT_S = 10.0
DETAIL = "tripped while the wrapper registered"


class TripOnRegister(pb_grpc.ToolChannelServiceServicer):
    """An Attach proxy that trips the execution just before the daemon sees a registration."""

    def __init__(self, upstream: grpc.Channel, coordinator: Coordinator, execution_id: str) -> None:
        self._stub = pb_grpc.ToolChannelServiceStub(upstream)
        self._coordinator = coordinator
        self._execution_id = execution_id
        #: Set once the proxy held a registration, tripped, and saw the cancel go by.
        self.tripped_at_registration = threading.Event()
        self.failures: list[str] = []

    def Attach(
        self, request_iterator: Iterator[pb.ToolMessage], context: grpc.ServicerContext
    ) -> Iterator[pb.SidecarMessage]:
        upstream_requests: queue.Queue[pb.ToolMessage | None] = queue.Queue()
        answers = self._stub.Attach(iter(upstream_requests.get, None))
        cancel_passed = threading.Event()

        def forward_requests() -> None:
            try:
                for message in request_iterator:
                    if (
                        message.WhichOneof("message") == "register_terminator"
                        and not self.tripped_at_registration.is_set()
                    ):
                        # Held here: the daemon has not seen it. Trip first; the cancel is in
                        # the tool's outbox before Interrupt answers, so it reaches the wrapper
                        # before the registration's answer — waiting for it only makes sure.
                        self._coordinator.interrupt(
                            self._execution_id, reason=InterruptReason.USER_SIGINT, detail=DETAIL
                        )
                        if not cancel_passed.wait(WAIT_S):
                            self.failures.append("the cancel did not pass the proxy after the trip")
                        self.tripped_at_registration.set()
                    upstream_requests.put(message)
            except grpc.RpcError as error:  # the wrapper went away
                self.failures.append(f"the wrapper's side of the stream failed: {error}")
            finally:
                upstream_requests.put(None)

        threading.Thread(target=forward_requests, daemon=True).start()
        for answer in answers:
            if answer.WhichOneof("message") == "cancel":
                cancel_passed.set()
            yield answer


class HoldCancels(pb_grpc.ToolChannelServiceServicer):
    """A proxy that forwards a tool's stream to the daemon but holds back every cancel, and
    forwards GetExecution (:meth:`coordinator_handler`)."""

    def __init__(self, upstream: grpc.Channel) -> None:
        self._tools = pb_grpc.ToolChannelServiceStub(upstream)
        self._coordinator = pb_grpc.CoordinatorServiceStub(upstream)
        #: Set when a cancel came from the daemon (and was not passed on).
        self.held = threading.Event()
        #: Set when the wrapper asked the daemon about the execution.
        self.asked = threading.Event()

    def Attach(
        self, request_iterator: Iterator[pb.ToolMessage], context: grpc.ServicerContext
    ) -> Iterator[pb.SidecarMessage]:
        for answer in self._tools.Attach(request_iterator):
            if answer.WhichOneof("message") == "cancel":
                self.held.set()
                continue
            yield answer

    def GetExecution(self, request: pb.GetExecutionRequest, context: grpc.ServicerContext) -> pb.GetExecutionResponse:
        self.asked.set()
        response: pb.GetExecutionResponse = self._coordinator.GetExecution(request, timeout=WAIT_S)
        return response

    def coordinator_handler(self) -> grpc.GenericRpcHandler:
        """The CoordinatorService with GetExecution alone (the rest: UNIMPLEMENTED)."""
        get = grpc.unary_unary_rpc_method_handler(
            self.GetExecution,
            request_deserializer=pb.GetExecutionRequest.FromString,
            response_serializer=pb.GetExecutionResponse.SerializeToString,
        )
        return grpc.method_handlers_generic_handler("interrupt.v1.CoordinatorService", {"GetExecution": get})


@pytest.fixture
def wrappers(implementation: list[str]) -> Iterator[Wrappers]:
    """Wrappers a test started; any still running at the end is SIGKILLed by its PID."""
    started = Wrappers(implementation)
    yield started
    for wrapper in started:
        wrapper.kill()


@pytest.fixture
def coordinator(daemon: DaemonProcess) -> Iterator[Coordinator]:
    with Coordinator(daemon.address) as coordinator:
        yield coordinator


@pytest.fixture
def proxy_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes: keep the directory short.
    with tempfile.TemporaryDirectory(prefix="isd-px-", dir="/tmp") as directory:
        yield Path(directory)


def test_a_trip_during_the_registration_exits_124_and_never_starts_the_command(
    tmp_path: Path, proxy_dir: Path, wrappers: Wrappers, daemon: DaemonProcess, coordinator: Coordinator
) -> None:
    turn: BegunExecution = coordinator.begin(grace=0.3)
    events = coordinator.watch(turn.execution_id)
    assert next(events).kind is EventKind.SNAPSHOT  # subscribed before the tool attaches
    address = f"unix://{proxy_dir / 'proxy.sock'}"
    with grpc.insecure_channel(daemon.address) as upstream:
        proxy = TripOnRegister(upstream, coordinator, turn.execution_id)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_ToolChannelServiceServicer_to_server(proxy, server)
        server.add_insecure_port(address)
        server.start()
        try:
            env = {**turn.tool_env(), "INTERRUPT_SIDECAR_ADDRESS": address}
            wrapper = start(wrappers, script(tmp_path, f"touch {tmp_path}/ran\n"), env=env)
            code = wrapper.finish()
        finally:
            server.stop(grace=None).wait(WAIT_S)

    assert not proxy.failures, proxy.failures
    assert proxy.tripped_at_registration.is_set(), f"the wrapper never registered its group\n{wrapper.stderr}"
    assert code == EXIT_INTERRUPTED, wrapper.stderr
    assert f"interrupted USER_SIGINT: {DETAIL} (before the command started)" in wrapper.stderr
    assert not (tmp_path / "ran").exists(), "the gate was opened after the trip"
    coordinator.end(turn.execution_id)
    seen = list(events)
    kinds = [event.kind for event in seen]
    # The registration reached the daemon after the trip, so the daemon signalled the
    # parked group at once (Execution.register runs a late terminator at once).
    assert EventKind.TRIPPED in kinds and EventKind.PROCESS_GROUP_SIGNALLED in kinds, kinds
    assert kinds.index(EventKind.TRIPPED) < kinds.index(EventKind.PROCESS_GROUP_SIGNALLED), kinds
    unwound = [e.proto.tool_unwound for e in seen if e.kind is EventKind.TOOL_UNWOUND]
    assert [pb.ToolOutcome.Name(u.outcome) for u in unwound] == ["TOOL_OUTCOME_INTERRUPTED"], unwound


def test_a_trip_unread_when_the_command_died_is_settled_with_the_daemon(
    tmp_path: Path, proxy_dir: Path, wrappers: Wrappers, daemon: DaemonProcess, coordinator: Coordinator
) -> None:
    turn = coordinator.begin(grace=0.3)
    address = f"unix://{proxy_dir / 'proxy.sock'}"
    with grpc.insecure_channel(daemon.address) as upstream:
        proxy = HoldCancels(upstream)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_ToolChannelServiceServicer_to_server(proxy, server)
        server.add_generic_rpc_handlers((proxy.coordinator_handler(),))
        server.add_insecure_port(address)
        server.start()
        try:
            # No doorbell: it would bring the cancel past the proxy, straight from the daemon.
            env = {**turn.tool_env(), "INTERRUPT_SIDECAR_ADDRESS": address, "INTERRUPT_SIDECAR_DOORBELL": "0"}
            wrapper = start(wrappers, script(tmp_path, f"echo > {tmp_path}/ready\nsleep 30\n"), env=env)
            eventually(lambda: (tmp_path / "ready").exists())
            coordinator.interrupt(turn.execution_id, reason=InterruptReason.USER_SIGINT, detail="held back")
            code = wrapper.finish()
            eventually(proxy.held.is_set, timeout=WAIT_S)
        finally:
            server.stop(grace=None).wait(WAIT_S)

    assert proxy.asked.is_set(), f"the wrapper did not ask the daemon\n{wrapper.stderr}"
    assert code == EXIT_INTERRUPTED, wrapper.stderr
    assert "interrupted USER_SIGINT: held back" in wrapper.stderr
    coordinator.end(turn.execution_id)


@pytest.fixture(scope="module")
def noreaper() -> Iterator[Path]:
    gcc = require_program("gcc", "the internal-error test builds a seccomp launcher")
    with tempfile.TemporaryDirectory(prefix="isd-prctl-") as directory:
        launcher = Path(directory) / "noreaper"
        subprocess.run(
            [gcc, "-O2", "-o", str(launcher), str(Path(__file__).with_name("noreaper.c"))], check=True, timeout=60
        )
        yield launcher


def test_an_internal_error_exits_1_and_never_runs_the_command(
    tmp_path: Path, wrappers: Wrappers, coordinator: Coordinator, noreaper: Path
) -> None:
    turn = coordinator.begin(grace=0.3)
    events = coordinator.watch(turn.execution_id)
    assert next(events).kind is EventKind.SNAPSHOT
    tool = script(tmp_path, f"touch {tmp_path}/ran\n")
    wrapper = start(wrappers, tool, via=(str(noreaper),), env=turn.tool_env())

    assert wrapper.finish() == EXIT_INTERNAL, wrapper.stderr
    assert "cannot become a child subreaper" in wrapper.stderr and "Operation not permitted" in wrapper.stderr
    assert not (tmp_path / "ran").exists()
    coordinator.end(turn.execution_id)
    kinds = [event.kind for event in events]
    assert EventKind.TOOL_ATTACHED not in kinds, f"the wrapper must stop before it attaches: {kinds}"
