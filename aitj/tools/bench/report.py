"""The bench's output: the table (Markdown), ``results.json`` and the PNG plots.

``table``, ``document`` and the plot series are pure; ``write`` puts them in a folder and
``plot`` draws with matplotlib (imported there: only the bench needs it).
"""

from __future__ import annotations

import json
import operator
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aitj.tools.bench.bars import Check
from aitj.tools.bench.figures import Measurements
from aitj.tools.bench.largefigures import PASS_FACTOR, SMALL
from aitj.tools.bench.stats import cdf_points

SCHEMA = 1
RESULTS, TABLE, CDF_PNG, USAGE_PNG = "results.json", "table.md", "latency_cdf.png", "operator_usage.png"
PASS_PNG = "cpu_per_pass.png"  # F13
# The latency CDFs drawn: (label, the Measurements field, dotted into a part of it).
CDF_SERIES = (
    ("F0 floor: force delete", "floor_delete"),
    ("F1 aitj: force delete", "ours_delete"),
    ("F1g aitj: force delete, gang-scheduled", "gang_delete"),
    ("F2 aitj: exit code", "ours_exit"),
    ("P1 Job controller: force delete", "peer_delete"),
    ("F12 aitj: force delete, one large job", "large.delete"),
)


def table(rows: list[Check]) -> str:
    """table: the rows as a Markdown table: figure, what, value, bar, status."""
    lines = ["| # | figure | measured (p50 / p90 / p99 / max) | bar | |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [r.figure, r.what, r.value, r.bar, r.status.upper() if r.status == "miss" else str(r.status)]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def cdf_series(m: Measurements) -> dict[str, tuple[list[float], list[float]]]:
    """cdf_series: for each latency measured, its CDF as (milliseconds, fraction)."""
    out = {}
    for label, name in CDF_SERIES:
        values: list[float] = operator.attrgetter(name)(m)
        if values:
            xs, ys = cdf_points(values)
            # From 0 at the first sample, so the step starts on the axis.
            out[f"{label} (n={len(values)})"] = ([xs[0] * 1000] + [x * 1000 for x in xs], [0.0, *ys])
    return out


def usage_series(points: list[tuple[int, float, float]]) -> dict[str, list[float]]:
    """usage_series: the sampler's (pods, % of a core, RSS MB) points as three columns."""
    return {
        "pods": [float(p[0]) for p in points],
        "cpu_percent": [p[1] for p in points],
        "rss_mb": [p[2] for p in points],
    }


def pass_series(m: Measurements) -> tuple[list[int], list[float]]:
    """pass_series: F13's points, (trainers in the job, operator CPU ms per pass), by size;
    a size with no pass counted is left out."""
    points = [(size, cost.per_pass) for size, cost in sorted(m.large.pass_cost.items())]
    return [s for s, per in points if per is not None], [per * 1000 for _, per in points if per is not None]


@dataclass(frozen=True)
class RunInfo:
    """RunInfo: when, where and what ran: results.json's head, beside the rows and samples."""

    mode: str
    date: str
    shape: dict[str, Any]
    duration_s: float
    notes: tuple[str, ...]
    machine: dict[str, Any]
    commit: str


def document(
    run: RunInfo, *, rows: list[Check], m: Measurements, usage: list[tuple[int, float, float]]
) -> dict[str, Any]:
    """document: results.json: when, where and what ran; the table's rows; every sample."""
    return {
        "schema": SCHEMA,
        "date": run.date,
        "mode": run.mode,
        "machine": run.machine,
        "commit": run.commit,
        "shape": run.shape,
        "duration_s": round(run.duration_s, 1),
        "rows": [r.as_dict() for r in rows],
        "measurements": m.as_dict(),
        "usage": usage_series(usage),
        "notes": list(run.notes),
    }


def machine() -> dict[str, Any]:
    """machine: the cores, CPU model, memory and system the bench ran on."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = 0
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def commit(repo: Path) -> str:
    """commit: the checkout's commit, "+dirty" when it has uncommitted changes ("" outside git)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+dirty" if dirty else "")


def write(
    out: Path, doc: dict[str, Any], rows: list[Check], m: Measurements, usage: list[tuple[int, float, float]]
) -> list[Path]:
    """write puts results.json, table.md and the three plots in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    (out / RESULTS).write_text(json.dumps(doc, indent=1) + "\n")
    header = (
        f"{doc['mode']} run, {doc['date']}, {doc['machine']['cores']} cores ({doc['machine']['cpu']})\n\n"
    )
    (out / TABLE).write_text(header + table(rows))
    plot(out, m, usage, title=f"{doc['mode']} run {doc['date'][:10]}")
    return [out / RESULTS, out / TABLE, out / CDF_PNG, out / USAGE_PNG, out / PASS_PNG]


def plot(out: Path, m: Measurements, usage: list[tuple[int, float, float]], *, title: str) -> None:
    """plot draws the latency CDFs (log time axis: the Job controller is seconds, the others
    milliseconds), the operator's CPU and RSS against the pod count, and its CPU per pass
    against the pods in the job (F13)."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for label, (xs, ys) in cdf_series(m).items():
        ax.step(xs, ys, where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("API call -> result seen on the harness's watch (ms, log scale)")
    ax.set_ylabel("fraction of trials")
    ax.set_title(f"Recovery latency, {m.pods:,} pods ({title})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out / CDF_PNG, dpi=110)
    plt.close(fig)

    series = usage_series(usage)
    fig, (cpu_ax, rss_ax) = plt.subplots(1, 2, figsize=(11, 4.5))
    cpu_ax.scatter(series["pods"], series["cpu_percent"], s=6, alpha=0.5)
    cpu_ax.set_xlabel("pods Running (aitj's)")
    cpu_ax.set_ylabel("operator CPU (% of a core, per 0.5 s sample)")
    rss_ax.scatter(series["pods"], series["rss_mb"], s=6, alpha=0.5, color="tab:orange")
    # The idle windows (F6, F7): what the bars are about, drawn over the samples.
    idle = sorted(m.idle_percent.items())
    cpu_ax.plot([p for p, _ in idle], [c for _, c in idle], "D", color="tab:red", label="idle window (F6)")
    held = sorted(m.rss_mb.items())
    rss_ax.plot([p for p, _ in held], [r for _, r in held], "D", color="tab:red", label="after idle (F7)")
    rss_ax.set_xlabel("pods Running (aitj's)")
    rss_ax.set_ylabel("operator RSS (MB)")
    for a in (cpu_ax, rss_ax):
        a.grid(True, alpha=0.3)
        a.legend(loc="upper left")
    fig.suptitle(f"Operator CPU and RSS from /proc against the pod count ({title})")
    fig.tight_layout()
    fig.savefig(out / USAGE_PNG, dpi=110)
    plt.close(fig)
    _plot_passes(out, m, title, plt)


def _plot_passes(out: Path, m: Measurements, title: str, plt: Any) -> None:
    """_plot_passes: F13, the operator's CPU per pass (ms) against the trainers in the job
    struck, on a log axis, with the bar (PASS_FACTOR x at 8 trainers) drawn when 8 was measured."""
    sizes, per_pass = pass_series(m)
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(sizes, per_pass, "o-", label="operator CPU per pass (/proc over aitj_reconcile_seconds_count)")
    for x, y in zip(sizes, per_pass, strict=True):
        ax.annotate(
            f"{y:.2f} ms" if y < 10 else f"{y:.0f} ms", (x, y), textcoords="offset points", xytext=(6, 6)
        )
    if sizes and sizes[0] == SMALL:
        bar = PASS_FACTOR * per_pass[0]
        ax.axhline(
            bar, color="tab:red", linestyle="--", label=f"F13's bar: {PASS_FACTOR:g} x at {SMALL} trainers"
        )
    if not sizes:
        ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center")
    ax.set_xscale("log", base=2)
    if sizes:
        ax.set_xticks(sizes, [f"{s:,}" for s in sizes])
        ax.minorticks_off()
        ax.set_ylim(0, 1.2 * max([*per_pass, PASS_FACTOR * per_pass[0]]))
    ax.set_xlabel("trainers (pods) in the job struck (log scale)")
    ax.set_ylabel("operator CPU per pass (ms)")
    ax.set_title(f"F13: operator CPU per pass against the job's size ({title})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out / PASS_PNG, dpi=110)
    plt.close(fig)
