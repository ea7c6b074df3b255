"""9. Footprint: what the daemon costs a pod before and between interrupts, and what the
command line costs a tool call, each beside its floor in the same run.

Servers (``--footprint-starts`` fresh processes each, interleaved: floor, daemon with
defaults, daemon as the chart runs it, floor, ...):

* exec → ``ready`` printed on stdout (the Popen call to the line read);
* RSS (``/proc/PID/statm``) 2 s after ready, and the thread count;
* idle, over ``--footprint-idle-seconds`` after that with nothing connected: wake-ups a
  second (voluntary + involuntary context switches of every thread, from
  ``/proc/PID/task/*/status``; also by thread name, so grpc core's own threads show
  apart from the loop's) and CPU (utime + stime).

Floor: ``python -m bench.barehealth``, a bare grpc.aio server of the same grpcio serving
only ``grpc.health.v1`` on a unix socket, on the same loop. The daemon is started as it is
installed (the ``interrupt-sidecar`` console script beside this Python), once with its
defaults (a unix socket: the doorbell on, metrics off) and once with the chart's
flags (metrics, a health-only TCP listener, a state directory, the doorbell).

Commands (``--footprint-trials`` each, interleaved), timed from the bench's clock before
the spawn: CMD is ``date +%s%N``, which prints when it runs (CLOCK_REALTIME, the same
kernel clock as the bench's ``time.time_ns``), so a wrapper's cost splits into *start*
(spawn → CMD running) and *exit* (CMD running → the wrapper reaped):

* bare spawn of CMD (the floor of both);
* ``interrupt-sidecar run -- CMD`` without a token (documented as "simply execs CMD");
* ``interrupt-sidecar run -- CMD`` with a token of a live execution (attach, register the
  group, exec, unwound);
* ``interrupt-sidecar begin`` / ``status`` / ``interrupt`` / ``end``: wall time, beside
  one unary RPC (``GetExecution``) from a client that is already running;
* ``python -c pass`` and ``python -c 'import grpc'``: what any Python command pays.

The commands are timed in both implementations: the Python one (``interrupt-sidecar-py``,
the command line alone, without the hand-over to the binary that the ``interrupt-sidecar``
console script makes) and, as ``native_*`` rows against the same floors, the native binary
(``clients/go/cmd/interrupt-sidecar``, built here by ``make -C clients/go native`` when the
go command exists, else the one ``make install`` put beside this interpreter; without
either the rows are left out and ``native.skipped`` says why). A native ``run`` that does
not run CMD leaves its rows out too, with the reason in ``native.run``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2 as pb
from interrupt_sidecar_client._proto.interrupt.v1 import interrupt_pb2_grpc as pb_grpc

from bench import procs, stats
from bench.clients import channel
from bench.context import Context

#: RSS is read this long after ``ready`` (the figure the issue names).
SETTLE_S = 2.0
#: A pause between starts, so one server's last start-up work never overlaps the next's.
GAP_S = 0.2
STAMP_CMD = ["date", "+%s%N"]

SERVERS = ("bare_health", "daemon_defaults", "daemon_chart")


def sidecar_command() -> list[str]:
    """How the daemon is installed: the console script beside this interpreter, else ``-m``."""
    script = Path(sys.executable).parent / "interrupt-sidecar"
    return [str(script)] if script.exists() else [sys.executable, "-m", "interrupt_sidecar"]


def python_command() -> list[str]:
    """The Python implementation of the command line alone: ``interrupt-sidecar-py`` beside
    this interpreter, else ``-m`` (``interrupt-sidecar`` itself hands the native commands
    to the binary when one is installed)."""
    script = Path(sys.executable).parent / "interrupt-sidecar-py"
    return [str(script)] if script.exists() else [sys.executable, "-m", "interrupt_sidecar"]


def native_command() -> tuple[list[str] | None, str]:
    """The native binary and where it came from, or None and why there is none."""
    if shutil.which("go"):
        made = subprocess.run(
            ["make", "--no-print-directory", "-C", str(procs.ROOT / "clients" / "go"), "native"],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            return None, f"make -C clients/go native failed: {made.stderr[-500:]}"
        return [str(procs.ROOT / "build" / "native" / "interrupt-sidecar")], "built by make -C clients/go native"
    installed = Path(sys.executable).parent / "interrupt-sidecar-native"
    if installed.exists():
        return [str(installed)], "installed beside the interpreter (no go command to build it)"
    return None, "no go command to build it, and none installed beside the interpreter (make install)"


def _loop() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"  # the daemon's default (``--loop auto``) when uvloop is installed


@dataclass
class Started:
    name: str
    process: subprocess.Popen[str]
    directory: tempfile.TemporaryDirectory[str]
    ready_ms: float

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # by PID: this process only
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.directory.cleanup()


def _argv(name: str, socket_dir: Path) -> list[str]:
    listen = ["--listen", f"unix://{socket_dir / 's.sock'}"]
    if name == "bare_health":
        return [sys.executable, "-m", "bench.barehealth", *listen, "--loop", _loop()]
    argv = [*sidecar_command(), "serve", *listen]
    if name == "daemon_chart":
        # helm/interrupt-sidecar/templates/_sidecar.tpl with the chart's defaults (ports
        # on loopback and chosen by the kernel, so runs never collide).
        argv += [
            "--metrics-listen=127.0.0.1:0",
            "--health-listen=127.0.0.1:0",
            f"--state-dir={socket_dir / 'state'}",
            "--grace=500ms",
            "--shutdown-timeout=10000ms",
            "--loop=auto",
            "--log-level=INFO",
        ]
    return argv


#: Where every process of this part keeps its compiled bytecode (set by :func:`run`).
_PYCACHE: list[str] = []


def _clean_env() -> dict[str, str]:
    """The environment without this host's INTERRUPT_SIDECAR_* settings, with bytecode cached.

    An installed package has its modules compiled (pip compiles at install), but a
    checkout run with PYTHONDONTWRITEBYTECODE (as this suite's hosts set it) compiles
    every source module at every start: that would time the compiler, and unequally (the
    floor's modules are all installed, the daemon's are the checkout's). So every process
    here reads and writes bytecode under one private PYTHONPYCACHEPREFIX, warmed by an
    untimed start of each server and command first.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERRUPT_SIDECAR_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if _PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = _PYCACHE[0]
    return env


def start(name: str) -> Started:
    directory = tempfile.TemporaryDirectory(prefix="isf-", dir="/tmp")
    argv = _argv(name, Path(directory.name))
    log = open(Path(directory.name) / "stderr.log", "w")  # noqa: SIM115 - the child keeps it
    t0 = time.monotonic_ns()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, cwd=procs.ROOT, env=_clean_env())
    log.close()
    assert process.stdout is not None
    line = process.stdout.readline()
    ready_ms = (time.monotonic_ns() - t0) / 1e6
    if not line.startswith("ready "):
        process.kill()
        process.wait(5)
        text = (Path(directory.name) / "stderr.log").read_text()[-2000:]
        directory.cleanup()
        raise RuntimeError(f"{name} did not start: {line!r}; stderr: {text}")
    return Started(name, process, directory, ready_ms)


def switches(pid: int) -> dict[int, tuple[str, int]]:
    """Each thread of ``pid``: its name (``comm``) and context switches (voluntary + involuntary).

    The name says whose thread wakes: grpc core names its own (``grpc_global_tim``,
    ``event_engine``, ``lifeguard``), Python's threads carry the process's name.
    """
    out: dict[int, tuple[str, int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                out[int(tid)] = (name, sum(int(line.split()[1]) for line in f if "ctxt_switches" in line))
        except FileNotFoundError:  # the thread ended
            continue
    return out


def wakeups_by_thread(
    pid: int, before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]], window: float
) -> dict[str, float]:
    """Wake-ups a second over ``window`` summed by thread name; the process's main thread as ``loop``."""
    out: dict[str, float] = {}
    for tid, (name, count) in after.items():
        key = "loop" if tid == pid else name
        out[key] = out.get(key, 0.0) + (count - before.get(tid, (name, 0))[1]) / window
    return out


async def measure_servers(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    keys = ("ready_ms", "rss_kb", "threads", "wakeups_per_s", "loop_thread_wakeups_per_s", "cpu_percent")
    per: dict[str, dict[str, list[float]]] = {n: {k: [] for k in keys} for n in SERVERS}
    threads_each: dict[str, list[dict[str, float]]] = {n: [] for n in SERVERS}
    for name in SERVERS:  # untimed: bytecode compiled and cached, files in the page cache
        start(name).stop()
    for r in range(o.footprint_starts):
        running: list[Started] = []
        try:
            # Start one after the other, each alone on the host's CPUs as far as this run goes.
            order = SERVERS if r % 2 == 0 else tuple(reversed(SERVERS))
            for name in order:
                running.append(start(name))
                await asyncio.sleep(GAP_S)
            await asyncio.sleep(SETTLE_S)
            for s in running:
                per[s.name]["ready_ms"].append(s.ready_ms)
                per[s.name]["rss_kb"].append(procs.rss_bytes(s.pid) / 1024)
                per[s.name]["threads"].append(len(os.listdir(f"/proc/{s.pid}/task")))
            # Idle side by side: nothing is connected, so nothing should run.
            before = {s.name: (switches(s.pid), procs.cpu_seconds(s.pid)) for s in running}
            t0 = time.monotonic()
            await asyncio.sleep(o.footprint_idle_seconds)
            window = time.monotonic() - t0
            for s in running:
                sw0, cpu0 = before[s.name]
                sw1, cpu1 = switches(s.pid), procs.cpu_seconds(s.pid)
                by_thread = wakeups_by_thread(s.pid, sw0, sw1, window)
                per[s.name]["wakeups_per_s"].append(sum(by_thread.values()))
                per[s.name]["loop_thread_wakeups_per_s"].append(by_thread.get("loop", 0.0))
                per[s.name]["cpu_percent"].append(100 * (cpu1 - cpu0) / window)
                threads_each[s.name].append(by_thread)
        finally:
            for s in running:
                s.stop()
        ctx.log(
            f"  footprint start {r + 1}/{o.footprint_starts}: "
            + ", ".join(
                f"{n} ready {per[n]['ready_ms'][-1]:.0f} ms RSS {per[n]['rss_kb'][-1] / 1024:.1f} MiB "
                f"{per[n]['wakeups_per_s'][-1]:.1f} wake-ups/s"
                for n in SERVERS
            )
        )
    out: dict[str, Any] = {}
    for name, figures in per.items():
        entry: dict[str, Any] = {"ready_ms": stats.summarize(figures["ready_ms"])}
        for key in ("rss_kb", "threads", "wakeups_per_s", "loop_thread_wakeups_per_s", "cpu_percent"):
            entry[key] = statistics.median(figures[key])
            entry[f"{key}_each"] = figures[key]
        # Whose threads wake: the median over the starts of each thread name's wake-ups a second.
        names = sorted({t for each in threads_each[name] for t in each})
        entry["wakeups_by_thread_per_s"] = {
            t: statistics.median(each.get(t, 0.0) for each in threads_each[name]) for t in names
        }
        out[name] = entry
    floor = out["bare_health"]
    for name in ("daemon_defaults", "daemon_chart"):
        e = out[name]
        e["ratio_ready_p50"] = e["ready_ms"]["p50"] / floor["ready_ms"]["p50"]
        e["ratio_rss"] = e["rss_kb"] / floor["rss_kb"]
        e["wakeups_over_floor_per_s"] = e["wakeups_per_s"] - floor["wakeups_per_s"]
    return out


# -- commands ----------------------------------------------------------------------------


def _spawn(argv: list[str], env: dict[str, str]) -> tuple[int, int, str]:
    """Run ``argv`` to its end: (spawned, reaped) on CLOCK_REALTIME in ns, and its stdout."""
    t0 = time.time_ns()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=procs.ROOT)
    t1 = time.time_ns()
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-2000:]}")
    return t0, t1, done.stdout


