"""Percentiles, per-repeat summaries and the median of repeats."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

STATS = ("min", "p50", "p99", "p999", "max")


def percentile(sorted_samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted samples (q in [0, 1])."""
    if not sorted_samples:
        raise ValueError("no samples")
    rank = max(1, math.ceil(q * len(sorted_samples)))
    return sorted_samples[min(rank, len(sorted_samples)) - 1]


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """min/p50/p99/p999/max/mean of one repeat's samples (any unit; the caller says which)."""
    s = sorted(samples)
    return {
        "n": len(s),
        "min": s[0],
        "p50": percentile(s, 0.50),
        "p99": percentile(s, 0.99),
        "p999": percentile(s, 0.999),
        "max": s[-1],
        "mean": statistics.fmean(s),
    }


def combine(repeats: Sequence[Sequence[float]]) -> dict[str, Any]:
    """A figure from several repeats: each statistic is the median over the repeats'
    summaries (steadier on a shared machine than pooling); the pooled summary and each
    repeat's summary are kept beside it."""
    per_repeat = [summarize(r) for r in repeats if r]
    if not per_repeat:
        raise ValueError("no samples in any repeat")
    figure: dict[str, Any] = {k: statistics.median(p[k] for p in per_repeat) for k in (*STATS, "mean")}
    figure["n"] = sum(int(p["n"]) for p in per_repeat)
    figure["repeats"] = len(per_repeat)
    figure["pooled"] = summarize([x for r in repeats for x in r])
    figure["per_repeat"] = per_repeat
    return figure


def ratio(ours: dict[str, Any], floor: dict[str, Any]) -> dict[str, float]:
    """ours / floor for each statistic (both from the same run)."""
    return {k: ours[k] / floor[k] for k in STATS if floor.get(k)}
