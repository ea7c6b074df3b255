"""The outputs: ``latest.json`` (every figure and the machine), ``latest.md`` (tables with
ratios and the targets marked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.targets import check


def _q(f: dict[str, Any]) -> str:
    return f"{f['min']:.2f} / {f['p50']:.2f} / {f['p99']:.2f} / {f['p999']:.2f}"


def _r(r: dict[str, float]) -> str:
    return f"{r.get('p50', float('nan')):.2f}× / {r.get('p99', float('nan')):.2f}×"


def _count(figure: dict[str, Any] | None) -> str:
    """``p50 / p99 ms (k of n)``, or ``never (0 of n)``."""
    if figure is None:
        return "—"
    if not figure["count"]:
        return f"never (0 of {figure['of']})"
    return f"{figure['p50']:.1f} / {figure['p99']:.1f} ms ({figure['count']} of {figure['of']})"


def _mcp_lines(m: dict[str, Any]) -> list[str]:
    lines = [
        f"## 9. MCP tool call interrupted: the server's own cancel vs `interrupt-sidecar mcp` "
        f"(grace {m['grace_ms']:.0f} ms, window {m['window_s']:g} s, {m['trials']} trials each)",
        "",
        "t0: own cancel = `notifications/cancelled` written; bridge = `Interrupt` called. Times are p50 / p99 "
        "from t0; survivors = the call's processes alive at the end of the window.",
        "",
        "| server | path | agent answered | call's processes gone | survivors | late progress |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in m.items():
        if not isinstance(entry, dict):
            continue
        for path in ("own_cancel", "bridge"):
            e = entry[path]
            lines.append(
                f"| {name} | {path.replace('_', ' ')} | {_count(e['answered'])} | {_count(e['gone'])} | "
                f"{e['survivors']} | {e['late_progress']} |"
            )
    return [*lines, ""]


def _returned(figure: dict[str, Any], bound_s: float) -> str:
    """:func:`_count`, saying how many trials did not return within the bound."""
    if not figure["count"]:
        return f"did not return within {bound_s:g} s (0 of {figure['of']})"
    late = figure["of"] - figure["count"]
    return _count(figure) + (f", {late} did not return within {bound_s:g} s" if late else "")


def adapter_lines(a: dict[str, Any]) -> list[str]:
    """Section 12: each framework's own cancel beside the same framework with the adapter."""
    lines = [
        f"## 12. Framework adapters: the framework's own cancel vs the adapter (grace {a['grace_ms']:.0f} ms, "
        f"{a['trials']} trials a row, interleaved)",
        "",
        'The tool starts `sh -c "sleep N & setsid sleep M & wait"` and waits on it (3 processes a trial; with '
        "the adapter through its spawn helper). t0: the own cancel called / `Interrupt` called. Returned: "
        f"t0 → the framework call returned, p50 / p99; survivors: the tree's processes alive {a['window_s']:g} s "
        "after t0, then killed by pid.",
        "",
    ]
    bound = a["return_timeout_s"]
    for e in a["frameworks"].values():
        versions = ", ".join(f"{k} {v}" for k, v in e.get("versions", {}).items())
        lines += [f"### {e['title']}{f' ({versions})' if versions else ''}", ""]
        if "skipped" in e:
            lines += [f"Skipped: {e['skipped']}.", ""]
            continue
        lines += ["| tool | call, cancel | returned | survivors | outcome |", "|---|---|---|---|---|"]
        for row in e["rows"].values():
            outcome = ", ".join(f"{k} ×{v}" for k, v in row["outcomes"].items()) or "—"
            lines.append(
                f"| {row['tool']} | {row['how']} | {_returned(row['returned'], bound)} | "
                f"{row['survivors']} of {row['processes']} | {outcome} |"
            )
        lines.append("")
        for c in e["comparisons"]:
            r = c["returned_ratio"]
            returned = f"returned {_r(r)} the own cancel's time" if r else "the own cancel's call did not return"
            lines.append(
                f"- {c['own']} → {c['adapter']}: {returned}; survivors {c['survivors'][0]} → {c['survivors'][1]}"
            )
        lines += [*(f"- error: {x}" for x in e["errors"]), ""]
    left = a.get("left_running", [])
    lines += [f"Left running after the part: {', '.join(map(str, left)) if left else 'nothing'}.", ""]
    return lines


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    f = results["figures"]
    lines = [
        f"# interrupt-sidecar benchmark — {m['started_at']}",
        "",
        f"`{results['command']}` on {m['cpu_model']} × {m['cores']} cores, Linux {m['kernel']}, Python "
        f"{m['python']}, grpcio {m['grpcio']}, uvloop {m['uvloop']}, commit `{m['git_commit'][:10]}`"
        f"{' (+ uncommitted changes)' if m['git_dirty'] else ''}. Host CPU busy before the run: "
        f"{100 * m['host_busy_before']:.0f}% (load average {m['loadavg_start'][0]:.1f}); after: "
        f"{100 * m['host_busy_after']:.0f}% (load {m['loadavg_end'][0]:.1f}). Wall time {results['seconds']:.0f} s.",
        "",
        "Latencies in ms as min / p50 / p99 / p999 (each the median over the repeats); ratios are ours ÷ the "
        "floor measured in the same run, at p50 / p99.",
        "",
    ]
    if "delivery" in f:
        lines += [
            "## 1. Delivery, one tool (Interrupt → the tool has the cancel)",
            "",
            "| transport/loop/mode | daemon (stream) | daemon (doorbell) | bare grpc.aio push | ratio stream "
            "| ratio doorbell | raw socket push | ratio stream | daemon-internal (tripped_at → received) "
            "| daemon CPU/trial | floor CPU/trial |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for key, e in f["delivery"].items():
            raw = e.get("raw_floor")
            bell = e.get("daemon_doorbell")
            lines.append(
                f"| {key} | {_q(e['daemon'])} | {_q(bell) if bell else '—'} | {_q(e['grpc_floor'])} | "
                f"{_r(e['ratio_to_grpc_floor'])} | {_r(e['doorbell_ratio_to_grpc_floor']) if bell else '—'} | "
                f"{_q(raw) if raw else '—'} | {_r(e['ratio_to_raw_floor']) if raw else '—'} | "
                f"{_q(e['daemon_internal'])} | {e['daemon']['server_cpu_ms_per_trial']:.2f} ms | "
                f"{e['grpc_floor']['server_cpu_ms_per_trial']:.2f} ms |"
            )
        lines += [
            "",
            "A trial is BeginExecution + Attach + Interrupt + unwound + EndExecution for the daemon and "
            "stream open + Trip + close for the floor; the CPU columns are per trial. *Stream*: the tool reads "
            "its cancel from its Attach stream; *doorbell*: the tool asked for the cancel doorbell (a raw unix "
            "socket beside the gRPC one, unix only) and the cancel counts when it rings. The internal and CPU "
            "columns are the stream's.",
            "",
        ]
    if "fanout" in f:
        fo = f["fanout"]
        lines += [
            f"## 2. Fan-out (Interrupt → the last of N tools has the cancel; {fo['workers']} worker processes, "
            f"{fo['tools_per_connection']} tool(s) per connection, {fo['loop']})",
            "",
            "| tools | trials | daemon (stream) | daemon (doorbell) | bare grpc.aio | ratio stream "
            "| ratio doorbell | Interrupt answered p50/p99, stream / doorbell | daemon CPU/trip, stream / doorbell "
            "| floor CPU/trip |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for n, e in fo.items():
            if not isinstance(e, dict):
                continue
            a = e["daemon"]["rpc_answered"]
            bell = e.get("daemon_doorbell")
            b = bell["rpc_answered"] if bell else None
            lines.append(
                f"| {n} | {e['daemon']['n']} | {_q(e['daemon'])} | {_q(bell) if bell else '—'} | "
                f"{_q(e['grpc_floor'])} | {_r(e['ratio_to_grpc_floor'])} | "
                f"{_r(e['doorbell_ratio_to_grpc_floor']) if bell else '—'} | "
                f"{a['p50']:.2f} / {a['p99']:.2f}" + (f", {b['p50']:.2f} / {b['p99']:.2f}" if b else "") + " | "
                f"{e['daemon']['server_cpu_ms_per_trip']:.1f}"
                + (f" / {bell['server_cpu_ms_per_trip']:.1f}" if bell else "")
                + f" ms | {e['grpc_floor']['server_cpu_ms_per_trip']:.1f} ms |"
            )
        lines += [
            "",
            "*Doorbell*: every tool asked for the cancel doorbell; a tool has its cancel when the first copy "
            "arrives (the stream's follows). The daemon rings every doorbell before it answers the Interrupt.",
            "",
        ]
    if "load" in f:
        e = f["load"]
        lines += [
            f"## 3. Under load ({e['tools']} tools / {e['executions']} executions, {e['rate_per_s']:g} interrupts/s, "
            f"{e['seconds']:g} s per repeat)",
            "",
            "| Interrupt → last tool of the execution | latency | ratio | server CPU/interrupt | CPU ratio |",
            "|---|---|---|---|---|",
            f"| daemon | {_q(e['daemon'])} | | {e['daemon']['server_cpu_ms_per_interrupt']:.2f} ms | |",
        ]
        for floor_name, label in (("grpc_floor", "bare grpc.aio"), ("grpc_floor_wire", "grpc.aio, same wire work")):
            if floor_name not in e:  # results recorded before the wire floor existed
                continue
            suffix = floor_name.removeprefix("grpc_floor")
            cpu = e[floor_name]["server_cpu_ms_per_interrupt"]
            cpu_ratio = e["daemon"]["server_cpu_ms_per_interrupt"] / cpu if cpu else float("nan")
            lines.append(
                f"| {label} | {_q(e[floor_name])} | {_r(e[f'ratio_to_grpc_floor{suffix}'])} | "
                f"{cpu:.2f} ms | {cpu_ratio:.2f}× |"
            )
        lines += [
            "",
            "*Ratios*: the daemon ÷ that floor. The bare floor's trigger makes its key locally and its streams "
            "only open and close; the wire floor also receives the begin and end calls and every tool's "
            "`hello`/`attached`/`unwound`, as bytes of the same sizes with no logic.",
            "",
        ]
    if "kill" in f:
        k = f["kill"]
        lines += [
            f"## 4. Kill (trip → every process of the tree reaped; grace {k['grace_ms']} ms, {k['loop']})",
            "",
            "| tree | daemon | bare killpg + waitpid | ratio | killpg + pidfd | gRPC call + killpg "
            "| its call → handler | ratio to it | daemon: call → trip | call → signalled | daemon-reported gone "
            "| cancel to the tool | daemon CPU/kill |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for kind in ("polite", "tree10", "ignores_term"):
            e = k.get(kind)
            if e:
                lines.append(
                    f"| {kind} | {_q(e['daemon'])} | {_q(e['floor_killpg_waitpid'])} | {_r(e['ratio_to_floor'])} | "
                    f"{_q(e['floor_killpg_pidfd'])} | "
                    + (
                        f"{_q(e['floor_grpc_killpg'])} | {_q(e['floor_grpc_call_to_handler'])} | "
                        f"{_r(e['ratio_to_grpc_floor'])} | "
                        if "floor_grpc_killpg" in e
                        else "— | — | — | "
                    )
                    + (
                        f"{_q(e['daemon_call_to_trip'])} | {_q(e['daemon_call_to_signalled'])} | "
                        if "daemon_call_to_trip" in e
                        else "— | — | "
                    )
                    + f"{_q(e['daemon_reported_gone'])} | "
                    f"{_q(e['daemon_cancel_to_tool']) if 'daemon_cancel_to_tool' in e else '—'} | "
                    f"{e['daemon_cpu_ms_per_kill']:.2f} ms |"
                )
        e = k.get("ignores_term")
        if e:
            lines += [
                "",
                f"SIGTERM ignored, grace expiry → reaped: daemon {_q(e['daemon_sigkill_after_grace'])}; "
                f"bare loop timer + killpg(SIGKILL) {_q(e['floor_sigkill_after_grace'])}.",
            ]
        lines.append("")
    if "mcp" in f:
        lines += _mcp_lines(f["mcp"])
    if "turns" in f:
        lines += [
            "## 5. Turn throughput (BeginExecution + EndExecution; floor: two bare unary echoes)",
            "",
            "| loop/callers | daemon turns/s | bare unary pairs/s | ratio | daemon CPU/turn | floor CPU/pair |",
            "|---|---|---|---|---|---|",
        ]
        for key, e in f["turns"].items():
            if isinstance(e, dict):
                lines.append(
                    f"| {key} | {e['daemon']['turns_per_s']:.0f} | {e['unary_floor']['turns_per_s']:.0f} | "
                    f"{e['ratio_to_unary_floor']:.2f}× | {e['daemon']['server_cpu_us_per_turn']:.0f} µs | "
                    f"{e['unary_floor']['server_cpu_us_per_turn']:.0f} µs |"
                )
        lines.append("")
    if "memory" in f:
        mm = f["memory"]
        lines += [
            f"## 6. Memory (RSS; {mm['tools_per_connection']} tool(s) per connection, {mm['loop']})",
            "",
            "| server | idle | "
            + " | ".join(f"{s} streams (KB/stream)" for s in mm["daemon"]["streams"])
            + " | after detach | delivery max with streams attached | after N churned turns, then N more (KB/turn) |",
            "|---|---|" + "---|" * len(mm["daemon"]["streams"]) + "---|---|---|",
        ]
        for name in ("daemon", "grpc_floor"):
            e = mm.get(name)
            if e:
                cells = " | ".join(
                    f"{v['rss_kb'] / 1024:.1f} MiB ({v['kb_per_stream']:.1f})" for v in e["streams"].values()
                )
                t = e["delivery_with_streams_attached"]
                c = e.get("churn")
                churned = (
                    f"{c['rss_after_rounds_kb'][0] / 1024:.1f} → {c['rss_after_rounds_kb'][1] / 1024:.1f} MiB "
                    f"(N = {c['turns_per_round']}; {c['kb_per_turn_second_round']:.2f})"
                    if c
                    else "—"
                )
                lines.append(
                    f"| {name} | {e['rss_idle_kb'] / 1024:.1f} MiB | {cells} | "
                    f"{e['rss_after_detach_kb'] / 1024:.1f} MiB | "
                    f"{t['max']:.2f} ms (p50 {t['p50']:.2f}, {t['streams']} streams) | {churned} |"
                )
        lines.append("")
    if "poller" in f:
        p = f["poller"]["poller"]
        d = results.get("derived", {}).get("poller_vs_delivery")
        lines += [
            "## 7. Against a 100 ms poller (trip → detection)",
            "",
            f"Poller: {_q(p)} ms."
            + (
                f" Our delivery ({d['delivery']}) p50 {d['delivery_p50']:.2f} ms: **{d['ratio_p50']:.0f}× lower** "
                f"(p99: {d['ratio_p99']:.0f}×). p50 ratio for each delivery variant: "
                + ", ".join(f"{k} {v:.0f}×" for k, v in d.get("ratio_p50_each_variant", {}).items())
                + "."
                if d
                else ""
            )
            + (
                f" With the doorbell ({b['delivery']}) p50 {b['delivery_p50']:.2f} ms: **{b['ratio_p50']:.0f}× lower** "
                f"(p99: {b['ratio_p99']:.0f}×)."
                if (b := results.get("derived", {}).get("poller_vs_doorbell"))
                else ""
            ),
            "",
        ]
    if "cascade" in f:
        c = f["cascade"]
        lines += [
            "## 8. Cross-sidecar cascade (trip at the root → tool two daemons away has the cancel)",
            "",
            "| path | latency | ratio to one daemon p50 / p99 | each hop adds, p50 / p99 (single-daemon deliveries) |",
            "|---|---|---|---|",
            f"| root → middle → bottom daemon | {_q(c['two_hops'])} | {_r(c['ratio_to_single'])} | "
            f"{c['per_hop_in_deliveries_p50']:.2f} / {c['per_hop_in_deliveries_p99']:.2f} |",
            f"| one daemon (same root, same run) | {_q(c['single_daemon'])} | — | — |",
            "",
        ]
    if "footprint" in f:
        lines += footprint_lines(f["footprint"])
    if "image" in f:
        lines += image_lines(f["image"])
    if "adapters" in f:
        lines += adapter_lines(f["adapters"])
    lines += ["## Targets", "", "| target | measured | |", "|---|---|---|"]
    for c in check(results, results["options"]["quick"]):
        lines.append(f"| {c.target} | {c.measured} | {c.mark()} |")
    if results.get("profile"):
        note = results["profile"].get("note", "")
        lines += ["", "## Daemon profile (py-spy)", "", note, "", results["profile"].get("summary_md", ""), ""]
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in results["notes"]]
    return "\n".join(lines) + "\n"


def footprint_lines(fp: dict[str, Any]) -> list[str]:
    """Section 9: the servers beside the bare health server, the commands beside their floors."""
    s, c = fp["servers"], fp["commands"]
    floor = s["bare_health"]
    lines = [
        f"## 9. Footprint (servers on {fp['loop']}, RSS {fp['settle_s']:g} s after ready, idle over "
        f"{fp['idle_seconds']:g} s with nothing connected)",
        "",
        "| server | exec → ready p50 (min–max) | ratio | RSS idle | ratio | threads | wake-ups/s (loop thread) "
        "| idle CPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("bare_health", "daemon_defaults", "daemon_chart"):
        e = s[name]
        r = e["ready_ms"]
        lines.append(
            f"| {name} | {r['p50']:.0f} ms ({r['min']:.0f}–{r['max']:.0f}) | "
            + (f"{e['ratio_ready_p50']:.2f}×" if name != "bare_health" else "—")
            + f" | {e['rss_kb'] / 1024:.1f} MiB | "
            + (f"{e['ratio_rss']:.2f}×" if name != "bare_health" else "—")
            + f" | {e['threads']:.0f} | {e['wakeups_per_s']:.1f} ({e['loop_thread_wakeups_per_s']:.1f}) "
            f"| {e['cpu_percent']:.2f}% |"
        )
    lines += [
        "",
        "`bare_health`: `python -m bench.barehealth`, grpc.aio serving only grpc.health.v1 "
        f"(floor {floor['ready_ms']['p50']:.0f} ms, {floor['rss_kb'] / 1024:.1f} MiB). "
        f"`daemon_defaults`: `{c['cli']} serve --listen unix://…`; `daemon_chart`: plus "
        "the chart's metrics, health listener and state directory. Wake-ups: context switches of every thread "
        "(grpc's own timer, event-engine and lifeguard threads included), in brackets the event loop's thread.",
        "",
    ]
    for name in ("bare_health", "daemon_defaults", "daemon_chart"):
        by_thread = s[name].get("wakeups_by_thread_per_s")
        if by_thread:  # results of runs before the per-thread figure lack it
            lines.append(f"- wake-ups/s by thread, {name}: " + ", ".join(f"{t} {v:.1f}" for t, v in by_thread.items()))
    lines += [
        "",
        f"| command (CMD = `{c['cmd']}`) | wall p50 | spawn → CMD running p50 | CMD → reaped p50 | over the bare spawn "
        "(wall / start / exit) |",
        "|---|---|---|---|---|",
    ]
    for name in ("bare_spawn", "run_no_token", "run_token", "native_run_no_token", "native_run_token"):
        if name not in c:
            continue
        e = c[name]
        over = e.get("over_floor_ms")
        lines.append(
            f"| {name} | {e['wall']['p50']:.1f} ms | {e['start']['p50']:.1f} ms | {e['exit']['p50']:.1f} ms | "
            + (f"{over['wall']:+.1f} / {over['start']:+.1f} / {over['exit']:+.1f} ms |" if over else "— |")
        )
    lines += ["", "| command | wall p50 (min–max) | ratio to one unary RPC |", "|---|---|---|"]
    native = tuple(f"native_cli_{n}" for n in ("begin", "status", "interrupt", "end"))
    commands = ("cli_begin", "cli_status", "cli_interrupt", "cli_end", *native)
    for name in (*commands, "unary_rpc", "python_pass", "python_import_grpc"):
        if name not in c:
            continue
        e = c[name]
        w = e["wall"]
        ratio = f"{e['ratio_to_unary_rpc']:.0f}×" if "ratio_to_unary_rpc" in e else "—"
        lines.append(f"| {name} | {w['p50']:.1f} ms ({w['min']:.1f}–{w['max']:.1f}) | {ratio} |")
    lines += [
        "",
        "`unary_rpc`: one GetExecution from the bench's already running client; `python_*`: the interpreter "
        "alone, and with `import grpc`, what any Python command pays before its own work. "
        f"`cli_*`, `run_*`: the Python implementation (`{c['cli']}`); `native_*`: the native binary "
        + (
            f"(`{c['native']['binary']}`, {c['native']['how']}"
            + ("" if c["native"]["run"] == "ok" else f"; its `run` not timed: {c['native']['run']}")
            + ")."
            if "binary" in c.get("native", {})
            else f"(not timed: {c.get('native', {}).get('skipped', 'not measured')})."
        ),
        "",
    ]
    return lines


def derive(results: dict[str, Any]) -> None:
    """Cross-part figures: our delivery against the poller."""
    f = results["figures"]
    if "poller" in f and "delivery" in f:
        keys = list(f["delivery"])
        pick = next((k for k in keys if k.startswith("unix/") and k.endswith("/idle")), keys[0])
        ours = f["delivery"][pick]["daemon"]
        poll = f["poller"]["poller"]
        results["derived"] = {
            "poller_vs_delivery": {
                "delivery": pick,
                "delivery_p50": ours["p50"],
                "poller_p50": poll["p50"],
                "ratio_p50": poll["p50"] / ours["p50"],
                "ratio_p99": poll["p99"] / ours["p99"],
                "ratio_p50_each_variant": {k: poll["p50"] / e["daemon"]["p50"] for k, e in f["delivery"].items()}
                | {
                    f"{k} (doorbell)": poll["p50"] / e["daemon_doorbell"]["p50"]
                    for k, e in f["delivery"].items()
                    if "daemon_doorbell" in e
                },
            }
        }
        if "daemon_doorbell" in f["delivery"][pick]:
            bell = f["delivery"][pick]["daemon_doorbell"]
            results["derived"]["poller_vs_doorbell"] = {
                "delivery": f"{pick} (doorbell)",
                "delivery_p50": bell["p50"],
                "poller_p50": poll["p50"],
                "ratio_p50": poll["p50"] / bell["p50"],
                "ratio_p99": poll["p99"] / bell["p99"],
            }


def write(results: dict[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    derive(results)
    results["targets"] = [
        {"target": c.target, "measured": c.measured, "met": c.met} for c in check(results, results["options"]["quick"])
    ]
    js = out / "latest.json"
    js.write_text(json.dumps(results, indent=1, sort_keys=False) + "\n")
    md = out / "latest.md"
    md.write_text(markdown(results))
    return js, md


def image_lines(im: dict[str, Any]) -> list[str]:
    """Section 11: the daemon's image beside the base + grpcio/protobuf floor."""
    if "skipped" in im:
        return ["## 11. Container image", "", f"Skipped: {im['skipped']}.", ""]
    lines = [
        f"## 11. Container image (podman; sizes uncompressed, grpcio {im['grpcio']}, protobuf {im['protobuf']})",
        "",
        "| image | size | layers | over the base | ratio to the floor |",
        "|---|---|---|---|---|",
    ]
    base = im["base"]["bytes"]
    for name in ("base", "floor", "daemon"):
        e = im[name]
        ratio = f"{im['ratio_to_floor']:.3f}×" if name == "daemon" else ("1" if name == "floor" else "—")
        lines.append(
            f"| {name}: `{e['image']}` | {e['bytes'] / 1e6:.1f} MB | {e['layers']} | "
            f"{(e['bytes'] - base) / 1e6:+.1f} MB | {ratio} |"
        )
    carried = ", ".join(f"{k} {v / 1e6:.1f}" for k, v in im["app_distributions_bytes"].items())
    tools = ", ".join(im["build_tools_in_runtime"]) or "none"
    lines += [
        "",
        f"The app's layer by distribution (MB installed): {carried}. Build tools in the runtime image: {tools}.",
        "",
    ]
    return lines
