"""The benchmark suite runs end to end against real daemons and writes sane figures.

Timing targets are not asserted (a shared CI machine decides those); what is checked is that
every figure exists, is positive and ordered, and that each ratio is computed from the
ours/floor pair of the same run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.requires import require_program, require_root, unavailable

ROOT = Path(__file__).resolve().parents[2]
ORDER = ("min", "p50", "p99", "p999", "max")


def run_bench(out: Path, *args: str, timeout: float) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--no-plots", "--out", str(out), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (out / "latest.md").read_text().startswith("# interrupt-sidecar benchmark")
    results: dict[str, Any] = json.loads((out / "latest.json").read_text())
    return results


def check_latency(figure: dict[str, Any], where: str) -> None:
    values = [figure[k] for k in ORDER]
    assert all(math.isfinite(v) and v >= 0 for v in values), (where, figure)
    assert figure["p50"] > 0, (where, figure)
    assert values == sorted(values), (where, figure)
    assert figure["n"] >= 1 and figure["repeats"] >= 1, (where, figure)


def check_summary(figure: dict[str, Any], where: str) -> None:
    """One repeat's summary (no median over repeats): the same order and sanity."""
    values = [figure[k] for k in ORDER]
    assert all(math.isfinite(v) and v >= 0 for v in values), (where, figure)
    assert figure["p50"] > 0 and figure["n"] >= 1, (where, figure)
    assert values == sorted(values), (where, figure)


def check_ratio(ratio: dict[str, float], ours: dict[str, Any], floor: dict[str, Any], where: str) -> None:
    for k in ("p50", "p99"):
        assert ratio[k] == pytest.approx(ours[k] / floor[k]), (where, k)


def check_machine(results: dict[str, Any]) -> None:
    m = results["machine"]
    for key in ("cpu_model", "cores", "kernel", "python", "grpcio", "git_commit", "host_busy_before"):
        assert m[key] not in (None, ""), key


def check_delivery(d: dict[str, Any]) -> None:
    assert d
    for key, e in d.items():
        for name in ("daemon", "grpc_floor", "daemon_internal"):
            check_latency(e[name], f"delivery {key} {name}")
        check_ratio(e["ratio_to_grpc_floor"], e["daemon"], e["grpc_floor"], key)
        if key.startswith("unix/"):
            check_latency(e["raw_floor"], f"delivery {key} raw")
            check_ratio(e["ratio_to_raw_floor"], e["daemon"], e["raw_floor"], key)
            check_latency(e["daemon_doorbell"], f"delivery {key} doorbell")
            check_ratio(e["doorbell_ratio_to_grpc_floor"], e["daemon_doorbell"], e["grpc_floor"], key)
            assert e["doorbell_internal"]["p50"] < e["daemon_doorbell"]["p50"] + 1.0
        else:
            assert "daemon_doorbell" not in e, key  # a doorbell is a unix socket
        assert e["daemon"]["server_cpu_ms_per_trial"] >= 0
        # The daemon-internal part is a part of the whole (same clock source modulo wall/mono).
        assert e["daemon_internal"]["p50"] < e["daemon"]["p50"] + 1.0


def check_fanout(f: dict[str, Any], sizes: list[int]) -> None:
    for n in sizes:
        e = f[str(n)]
        check_latency(e["daemon"], f"fanout {n}")
        check_latency(e["grpc_floor"], f"fanout {n} floor")
        check_ratio(e["ratio_to_grpc_floor"], e["daemon"], e["grpc_floor"], f"fanout {n}")
        check_latency(e["daemon_doorbell"], f"fanout {n} doorbell")
        check_ratio(e["doorbell_ratio_to_grpc_floor"], e["daemon_doorbell"], e["grpc_floor"], f"fanout {n}")


def check_kill(k: dict[str, Any]) -> None:
    for kind in ("polite", "tree10", "ignores_term"):
        e = k[kind]
        for name in (
            "daemon",
            "floor_killpg_waitpid",
            "floor_killpg_pidfd",
            "daemon_reported_gone",
            "daemon_call_to_trip",
            "daemon_call_to_signalled",
        ):
            check_latency(e[name], f"kill {kind} {name}")
        # Per trial the trip comes before the signal, so every quantile does too.
        assert e["daemon_call_to_trip"]["p50"] < e["daemon_call_to_signalled"]["p50"], (kind, e)
        check_ratio(e["ratio_to_floor"], e["daemon"], e["floor_killpg_waitpid"], kind)
        if kind != "ignores_term":  # the gRPC floor kills with SIGTERM only
            check_latency(e["floor_grpc_killpg"], f"kill {kind} gRPC floor")
            check_latency(e["floor_grpc_call_to_handler"], f"kill {kind} gRPC floor call")
            check_ratio(e["ratio_to_grpc_floor"], e["daemon"], e["floor_grpc_killpg"], kind)
            # The handler runs before the kill it does can have reaped anything.
            assert e["floor_grpc_call_to_handler"]["min"] < e["floor_grpc_killpg"]["min"], kind
    assert isinstance(k["reaper_realtime"], bool)
    # A SIGTERM-ignoring process lives at least the grace, and is reaped after its expiry.
    assert k["ignores_term"]["daemon"]["min"] >= k["grace_ms"] * 0.9
    assert k["ignores_term"]["daemon_sigkill_after_grace"]["min"] > -5


