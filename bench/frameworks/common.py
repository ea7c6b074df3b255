"""What the Python framework workers share: their options, the tool's process tree, one trial.

A worker is ``python -m bench.frameworks.<name> CONFIG_JSON``. Per trial and row (a tool kind
and a path: the framework's own cancel, or the adapter) it starts the framework call, whose
tool starts the tree and waits on it; once the tree runs (and, with the adapter, is
registered) it cancels (t0) and records when the call returned, up to ``return_timeout_s``
after t0. It counts the tree's processes alive ``window_s`` after t0, then SIGKILLs every one
still alive by pid and lets the call wind up. Lines on stdout: ``{"pids": [...]}`` as soon as
the tree is known (the part kills and reaps those even if this worker dies), then the trial;
first of all ``{"versions": {...}}``, the framework packages'.
Only the standard library and the client are imported here: it runs in build/crewai-venv too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interrupt_sidecar_client import InterruptReason
from interrupt_sidecar_client.aio import AsyncCoordinator

from bench.procs import alive

#: How long a tool may take to start its tree before the trial counts as failed.
START_TIMEOUT_S = 30.0
#: How long a call may take to wind up once its tree was killed (it holds the worker).
WIND_UP_S = 10.0


@dataclass(frozen=True)
class Config:
    address: str
    trials: int
    rows: list[str]
    window_s: float
    return_timeout_s: float
    grace_s: float
    #: The tree's ``sh -c`` script, with ``{tmp}``, ``{pidfile}``, ``{n}`` and ``{m}`` to fill in.
    script: str
    workdir: str

    @classmethod
    def parse(cls, text: str) -> Config:
        return cls(**json.loads(text))


class Tree:
    """One trial's ``sh -c "sleep N & setsid sleep M & wait"``, which writes its three pids."""

    def __init__(self, config: Config, name: str) -> None:
        self.pidfile = Path(config.workdir) / f"{name}.pids"
        n, m = (f"{300 + random.random():.6f}" for _ in range(2))
        script = config.script.format(tmp=f"{self.pidfile}.tmp", pidfile=self.pidfile, n=n, m=m)
        self.argv = ["sh", "-c", script]
        #: Set by the tool once its spawn call returned (the adapter's helpers: once the
        #: process group is registered with the daemon), so the cancel never lands in between.
        self.spawned = threading.Event()

    def run(self, popen: Callable[..., Any] | None) -> str:
        """A sync tool's body: start the tree (with the adapter's ``popen`` when given) and wait."""
        if popen is not None:
            with popen(self.argv) as managed:
                self.spawned.set()
                return f"exit {managed.wait()}"
        with subprocess.Popen(self.argv) as process:
            self.spawned.set()
            return f"exit {process.wait()}"

    async def arun(self, create_subprocess_exec: Callable[..., Any] | None) -> str:
        """An async tool's body: the same with the adapter's ``create_subprocess_exec``, or asyncio's."""
        if create_subprocess_exec is not None:
            async with create_subprocess_exec(*self.argv) as managed:
                self.spawned.set()
                return f"exit {await managed.wait()}"
        process = await asyncio.create_subprocess_exec(*self.argv)
        self.spawned.set()
        return f"exit {await process.wait()}"

    def pids(self) -> list[int] | None:
        try:
            return [int(x) for x in self.pidfile.read_text().split()]
        except FileNotFoundError:
            return None


@dataclass
class Trial:
    config: Config
    row: str
    index: int
    coordinator: AsyncCoordinator
    tree: Tree

    @property
    def context_id(self) -> str:
        """The context the adapter's turn is begun with; the Interrupt names it."""
        return f"bench-{self.row}-{self.index}"

    async def interrupt(self) -> None:
        """The adapter path's cancel: the daemon's Interrupt RPC, as an agent runtime calls it."""
        outcomes = await self.coordinator.interrupt(
            context_id=self.context_id, reason=InterruptReason.USER_SIGINT, detail="bench"
        )
        if not any(o.tripped for o in outcomes):
            raise RuntimeError(f"the Interrupt of {self.context_id} tripped nothing: {outcomes}")


#: A row's start: begins the framework call (a future) and returns it with its cancel.
Start = Callable[[Trial], Awaitable[tuple["asyncio.Future[Any]", Callable[[], Awaitable[object]]]]]


def emit(line: Mapping[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def _outcome(call: asyncio.Future[Any]) -> str:
    if not call.done():
        return "did not return"
    if call.cancelled():
        return "CancelledError"
    error = call.exception()
    return "returned" if error is None else type(error).__name__


async def trial(t: Trial, start: Start) -> dict[str, Any]:
    c = t.config
    call, cancel = await start(t)
    returned: list[float] = []
    call.add_done_callback(lambda _: returned.append(time.monotonic()))
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (t.tree.spawned.is_set() and (pids := t.tree.pids())):
        if call.done() or time.monotonic() > deadline:
            call.cancel()
            raise RuntimeError(f"the tool did not start its tree ({_outcome(call)})")
        await asyncio.sleep(0.005)
    emit({"pids": pids})
    t0 = time.monotonic()
    await cancel()
    await asyncio.wait({call}, timeout=c.window_s)
    await asyncio.sleep(max(0.0, t0 + c.window_s - time.monotonic()))
    survivors = [pid for pid in pids if alive(pid)]
    await asyncio.wait({call}, timeout=max(0.0, t0 + c.return_timeout_s - time.monotonic()))
    outcome = _outcome(call)
    returned_ms = (returned[0] - t0) * 1e3 if returned else None
    # Nothing may be left running: what the cancel left is killed by pid; the call then winds up.
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    await asyncio.wait({call}, timeout=WIND_UP_S)
    if not call.done():
        call.cancel()
        outcome += " (still running after its tree was killed)"
    with contextlib.suppress(BaseException):
        await call
    return {
        "row": t.row,
        "trial": t.index,
        "returned_ms": returned_ms,
        "outcome": outcome,
        "survivors": len(survivors),
        "processes": len(pids),
        "pids": pids,
    }


def own_and_adapter(start: Callable[[str, bool], Start]) -> dict[str, Start]:
    """The rows ``sync/own``, ``sync/adapter``, ``async/own``, ``async/adapter``: ``start(kind, adapter)``."""
    kinds, paths = ("sync", "async"), ("own", "adapter")
    return {f"{kind}/{path}": start(kind, path == "adapter") for kind in kinds for path in paths}


def main(starts: Mapping[str, Start], packages: tuple[str, ...]) -> None:
    """Say the ``packages``' versions, then run every trial of the rows named in the config
    (``sys.argv[1]``), interleaved."""
    from importlib.metadata import version

    config = Config.parse(sys.argv[1])
    emit({"versions": {name: version(name) for name in packages}})

    async def run() -> None:
        async with AsyncCoordinator(config.address) as coordinator:
            for index in range(config.trials):
                for row in config.rows:
                    tree = Tree(config, f"{row.replace('/', '-')}-{index}")
                    try:
                        emit(await trial(Trial(config, row, index, coordinator, tree), starts[row]))
                    except Exception as error:  # reported, and the next trial runs
                        emit({"row": row, "trial": index, "error": f"{type(error).__name__}: {error}"})

    asyncio.run(run())
