"""A model-checked daemon: Hypothesis drives random operations over the wire against a real
daemon (with a journal, ``kill -9``-ed and restarted now and then) and checks, after every
step, that what the daemon says and what the tools saw agree with a small reference model.

Invariants checked after each step:

* single shot, first reason wins: an execution's ``cancelled``/``reason``/``tripped_at``
  never change once tripped; an Interrupt reports ``tripped`` only for the call that tripped;
* cascade and context targeting: children trip with PARENT_CANCELLED, a context interrupt
  trips exactly that context's live executions;
* every interruptible tool attached before or after the trip gets exactly one cancel, a
  NON_INTERRUPTIBLE one none;
* callback terminators run once each, in registration order, at the trip (or at once when
  registered after it); nothing is accepted after the tool unwound or the execution ended;
* after a restart every acknowledged trip is still tripped with its reason and trip time.

The short run is part of ``make test``; the long one is marked slow. Each reports its step
count (``-s`` shows it).
"""

from __future__ import annotations

import os
import queue
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import grpc
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess, start_daemon

PARENT_CANCELLED = pb.INTERRUPT_REASON_PARENT_CANCELLED
REASONS = st.integers(min_value=1, max_value=9)
CONTEXTS = st.sampled_from(["", "ctx-a", "ctx-b"])
BEHAVIORS = st.sampled_from(
    [
        pb.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE,
        pb.INTERRUPT_BEHAVIOR_COOPERATIVE,
        pb.INTERRUPT_BEHAVIOR_THREAD_INTERRUPT,
        pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED,
    ]
)
MAY_REGISTER = {pb.INTERRUPT_BEHAVIOR_THREAD_INTERRUPT, pb.INTERRUPT_BEHAVIOR_EXTERNALLY_TERMINATED}
DELIVERY_S = 10.0
#: Every unary call has a deadline: a daemon that stops answering fails the step with
#: DEADLINE_EXCEEDED instead of blocking the run (and CI) until the job is killed.
RPC_S = 30.0
STEPS = {"short": 0, "long": 0}


class Tool:
    """One Attach stream over a sync channel; a thread collects what the daemon sends."""

    def __init__(self, channel: grpc.Channel, token: str, behavior: int) -> None:
        self.behavior = behavior
        self._out: queue.Queue[pb.ToolMessage | None] = queue.Queue()
        self.received: list[pb.SidecarMessage] = []
        self._lock = threading.Lock()
        self._call = pb_grpc.ToolChannelServiceStub(channel).Attach(iter(self._out.get, None))
        self._out.put(pb.ToolMessage(hello=pb.Hello(attach_token=token, tool_name="model", behavior=behavior)))  # type: ignore[arg-type]
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for message in self._call:
                with self._lock:
                    self.received.append(message)
        except grpc.RpcError:
            pass

    def send(self, message: pb.ToolMessage) -> None:
        self._out.put(message)

    def of(self, kind: str) -> list[pb.SidecarMessage]:
        with self._lock:
            return [m for m in self.received if m.WhichOneof("message") == kind]

    def wait_for(self, kind: str, count: int) -> list[pb.SidecarMessage]:
        deadline = time.monotonic() + DELIVERY_S
        while len(found := self.of(kind)) < count and time.monotonic() < deadline:
            time.sleep(0.002)
        return found

    def close(self) -> None:
        # The None ends the request iterator too: cancelling the call alone leaves grpc's
        # request-consumer thread blocked in ``self._out.get`` for the rest of the process
        # (a long run leaked 280 of them).
        self._out.put(None)
        self._call.cancel()
        self._reader.join(5)


@dataclass
class ToolModel:
    tool: Tool
    execution_id: str
    behavior: int
    #: Terminators acknowledged, in registration order; and those refused.
    terminators: list[str] = field(default_factory=list)
    refused: int = 0
    unwound: bool = False
    #: Its run is over (unwound, execution ended, stream gone): nothing more is accepted.
    closed: bool = False
    #: The stream died with a restart: it sees nothing more.
    gone: bool = False
    #: It was attached (and its run open) when the execution tripped, or after.
    expects_cancel: bool = False
    #: Terminators that must have run (registered while the run was open, before or after the trip).
    expects_run: list[str] = field(default_factory=list)


