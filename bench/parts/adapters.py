"""12. Framework adapters: each framework's own cancel against the same framework with the
adapter, in one run (issue 30).

Per framework a worker process (bench/frameworks/: LangGraph and the OpenAI Agents SDK in
the suite's venv, CrewAI in build/crewai-venv, the Vercel AI SDK by node against the built
TypeScript client) drives the real framework with its own offline fake model; its one tool
starts ``sh -c "sleep N & setsid sleep M & wait"`` and waits on it. Once the tree runs the
call is cancelled (t0): the framework's own way (``Task.cancel()``, ``result.cancel(...)``,
``AbortController.abort()``), or with the adapter by the daemon's ``Interrupt``, the tool
having started the tree with the adapter's spawn helper. Measured from t0: the framework
call returned (up to ``--adapters-return-timeout``; later is "did not return"), and the
tree's three processes still alive ``--adapters-window`` after t0 (survivors). Then the
worker SIGKILLs every one alive by pid; this process, the subreaper of the workers' orphans
for the part, kills and reaps whatever is left. Rows of a framework interleave trial by trial.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import procs
from bench.context import Context
from bench.procs import ROOT
from bench.stats import ratio, summarize

GRACE_S = 0.5
CREWAI_PYTHON = ROOT / "build" / "crewai-venv" / "bin" / "python"
TS_CLIENT = ROOT / "clients" / "typescript"
#: The tree: pids written to a file (shell, plain sleep, setsid sleep) before it waits.
SCRIPT = "echo $$ > {tmp}; sleep {n} & echo $! >> {tmp}; setsid sleep {m} & echo $! >> {tmp}; mv {tmp} {pidfile}; wait"


@dataclass(frozen=True)
class Row:
    tool: str
    #: The framework call and how it is cancelled.
    how: str


@dataclass(frozen=True)
class Framework:
    title: str
    rows: dict[str, Row]
    #: (own cancel, adapter) rows compared.
    pairs: tuple[tuple[str, str], ...]

    def argv(self, name: str) -> list[str]:
        if name == "ai_sdk":
            return ["node", str(ROOT / "bench" / "frameworks" / "ai_sdk.mjs")]
        python = str(CREWAI_PYTHON) if name == "crewai" else sys.executable
        return [python, "-m", f"bench.frameworks.{name}"]


FRAMEWORKS = {
    "langgraph": Framework(
        "LangChain `create_agent` (langgraph), `GenericFakeChatModel`",
        {
            "sync/own": Row("sync", "`Task.cancel()` on `ainvoke`"),
            "sync/adapter": Row("sync", "`InterruptibleGraph.ainvoke`, `Interrupt`"),
            "async/own": Row("async", "`Task.cancel()` on `ainvoke`"),
            "async/adapter": Row("async", "`InterruptibleGraph.ainvoke`, `Interrupt`"),
        },
        (("sync/own", "sync/adapter"), ("async/own", "async/adapter")),
    ),
    "openai_agents": Framework(
        "OpenAI Agents SDK, `agents.testing.ScriptedModel`",
        {
            "sync/own": Row("sync", '`run_streamed`, `result.cancel("immediate")`'),
            "sync/adapter": Row("sync", "`InterruptibleRunner.run_streamed`, `Interrupt`"),
            "async/own": Row("async", '`run_streamed`, `result.cancel("immediate")`'),
            "async/own_after_turn": Row("async", '`run_streamed`, `result.cancel("after_turn")`'),
            "async/adapter": Row("async", "`InterruptibleRunner.run_streamed`, `Interrupt`"),
        },
        (("sync/own", "sync/adapter"), ("async/own", "async/adapter"), ("async/own_after_turn", "async/adapter")),
    ),
    "crewai": Framework(
        "CrewAI, a scripted `BaseLLM`",
        {
            "sync/own": Row("sync", "`Task.cancel()` on `Crew.akickoff`"),
            "sync/adapter": Row("sync", "`InterruptibleCrew.akickoff`, `Interrupt`"),
            "async/own": Row("async", "`Task.cancel()` on `Crew.akickoff`"),
            "async/adapter": Row("async", "`InterruptibleCrew.akickoff`, `Interrupt`"),
        },
        (("sync/own", "sync/adapter"), ("async/own", "async/adapter")),
    ),
    "ai_sdk": Framework(
        "Vercel AI SDK, `MockLanguageModelV4`",
        {
            "generate/own": Row("async", "`generateText`, `abort()`"),
            "generate/adapter": Row("async", "`runTurn` + `generateText`, `Interrupt`"),
            "stream/own": Row("async", "`streamText`, `abort()`"),
            "stream/adapter": Row("async", "`runTurn` + `streamText`, `Interrupt`"),
        },
        (("generate/own", "generate/adapter"), ("stream/own", "stream/adapter")),
    ),
}


def _missing(name: str) -> str | None:
    """Why a framework's worker cannot run here, or None."""
    if name == "crewai" and not CREWAI_PYTHON.exists():
        return f"{CREWAI_PYTHON} is missing (make crewai-test-deps)"
    if name == "ai_sdk":
        if not (TS_CLIENT / "dist" / "src" / "adapters" / "ai-sdk.js").exists():
            return "the TypeScript client is not built (make -C clients/typescript build)"
        if not (TS_CLIENT / "node_modules" / "ai").exists():
            return "clients/typescript/node_modules has no `ai` (npm ci in clients/typescript)"
    return None


