"""Every refusal rule of a process-group registration: end to end over the wire (the gRPC
code number and a message naming the rule), and the ``cause`` each carries for the metric."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import grpc
import pytest
from interrupt_sidecar.errors import SidecarError
from interrupt_sidecar.osedge.process_groups import GroupIdentity, ProcessGroups
from interrupt_sidecar.runtime.observer import refusal_cause
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from tests.conftest import DaemonProcess, start_daemon
from tests.daemon.wire import eventually
from tests.requires import require_root
from tests.termination.support import (
    KitchenSink,
    begin,
    is_alive,
    kitchen_sink,
    read_proc,
    register_group,
    registered_group,
    trip,
)

NOBODY = 65534
INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT.value[0]
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED.value[0]
NOT_FOUND = grpc.StatusCode.NOT_FOUND.value[0]


@pytest.fixture
def _root() -> None:
    require_root("starting a process as another uid needs root")


needs_root = pytest.mark.usefixtures("_root")


async def refusal(channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, pgid: int) -> tuple[int, str]:
    begun = await begin(stub, 0.5)
    tool, answer = await register_group(channel, begun.attach_token, pgid)
    assert answer.HasField("error"), f"pgid {pgid} was not refused: {answer}"
    assert answer.error.terminator_id == "pg"
    # The stream survives a refusal: the tool may register something else.
    await tool.close()
    return answer.error.code, answer.error.message


def sleeper() -> subprocess.Popen[bytes]:
    """A process leading its own group (and session), as a tool's child would."""
    return subprocess.Popen(["sleep", "300"], start_new_session=True)


def nobody_group(workdir: Path, *extra: str) -> contextlib.AbstractContextManager[KitchenSink]:
    """A group whose every member runs as ``nobody``. The kitchen sink drops to the uid
    itself: ``Popen(user=...)`` cannot use vfork, and a plain fork while gRPC threads run
    in this process is what gRPC warns against."""
    return kitchen_sink(workdir, "--tree", "1", "--uid", str(NOBODY), *extra)


@pytest.mark.parametrize("pgid", [0, 1, -1, -os.getpid()])
async def test_pgid_up_to_one_is_refused(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, pgid: int
) -> None:
    # kill(0) is "my group", kill(-1) is "everything": never a tool's group.
    code, message = await refusal(channel, stub, pgid)
    assert code == INVALID_ARGUMENT
    assert "process group id > 1" in message
    assert str(pgid) in message


async def test_the_daemons_own_group_is_refused(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, daemon: DaemonProcess
) -> None:
    daemon_pgid = read_proc(daemon.pid)
    assert daemon_pgid is not None
    # The fixture's daemon inherits the test's group: a tool registering "its own" group
    # would name the daemon's, and the trip would kill the daemon and the test runner.
    assert daemon_pgid.pgrp == os.getpgid(0)
    code, message = await refusal(channel, stub, daemon_pgid.pgrp)
    assert code == PERMISSION_DENIED
    assert "daemon's own group" in message


