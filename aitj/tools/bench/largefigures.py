"""The figures of one large job (issue 26): F12, one job of 4,096 trainers against the Job
controller's Indexed Job of as many pods and against F1; F13, the operator's CPU per pass
against the pods in the job.

Pure, as ``figures`` (whose ``checks`` puts these rows after F11): numbers in (``LargeJob``,
kept in ``Measurements.large``), rows out. A run smaller than the bar's (QUICK: 512 trainers)
holds its job to the same bars and its rows say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aitj.tools.bench.bars import Bar, Check, against, measured, not_measured
from aitj.tools.bench.stats import ms, summarize

LARGE = 4096  # F12 and F13's bars are for one job of 4,096 trainers
LARGE_NODES = 100  # on 100 nodes
SMALL = 8  # F13's reference: CPU per pass in a job of 8 trainers
BRINGUP_FACTOR = 1.2  # F12: bring-up within 1.2 x the Job controller's (F10's bar)
RECOVERY_FACTOR = 2.0  # F12: recovery p99 within 2 x F1's p99
PASS_FACTOR = 2.0  # F13: CPU per pass at the largest job within 2 x at 8 trainers


@dataclass(frozen=True)
class PassCost:
    """PassCost: one F13 window, force deletes in one job one at a time: the operator's CPU
    seconds over it and the passes it made meanwhile (``aitj_reconcile_seconds_count``)."""

    cpu_s: float
    passes: float
    trials: int

    @property
    def per_pass(self) -> float | None:
        """per_pass: CPU seconds per pass (None: no pass counted)."""
        return self.cpu_s / self.passes if self.passes > 0 else None


@dataclass
class LargeJob:
    """LargeJob: what F12 and F13 measured (seconds, CPU seconds; empty when not run): the job
    of ``trainers`` on ``nodes`` nodes of its own, its bring-up and the Job controller's, the
    operator's CPU per pod over it, its force deletes' latencies, and F13's windows by the
    trainers of the job struck."""

    trainers: int = LARGE
    nodes: int = LARGE_NODES
    bringup: float | None = None  # F12: the job created -> all its pods Running
    bringup_peer: float | None = None  # F12: the Job controller's Indexed Job of as many
    cpu_per_pod: float | None = None  # F12: CPU seconds per pod created
    delete: list[float] = field(default_factory=list)  # F12: force delete -> replacement created
    pass_cost: dict[int, PassCost] = field(default_factory=dict)  # F13: trainers -> window


@dataclass(frozen=True)
class _Run:
    """_Run: what the rows read: F12 and F13's measurements, F1's latencies (F12's bar) and
    why a figure was not measured."""

    large: LargeJob
    f1: list[float]
    why: Mapping[str, str]


def large_rows(large: LargeJob, f1: list[float], why: Mapping[str, str]) -> list[Check]:
    """large_rows: F12's three rows (bring-up, CPU per pod, recovery against F1's latencies
    ``f1``), then F13's, a row per job size measured; ``why`` says why one was not."""
    m = _Run(large, f1, why)
    return [_bringup(m), _cpu_per_pod(m), _recovery(m), *_pass_rows(m)]


def _scale(m: _Run) -> str:
    if (m.large.trainers, m.large.nodes) == (LARGE, LARGE_NODES):
        return ""
    return (
        f" (at {m.large.trainers:,} trainers on {m.large.nodes} nodes;"
        f" the bar is for {LARGE:,} on {LARGE_NODES})"
    )


def _cpu_ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:.2f} ms CPU" if value < 10 else f"{value:,.1f} ms CPU"


