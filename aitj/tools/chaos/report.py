"""A run's report: the table (rich), a JSON document, and the timeline picture (matplotlib,
imported only when one is asked for). ``summary`` is pure; the table and the JSON are
built from it, so they cannot disagree.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from aitj.tools.bench.stats import percentile
from aitj.tools.chaos import inplace, progress
from aitj.tools.chaos.history import ProgressSample
from aitj.tools.chaos.invariants import job_name
from aitj.tools.chaos.run import Result
from aitj.tools.chaos.schedule import FaultKind


def summary(result: Result) -> dict[str, Any]:
    """summary: faults by kind (with recoveries and their p50/p99), invariants, violations."""
    h = result.history
    kinds: dict[str, dict[str, Any]] = {}
    for kind in FaultKind:
        done = [f for f in h.faults if f.kind is kind and f.error is None]
        errors = [f for f in h.faults if f.kind is kind and f.error is not None]
        skipped = [p for p, _ in result.skipped if p.kind is kind]
        recs = [r for r in result.recoveries if r.kind == kind]
        secs = [r.seconds for r in recs if r.seconds is not None]
        secs += [f.healed - f.t for f in done if not f.jobs and f.healed is not None]
        if not (done or errors or skipped):
            continue
        kinds[str(kind)] = {
            "faults": len(done),
            "errors": len(errors),
            "skipped": len(skipped),
            "recovered": len(secs),
            "recovery_p50_s": round(percentile(secs, 50), 3) if secs else None,
            "recovery_p99_s": round(percentile(secs, 99), 3) if secs else None,
        }
    expected = {
        job_name(k): {"exact": dict(v), "blips": dict(result.expected.maybe.get(k, {}))}
        for k, v in sorted(result.expected.counts.items())
    }
    return {
        "faults_by_kind": kinds,
        "faults": len([f for f in h.faults if f.error is None]),
        "seconds": round(h.end, 1),
        "expected_restarts": expected,
        "invariants": [
            {"name": c.name, "checks": c.checks, "violations": len(c.violations)} for c in result.checks
        ],
        "violations": [asdict(v) for c in result.checks for v in c.violations],
        "operator_restarts": [asdict(r) for r in h.restarts],
        "samples": {"pods": len(h.pods), "nodes": len(h.nodes), "jobs": len(h.jobs), "probes": len(h.probes)},
        "training": progress.summary(h, result.training) if result.training else None,
        "in_place": _in_place(result),
    }


def _in_place(result: Result) -> list[dict[str, Any]]:
    """_in_place: each in-place restart the kills called for, and how long from the kill to
    its pod Running again in place (None: not seen)."""
    _, seen = inplace.kept_in_place(result.history, result.expected, float("inf"))
    return [
        {
            "t": round(s.t, 3),
            "job": job_name(s.job),
            "pod": s.pod,
            "rung": s.rung,
            "running_again_s": round(s.seconds, 3) if s.seconds is not None else None,
        }
        for s in seen
    ]


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def print_table(result: Result, console: Console) -> None:
    """print_table: faults by kind, then the invariants, then each violation (at most 30)."""
    s = summary(result)
    faults = Table(title=f"aitj chaos: {s['faults']} faults in {s['seconds']:.0f}s")
    for col in ("fault", "done", "skipped", "errors", "recovered", "recovery p50 s", "recovery p99 s"):
        faults.add_column(col, justify="left" if col == "fault" else "right", no_wrap=col == "fault")
    for kind, k in s["faults_by_kind"].items():
        faults.add_row(
            kind,
            str(k["faults"]),
            str(k["skipped"]),
            str(k["errors"]),
            str(k["recovered"]),
            _s(k["recovery_p50_s"]),
            _s(k["recovery_p99_s"]),
        )
    console.print(faults)
    inv = Table(title="invariants (from the command's own watch)")
    for col in ("invariant", "checks", "violations"):
        inv.add_column(col, justify="left" if col == "invariant" else "right")
    for c in s["invariants"]:
        inv.add_row(c["name"], str(c["checks"]), str(c["violations"]))
    console.print(inv)
    if s["training"] is not None:
        console.print(_training_table(s["training"]))
    for r in s["in_place"]:
        took = _s(r["running_again_s"])
        line = f"in place t+{r['t']:.1f}s {r['pod']}: Running again {took} s after the kill; {r['rung']}"
        console.print(line, markup=False)
    for v in s["violations"][:30]:
        console.print(f"VIOLATION t+{v['t']:.1f}s {v['invariant']}: {v['job']} {v['message']}", markup=False)
    if len(s["violations"]) > 30:
        console.print(f"... and {len(s['violations']) - 30} more (see --json)")


def _training_table(training: dict[str, dict[str, Any]]) -> Table:
    """_training_table: per job, what its training did (progress.summary)."""
    t = Table(title="training (from each launcher's log)")
    cols = ("job", "last step", "re-formed", "samples/s", "faults", "stepped past", "p50 s", "p99 s", "max s")
    for col in cols:
        t.add_column(col, justify="left" if col == "job" else "right", no_wrap=col == "job")
    for job, j in training.items():
        t.add_row(
            job,
            str(j["last_step"]),
            str(j["reformed"]),
            _s(j["samples_per_s_median"]),
            str(j["faults"]),
            str(j["stepped_past"]),
            _s(j["past_p50_s"]),
            _s(j["past_p99_s"]),
            _s(j["past_max_s"]),
        )
    return t


def write_json(result: Result, path: Path) -> None:
    """write_json: the summary, the schedule and every fault as carried out."""
    doc = summary(result)
    doc["schedule"] = [{"n": p.n, "at": p.at, "kind": str(p.kind)} for p in result.plan]
    doc["fault_log"] = [
        {**asdict(f), "kind": str(f.kind), "jobs": [job_name(k) for k in f.jobs]}
        for f in result.history.faults
    ]
    doc["recoveries"] = [{**asdict(r), "jobs": [job_name(k) for k in r.jobs]} for r in result.recoveries]
    path.write_text(json.dumps(doc, indent=2) + "\n")


def plot_timeline(result: Result, path: Path) -> None:
    """plot_timeline: one row per job; each fault a marker at its time (colour by kind), a bar
    from it to its recovery, a red cross at each violation. With --progress, a second panel
    below: each job's training samples per second, the faults as lines of the same colours."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    h = result.history
    jobs = sorted({job_name(k) for f in h.faults for k in f.jobs} | {job_name(j.key) for j in h.jobs})
    rows = ["(cluster)", *jobs]
    cmap = plt.get_cmap("tab20")
    colours = {kind: cmap(i) for i, kind in enumerate(FaultKind)}
    height = 1.2 + 0.45 * len(rows)
    if result.training is None:
        fig, ax = plt.subplots(figsize=(12, height))
    else:
        fig, (ax, pace_ax) = plt.subplots(
            2, 1, figsize=(12, height + 3.5), sharex=True, height_ratios=(height, 3.5)
        )
        _plot_pace(result, result.training, pace_ax, colours)
    _plot_faults(result, rows, ax, colours)
    done = sum(1 for f in h.faults if f.error is None)
    ax.set_title(
        f"aitj chaos: {done} faults ({len(h.faults) - done} refused), {result.violations} violations"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_faults(result: Result, rows: list[str], ax: Any, colours: dict[FaultKind, Any]) -> None:
    h = result.history
    y = {name: i for i, name in enumerate(rows)}
    took = {r.n: r.seconds for r in result.recoveries}
    used: set[FaultKind] = set()
    for f in h.faults:
        if f.error is not None:
            continue
        targets = [job_name(k) for k in f.jobs] or ["(cluster)"]
        for name in targets:
            label = str(f.kind) if f.kind not in used else None
            used.add(f.kind)
            ax.scatter([f.t], [y[name]], color=colours[f.kind], marker="v", s=50, zorder=3, label=label)
            secs = took.get(f.n) if f.jobs else (None if f.healed is None else f.healed - f.t)
            if secs is not None:
                ax.plot([f.t, f.t + secs], [y[name], y[name]], color=colours[f.kind], lw=4, alpha=0.6)
    for c in result.checks:
        for v in c.violations:
            ax.scatter([v.t], [y.get(v.job, 0)], color="red", marker="x", s=80, zorder=4)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(
        "seconds since the watch started (marker: fault; bar: until its jobs were back; x: violation)"
    )
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)


def _plot_pace(result: Result, settings: progress.Settings, ax: Any, colours: dict[FaultKind, Any]) -> None:
    """_plot_pace: samples per second of each job's training over time (progress.pace), and
    a vertical line at each fault."""
    by_job: dict[str, list[ProgressSample]] = {}
    for s in sorted(result.history.progress, key=lambda s: s.t):
        by_job.setdefault(job_name(s.key), []).append(s)
    for name, samples in sorted(by_job.items()):
        points = [(t, r) for t, r in progress.pace(samples, settings.batch) if t >= 0]
        if points:
            ax.plot([t for t, _ in points], [r for _, r in points], lw=1.2, label=name)
    for f in result.history.faults:
        if f.error is None:
            ax.axvline(f.t, color=colours[f.kind], lw=1, alpha=0.8)
    ax.set_ylabel("samples/s")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds since the watch started (lines: faults, coloured by kind as above)")
    ax.grid(alpha=0.3)
    if by_job:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