def _timed(argv: list[str], env: dict[str, str], stamped: bool) -> tuple[float, float | None, float | None]:
    """(wall, start, exit) in ms: spawn → reaped; spawn → CMD's stamp; stamp → reaped."""
    t0, t1, stdout = _spawn(argv, env)
    if not stamped:
        return (t1 - t0) / 1e6, None, None
    stamp = int(stdout.split()[-1])
    return (t1 - t0) / 1e6, (stamp - t0) / 1e6, (t1 - stamp) / 1e6


def _coordinator_commands(prefix: str, cli: list[str], env: dict[str, str], add: Any) -> None:
    """begin, status, interrupt, end of one implementation, as a script would chain them."""
    t0, t1, stdout = _spawn([*cli, "begin", "--json"], env)
    add(f"{prefix}cli_begin", (t1 - t0) / 1e6)
    execution_id = _field(stdout, "execution_id")
    for name, argv in (
        ("cli_status", [*cli, "status", execution_id]),
        ("cli_interrupt", [*cli, "interrupt", execution_id]),
        ("cli_end", [*cli, "end", execution_id]),
    ):
        add(prefix + name, _timed(argv, env, False)[0])


def _runs_cmd(argv: list[str], env: dict[str, str]) -> str:
    """ "ok" when ``argv`` (a wrapper of the stamp command) runs it, else why not."""
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=procs.ROOT, check=False)
    if done.returncode == 0 and done.stdout.strip().isdigit():
        return "ok"
    return f"exited {done.returncode}: {done.stderr.strip()[-300:]}"


