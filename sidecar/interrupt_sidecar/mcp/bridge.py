"""The bridge: the agent's stdio on one side, the server's on the other, the daemon above.

Every line passes through unchanged except those the bridge must touch. At a trip of a
turn (see :mod:`interrupt_sidecar.mcp.turns` for how requests belong to turns), for each
of the turn's requests in flight, in this order and on the event loop (so nothing the
server sends can slip in between):

1. the server gets ``notifications/cancelled`` (``tasks/cancel`` for the turn's tasks);
2. the agent gets its one answer at once (:func:`interrupt_sidecar.mcp.trip.agent_answer`);
3. the id goes to the dropped set: what the server still sends for it is swallowed.

Then, off the trip path (:meth:`Bridge._after_trip`): the server has the grace to stop
the call's work itself; what the calls started and is still alive at the grace is
SIGTERMed, then SIGKILLed (:mod:`interrupt_sidecar.mcp.processes`); the server is probed
(``ping``, or ``server/discover`` in the stateless era); one that does not answer within
the bound is killed with its tree and restarted on the next request, the agent's
``initialize`` and ``notifications/initialized`` replayed to it. Each call's run with the
daemon unwinds INTERRUPTED once its processes are gone.

A new ``tools/call`` of a tripped turn is answered as interrupted without reaching the
server; every other request and notification passes through.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any

from interrupt_sidecar_client import Cancellation, ToolOutcome

from interrupt_sidecar.mcp import jsonrpc, processes, trip
from interrupt_sidecar.mcp.scope import KillScope
from interrupt_sidecar.mcp.server import LINE_LIMIT, ServerProcess
from interrupt_sidecar.mcp.stdio import AgentOutput, open_stdio
from interrupt_sidecar.mcp.tracking import InFlight, RequestTable
from interrupt_sidecar.mcp.turns import TOKEN_META, CallRun, TokenSources, Turn, attach_call

log = logging.getLogger(__name__)

#: The grace when neither ``--grace`` nor the execution's grace is known.
DEFAULT_GRACE_S = 0.5
#: How long a restarted server may take to answer the replayed ``initialize``.
REPLAY_TIMEOUT_S = 30.0
#: Bridge-originated request ids: strings no SDK uses for its own (they count integers).
BRIDGE_ID_PREFIX = "interrupt-sidecar-"
#: Requests never tied to a turn: the spec forbids cancelling the handshake.
NEVER_TRIPPED = frozenset({"initialize", "server/discover"})


@dataclass(frozen=True, slots=True)
class BridgeOptions:
    """What ``interrupt-sidecar mcp`` was asked to do (flags and environment resolved)."""

    command: tuple[str, ...]
    address: str | None
    tokens: TokenSources
    grace: float | None
    kill_after: float | None
    probe_timeout: float
    scope: KillScope
    close_timeout: float


def _say(message: str) -> None:
    print(f"interrupt-sidecar mcp: {message}", file=sys.stderr, flush=True)


class Bridge:
    """One agent session with one server (restarted as needed)."""

    def __init__(self, options: BridgeOptions) -> None:
        self.options = options
        self.pid = os.getpid()
        self.era = jsonrpc.EraTracker()
        self.table = RequestTable()
        self.turns: dict[str, Turn] = {}
        self.server: ServerProcess | None = None
        self._ids = itertools.count(1)
        self._waiters: dict[str, asyncio.Future[jsonrpc.Message]] = {}
        self._out: AgentOutput | None = None
        self._server_gone = asyncio.Event()
        self._exit_code: int | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Runs with the daemon not unwound yet (a session that ends unwinds them all).
        self._runs: set[CallRun] = set()
        #: Servers started and not yet reaped: their exit status is asyncio's to collect.
        self._server_pids: set[int] = set()
        self._starting: asyncio.Lock = asyncio.Lock()

    # -- plumbing --------------------------------------------------------------------------

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _unwind(self, run: CallRun, outcome: ToolOutcome, detail: str = "") -> None:
        self._runs.discard(run)
        self._spawn(run.unwind(outcome, detail), "unwind")

    def _bridge_id(self) -> str:
        return f"{BRIDGE_ID_PREFIX}{next(self._ids)}"

    def _to_agent(self, data: bytes) -> None:
        assert self._out is not None
        if not self._out.is_closing():
            self._out.write(data)

    def _to_server(self, data: bytes) -> bool:
        return self.server is not None and self.server.send(data)

    async def _request_server(self, message: dict[str, Any], timeout: float) -> jsonrpc.Message | None:
        """Send a bridge-originated request; its answer (never forwarded), or None after ``timeout``."""
        key = jsonrpc.id_key(message["id"])
        waiter: asyncio.Future[jsonrpc.Message] = asyncio.get_running_loop().create_future()
        self._waiters[key] = waiter
        try:
            if not self._to_server(jsonrpc.encode(message)):
                return None
            return await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            return None
        finally:
            self._waiters.pop(key, None)

    # -- the server ------------------------------------------------------------------------

    async def _ensure_server(self) -> None:
        """A live server to forward to: (re)started when the bridge killed the last one."""
        async with self._starting:
            if self.server is not None and not self.server.killed_by_bridge:
                return  # alive, or it ended the session itself (the bridge is exiting)
            if self.server is not None:
                # Being killed, or dead but not yet reaped: what is forwarded now would be
                # lost with it. Wait for its end (its requests are answered then), restart.
                await self.server.exited()
            restart = self.server is not None
            self.server = ServerProcess(self.options.command, self._from_server, self._server_exited)
            await self.server.start()
            self._server_pids.add(self.server.pid)
            if restart:
                _say(f"restarted the server (pid {self.server.pid})")
                await self._replay_handshake()

    async def _replay_handshake(self) -> None:
        """Bring a restarted server to where the agent believes it is (handshake era only:
        the stateless era has no session to rebuild)."""
        if self.era.era is not jsonrpc.Era.HANDSHAKE or self.era.initialize is None:
            return
        replay = dict(self.era.initialize, id=self._bridge_id())
        answer = await self._request_server(replay, REPLAY_TIMEOUT_S)
        if answer is None or "result" not in answer.data:
            _say("the restarted server did not accept the replayed initialize")
            return
        if self.era.initialized_sent:
            self._to_server(jsonrpc.encode(jsonrpc.notification("notifications/initialized", {})))

    def _server_exited(self, server: ServerProcess, code: int) -> None:
        self._server_pids.discard(server.pid)
        if server is not self.server:
            return
        # Whatever the agent still waits for will not come from this server.
        for entry in list(self.table.in_flight.values()):
            self.table.answered_by_bridge(entry)
            self._to_agent(
                jsonrpc.encode(
                    jsonrpc.error(entry.request_id, jsonrpc.INTERNAL_ERROR, "the MCP server stopped before answering")
                )
            )
            if entry.run is not None:
                self._unwind(entry.run, ToolOutcome.FAILED, "the MCP server stopped")
        if not server.killed_by_bridge:
            # The server ended the session itself: so does the bridge, with its code.
            self._exit_code = code if code >= 0 else 128 - code
            self._server_gone.set()

    def _from_server(self, raw: bytes) -> None:
        line = jsonrpc.parse_line(raw)
        if line.opaque:
            self._to_agent(raw + b"\n")
            return
        keep: list[jsonrpc.Message] = []
        for message in line.messages:
            self.era.from_server(message)
            if message.is_response:
                key = message.key
                waiter = self._waiters.get(key)
                if waiter is not None:
                    if not waiter.done():
                        waiter.set_result(message)
                    continue
                if isinstance(message.data.get("id"), str) and message.data["id"].startswith(BRIDGE_ID_PREFIX):
                    continue  # the answer to a bridge request nobody waits for any more
                if self.table.drop_response(key):
                    continue  # answered by the bridge at a trip: the agent has its one answer
                entry = self.table.pop(key)
                if entry is not None:
                    self._completed(entry, message)
            elif message.method == "notifications/progress":
                token = message.params.get("progressToken")
                if token is not None and self.table.drop_progress(token):
                    continue
            keep.append(message)
        out = jsonrpc.reassemble(line, keep)
        if out is not None:
            self._to_agent(out)

    def _completed(self, entry: InFlight, message: jsonrpc.Message) -> None:
        value = message.data.get("result")
        if isinstance(value, dict) and entry.turn is not None:
            task = value.get("task")
            if isinstance(task, dict) and isinstance(task.get("taskId"), str):
                entry.turn.tasks.add(task["taskId"])  # a task-augmented call: cancelled by tasks/cancel
        if entry.run is None:
            return
        if "error" in message.data:
            outcome, detail = ToolOutcome.FAILED, "the server answered with an error"
        elif isinstance(value, dict) and value.get("isError") is True:
            outcome, detail = ToolOutcome.FAILED, "the tool reported an error"
        else:
            outcome, detail = ToolOutcome.COMPLETED, ""
        self._unwind(entry.run, outcome, detail)

    # -- the agent -------------------------------------------------------------------------

    def _turn(self, token: str) -> Turn:
        turn = self.turns.get(token)
        if turn is None:
            # A new turn: forget the finished ones (nothing in flight, nothing to kill).
            for old, t in list(self.turns.items()):
                if not t.in_flight and not t.tasks:
                    del self.turns[old]
            turn = self.turns[token] = Turn(token)
        return turn

    async def _from_agent(self, raw: bytes) -> None:
        line = jsonrpc.parse_line(raw)
        await self._ensure_server()
        if line.opaque:
            self._to_server(raw + b"\n")
            return
        keep: list[jsonrpc.Message] = []
        touched = False
        for message in line.messages:
            self.era.from_agent(message)
            if message.is_request:
                forward, changed = await self._agent_request(message)
                touched |= changed
                if not forward:
                    continue
            elif message.method == "notifications/cancelled":
                key = jsonrpc.id_key(message.params.get("requestId"))
                if self.table.is_dropped(key):
                    continue  # the bridge answered it and told the server already
                entry = self.table.pop(key)
                if entry is not None and entry.run is not None:
                    self._unwind(entry.run, ToolOutcome.INTERRUPTED, "cancelled by the agent")
            keep.append(message)
        if touched and keep:
            out: bytes | None = jsonrpc.encode([m.data for m in keep] if line.batch else keep[0].data)
        else:
            out = jsonrpc.reassemble(line, keep)
        if out is not None:
            self._to_server(out)

    async def _agent_request(self, message: jsonrpc.Message) -> tuple[bool, bool]:
        """Track one request; returns (forward it, its bytes changed)."""
        method = message.method or ""
        params = message.data.get("params")
        changed = False
        token: str | None = None
        if method not in NEVER_TRIPPED and isinstance(params, dict):
            changed = _has_meta_token(params)  # removed before forwarding: the bytes change
            token = self.options.tokens.take(params)
        turn = self._turn(token) if token else None
        entry = InFlight(message.data["id"], message.key, method, turn)
        progress = message.meta.get("progressToken")
        if progress is not None:
            entry.progress_key = jsonrpc.id_key(progress)
        if method == "tools/call" and turn is not None:
            if turn.cancellation is not None:
                self._answer(method, entry.request_id, turn.cancellation)
                return False, changed
            tool = params.get("name") if isinstance(params, dict) else None
            run = await attach_call(self.options.address, turn.token, str(tool or "?"), str(entry.request_id))
            if run is not None:
                cancellation = run.cancellation
                if cancellation is not None:
                    # Tripped before the call reached the server: it never will.
                    self._trip(turn, cancellation)
                    self._answer(method, entry.request_id, cancellation)
                    self._unwind(run, ToolOutcome.INTERRUPTED, "tripped before the call reached the server")
                    return False, changed
                entry.run = run
                self._runs.add(run)
                loop = asyncio.get_running_loop()
                run.on_cancel(lambda: self._call_soon(loop, turn, run))
            entry.baseline = processes.baseline(self.pid)
            if turn.baseline is None:
                turn.baseline = entry.baseline
        self.table.add(entry)
        return True, changed

    # -- the trip --------------------------------------------------------------------------

    def _call_soon(self, loop: asyncio.AbstractEventLoop, turn: Turn, run: CallRun) -> None:
        # The client may run cancel listeners off the loop (the doorbell's thread).
        loop.call_soon_threadsafe(self._trip_from, turn, run)

    def _answer(self, method: str, request_id: Any, cancellation: Cancellation) -> None:
        self._to_agent(jsonrpc.encode(trip.agent_answer(method, request_id, cancellation, self.era.era)))

    def _trip_from(self, turn: Turn, run: CallRun) -> None:
        cancellation = run.cancellation
        if cancellation is not None:
            self._trip(turn, cancellation)

    def _trip(self, turn: Turn, cancellation: Cancellation) -> None:
        """Steps 1–3 of the module docstring, for every request of ``turn`` in flight. Once per turn."""
        if turn.cancellation is not None:
            return
        turn.cancellation = cancellation
        victims = [e for e in self.table.of_turn(turn) if e.method not in NEVER_TRIPPED]
        for entry in victims:
            self._to_server(jsonrpc.encode(trip.server_cancel(entry.request_id, cancellation)))
            self._answer(entry.method, entry.request_id, cancellation)
            self.table.answered_by_bridge(entry)
        for task_id in sorted(turn.tasks):
            self._spawn(self._request_server(trip.task_cancel(self._bridge_id(), task_id), 5.0), "tasks-cancel")
        turn.tasks.clear()
        self._spawn(self._after_trip(turn, victims), "after-trip")

    async def _after_trip(self, turn: Turn, victims: list[InFlight]) -> None:
        """The grace, then the kill of what the interrupted calls left running, then the probe."""
        loop = asyncio.get_running_loop()
        calls = [e for e in victims if e.baseline is not None]
        grace = self.options.grace
        if grace is None:
            known = [e.run.grace.total_seconds() for e in calls if e.run is not None and e.run.grace is not None]
            grace = max(known) if known else DEFAULT_GRACE_S
        kill_after = self.options.kill_after if self.options.kill_after is not None else grace
        deadline = loop.time() + grace
        server = self.server
        server_pid = server.pid if server is not None else -1
        scope = self.options.scope
        spare: frozenset[tuple[int, int]] = frozenset()
        if scope is KillScope.TURN and turn.baseline is not None:
            spare = turn.baseline
        elif calls:
            spare = frozenset.intersection(*(e.baseline for e in calls if e.baseline is not None))
        report = processes.KillReport()
        if scope is KillScope.SERVER:
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            if server is not None and server.alive:
                report = await server.kill_tree(kill_after, self._server_pids - {server.pid})
        elif calls:
            # The server's own chance: poll until the calls' processes are gone or the grace is out.
            delay = 0.002
            while loop.time() < deadline and self._leftovers(spare, server_pid):
                await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
                delay = min(delay * 2, 0.02)
            if self._leftovers(spare, server_pid):
                report = await processes.kill(
                    self.pid, spare=spare, spare_pids=self._server_pids, kill_after=kill_after
                )
        detail = "answered the agent at the trip"
        if report.found:
            detail += f"; stopped {report.found} process(es) the call left running after the grace"
            _say(f"interrupted: stopped {report.found} process(es) left running after the grace")
        for entry in calls:
            if entry.run is not None:
                self._unwind(entry.run, ToolOutcome.INTERRUPTED, detail)
        await asyncio.sleep(max(0.0, deadline - loop.time()))
        await self._probe()

    def _leftovers(self, spare: frozenset[tuple[int, int]], server_pid: int) -> bool:
        return any((p.pid, p.start) not in spare and p.pid != server_pid for p in processes.tree(self.pid))

    async def _probe(self) -> None:
        """Kill a server that no longer answers (restarted on the next request)."""
        server = self.server
        if server is None or not server.alive:
            return
        probe = self.era.probe(self._bridge_id())
        if probe is None:
            return
        answer = await self._request_server(probe, self.options.probe_timeout)
        if answer is None and server is self.server and server.alive:
            _say(f"the server did not answer a {probe['method']} within {self.options.probe_timeout:g}s; restarting it")
            kill_after = self.options.kill_after if self.options.kill_after is not None else DEFAULT_GRACE_S
            await server.kill_tree(kill_after, self._server_pids - {server.pid})

    # -- the session -----------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        reader, self._out = await open_stdio(LINE_LIMIT)
        stop = asyncio.Event()
        stopped_by: list[int] = []

        def on_signal(signum: int) -> None:
            stopped_by.append(signum)
            stop.set()

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, on_signal, signum)
        # Orphans re-parented to the bridge (the subreaper) are reaped as they exit, so a
        # long session with a server that double-forks does not collect zombies.
        loop.add_signal_handler(signal.SIGCHLD, lambda: processes.reap_orphans(self.pid, self._server_pids))
        try:
            await self._ensure_server()
        except OSError as error:
            _say(f"cannot run {self.options.command[0]!r}: {error.strerror}")
            return 127 if isinstance(error, FileNotFoundError) else 126
        pump = asyncio.create_task(self._pump(reader), name="mcp-agent")
        stopping = asyncio.create_task(stop.wait())
        server_gone = asyncio.create_task(self._server_gone.wait())
        try:
            await asyncio.wait({pump, stopping, server_gone}, return_when=asyncio.FIRST_COMPLETED)
            if pump.done() and not stop.is_set() and not self._server_gone.is_set():
                await self._close_gently()
        finally:
            for task in (pump, stopping, server_gone):
                task.cancel()
            await self._shutdown()
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
                loop.remove_signal_handler(signum)
        if stopped_by:
            return 128 + stopped_by[0]
        return self._exit_code or 0

    async def _pump(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                raw = await reader.readline()
            except ValueError:
                _say(f"the agent wrote a line over {LINE_LIMIT} bytes; closing the session")
                return
            if not raw:
                return
            await self._from_agent(raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw)
            if self.server is not None:
                await self.server.drain()

    async def _close_gently(self) -> None:
        """The agent closed our stdin: so do we the server's, and give it a moment to exit."""
        if self.server is not None and self.server.alive:
            self.server.close_stdin()
            await self.server.wait(self.options.close_timeout)

    async def _shutdown(self) -> None:
        """Nothing the server started outlives the bridge."""
        server = self.server
        kill_after = self.options.kill_after if self.options.kill_after is not None else DEFAULT_GRACE_S
        if server is not None:
            await server.kill_tree(min(kill_after, 0.5), self._server_pids - {server.pid})
        # And whatever else is below the bridge: orphans of earlier servers and calls. Before
        # the wait below: an orphan that inherited the server's stdout keeps its reader from
        # the end of the stream, and so from reporting the exit (and its code) at all.
        await processes.kill(self.pid, spare_pids=self._server_pids, kill_after=min(kill_after, 0.5))
        if server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.exited(), 1.0)
        for task in list(self._tasks):
            task.cancel()
        for run in list(self._runs):
            outcome = ToolOutcome.INTERRUPTED if run.cancellation is not None else ToolOutcome.FAILED
            await run.unwind(outcome, "the MCP session ended")
        if self._out is not None:
            # Closing flushes what the pipe could not take yet (drain only waits for the
            # buffer to go below its high-water mark): the agent's last answers must get out.
            self._out.close()
            with contextlib.suppress(ConnectionError, RuntimeError, TimeoutError):
                await asyncio.wait_for(self._out.wait_closed(), 5.0)


def _has_meta_token(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, dict) and TOKEN_META in meta