def _env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return env | {
        # CrewAI writes its task database and settings under HOME; the frameworks send nothing.
        "HOME": home,
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "OPENAI_API_KEY": "sk-bench-offline",
        "PYTHONPATH": str(ROOT),
    }


async def _worker(
    ctx: Context, name: str, framework: Framework, config: dict[str, Any], directory: Path, timeout: float
) -> dict[str, Any]:
    """Run one framework's worker; its trials, versions and any error, every pid it reported."""
    log = directory / f"{name}.stderr"
    stderr = await asyncio.to_thread(log.open, "wb")
    with stderr:
        process = await asyncio.create_subprocess_exec(
            *framework.argv(name),
            json.dumps(config),
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=ROOT,
            env=_env(str(directory / "home")),
            start_new_session=True,
        )
    got: dict[str, Any] = {"trials": [], "versions": {}, "pids": [], "errors": []}

    async def read() -> None:
        assert process.stdout is not None
        async for raw in process.stdout:
            if not raw.startswith(b"{"):
                continue  # a framework's own printing (CrewAI's console)
            line = json.loads(raw)
            if "versions" in line:
                got["versions"] = line["versions"]
            elif "pids" in line and "row" not in line:
                got["pids"] += line["pids"]
            elif "error" in line:
                got["errors"].append(f"{line['row']} trial {line['trial']}: {line['error']}")
            else:
                got["trials"].append(line)
                # Reap this trial's tree now: orphans (the setsid sleep) are this process's.
                await asyncio.to_thread(procs.kill_and_reap, line["pids"])

    try:
        await asyncio.wait_for(read(), timeout)
        code = await asyncio.wait_for(process.wait(), 30)
        if code != 0:
            got["errors"].append(f"the worker exited with {code}: {log.read_text()[-1500:]}")
    except TimeoutError:
        got["errors"].append(f"the worker did not finish within {timeout:.0f} s: {log.read_text()[-1500:]}")
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    for error in got["errors"]:
        ctx.log(f"adapters {name}: {error}")
    return got


def _row(trials: list[dict[str, Any]], of: int) -> dict[str, Any]:
    returned = [t["returned_ms"] for t in trials if t["returned_ms"] is not None]
    figure: dict[str, Any] = {"of": of, "count": len(returned)}
    if returned:
        figure |= summarize(returned) | {"repeats": 1}  # the rows interleave trial by trial: one repeat
    return {
        "returned": figure,
        "survivors": sum(t["survivors"] for t in trials),
        "processes": sum(t["processes"] for t in trials),
        "outcomes": dict(Counter(t["outcome"] for t in trials)),
    }


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    out: dict[str, Any] = {
        "grace_ms": GRACE_S * 1e3,
        "window_s": o.adapters_window_s,
        "return_timeout_s": o.adapters_return_timeout_s,
        "trials": o.adapters_trials,
        "frameworks": {},
    }
    daemon = procs.start_daemon(o.loops[0], tcp=False)
    directory = Path(tempfile.mkdtemp(prefix="isb-adapters-", dir="/tmp"))
    (directory / "home").mkdir()
    procs.child_subreaper(True)
    every_pid: list[int] = []
    try:
        for name, framework in FRAMEWORKS.items():
            entry: dict[str, Any] = {"title": framework.title}
            out["frameworks"][name] = entry
            if (why := _missing(name)) is not None:
                entry["skipped"] = why
                ctx.notes.append(f"adapters: {name} skipped: {why}")
                ctx.log(f"adapters {name}: skipped, {why}")
                continue
            rows = list(framework.rows)
            workdir = directory / name  # the trees' pidfiles, apart from every other worker's
            workdir.mkdir()
            ctx.log(f"adapters {name}: {o.adapters_trials} trials of {', '.join(rows)}, interleaved")
            config = {
                "address": daemon.address("unix"),
                "trials": o.adapters_trials,
                "rows": rows,
                "window_s": o.adapters_window_s,
                "return_timeout_s": o.adapters_return_timeout_s,
                "grace_s": GRACE_S,
                "script": SCRIPT,
                "workdir": str(workdir),
                **({"client": str(TS_CLIENT)} if name == "ai_sdk" else {}),
            }
            per_trial = o.adapters_return_timeout_s + 45  # start, wind-up, the framework's own set-up
            got = await _worker(ctx, name, framework, config, directory, 60 + o.adapters_trials * len(rows) * per_trial)
            every_pid += got["pids"]
            entry["versions"] = got["versions"]
            entry["errors"] = got["errors"]
            entry["rows"] = {}
            for key, row in framework.rows.items():
                trials = [t for t in got["trials"] if t["row"] == key]
                entry["rows"][key] = {"tool": row.tool, "how": row.how} | _row(trials, o.adapters_trials)
            entry["comparisons"] = []
            for own, adapter in framework.pairs:
                before, after = entry["rows"][own]["returned"], entry["rows"][adapter]["returned"]
                entry["comparisons"].append(
                    {
                        "own": own,
                        "adapter": adapter,
                        # after ÷ before of the time to return; None when either path never returned
                        "returned_ratio": ratio(after, before) if before["count"] and after["count"] else None,
                        "survivors": [entry["rows"][own]["survivors"], entry["rows"][adapter]["survivors"]],
                    }
                )
    finally:
        try:
            out["left_running"] = await asyncio.to_thread(procs.kill_and_reap, every_pid)
        finally:
            procs.child_subreaper(False)
            daemon.stop()
            shutil.rmtree(directory, ignore_errors=True)
    return out