def _bringup(m: _Run) -> Check:
    ours, peer = m.large.bringup, m.large.bringup_peer
    limit = BRINGUP_FACTOR * peer if peer is not None else None
    value = "" if ours is None else f"{ours:.1f} s"
    if peer is not None:
        value += f"; Job controller (one Indexed Job of {m.large.trainers:,}) {peer:.1f} s"
    elif ours is not None:
        value += "; the Job controller's not measured (timed out)"
    bar = f"<= {BRINGUP_FACTOR:g} x the Job controller's time" + (f" = {limit:.1f} s" if limit else "")
    return against(
        "F12",
        f"bring-up: one job of {m.large.trainers:,} trainers created -> all Running{_scale(m)}",
        ours,
        Bar(limit, bar),
        value=value,
        data={"ours_s": ours, "job_controller_s": peer, "trainers": m.large.trainers, "nodes": m.large.nodes},
        why_not=m.why.get("F12", ""),
    )


def _cpu_per_pod(m: _Run) -> Check:
    what = f"operator CPU per pod created at that bring-up{_scale(m)}"
    v = m.large.cpu_per_pod
    if v is None:
        return not_measured("F12", what, "measured", m.why.get("F12", "not run"))
    return measured("F12", what, _cpu_ms(v), {"cpu_per_pod_s": v})


def _recovery(m: _Run) -> Check:
    ours = summarize(m.large.delete) if m.large.delete else None
    f1 = summarize(m.f1) if m.f1 else None
    limit = RECOVERY_FACTOR * f1.p99 if f1 else None
    return against(
        "F12",
        f"force delete of a trainer of that job -> replacement created{_scale(m)}",
        ours.p99 if ours else None,
        Bar(limit, f"p99 <= {RECOVERY_FACTOR:g} x F1's p99" + (f" = {ms(limit)}" if limit else "")),
        value=ours.text() if ours else "",
        data=ours.as_ms() if ours else {},
        why_not=m.why.get("F12", "") or "no trials",
    )


WHAT_PASS = "operator CPU per pass, force deletes one at a time in one job of {:,} trainers{}"


def _pass_rows(m: _Run) -> list[Check]:
    """_pass_rows: F13, a row per job size. The largest is held to PASS_FACTOR x the CPU per
    pass at 8 trainers; the others are measured, with their ratio to 8."""
    if not m.large.pass_cost:
        bar = f"largest job <= {PASS_FACTOR:g} x at {SMALL} trainers"
        return [not_measured("F13", WHAT_PASS.format(LARGE, ""), bar, m.why.get("F13", "not run"))]
    small = m.large.pass_cost.get(SMALL)
    reference = small.per_pass if small is not None else None
    largest = max(m.large.pass_cost)
    why = m.why.get("F13", "") or "no pass counted"
    return [
        _pass_row(size, cost, reference, largest=largest, why=why)
        for size, cost in sorted(m.large.pass_cost.items())
    ]


def _pass_row(size: int, cost: PassCost, reference: float | None, *, largest: int, why: str) -> Check:
    """_pass_row: F13's row for one job size, against ``reference`` (the CPU per pass at 8
    trainers, None if not measured) when it is the ``largest``."""
    per = cost.per_pass
    data: dict[str, float | int | None] = {
        "cpu_s": cost.cpu_s,
        "passes": cost.passes,
        "trials": cost.trials,
        "per_pass_s": per,
    }
    value = ""
    if per is not None:
        value = f"{_cpu_ms(per)} ({cost.cpu_s:.2f} CPU-s / {cost.passes:,.0f} passes, {cost.trials} trials)"
        if reference and size != SMALL:
            value += f"; {per / reference:.1f} x at {SMALL}"
            data["over_small"] = per / reference
    bar = Bar(None, "measured")
    scale = ""
    if size == largest and size != SMALL:
        limit = PASS_FACTOR * reference if reference else None
        bar = Bar(limit, f"<= {PASS_FACTOR:g} x at {SMALL} trainers" + (f" = {_ms(limit)}" if limit else ""))
        scale = "" if size == LARGE else f" (the bar is for {LARGE:,})"
    return against("F13", WHAT_PASS.format(size, scale), per, bar, value=value, data=data, why_not=why)


def _ms(seconds: float) -> str:
    return _cpu_ms(seconds).removesuffix(" CPU")