async def measure_commands(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    cli = python_command()
    native, native_how = native_command()
    date = shutil.which(STAMP_CMD[0]) or STAMP_CMD[0]
    stamp_cmd = [date, *STAMP_CMD[1:]]
    daemon = procs.start_daemon(_loop(), tcp=False)  # not timed here: its own environment
    address = daemon.address("unix")
    ch = channel(address)
    stub = pb_grpc.CoordinatorServiceStub(ch)
    env = _clean_env() | {"INTERRUPT_SIDECAR_ADDRESS": address}
    samples: dict[str, dict[str, list[float]]] = {}

    def add(name: str, wall: float, start: float | None = None, exit_: float | None = None) -> None:
        e = samples.setdefault(name, {"wall": [], "start": [], "exit": []})
        e["wall"].append(wall)
        if start is not None and exit_ is not None:
            e["start"].append(start)
            e["exit"].append(exit_)

    try:
        begun = await stub.BeginExecution(pb.BeginExecutionRequest())
        token_env = env | {"INTERRUPT_SIDECAR_TOKEN": begun.attach_token}
        warm = [*cli, "run", "--", *stamp_cmd]
        # Untimed: bytecode compiled and cached, every file the commands read in the page cache.
        _timed(warm, env, True)
        _timed(warm, token_env, True)
        for argv in ([sys.executable, "-c", "import grpc"], [*cli, "status"]):
            _spawn(argv, env)
        native_run = "no binary"
        if native is not None:
            _spawn([*native, "status"], env)
            native_run = _runs_cmd([*native, "run", "--", *stamp_cmd], token_env)
            if native_run == "ok":
                native_run = _runs_cmd([*native, "run", "--", *stamp_cmd], env)
        for _ in range(o.footprint_trials):
            add("bare_spawn", *_timed(stamp_cmd, env, True))
            add("run_no_token", *_timed([*cli, "run", "--", *stamp_cmd], env, True))
            add("run_token", *_timed([*cli, "run", "--", *stamp_cmd], token_env, True))
            add("python_pass", _timed([sys.executable, "-c", "pass"], env, False)[0])
            add("python_import_grpc", _timed([sys.executable, "-c", "import grpc"], env, False)[0])
            _coordinator_commands("", cli, env, add)
            if native is not None:
                if native_run == "ok":
                    add("native_run_no_token", *_timed([*native, "run", "--", *stamp_cmd], env, True))
                    add("native_run_token", *_timed([*native, "run", "--", *stamp_cmd], token_env, True))
                _coordinator_commands("native_", native, env, add)
            for _ in range(3):  # the floor: one unary RPC, the client already running
                t0 = time.perf_counter_ns()
                await stub.GetExecution(pb.GetExecutionRequest(execution_id=begun.execution_id))
                add("unary_rpc", (time.perf_counter_ns() - t0) / 1e6)
    finally:
        await ch.close()
        daemon.stop()
    out: dict[str, Any] = {"cli": " ".join(cli), "cmd": " ".join(stamp_cmd)}
    out["native"] = (
        {"binary": native[0], "how": native_how, "run": native_run} if native is not None else {"skipped": native_how}
    )
    for name, e in samples.items():
        out[name] = {k: stats.summarize(v) for k, v in e.items() if v}
    floor = out["bare_spawn"]
    for name in ("run_no_token", "run_token", "native_run_no_token", "native_run_token"):
        if name in out:
            e = out[name]
            e["over_floor_ms"] = {k: e[k]["p50"] - floor[k]["p50"] for k in ("wall", "start", "exit")}
    for prefix in ("", "native_"):
        for name in (f"{prefix}cli_begin", f"{prefix}cli_status", f"{prefix}cli_interrupt", f"{prefix}cli_end"):
            if name in out:
                out[name]["ratio_to_unary_rpc"] = out[name]["wall"]["p50"] / out["unary_rpc"]["wall"]["p50"]
    return out


def _field(text: str, name: str) -> str:
    return str(json.loads(text)[name])


async def run(ctx: Context) -> dict[str, Any]:
    o = ctx.options
    ctx.log(
        f"footprint: {o.footprint_starts} starts of each server, {o.footprint_idle_seconds:g} s idle each; "
        f"{o.footprint_trials} trials of each command"
    )
    out: dict[str, Any] = {"loop": _loop(), "settle_s": SETTLE_S, "idle_seconds": o.footprint_idle_seconds}
    out["bytecode"] = "cached under a private PYTHONPYCACHEPREFIX, as an installed package has it"
    with tempfile.TemporaryDirectory(prefix="isf-pyc-", dir="/tmp") as pycache:
        _PYCACHE[:] = [pycache]
        try:
            out["servers"] = await measure_servers(ctx)
            out["commands"] = await measure_commands(ctx)
        finally:
            _PYCACHE.clear()
    s, c = out["servers"], out["commands"]
    ctx.log(
        f"  ready p50: floor {s['bare_health']['ready_ms']['p50']:.0f} ms, "
        f"daemon {s['daemon_defaults']['ready_ms']['p50']:.0f} "
        f"({s['daemon_defaults']['ratio_ready_p50']:.2f}x), chart {s['daemon_chart']['ready_ms']['p50']:.0f} "
        f"({s['daemon_chart']['ratio_ready_p50']:.2f}x); run over bare spawn: no token "
        f"{c['run_no_token']['over_floor_ms']['wall']:.0f} ms, token {c['run_token']['over_floor_ms']['wall']:.0f} ms"
    )
    if "native_cli_status" in c:
        ctx.log(
            "  native: "
            + ", ".join(
                f"{n} {c['native_cli_' + n]['wall']['p50']:.0f} ms" for n in ("begin", "status", "interrupt", "end")
            )
            + (
                f"; run over bare spawn: no token {c['native_run_no_token']['over_floor_ms']['wall']:.1f} ms, "
                f"token {c['native_run_token']['over_floor_ms']['wall']:.1f} ms"
                if "native_run_token" in c
                else f"; run not timed ({c['native']['run']})"
            )
        )
    else:
        ctx.log(f"  native: not timed ({c['native'].get('skipped')})")
    return out
