"""Domain values to wire messages: every field of an execution reaches its message, and
durations and timestamps are split into seconds and nanos as protobuf's own helpers do."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from interrupt_sidecar.domain.coordinator import Coordinator, ExecutionSpec
from interrupt_sidecar.domain.execution import RemoteParent
from interrupt_sidecar.domain.types import InterruptBehavior, InterruptReason, SystemClock
from interrupt_sidecar.services import convert

from tests.domain.fakes import RecordingEffects

pytestmark = pytest.mark.timeout(10)

NANOS = [
    0,
    1,
    999_999_999,
    1_000_000_000,
    1_500_000_001,
    86_400 * 10**9 + 7,
    -1,
    -999_999_999,
    -1_000_000_000,
    -1_500_000_001,
]


@pytest.mark.parametrize("ns", NANOS)
def test_a_duration_splits_as_from_nanoseconds_does(ns: int) -> None:
    expected = Duration()
    expected.FromNanoseconds(ns)
    assert convert.duration(ns) == expected
    assert convert.duration(ns).ToNanoseconds() == ns


@pytest.mark.parametrize("ns", [n for n in NANOS if n >= 0] + [1_764_580_000_123_456_789])
def test_a_timestamp_splits_as_from_nanoseconds_does(ns: int) -> None:
    class At:
        wall_ns = ns

    expected = Timestamp()
    expected.FromNanoseconds(ns)
    assert convert.timestamp(At()) == expected  # type: ignore[arg-type]


def test_every_field_of_an_execution_reaches_its_message() -> None:
    coordinator = Coordinator(RecordingEffects(), SystemClock(), default_grace_ns=2_500_000_000)
    parent, _ = coordinator.begin(ExecutionSpec())
    spec = ExecutionSpec(
        parent_execution_id=parent.execution_id,
        context_id="ctx",
        grace_ns=1_250_000_001,
        budget_ns=3_000_000_000,
        lease_ttl_ns=4_500_000_000,
        labels={"team": "a", "turn": "7"},
        session_id="sess",
        task_id="task",
    )
    execution, _ = coordinator.begin(spec)
    execution.attach(tool_id="t", tool_name="t", tool_call_id="", behavior=InterruptBehavior.COOPERATIVE, pid=0)
    execution.hold()

    live = convert.execution(execution)
    assert live.execution_id == execution.execution_id
    assert (live.cancelled, live.ended) == (False, False)
    assert live.parent_execution_id == parent.execution_id
    assert (live.context_id, live.session_id, live.task_id) == ("ctx", "sess", "task")
    assert live.begun_at.ToNanoseconds() == execution.begun_at.wall_ns
    assert live.grace.ToNanoseconds() == 1_250_000_001
    assert live.budget.ToNanoseconds() == 3_000_000_000
    assert live.lease_ttl.ToNanoseconds() == 4_500_000_000
    assert dict(live.labels) == {"team": "a", "turn": "7"}
    assert (live.attached_tools, live.holders, live.grace_overruns) == (1, 1, 0)
    assert not live.HasField("tripped_at") and not live.HasField("ended_at") and not live.HasField("remote_parent")

    execution.trip(InterruptReason.USER_SIGINT, "stop")
    coordinator.end(execution.execution_id)
    done = convert.execution(execution)
    trip = execution.trip_info
    assert trip is not None and execution.ended_at is not None
    assert (done.cancelled, done.ended) == (True, True)
    assert (done.reason, done.detail) == (int(InterruptReason.USER_SIGINT), "stop")
    assert done.tripped_at.ToNanoseconds() == trip.at.wall_ns
    assert done.ended_at.ToNanoseconds() == execution.ended_at.wall_ns


def test_a_remote_parent_is_shown_without_its_credential() -> None:
    coordinator = Coordinator(RecordingEffects(), SystemClock(), default_grace_ns=1_000_000_000)
    remote = RemoteParent("unix:///run/parent.sock", "exec-p", credential="secret", unreachable_after_ns=7_000_000_001)
    execution, _ = coordinator.begin(ExecutionSpec(remote_parent=remote))
    shown = convert.execution(execution).remote_parent
    assert (shown.address, shown.execution_id, shown.tls) == ("unix:///run/parent.sock", "exec-p", False)
    assert not shown.keep_running_when_unreachable
    assert shown.unreachable_after.ToNanoseconds() == 7_000_000_001
    assert "secret" not in str(convert.execution(execution))