def check_turns(t: dict[str, Any]) -> None:
    for key, e in t.items():
        if isinstance(e, dict):
            assert e["daemon"]["turns_per_s"] > 0 and e["unary_floor"]["turns_per_s"] > 0
            assert e["ratio_to_unary_floor"] == pytest.approx(
                e["daemon"]["turns_per_s"] / e["unary_floor"]["turns_per_s"]
            ), key


def check_footprint(fp: dict[str, Any]) -> None:
    servers = fp["servers"]
    assert set(servers) == {"bare_health", "daemon_defaults", "daemon_chart"}
    for name, e in servers.items():
        check_summary(e["ready_ms"], f"footprint {name} ready")
        assert e["rss_kb"] > 1000 and e["threads"] >= 1, (name, e)
        assert e["wakeups_per_s"] >= e["loop_thread_wakeups_per_s"] >= 0, (name, e)
        assert e["cpu_percent"] >= 0, (name, e)
        by_thread = e["wakeups_by_thread_per_s"]  # whose threads wake: the loop's and grpc's apart
        assert "loop" in by_thread and len(by_thread) >= 2 and min(by_thread.values()) >= 0, (name, by_thread)
        if name != "bare_health":
            floor = servers["bare_health"]
            assert e["ratio_ready_p50"] == pytest.approx(e["ready_ms"]["p50"] / floor["ready_ms"]["p50"]), name
            assert e["ratio_rss"] == pytest.approx(e["rss_kb"] / floor["rss_kb"]), name
    c = fp["commands"]
    for name in ("bare_spawn", "run_no_token", "run_token"):
        for k in ("wall", "start", "exit"):
            check_summary(c[name][k], f"footprint {name} {k}")
        # CMD runs inside the wrapper's wall time: started after the spawn, reaped before the end.
        assert c[name]["start"]["min"] < c[name]["wall"]["max"], name
    for name in ("run_no_token", "run_token"):
        over = c[name]["over_floor_ms"]
        assert over["wall"] == pytest.approx(c[name]["wall"]["p50"] - c["bare_spawn"]["wall"]["p50"]), name
    for name in ("cli_begin", "cli_status", "cli_interrupt", "cli_end", "unary_rpc", "python_pass"):
        check_summary(c[name]["wall"], f"footprint {name}")
    for name in ("cli_begin", "cli_status", "cli_interrupt", "cli_end"):
        assert c[name]["ratio_to_unary_rpc"] == pytest.approx(c[name]["wall"]["p50"] / c["unary_rpc"]["wall"]["p50"])
    # The native binary's rows, against the same floors (it is built here: go is required in CI).
    if "skipped" in c["native"]:
        unavailable(f"the native rows were not timed: {c['native']['skipped']}")
    for name in ("native_cli_begin", "native_cli_status", "native_cli_interrupt", "native_cli_end"):
        check_summary(c[name]["wall"], f"footprint {name}")
        assert c[name]["ratio_to_unary_rpc"] == pytest.approx(c[name]["wall"]["p50"] / c["unary_rpc"]["wall"]["p50"])
    if c["native"]["run"] == "ok":
        for name in ("native_run_no_token", "native_run_token"):
            assert c[name]["start"]["min"] < c[name]["wall"]["max"], name


def check_targets(results: dict[str, Any]) -> None:
    assert results["targets"]
    for t in results["targets"]:
        assert t["met"] in (True, False, None) and t["measured"]


@pytest.mark.timeout(120)
def test_a_small_selection_runs_and_reports(tmp_path: Path) -> None:
    results = run_bench(
        tmp_path,
        "--parts", "delivery,fanout,kill,turns,poller",
        "--loops", "uvloop", "--transports", "unix", "--modes", "busy",
        "--fanout-sizes", "10", "--kill-trials", "3",
        timeout=110,
    )  # fmt: skip
    check_machine(results)
    figures = results["figures"]
    assert set(figures) == {"delivery", "fanout", "kill", "turns", "poller"}
    check_delivery(figures["delivery"])
    check_fanout(figures["fanout"], [10])
    check_kill(figures["kill"])
    check_turns(figures["turns"])
    check_latency(figures["poller"]["poller"], "poller")
    assert results["derived"]["poller_vs_delivery"]["ratio_p50"] > 1
    check_targets(results)


