"""Pure arithmetic over measured samples: percentiles, summaries, CDF points, CPU shares.

Samples are seconds (latencies) or CPU seconds; nothing here reads a clock or the cluster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """percentile: the nearest-rank q-th percentile (0 < q <= 100) of ``values``: the smallest
    sample with at least q % of the samples at or below it. A ValueError for no samples."""
    if not values:
        raise ValueError("no samples")
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} is not in (0, 100]")
    ordered = sorted(values)
    rank = math.ceil(q / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]


@dataclass(frozen=True)
class Summary:
    """Summary: how many samples, and their p50, p90, p99 and max, in seconds."""

    n: int
    p50: float
    p90: float
    p99: float
    max: float

    def as_ms(self) -> dict[str, float | int]:
        """as_ms: the summary in milliseconds (rounded to 0.1 ms), as results.json holds it."""
        return {
            "n": self.n,
            "p50_ms": round(self.p50 * 1000, 1),
            "p90_ms": round(self.p90 * 1000, 1),
            "p99_ms": round(self.p99 * 1000, 1),
            "max_ms": round(self.max * 1000, 1),
        }

    def text(self) -> str:
        """text: "p50 / p90 / p99 / max" in milliseconds, for the table."""
        return f"{ms(self.p50)} / {ms(self.p90)} / {ms(self.p99)} / {ms(self.max)} (n={self.n})"


def summarize(values: Sequence[float]) -> Summary:
    """summarize: the Summary of ``values`` (seconds); a ValueError for no samples."""
    return Summary(
        n=len(values),
        p50=percentile(values, 50),
        p90=percentile(values, 90),
        p99=percentile(values, 99),
        max=max(values),
    )


def cdf_points(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """cdf_points: the empirical CDF of ``values`` as (sorted samples, fraction at or below each)."""
    ordered = sorted(values)
    n = len(ordered)
    return ordered, [(i + 1) / n for i in range(n)]


def core_share(cpu_seconds: float, wall_seconds: float) -> float:
    """core_share: CPU time over wall time, as a percentage of one core (100 = one core busy)."""
    if wall_seconds <= 0:
        raise ValueError("the wall time must be positive")
    return 100 * cpu_seconds / wall_seconds


def ms(seconds: float) -> str:
    """ms: seconds as a short millisecond figure ("33.5 ms", "9,778 ms")."""
    value = seconds * 1000
    return f"{value:,.1f} ms" if value < 100 else f"{value:,.0f} ms"