@dataclass
class ExecutionModel:
    execution_id: str
    context_id: str
    parent: str
    reason: int | None = None
    ended: bool = False
    tripped_at: tuple[int, int] | None = None
    #: Unknown after a restart (an ended one may have been forgotten).
    forgotten_maybe: bool = False


class DaemonModel(RuleBasedStateMachine):
    executions_b = Bundle("executions")
    tools_b = Bundle("tools")

    workdir: Path
    daemon: DaemonProcess
    counter = 0
    run_name = "short"
    #: Every daemon started, each stopped (by its PID) when the test ends, whatever happened.
    started: ClassVar[list[DaemonProcess]] = []

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, ExecutionModel] = {}
        self.tools: list[ToolModel] = []
        self.prefix = f"m{DaemonModel.counter}-"
        DaemonModel.counter += 1
        self.channel = grpc.insecure_channel(self.daemon.address)
        self.stub = pb_grpc.CoordinatorServiceStub(self.channel)
        self.next_id = 0
        self._tokens: dict[str, str] = {}

    # -- the model's rules ---------------------------------------------------------------

    def _trip(self, execution_id: str, reason: int) -> bool:
        """Trip in the model (first reason wins) with the cascade; True when this tripped it."""
        e = self.model[execution_id]
        if e.reason is not None or e.ended:
            return False
        e.reason = reason
        for tool in self.tools:
            if (
                tool.execution_id == execution_id
                and not tool.closed
                and tool.behavior != pb.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE
            ):
                tool.expects_cancel = True
                tool.expects_run.extend(t for t in tool.terminators if t not in tool.expects_run)
        for child in self.model.values():
            if child.parent == execution_id and not child.ended:
                self._trip(child.execution_id, PARENT_CANCELLED)
        return True

    def _end(self, execution_id: str) -> None:
        e = self.model[execution_id]
        for child in list(self.model.values()):
            if child.parent == execution_id and not child.ended:
                self._trip(child.execution_id, PARENT_CANCELLED)
                self._end(child.execution_id)
        e.ended = True
        for tool in self.tools:
            if tool.execution_id == execution_id:
                tool.closed = True

    @rule(target=executions_b, context=CONTEXTS, parent=st.none() | executions_b)
    def begin(self, context: str, parent: str | None) -> str:
        execution_id = f"{self.prefix}{self.next_id}"
        self.next_id += 1
        request = pb.BeginExecutionRequest(execution_id=execution_id, context_id=context)
        known = self.model.get(parent) if parent is not None else None
        if parent is not None:
            request.parent_execution_id = parent
        try:
            answer = self.stub.BeginExecution(request, timeout=RPC_S)
        except grpc.RpcError as err:
            if known is None or known.forgotten_maybe:
                assert err.code() == grpc.StatusCode.NOT_FOUND, err
            else:
                assert known.ended and err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
            return execution_id  # never begun: every later call on it is NOT_FOUND
        assert parent is None or (known is not None and not known.ended), (parent, known)
        self._tokens[execution_id] = answer.attach_token
        self.model[execution_id] = ExecutionModel(execution_id, context, parent or "")
        if known is not None and known.reason is not None:
            self._trip(execution_id, PARENT_CANCELLED)  # a tripped parent's child trips at once
        return execution_id

    @rule(execution_id=executions_b, reason=REASONS)
    def interrupt(self, execution_id: str, reason: int) -> None:
        e = self.model.get(execution_id)
        try:
            answer = self.stub.Interrupt(pb.InterruptRequest(execution_id=execution_id, reason=reason), timeout=RPC_S)  # type: ignore[arg-type]
        except grpc.RpcError as err:
            if e is None or (e.forgotten_maybe and e.ended):
                assert err.code() == grpc.StatusCode.NOT_FOUND, err
            else:
                expected = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND)
                assert e.ended and err.code() in expected, err
            return
        assert e is not None and not e.ended, answer
        tripped = self._trip(execution_id, reason)
        assert [(o.execution_id, o.tripped, o.reason) for o in answer.outcomes] == [(execution_id, tripped, e.reason)]

    @rule(context=st.sampled_from(["ctx-a", "ctx-b"]), reason=REASONS)
    def interrupt_context(self, context: str, reason: int) -> None:
        live = sorted(e.execution_id for e in self.model.values() if e.context_id == context and not e.ended)
        answer = self.stub.Interrupt(pb.InterruptRequest(context_id=context, reason=reason), timeout=RPC_S)  # type: ignore[arg-type]
        got = {o.execution_id: o for o in answer.outcomes if o.execution_id.startswith(self.prefix)}
        assert sorted(got) == live, (got, live)
        for execution_id in live:
            tripped = self._trip(execution_id, reason)
            assert got[execution_id].tripped == tripped
            assert got[execution_id].reason == self.model[execution_id].reason

    @rule(execution_id=executions_b)
    def end(self, execution_id: str) -> None:
        e = self.model.get(execution_id)
        try:
            self.stub.EndExecution(pb.EndExecutionRequest(execution_id=execution_id), timeout=RPC_S)
        except grpc.RpcError as err:
            assert e is None or e.forgotten_maybe, err
            assert err.code() == grpc.StatusCode.NOT_FOUND, err
            return
        assert e is not None
        self._end(execution_id)

    @rule(target=tools_b, execution_id=executions_b, behavior=BEHAVIORS)
    def attach(self, execution_id: str, behavior: int) -> int:
        e = self.model.get(execution_id)
        if e is None or e.ended:
            return -1
        token = self._token(execution_id)
        if token is None:
            return -1
        tool = Tool(self.channel, token, behavior)
        attached = tool.wait_for("attached", 1)
        assert len(attached) == 1, tool.received
        assert attached[0].attached.cancelled == (e.reason is not None)
        model = ToolModel(tool, execution_id, behavior)
        model.expects_cancel = e.reason is not None and behavior != pb.INTERRUPT_BEHAVIOR_NON_INTERRUPTIBLE
        self.tools.append(model)
        return len(self.tools) - 1

    def _token(self, execution_id: str) -> str | None:
        # Tokens come from BeginExecution only; keep them on the side.
        return self._tokens.get(execution_id)

    @rule(index=tools_b)
    def register(self, index: int) -> None:
        if index < 0 or self.tools[index].gone:
            return
        tool = self.tools[index]
        terminator_id = f"t{len(tool.terminators) + tool.refused}"
        tool.tool.send(
            pb.ToolMessage(
                register_terminator=pb.RegisterTerminator(terminator_id=terminator_id, callback=pb.CallbackTerminator())
            )
        )
        accepted = tool.behavior in MAY_REGISTER and not tool.closed
        kind = "terminator_registered" if accepted else "error"
        before = len(tool.tool.of(kind))
        found = tool.tool.wait_for(kind, before + 1)
        assert len(found) == before + 1, (kind, tool.tool.received)
        if not accepted:
            assert found[-1].error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0], found[-1]
            tool.refused += 1
            return
        assert found[-1].terminator_registered.terminator_id == terminator_id
        tool.terminators.append(terminator_id)
        if self.model[tool.execution_id].reason is not None:
            tool.expects_run.append(terminator_id)  # registered after the trip: run at once

    @rule(index=tools_b)
    def unwound(self, index: int) -> None:
        if index < 0 or self.tools[index].gone or self.tools[index].unwound:
            return
        tool = self.tools[index]
        tool.tool.send(pb.ToolMessage(unwound=pb.Unwound(outcome=pb.TOOL_OUTCOME_COMPLETED)))
        tool.unwound = tool.closed = True

    # Restarts take a second or two each: about one turn in seven may be followed by one.
    @precondition(lambda self: self.next_id % 7 == 3)
    @rule()
    def crash_and_restart(self) -> None:
        """``kill -9`` and restart on the same state dir: every trip must survive."""
        for tool in self.tools:
            tool.gone = tool.closed = True
        self._restart()
        for e in self.model.values():
            if e.ended:
                e.forgotten_maybe = True

    def _restart(self) -> None:
        self.channel.close()
        DaemonModel.daemon.stop(signal.SIGKILL)
        DaemonModel.daemon = start_daemon(self.workdir, "--state-dir", str(self.workdir / "state"))
        DaemonModel.started.append(DaemonModel.daemon)
        self.channel = grpc.insecure_channel(DaemonModel.daemon.address)
        self.stub = pb_grpc.CoordinatorServiceStub(self.channel)

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def daemon_agrees_with_the_model(self) -> None:
        STEPS[self.run_name] += 1
        for e in self.model.values():
            try:
                seen = self.stub.GetExecution(
                    pb.GetExecutionRequest(execution_id=e.execution_id), timeout=RPC_S
                ).execution
            except grpc.RpcError as err:
                assert e.forgotten_maybe and err.code() == grpc.StatusCode.NOT_FOUND, (e, err)
                continue
            assert seen.cancelled == (e.reason is not None), (e, seen)
            if e.reason is not None:
                assert seen.reason == e.reason, (e, seen)
                stamp = (seen.tripped_at.seconds, seen.tripped_at.nanos)
                if e.tripped_at is None:
                    e.tripped_at = stamp
                assert stamp == e.tripped_at, "the trip time changed"
            assert seen.ended == e.ended, (e, seen)

    @invariant()
    def tools_saw_one_cancel_and_their_terminators_in_order(self) -> None:
        for tool in self.tools:
            if tool.gone:
                continue
            cancels = tool.tool.wait_for("cancel", 1) if tool.expects_cancel else tool.tool.of("cancel")
            assert len(cancels) == (1 if tool.expects_cancel else 0), (tool.expects_cancel, tool.tool.received)
            runs = tool.tool.wait_for("run_terminator", len(tool.expects_run))
            assert [m.run_terminator.terminator_id for m in runs] == tool.expects_run, (tool.expects_run, runs)

    def teardown(self) -> None:
        for tool in self.tools:
            tool.tool.close()
        self.channel.close()


