"""Timeouts: when a pass of a live job wants the job planned again because a restartTimeout or
the timeLimit falls due (aitj.core.planner.outcome judges them when they have).

Pure. Nothing else changes when a timeout falls due, so without the wake-up the job would be
judged only at the next change of one of its pods.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from aitj.core.api import Job
from aitj.core.planner.outcome import timeout_at
from aitj.core.planner.part import Context, Part
from aitj.core.planner.survey import State, Survey


def part(ctx: Context) -> Part:
    """part: a wake-up at each timeout to come."""
    return Part(wake=tuple(timeouts(ctx.job, ctx.found, ctx.started, ctx.now, ctx.joining)))


def timeouts(
    job: Job,
    found: Survey,
    started: datetime | None,
    now: datetime,
    joining: frozenset[tuple[str, int]] = frozenset(),
) -> list[float]:
    """timeouts: seconds until each restartTimeout of a pending replacement, and the
    timeLimit, falls due. A scale-out's pods (``joining``) are no replacements: scaleTimeout
    judges them, and the scale operation wakes the job for it."""
    wake: list[float] = []
    for s in found.astir:  # only a slot that does not run is pending
        p, timeout = s.pod, s.replica.restart_timeout
        if (
            s.state is State.PENDING
            and (s.replica.name, s.index) not in joining
            and p is not None
            and p.generation > 0
            and timeout is not None
            and p.created
        ):
            due = p.created + timedelta(seconds=timeout)
            wake.append((due - now).total_seconds())
    if started is not None and job.spec.time_limit is not None:
        wake.append((timeout_at(started, job.spec.time_limit) - now).total_seconds())
    return [max(w, 0.0) for w in wake]
