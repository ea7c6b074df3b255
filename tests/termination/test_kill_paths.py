"""Every termination path of a registered process group, against a real daemon and a real
process tree (the kitchen sink), with the tree verified gone through /proc afterwards."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import grpc
import pytest
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess
from tests.daemon.wire import eventually
from tests.termination.support import (
    DeathClock,
    begin,
    kitchen_sink,
    registered_group,
    seconds,
    trip,
)

TERM, KILL = int(signal.SIGTERM), int(signal.SIGKILL)
#: How late the SIGKILL escalation may be reported after trip + grace. Measured on the 2-core
#: dev machine: 12-26 ms idle (two /proc scans precede the killpg), up to 71 ms with both cores
#: saturated by busy loops. 250 ms leaves room for a loaded CI runner yet stays below every
#: grace and kill_after used here (and far below their difference), so a SIGKILL armed with
#: the wrong duration, or not armed at all, fails.
ESCALATION_TOLERANCE_NS = 250_000_000


async def test_polite_tree_exits_on_sigterm_without_escalation(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path
) -> None:
    grace_s = 5.0
    with kitchen_sink(workdir, "--tree", "3,3", "--term", "exit", "--exit-code", "3") as sink:
        await sink.reported(1 + 3 + 9)
        begun = await begin(stub, grace_s)
        await registered_group(channel, begun.attach_token, sink.pgid)
        record = await trip(stub, begun.execution_id)
        assert record.signals == [(sink.pgid, TERM, False)], "SIGTERM once, never SIGKILL"
        # The root ran its handler: it exited with the chosen code, not by a signal.
        assert sink.process.wait(5) == 3
        assert 0 < record.gone_latency_ns < grace_s * 1e9
        await sink.all_gone()


@pytest.mark.parametrize(("grace_s", "kill_after_s"), [(0.6, None), (2.0, 0.4)], ids=["grace", "kill_after"])
async def test_sigterm_ignoring_tree_is_killed_exactly_after_the_grace(
    channel: grpc.aio.Channel,
    stub: pb_grpc.CoordinatorServiceAsyncStub,
    workdir: Path,
    grace_s: float,
    kill_after_s: float | None,
) -> None:
    # The registration's kill_after, when set, wins over the execution's grace.
    wait_s = kill_after_s if kill_after_s is not None else grace_s
    group = {"kill_after": seconds(kill_after_s)} if kill_after_s is not None else {}
    with kitchen_sink(workdir, "--tree", "2,1", "--term", "ignore") as sink:
        processes = await sink.reported(1 + 2 + 2)
        begun = await begin(stub, grace_s)
        await registered_group(channel, begun.attach_token, sink.pgid, **group)
        deaths = DeathClock()
        for p in processes:
            deaths.watch(p["pid"], p["start"])
        try:
            record = await trip(stub, begun.execution_id)
            await sink.all_gone()
        finally:
            deaths.close()
        assert record.signals == [(sink.pgid, TERM, False), (sink.pgid, KILL, True)]
        deadline_ns = record.tripped_at_ns + round(wait_s * 1e9)
        escalated_ns = record.escalation().occurred_at.ToNanoseconds()
        assert escalated_ns >= deadline_ns, f"SIGKILL reported {(deadline_ns - escalated_ns) / 1e6:.1f} ms early"
        assert escalated_ns - deadline_ns <= ESCALATION_TOLERANCE_NS, (
            f"SIGKILL {(escalated_ns - deadline_ns) / 1e6:.1f} ms after the deadline"
        )
        # A process cannot die of SIGKILL before it was sent: no death before the deadline.
        assert sorted(deaths.died_at) == sorted(p["pid"] for p in processes)
        earliest = min(deaths.died_at.values())
        assert earliest >= deadline_ns, f"a process died {(deadline_ns - earliest) / 1e6:.1f} ms before the deadline"
        assert sink.process.returncode == -KILL
        assert record.gone_latency_ns >= wait_s * 1e9


@pytest.mark.parametrize(
    ("escape", "escaped_term"), [("setsid", "ignore"), ("setpgid", "default")], ids=["setsid", "setpgid"]
)
async def test_grandchildren_that_left_the_group_are_killed(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path, escape: str, escaped_term: str
) -> None:
    # Group members exit at SIGTERM, so the escaped grandchildren lose their parent at the
    # trip and are re-parented away from the tree: only (pid, start) pinned by the daemon
    # can still find them. The setsid ones also ignore SIGTERM and must get SIGKILL.
    grace_s = 0.5
    args = ["--tree", "1,2", "--escape", escape, "--term", "exit", "--escaped-term", escaped_term]
    with kitchen_sink(workdir, *args) as sink:
        await sink.reported(1 + 1 + 2)
        grandchildren = sink.by_role("grandchild")
        for g in grandchildren:
            assert g["pgid"] == g["pid"] != sink.pgid, "the grandchild left the group before registration"
            assert (g["sid"] == g["pid"]) == (escape == "setsid")
        begun = await begin(stub, grace_s)
        await registered_group(channel, begun.attach_token, sink.pgid)
        record = await trip(stub, begun.execution_id)
        await sink.all_gone()
        if escaped_term == "ignore":
            assert record.signals == [(sink.pgid, TERM, False), (sink.pgid, KILL, True)]
            assert record.gone_latency_ns >= grace_s * 1e9
        else:
            assert record.signals == [(sink.pgid, TERM, False)]
            assert record.gone_latency_ns < grace_s * 1e9


async def test_a_tree_that_exits_one_by_one_is_waited_for_to_the_last_member(
    daemon: DaemonProcess, channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path
) -> None:
    # After SIGTERM the members exit one every 25 ms while the daemon waits on their
    # pidfds, and it reports the tree gone only after the last one. (A pidfd stays
    # readable once its process has exited, so a reader left registered on it would spin
    # a core meanwhile; that bug shipped once. What the wait costs is measured by
    # ``python -m bench --parts kill`` (daemon_cpu_ms_per_kill, the 10-process tree), not
    # asserted here: a CPU share under load is a timing assertion.)
    members, stagger_ms, grace_s = 40, 25, 10.0
    args = ["--tree", str(members), "--term", "exit", "--exit-stagger-ms", str(stagger_ms)]
    with kitchen_sink(workdir, *args) as sink:
        processes = await sink.reported(1 + members)
        begun = await begin(stub, grace_s)
        await registered_group(channel, begun.attach_token, sink.pgid)
        deaths = DeathClock()
        for p in processes:
            deaths.watch(p["pid"], p["start"])
        try:
            tripping = asyncio.ensure_future(trip(stub, begun.execution_id))
            await eventually(lambda: len(deaths.died_at) == len(processes), 10)
            record = await asyncio.wait_for(tripping, 10)
        finally:
            deaths.close()
        assert record.signals == [(sink.pgid, TERM, False)]
        # Gone is reported once, for the whole tree, and nothing was escalated.
        assert record.one("process_group_gone").process_group_gone.pgid == sink.pgid
        await sink.all_gone()


async def test_stopped_processes_get_sigcont_and_handle_sigterm(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path
) -> None:
    # A stopped process runs no handler: exiting with the handler's code proves SIGCONT
    # followed SIGTERM. The grace is long so SIGKILL cannot be what ended the tree.
    grace_s = 5.0
    with kitchen_sink(workdir, "--tree", "2", "--term", "exit", "--exit-code", "5", "--stop", "all") as sink:
        await sink.reported(1 + 2)
        await sink.all_in_state("T")
        begun = await begin(stub, grace_s)
        await registered_group(channel, begun.attach_token, sink.pgid)
        record = await trip(stub, begun.execution_id)
        assert record.signals == [(sink.pgid, TERM, False)]
        assert sink.process.wait(5) == 5
        assert record.gone_latency_ns < grace_s * 1e9
        await sink.all_gone()


async def test_stopped_sigterm_ignoring_tree_is_killed(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path
) -> None:
    args = ["--tree", "1,1", "--escape", "setsid", "--term", "ignore", "--stop", "all"]
    with kitchen_sink(workdir, *args) as sink:
        await sink.reported(1 + 1 + 1)
        await sink.all_in_state("T")
        begun = await begin(stub, 0.3)
        await registered_group(channel, begun.attach_token, sink.pgid)
        record = await trip(stub, begun.execution_id)
        assert record.signals == [(sink.pgid, TERM, False), (sink.pgid, KILL, True)]
        assert sink.process.wait(5) == -KILL
        await sink.all_gone()


async def fork_loop_is_killed(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path, *extra: str
) -> None:
    # The root ignores SIGTERM and keeps forking (one child every 2 ms, bounded) through the
    # grace, so the SIGKILL pass must also catch children born after the trip's scan.
    args = ["--term", "ignore", "--fork-loop", "400", "--fork-interval-ms", "2", *extra]
    with kitchen_sink(workdir, *args) as sink:
        await sink.reported(1 + 20)
        begun = await begin(stub, 0.3)
        await registered_group(channel, begun.attach_token, sink.pgid)
        record = await trip(stub, begun.execution_id)
        assert record.signals == [(sink.pgid, TERM, False), (sink.pgid, KILL, True)]
        assert sink.by_role("forked")[-1]["pid"] != sink.pgid
        assert len(sink.reports()) < 1 + 400, "the fork loop ended before the kill: the test proves nothing"
        await sink.all_gone()
        assert sink.process.returncode == -KILL


async def test_fork_loop_tree_is_killed_while_it_grows(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path
) -> None:
    await fork_loop_is_killed(channel, stub, workdir)


async def test_fork_loop_whose_children_setsid_is_killed_while_it_grows(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path
) -> None:
    await fork_loop_is_killed(channel, stub, workdir, "--fork-escape")