@pytest.fixture
def model_daemon() -> Iterator[type[DaemonModel]]:
    with tempfile.TemporaryDirectory(prefix="ism-", dir="/tmp") as directory:
        DaemonModel.workdir = Path(directory)
        DaemonModel.started = []
        DaemonModel.daemon = start_daemon(Path(directory), "--state-dir", str(Path(directory) / "state"))
        DaemonModel.started.append(DaemonModel.daemon)
        try:
            yield DaemonModel
        finally:
            for daemon in DaemonModel.started:
                daemon.stop(signal.SIGKILL)


def _run(machine: type[DaemonModel], name: str, examples: int, steps: int) -> None:
    machine.run_name = name
    STEPS[name] = 0
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            # The same examples in every run (a fixed seed per test), so that CI is
            # deterministic: a randomized long run stalled twice in cold rehearsals with the
            # daemon idle and the main thread busy inside Hypothesis' mutation phase
            # (generate_mutations_from -> execute_once, never reaching a rule). Fresh
            # exploration is one variable away.
            derandomize=os.environ.get("INTERRUPT_SIDECAR_MODEL_RANDOM") != "1",
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        ),
    )
    print(f"\nmodel-based run {name!r}: {STEPS[name]} steps checked against the daemon")
    assert STEPS[name] > 0


# method="thread": Hypothesis catches the Failed that the signal method raises and goes on
# generating and replaying examples (a cold rehearsal's long run stayed for over an hour
# past its limit); the thread method dumps every stack and ends the session instead.
@pytest.mark.timeout(240, method="thread")
def test_the_daemon_follows_the_model(model_daemon: type[DaemonModel]) -> None:
    _run(model_daemon, "short", examples=20, steps=30)


@pytest.mark.slow
@pytest.mark.timeout(600, method="thread")  # ~30 s alone, a few minutes on a loaded machine
def test_the_daemon_follows_the_model_for_thousands_of_steps(model_daemon: type[DaemonModel]) -> None:
    _run(model_daemon, "long", examples=100, steps=50)
