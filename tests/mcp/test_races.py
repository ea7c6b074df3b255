"""Races at the trip, with a scripted server so the test holds the timing: whatever the
order, the agent gets exactly one answer per request and the server one cancel."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.raw_agent import RawAgent
from tests.mcp.support import BRIDGE, SCRIPTED, Turns, eventually

ROUNDS = 12
INTERRUPTED = "Interrupted"


def server_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def cancels_for(path: Path, request_id: Any) -> list[dict[str, Any]]:
    return [
        m
        for m in server_log(path)
        if m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == request_id
    ]


async def start(turns: Turns, tmp_path: Path, **env: str) -> tuple[RawAgent, Path]:
    log = tmp_path / "server.log"
    agent = await RawAgent.start(
        [*BRIDGE, "--probe-timeout", "5s", "--", *SCRIPTED], {**turns.env(), "SCRIPTED_LOG": str(log), **env}
    )
    return agent, log


async def at(offset: float, action: Any) -> None:
    """Run ``action`` (a plain callable) ``offset`` s from now, off the caller's path."""
    await asyncio.sleep(max(0.0, offset))
    await asyncio.to_thread(action)


@pytest.mark.timeout(120)
async def test_a_result_arriving_during_the_trip_gives_one_answer(turns: Turns, tmp_path: Path) -> None:
    agent, log = await start(turns, tmp_path)
    try:
        await agent.handshake()
        outcomes = []
        for round_ in range(ROUNDS):
            turns.begin(grace=0.05)
            release = tmp_path / f"release-{round_}"
            request_id = 100 + round_
            agent.call(request_id, "wait", {"release": str(release)})
            await eventually(lambda: any(m.get("id") == request_id for m in server_log(log)))
            # The server's result and the trip, a few ms either way of each other.
            offset = (round_ % 6 - 3) * 0.001
            await asyncio.gather(
                at(max(0.0, -offset), turns.interrupt), at(max(0.0, offset), lambda: release.write_text("go"))
            )
            answer = await agent.answer(request_id)
            await asyncio.sleep(0.05)  # room for a second answer, were there one
            assert len(agent.answers(request_id)) == 1, agent.answers(request_id)
            outcomes.append(INTERRUPTED if INTERRUPTED in json.dumps(answer) else "released")
        assert set(outcomes) <= {INTERRUPTED, "released"}
    finally:
        await agent.kill()


@pytest.mark.timeout(120)
async def test_the_agents_own_cancel_during_the_trip_is_not_duplicated(turns: Turns, tmp_path: Path) -> None:
    agent, log = await start(turns, tmp_path)
    try:
        await agent.handshake()
        for round_ in range(ROUNDS):
            turns.begin(grace=0.05)
            request_id = 200 + round_
            agent.call(request_id, "wait", {"release": str(tmp_path / "never")})
            await eventually(lambda: any(m.get("id") == request_id for m in server_log(log)))
            offset = (round_ % 6 - 3) * 0.001
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}

            async def agent_cancels() -> None:
                await asyncio.sleep(max(0.0, offset))
                agent.send(cancel)

            await asyncio.gather(at(max(0.0, -offset), turns.interrupt), agent_cancels())
            # Exactly one cancel reaches the server, whoever was first.
            await eventually(lambda: cancels_for(log, request_id))
            await asyncio.sleep(0.05)
            assert len(cancels_for(log, request_id)) == 1, cancels_for(log, request_id)
            # The agent that cancelled first gets no answer; otherwise the bridge's one.
            assert len(agent.answers(request_id)) <= 1
    finally:
        await agent.kill()


@pytest.mark.timeout(60)
async def test_a_trip_during_initialization_cancels_nothing(turns: Turns, tmp_path: Path) -> None:
    hold = tmp_path / "hold-init"
    turns.begin()
    agent, log = await start(turns, tmp_path, SCRIPTED_HOLD_INIT=str(hold))
    try:
        handshake = asyncio.create_task(agent.handshake())
        await eventually(lambda: any(m.get("method") == "initialize" for m in server_log(log)))
        turns.interrupt()
        await asyncio.sleep(0.05)
        hold.write_text("go")
        answer = await asyncio.wait_for(handshake, 15)
        assert "result" in answer  # the handshake completes untouched
        # The turn is over: its call is answered by the bridge and never reaches the server.
        agent.call(1, "now", {})
        call_answer = await agent.answer(1)
        assert INTERRUPTED in json.dumps(call_answer)
        await asyncio.sleep(0.1)
        received = server_log(log)
        assert not [m for m in received if m.get("method") == "notifications/cancelled"]
        assert not [m for m in received if m.get("method") == "tools/call"]
    finally:
        await agent.kill()
