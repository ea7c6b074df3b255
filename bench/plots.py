"""PNG plots (matplotlib, from the ``[bench]`` extra): delivery and fan-out latency CDFs,
the fan-out curve and kill latencies. Skipped with a note when matplotlib is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.context import Context


def _cdf(ax: Any, samples: list[float], label: str, **style: Any) -> None:
    s = sorted(samples)
    n = len(s)
    ax.plot(s, [(i + 1) / n for i in range(n)], label=label, **style)


def draw(ctx: Context, results: dict[str, Any], out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter
    except ImportError:
        ctx.notes.append("plots skipped: matplotlib is not installed (pip install -e '.[bench]')")
        return []
    written: list[str] = []
    f = results["figures"]
    s = ctx.samples

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path.name)

    if "delivery" in f:
        keys = list(f["delivery"])
        cols = min(4, len(keys))
        rows = -(-len(keys) // cols)
        fig, grid = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False, sharey=True)
        axes_list = [ax for row in grid for ax in row]
        for ax, key in zip(axes_list, keys, strict=False):
            for name, style in (("daemon", "-"), ("daemon_doorbell", "-."), ("grpc_floor", "--"), ("raw_floor", ":")):
                if (data := s.get(f"delivery {key} {name}")) is not None:
                    _cdf(ax, data, name, linestyle=style)
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_title(key, fontsize=9)
            ax.set_xlabel("ms")
            ax.grid(alpha=0.3)
        for ax in axes_list[len(keys) :]:
            ax.set_visible(False)
        axes = grid
        axes[0][0].set_ylabel("fraction of interrupts")
        axes[0][0].legend(fontsize=8)
        fig.suptitle("Delivery to one tool: Interrupt → cancel received (CDF)", fontsize=10)
        save(fig, "delivery_cdf.png")
    if "fanout" in f:
        sizes = [int(k) for k, v in f["fanout"].items() if isinstance(v, dict)]
        fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), squeeze=False, sharey=True)
        for ax, n in zip(axes[0], sizes, strict=True):
            for name, style in (("daemon", "-"), ("daemon_doorbell", "-."), ("grpc_floor", "--")):
                if (data := s.get(f"fanout {n} {name} each tool")) is not None:
                    _cdf(ax, data, f"{name} (each tool)", linestyle=style)
            ax.set_title(f"{n} tools", fontsize=9)
            ax.set_xlabel("ms after Interrupt")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel("fraction of tools")
        axes[0][0].legend(fontsize=8)
        fig.suptitle("Fan-out: when each tool had its cancel (CDF over all trials)", fontsize=10)
        save(fig, "fanout_cdf.png")
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for name, style in (("daemon", "o-"), ("daemon_doorbell", "^-."), ("grpc_floor", "s--")):
            if name not in f["fanout"][str(sizes[0])]:
                continue
            ax.plot(sizes, [f["fanout"][str(n)][name]["p50"] for n in sizes], style, label=f"{name} p50")
            ax.plot(sizes, [f["fanout"][str(n)][name]["p99"] for n in sizes], style, alpha=0.5, label=f"{name} p99")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("attached tools")
        ax.set_ylabel("Interrupt → last tool (ms)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        ax.set_title("Fan-out curve", fontsize=10)
        save(fig, "fanout_curve.png")
    if "kill" in f:
        kinds = [k for k in ("polite", "tree10", "ignores_term") if f"kill {k} daemon" in s]
        fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), 3.6), squeeze=False)
        for ax, kind in zip(axes[0], kinds, strict=True):
            boxes: list[list[float]] = [s[f"kill {kind} daemon"], s[f"kill {kind} floor"]]
            labels = ["daemon", "killpg floor"]
            if f"kill {kind} grpc_floor" in s:
                boxes.append(s[f"kill {kind} grpc_floor"])
                labels.append("gRPC call +\nkillpg floor")
            if kind == "ignores_term":
                grace = f["kill"]["grace_ms"]
                boxes = [[x - grace for x in d] for d in boxes]
                ax.set_ylabel("ms after grace expiry")
            else:
                ax.set_ylabel("trip → reaped (ms)")
            ax.boxplot(boxes, tick_labels=labels, whis=(1, 99), showfliers=True)
            ax.set_title(kind, fontsize=9)
            ax.grid(alpha=0.3)
        fig.suptitle("Kill latency (whiskers p1–p99)", fontsize=10)
        save(fig, "kill.png")
    return written
