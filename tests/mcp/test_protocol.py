"""What the bridge must understand of the protocol beyond one message a line: batches
(2025-03-26) and tasks (2025-11-25), with the scripted server; and the framing and era
detection as units."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from interrupt_sidecar.mcp import jsonrpc
from interrupt_sidecar.mcp.jsonrpc import Era, EraTracker, parse_line, reassemble

from tests.mcp.raw_agent import RawAgent
from tests.mcp.support import BRIDGE, SCRIPTED, Turns, alive, eventually
from tests.mcp.test_races import server_log


async def start(turns: Turns, tmp_path: Path) -> tuple[RawAgent, Path]:
    log = tmp_path / "server.log"
    agent = await RawAgent.start([*BRIDGE, "--", *SCRIPTED], {**turns.env(), "SCRIPTED_LOG": str(log)})
    return agent, log


def call(request_id: int, name: str, **arguments: object) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@pytest.mark.timeout(60)
async def test_batches_are_tracked_member_by_member(turns: Turns, tmp_path: Path) -> None:
    agent, log = await start(turns, tmp_path)
    try:
        await agent.handshake()
        turns.begin(grace=0.05)
        agent.send([call(11, "wait", release=str(tmp_path / "never")), call(12, "now")])
        assert "now" in json.dumps(await agent.answer(12))
        turns.interrupt()
        assert "Interrupted" in json.dumps(await agent.answer(11))
        await eventually(lambda: [m for m in server_log(log) if m.get("method") == "notifications/cancelled"])
        # A batch of the tripped turn: its call is answered here, the rest goes on as a batch.
        agent.send([call(13, "now"), {"jsonrpc": "2.0", "id": 14, "method": "ping"}])
        assert "Interrupted" in json.dumps(await agent.answer(13))
        assert (await agent.answer(14))["result"] == {}
        forwarded = [m for m in server_log(log) if m.get("id") in (13, 14)]
        assert [m["id"] for m in forwarded] == [14]
    finally:
        await agent.kill()


@pytest.mark.timeout(60)
async def test_a_call_that_became_a_task_is_cancelled_with_tasks_cancel(turns: Turns, tmp_path: Path) -> None:
    agent, log = await start(turns, tmp_path)
    try:
        await agent.handshake()
        turns.begin(grace=0.05)
        request = call(21, "wait", release=str(tmp_path / "never"))
        request["params"]["task"] = {"ttl": 60000}
        agent.send(request)
        created = await agent.answer(21)
        assert created["result"]["task"]["taskId"] == "task-21"
        # The tripped turn's task: the server gets tasks/cancel; its answer is the bridge's.
        agent.call(22, "wait", {"release": str(tmp_path / "never")})  # a call in flight, to trip
        await eventually(lambda: any(m.get("id") == 22 for m in server_log(log)))
        turns.interrupt()
        cancels = await eventually(lambda: [m for m in server_log(log) if m.get("method") == "tasks/cancel"])
        assert cancels[0]["params"] == {"taskId": "task-21"}
        assert "Interrupted" in json.dumps(await agent.answer(22))
        assert not [m for m in agent.received if str(m.get("id", "")).startswith("interrupt-sidecar")]
    finally:
        await agent.kill()


# -- units ---------------------------------------------------------------------------------


def test_lines_that_are_not_json_rpc_are_opaque() -> None:
    for raw in (b"not json", b"[]", b"[1, 2]", b'"text"', b"\xff\xfe"):
        assert parse_line(raw).opaque, raw


def test_reassemble_keeps_the_original_bytes_unless_something_was_removed() -> None:
    raw = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},  {"jsonrpc":"2.0","id":2,"method":"ping"}]'
    line = parse_line(raw)
    assert line.batch and len(line.messages) == 2
    assert reassemble(line, line.messages) == raw + b"\n"
    assert json.loads(reassemble(line, line.messages[1:]) or b"") == [line.messages[1].data]
    assert reassemble(line, []) is None


def test_ids_of_different_types_are_different_requests() -> None:
    assert jsonrpc.id_key(1) != jsonrpc.id_key("1")


def era_of(tracker: EraTracker) -> Era:
    return tracker.era  # (read through a call: mypy would keep the first assert's narrowing)


def test_the_era_is_settled_by_the_servers_answer() -> None:
    era = EraTracker()
    discover = parse_line(b'{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}').messages[0]
    era.from_agent(discover)
    assert era_of(era) is Era.UNKNOWN  # a probe is not an agreement
    era.from_server(parse_line(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}').messages[0])
    assert era_of(era) is Era.UNKNOWN
    init = b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'
    era.from_agent(parse_line(init).messages[0])
    era.from_server(parse_line(b'{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-06-18"}}').messages[0])
    assert era_of(era) is Era.HANDSHAKE and era.protocol_version == "2025-06-18"
    assert era.probe("x") == {"jsonrpc": "2.0", "id": "x", "method": "ping"}


def test_a_stateless_request_settles_the_stateless_era() -> None:
    era = EraTracker()
    meta = {jsonrpc.PROTOCOL_VERSION_META: "2026-07-28", jsonrpc.CLIENT_CAPABILITIES_META: {}}
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}
    era.from_agent(parse_line(json.dumps(request).encode()).messages[0])
    assert era.era is Era.STATELESS
    probe = era.probe("y")
    assert probe is not None and probe["method"] == "server/discover"
    assert probe["params"]["_meta"][jsonrpc.PROTOCOL_VERSION_META] == "2026-07-28"


# -- the command line ---------------------------------------------------------------------


def run_bridge(*argv: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_SIDECAR_")}
    return subprocess.run([*BRIDGE, *argv], input=stdin, capture_output=True, timeout=30, env=env, check=False)


@pytest.mark.timeout(60)
def test_exit_codes_and_opaque_lines() -> None:
    # Not JSON-RPC: passed through untouched, both ways; the server's code is the bridge's.
    done = run_bridge("--", "sh", "-c", 'read line; echo "$line"; exit 3', stdin=b"not json at all\n")
    assert (done.returncode, done.stdout) == (3, b"not json at all\n")
    assert run_bridge("--", "/nonexistent/server", stdin=b"").returncode == 127
    assert run_bridge(stdin=b"").returncode == 2


@pytest.mark.timeout(60)
def test_a_server_that_exits_by_itself_keeps_its_code_while_a_child_holds_its_stdout(tmp_path: Path) -> None:
    # The server exits 3 on its own, but the child it left behind holds its stdout open, so
    # the bridge's reader cannot report the exit before shutdown kills that child. The code
    # is still the server's: it ended the session, the bridge killed nothing of its (the
    # bridge used to mark the dead server killed at shutdown and exit 0). Under load the
    # plain `exit 3` above met the same race; this child makes it happen every time.
    pidfile = tmp_path / "child.pid"
    script = f'read line; echo "$line"; sleep 30 & echo $! > {pidfile}; exit 3'
    done = run_bridge("--", "sh", "-c", script, stdin=b"not json at all\n")
    assert (done.returncode, done.stdout) == (3, b"not json at all\n")
    assert not alive(int(pidfile.read_text())), "the server's child outlived the bridge"


@pytest.mark.timeout(60)
async def test_a_token_in_meta_names_the_turn_and_never_reaches_the_server(turns: Turns, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    env = {k: v for k, v in turns.env().items() if k != "INTERRUPT_SIDECAR_TOKEN_FILE"}
    agent = await RawAgent.start([*BRIDGE, "--", *SCRIPTED], {**env, "SCRIPTED_LOG": str(log)})
    try:
        await agent.handshake()
        begun = turns.begin(grace=0.05)
        meta = {"dev.interruptsidecar/token": begun.attach_token, "progressToken": 7}
        agent.call(31, "wait", {"release": str(tmp_path / "never")}, meta=meta)
        [forwarded] = await eventually(lambda: [m for m in server_log(log) if m.get("id") == 31])
        assert forwarded["params"]["_meta"] == {"progressToken": 7}  # the capability stays with the bridge
        turns.interrupt()
        assert "Interrupted" in json.dumps(await agent.answer(31))
    finally:
        await agent.kill()
