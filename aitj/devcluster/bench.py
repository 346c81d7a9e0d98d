"""Benchmarks of the local control plane itself: how long a warm ``cluster up`` takes.

Prints figures; asserts nothing (speed goals live here, not in tests).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from aitj.devcluster.build import ensure_built
from aitj.devcluster.cluster import ClusterConfig, LocalCluster


def bench_cluster_up(
    runs: int = 5, *, base_port: int = 39443, say: Callable[[str], None] = print
) -> list[float]:
    """bench_cluster_up starts and stops a throwaway cluster ``runs`` times; returns seconds to healthy."""
    ensure_built(say=say)
    cluster = LocalCluster("bench")
    cluster.down()
    times = []
    for i in range(runs):
        started = time.monotonic()
        cluster.up(ClusterConfig(nodes=3, base_port=base_port), say=lambda _m: None)
        times.append(time.monotonic() - started)
        cluster.down()
        say(f"cluster up run {i + 1}/{runs}: {times[-1]:.2f}s")
    say(
        f"warm `aitj cluster up` (3 nodes) to healthy: median {statistics.median(times):.2f}s, "
        f"min {min(times):.2f}s, max {max(times):.2f}s over {runs} runs"
    )
    return times