@pytest.mark.timeout(150)
def test_the_footprint_part_measures_servers_and_commands_beside_their_floors(tmp_path: Path) -> None:
    results = run_bench(
        tmp_path,
        "--parts", "footprint",
        "--footprint-starts", "1", "--footprint-trials", "1", "--footprint-idle-seconds", "0.5",
        timeout=140,
    )  # fmt: skip
    assert set(results["figures"]) == {"footprint"}
    check_footprint(results["figures"]["footprint"])
    footprint_targets = [t for t in results["targets"] if t["target"].startswith("footprint:")]
    native = results["figures"]["footprint"]["commands"]["native"]
    assert len(footprint_targets) == 10 + 4 + (2 if native["run"] == "ok" else 0), footprint_targets
    check_targets(results)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quick_mode_measures_every_figure(tmp_path: Path) -> None:
    results = run_bench(tmp_path, timeout=280)
    check_machine(results)
    figures = results["figures"]
    assert set(figures) == {
        "delivery",
        "fanout",
        "load",
        "kill",
        "turns",
        "memory",
        "poller",
        "cascade",
        "footprint",
        "mcp",
    }
    check_delivery(figures["delivery"])
    assert {k.split("/")[0] for k in figures["delivery"]} == {"unix", "tcp"}
    assert {k.split("/")[1] for k in figures["delivery"]} == {"uvloop", "asyncio"}
    assert {k.split("/")[2] for k in figures["delivery"]} == {"busy", "idle"}
    check_fanout(figures["fanout"], results["options"]["fanout_sizes"])
    load = figures["load"]
    check_latency(load["daemon"], "load")
    check_ratio(load["ratio_to_grpc_floor"], load["daemon"], load["grpc_floor"], "load")
    check_ratio(load["ratio_to_grpc_floor_wire"], load["daemon"], load["grpc_floor_wire"], "load (wire floor)")
    for floor in ("grpc_floor", "grpc_floor_wire"):
        cpu = load["daemon"]["server_cpu_ms_per_interrupt"] / load[floor]["server_cpu_ms_per_interrupt"]
        assert load[f"cpu_ratio_to_{floor}"] == pytest.approx(cpu), floor
    check_kill(figures["kill"])
    check_turns(figures["turns"])
    for name in ("daemon", "grpc_floor"):
        m = figures["memory"][name]
        assert m["rss_idle_kb"] > 1000
        for size, entry in m["streams"].items():
            assert entry["rss_kb"] > 0 and 0 < entry["kb_per_stream"] < 1000, (name, size, entry)
        assert m["rss_after_detach_kb"] > 0
        check_latency(m["delivery_with_streams_attached"], f"memory {name} tail")
        churn = m["churn"]
        first, second = churn["rss_after_rounds_kb"]
        assert churn["turns_per_round"] > 0 and first > 1000 and second > 1000, (name, churn)
        assert churn["kb_per_turn_second_round"] == (second - first) / churn["turns_per_round"], (name, churn)
    check_latency(figures["poller"]["poller"], "poller")
    cascade = figures["cascade"]
    for name in ("two_hops", "single_daemon"):
        check_latency(cascade[name], f"cascade {name}")
    check_ratio(cascade["ratio_to_single"], cascade["two_hops"], cascade["single_daemon"], "cascade")
    check_footprint(figures["footprint"])
    check_mcp(figures["mcp"])
    check_targets(results)