async def test_a_group_with_no_live_process_is_refused(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    # A tool that registers after its child already exited and was reaped.
    gone = sleeper()
    gone.kill()
    gone.wait()
    code, message = await refusal(channel, stub, gone.pid)
    assert code == NOT_FOUND
    assert "has no live process" in message


async def test_a_group_of_only_zombies_is_refused(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub
) -> None:
    # Exited but not reaped: the pid still shows in /proc, as a zombie nothing can kill.
    zombie = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        await _until_zombie(zombie.pid)
        code, message = await refusal(channel, stub, zombie.pid)
        assert code == NOT_FOUND
        assert "has no live process" in message
    finally:
        zombie.wait()


async def _until_zombie(pid: int) -> None:
    await eventually(lambda: (p := read_proc(pid)) is not None and p.state == "Z")


@needs_root
@pytest.mark.parametrize("dumpable", [True, False], ids=["dumpable", "non_dumpable"])
async def test_a_group_running_as_a_foreign_uid_is_refused(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path, dumpable: bool
) -> None:
    # A non-dumpable process (prctl(PR_SET_DUMPABLE, 0), as ssh-agent does) has its
    # /proc/PID files owned by root: the owner must still be read as the process's uid.
    with nobody_group(workdir, *([] if dumpable else ["--non-dumpable"])) as sink:
        processes = await sink.reported(2)
        assert {p["uid"] for p in processes} == {NOBODY}
        code, message = await refusal(channel, stub, sink.pgid)
        assert code == PERMISSION_DENIED, message
        assert f"uid {NOBODY}" in message
        assert "--allow-uid" in message
        assert len(sink.survivors()) == 2, "a refused group is left alone"
        assert sink.process.poll() is None


@needs_root
async def test_a_group_with_one_foreign_member_is_refused(
    channel: grpc.aio.Channel, stub: pb_grpc.CoordinatorServiceAsyncStub, workdir: Path
) -> None:
    # The leader runs as the daemon's uid; one member of its group does not.
    with kitchen_sink(workdir, "--foreign-member", str(NOBODY)) as sink:
        await sink.reported(2)
        assert [r["uid"] for r in sink.by_role("foreign")] == [NOBODY]
        code, message = await refusal(channel, stub, sink.pgid)
        assert code == PERMISSION_DENIED
        assert f"uid {NOBODY}" in message


@needs_root
async def test_allow_uid_accepts_and_kills_a_foreign_group(workdir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="isd-", dir="/tmp") as directory:
        daemon = start_daemon(Path(directory), "--allow-uid", str(NOBODY))
        try:
            async with grpc.aio.insecure_channel(daemon.address) as channel:
                stub = pb_grpc.CoordinatorServiceStub(channel)
                with kitchen_sink(workdir, "--tree", "2", "--uid", str(NOBODY)) as sink:
                    processes = await sink.reported(3)
                    assert {p["uid"] for p in processes} == {NOBODY}
                    begun = await begin(stub, 0.5)
                    await registered_group(channel, begun.attach_token, sink.pgid)
                    record = await trip(stub, begun.execution_id)
                    assert record.signals == [(sink.pgid, int(signal.SIGTERM), False)]
                    await sink.all_gone()
        finally:
            assert daemon.stop() == 0, daemon.stderr


# -- the cause each refusal carries (the ``refused`` metric's label) ---------------------------


def cause_of(groups: ProcessGroups, pgid: int) -> str:
    with pytest.raises(SidecarError) as refused:
        groups.pin(pgid)
    assert refused.value.cause is not None
    assert refusal_cause(refused.value) == refused.value.cause, "the metric label is the rule's cause"
    return refusal_cause(refused.value)


@needs_root
async def test_pin_names_the_rule_that_refused(workdir: Path) -> None:
    groups = ProcessGroups()
    gone = sleeper()
    gone.kill()
    gone.wait()
    assert [cause_of(groups, pgid) for pgid in (0, 1, -7)] == ["invalid_pgid"] * 3
    assert cause_of(groups, os.getpgid(0)) == "own_group"
    assert cause_of(groups, gone.pid) == "not_found"
    with nobody_group(workdir) as sink:
        await sink.reported(2)
        assert cause_of(groups, sink.pgid) == "foreign_uid"
        # --allow-uid lifts exactly the foreign_uid rule.
        allowing = ProcessGroups(allowed_uids=frozenset({os.getuid(), NOBODY}))
        assert allowing.pin(sink.pgid).pgid == sink.pgid


def test_a_recycled_pgid_is_never_signalled() -> None:
    # The identity pinned at registration names a leader that is gone; the live process now
    # holding that pgid (a stranger with the same number) must not be touched.
    stranger = sleeper()
    try:
        groups = ProcessGroups()
        pinned = groups.pin(stranger.pid)
        assert pinned.leader_start is not None
        recycled = GroupIdentity(pinned.pgid, pinned.leader_start - 1, pinned.session)
        with pytest.raises(SidecarError) as refused:
            groups.signal_tree(groups.tree(recycled), int(signal.SIGKILL))
        assert refusal_cause(refused.value) == "identity_changed"
        assert "reused" in str(refused.value)
        stat = read_proc(stranger.pid)
        assert stat is not None and is_alive(stranger.pid, stat.start)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
