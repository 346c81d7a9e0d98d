"""The operator's own /metrics (``aitj run --metrics-port``, plain HTTP on 127.0.0.1): how many
passes it made, for F13's CPU per pass.

``passes`` is pure: the text of /metrics becomes the count of ``aitj_reconcile_seconds`` (one
observation per pass that reaches the executor, docs/metrics.md), summed over any labels; the
difference across a window is the passes made in it.
"""

from __future__ import annotations

import urllib.request

PASSES = "aitj_reconcile_seconds_count"


def passes(metrics_text: str) -> float:
    """passes: the operator's passes so far, from the text of its /metrics; a ValueError when
    the text has no such series (not the operator's /metrics, or the metric was renamed)."""
    total, found = 0.0, False
    for line in metrics_text.splitlines():
        if not line.startswith(PASSES):
            continue
        rest = line[len(PASSES) :]
        if rest.startswith("{"):
            rest = rest.split("}", 1)[1]
        elif not rest.startswith(" "):
            continue  # another series whose name begins the same way
        total += float(rest.split()[0])
        found = True
    if not found:
        raise ValueError(f"no {PASSES} in the operator's /metrics")
    return total


def scrape(port: int, timeout: float = 10) -> str:
    """scrape: the text of the operator's /metrics on 127.0.0.1:``port``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
        return str(r.read().decode())