def check_mcp(m: dict[str, Any]) -> None:
    for name in ("mcp-server-commands", "mcp-shell-server", "server-everything"):
        bridge = m[name]["bridge"]
        # Through the bridge every call is answered and nothing survives or leaks progress.
        assert bridge["answered"]["count"] == bridge["answered"]["of"] == m["trials"], (name, bridge)
        check_latency(bridge["answered"], f"mcp {name} answered")
        assert bridge["survivors"] == 0 and bridge["late_progress"] == 0, (name, bridge)
        if bridge["gone"] is not None:
            check_latency(bridge["gone"], f"mcp {name} gone")
        own = m[name]["own_cancel"]
        assert own["answered"]["of"] == m["trials"] and own["survivors"] >= 0, (name, own)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_soak_and_hostile_peers_smoke(tmp_path: Path) -> None:
    # The CI smoke of `--parts soak` (60 s) and `--parts hostile` (a tenth of the peers):
    # no figure is a target here, but these outcomes are promises.
    results = run_bench(tmp_path, "--parts", "soak,hostile", "--loops", "uvloop", timeout=280)
    soak = results["figures"]["soak"]
    # Ten cooperative tools a turn, and the group owner of every tenth (it is sent the cancel too).
    assert soak["interrupts"] > 0 and soak["cancels"] == soak["interrupts"] * 10 + soak["process_groups"]
    assert soak["lost_cancels"] == 0 and soak["survivors"] == 0, soak
    assert soak["failed_turns"] == 0, soak["errors"]
    assert soak["process_groups"] > 0 and soak["daemon_exit_code"] == 0
    assert soak["windows"] and all(w["rss_mib"] > 0 and w["fds"] > 0 for w in soak["windows"])
    hostile = results["figures"]["hostile"]
    assert hostile["healthy_after"] and hostile["healthy_after_emfile"], hostile
    assert hostile["emfile"]["alive"] and hostile["emfile"]["fds_at_limit"] >= hostile["emfile"]["limit"] - 1
    assert hostile["daemon_exit_code"] == 0
    for phase in ("baseline", "during", "after", "after_emfile"):
        check_latency(hostile[phase], f"hostile {phase}")


@pytest.mark.slow
@pytest.mark.timeout(1900)
def test_the_image_part_measures_the_image_beside_its_floor(tmp_path: Path) -> None:
    # Skipped here, failed in CI: `make install-test` installs podman (scripts/ensure_podman.sh),
    # so a run that lacks it has lost this coverage silently.
    require_root("podman's rootful store needs root (tests/image builds the same image)")
    require_program("podman", "make install-test installs it (scripts/ensure_podman.sh)")
    # Sizes are reported, not asserted: what is checked is that both images were built
    # and described, the ratio is the pair's, and the floor holds only grpcio and protobuf.
    image = run_bench(tmp_path, "--parts", "image", timeout=1800)["figures"]["image"]
    daemon, floor, base = image["daemon"], image["floor"], image["base"]
    assert daemon["bytes"] > base["bytes"] and floor["bytes"] > base["bytes"]
    assert math.isclose(image["ratio_to_floor"], daemon["bytes"] / floor["bytes"])
    assert daemon["layers"] >= 2 and floor["layers"] >= 2
    assert {"grpcio", "protobuf", "interrupt-sidecar"} <= set(image["app_distributions_bytes"])
    assert image["build_tools_in_runtime"] == []


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_the_adapters_part_sets_each_frameworks_own_cancel_beside_the_adapter(tmp_path: Path) -> None:
    # One trial a row, the survivors counted 1 s after the cancel. The trees sleep for 300 s,
    # so every one the cancel leaves behind is still there to count.
    results = run_bench(
        tmp_path,
        "--parts", "adapters",
        "--adapters-trials", "1", "--adapters-window", "1", "--adapters-return-timeout", "3",
        timeout=400,
    )  # fmt: skip
    a = results["figures"]["adapters"]
    assert set(a["frameworks"]) == {"langgraph", "openai_agents", "crewai", "ai_sdk"}
    for name, e in a["frameworks"].items():
        if "skipped" in e:
            unavailable(f"the adapters part skipped {name}: {e['skipped']}")
        assert e["errors"] == [], (name, e["errors"])
        assert e["versions"], name
        for key, row in e["rows"].items():
            assert row["returned"]["of"] == 1 and row["processes"] == 3, (name, key, row)
            if key.endswith("/adapter"):
                # The adapter's path: the call returned, interrupted, and nothing of the tree lived on.
                assert row["outcomes"] == {"TurnInterrupted": 1}, (name, key, row)
                assert row["survivors"] == 0, (name, key, row)
                check_latency(row["returned"], f"adapters {name} {key}")
            else:
                # The framework's own cancel leaves the whole tree running.
                assert row["survivors"] == 3, (name, key, row)
                assert "TurnInterrupted" not in row["outcomes"], (name, key, row)
        for c in e["comparisons"]:
            before, after = e["rows"][c["own"]]["returned"], e["rows"][c["adapter"]]["returned"]
            assert c["survivors"] == [e["rows"][c["own"]]["survivors"], e["rows"][c["adapter"]]["survivors"]]
            if before["count"]:
                check_ratio(c["returned_ratio"], after, before, f"adapters {name} {c['own']}")
            else:
                assert c["returned_ratio"] is None
    # Waiting for the tool: after_turn and generateText do not return while it runs.
    assert a["frameworks"]["openai_agents"]["rows"]["async/own_after_turn"]["returned"]["count"] == 0
    assert a["frameworks"]["ai_sdk"]["rows"]["generate/own"]["returned"]["count"] == 0
    assert a["left_running"] == []
    assert "## 12. Framework adapters" in (tmp_path / "latest.md").read_text()
