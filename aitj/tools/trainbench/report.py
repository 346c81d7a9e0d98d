"""The table of a bench-real run: per fault kind, how long until training runs again and is
back at full width, the steps redone, and how often it did not recover within the window.

Pure but for ``write``. Percentiles are nearest-rank (aitj.tools.bench.stats), over the faults
that recovered; the ones that did not are counted apart, never folded into a percentile.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from aitj.tools.bench.stats import percentile
from aitj.tools.trainbench.recovery import Pace, Recovery


def _seconds(values: Sequence[float]) -> str:
    if not values:
        return "none"
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f} s"


def _tail(values: Sequence[float]) -> str:
    """_tail: p50 / p99 / max; below 100 values the nearest-rank p99 is the max itself."""
    if not values:
        return "none"
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f} / {max(values):.1f} s"


def rows(
    recoveries: Sequence[Recovery], lost: Sequence[float | None] | None = None
) -> list[dict[str, object]]:
    """rows: one per fault kind, in the order the kinds first appear; with ``lost`` (each
    fault's seconds of training lost, aitj.tools.trainbench.steady.lost), their p50 and max."""
    kinds = list(dict.fromkeys(r.fault.kind for r in recoveries))
    table = []
    for kind in kinds:
        of_kind = [r for r in recoveries if r.fault.kind == kind]
        again = [r.running_again for r in of_kind if r.running_again is not None]
        full = [r.full_width for r in of_kind if r.full_width is not None]
        pauses = [r.longest_pause for r in of_kind if r.longest_pause is not None]
        redone = [r.steps_redone for r in of_kind]
        table.append(
            {
                "fault": kind,
                "n": len(of_kind),
                "running_again_p50_p99": _seconds(again),
                "full_width_p50_p99_max": _tail(full),
                "longest_pause_p50_p99": _seconds(pauses),
                "steps_redone_p50_max": f"{percentile(redone, 50)} / {max(redone)}",
                "not_recovered": len(of_kind) - len(full),
            }
        )
        if lost is not None:
            costs = [
                c for r, c in zip(recoveries, lost, strict=True) if r.fault.kind == kind and c is not None
            ]
            table[-1]["training_lost_p50_max"] = (
                f"{percentile(costs, 50):.1f} / {max(costs):.1f} s" if costs else "none"
            )
    return table


def table(
    recoveries: Sequence[Recovery],
    baseline: Pace | None,
    under_faults: Pace | None,
    lost: Sequence[float | None] | None = None,
) -> str:
    """table: the Markdown table of ``rows`` and the pace with and without faults."""
    head = (
        "| fault | n | running again p50 / p99 | full width p50 / p99 / max | longest pause p50 / p99 "
        "| steps redone p50 / max | not recovered |"
        + (" training lost p50 / max |" if lost is not None else "")
    )
    lines = [head, "|---|---|---|---|---|---|---|" + ("---|" if lost is not None else "")]
    for row in rows(recoveries, lost):
        lines.append("| " + " | ".join(str(v) for v in row.values()) + " |")
    if baseline and under_faults:
        share = under_faults.samples_per_second / baseline.samples_per_second
        lines += [
            "",
            f"Samples per second: {baseline.samples_per_second:.0f} without faults, "
            f"{under_faults.samples_per_second:.0f} through the faults (goodput {share:.0%}).",
        ]
    costs = [c for c in lost or () if c is not None]
    if costs:
        total = sum(costs)
        lines.append(
            f"Training lost to the faults: {total:.0f} s in all, {total / len(costs):.1f} s a fault."
        )
    return "\n".join(lines) + "\n"


def write(
    out: Path,
    recoveries: Sequence[Recovery],
    baseline: Pace | None,
    under_faults: Pace | None,
    facts: dict[str, str],
    lost: Sequence[float | None] | None = None,
) -> str:
    """write puts table.md and results.json in ``out``; returns the table."""
    out.mkdir(parents=True, exist_ok=True)
    text = table(recoveries, baseline, under_faults, lost)
    header = "".join(f"- {k}: {v}\n" for k, v in facts.items())
    (out / "table.md").write_text(header + "\n" + text)
    results = {
        "facts": facts,
        "rows": rows(recoveries, lost),
        "faults": [
            asdict(r) | ({} if lost is None else {"lost": c})
            for r, c in zip(recoveries, lost or [None] * len(recoveries), strict=True)
        ],
        "baseline": asdict(baseline) if baseline else None,
        "under_faults": asdict(under_faults) if under_faults else None,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    return text
