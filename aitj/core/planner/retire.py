"""Retiring pods: delete what is no longer wanted, force-delete what is stuck terminating.

Pure. A part of each pass of a job that goes on (aitj.core.planner.core.PARTS); ``superseded``
is what a job that has ended still retires, whatever its cleanPodPolicy (core._cleanup).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from aitj.core.api import DEFAULT_RESTART_TIME_LIMIT, Job
from aitj.core.observed import PodView
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.survey import Retiree
from aitj.core.planner.types import DeleteReason, Event, PodDelete

EVENT_FORCE_DELETING = "ForceDeletingPod"


def part(ctx: Context) -> Part:
    """part: the retirees' deletes, their finalizers and those the survey let go
    (``found.released``) released, a wake-up when a force-delete falls due."""
    deletes, release, events, wake = retire(ctx.job, ctx.found.retirees, ctx.now)
    plan = steps(deletes=deletes, release=release + ctx.found.released, events=events)
    return Part(plan, wake=tuple(wake))


def retire(
    job: Job, retirees: Sequence[Retiree], now: datetime
) -> tuple[tuple[PodDelete, ...], tuple[str, ...], tuple[Event, ...], list[float]]:
    """retire: delete what is no longer wanted; force-delete the old pod of a restart once it
    has been terminating for restartTimeLimit seconds; release every retiree's finalizer."""
    deletes: list[PodDelete] = []
    events: list[Event] = []
    wake: list[float] = []
    limits = {r.name: r.restart_time_limit for r in job.spec.replicas}
    for t in retirees:
        p = t.pod
        limit = limits.get(p.replica or "", DEFAULT_RESTART_TIME_LIMIT)
        if not p.deleting:
            why = DeleteReason.RESTART if t.restart else DeleteReason.UNWANTED
            # A rank the recovery watchdog found waiting is stopped at once: its pod's own grace
            # period (the seed's 300 s, whose PID 1 ignores SIGTERM) would keep it in the ring.
            grace = 0 if t.restart and p.waiting is not None else None
            deletes.append(PodDelete(p.name, p.uid, grace, why, t.text))
            if t.restart:
                wake.append(float(limit))
            continue
        started = p.deletion_started
        if not t.restart or p.deletion_grace_seconds == 0 or started is None:
            continue
        due = started + timedelta(seconds=limit)
        if now < due:
            wake.append((due - now).total_seconds())
            continue
        stuck = f"still terminating {limit}s after its deletion started (restartTimeLimit)"
        deletes.append(PodDelete(p.name, p.uid, 0, DeleteReason.STUCK, stuck))
        events.append(
            Event(
                "Warning", EVENT_FORCE_DELETING, f"pod {p.name} is {stuck}: deleting it with grace period 0"
            )
        )
    release = tuple(t.pod.name for t in retirees if t.pod.tracked)
    return tuple(deletes), tuple(dict.fromkeys(release)), tuple(events), wake


def superseded(pods: Sequence[PodView], ledger: Ledger) -> tuple[PodDelete, ...]:
    """superseded: deletes for the pods of a job that has ended whose index has a newer
    generation (a pod of it, or the ledger's ``seen``): the old pods of a restart that the job's
    end interrupted (a Replica- or All-scope restart whose pass stopped after its creates,
    before its deletes). cleanPodPolicy says which of the job's pods to keep; these are not the
    job's pods any more, and a job that went on would have deleted them."""
    newest: dict[tuple[str, int], int] = {}
    for p in pods:
        if p.replica is not None and p.index is not None:
            key = (p.replica, p.index)
            newest[key] = max(newest.get(key, -1), p.generation)
    deletes: list[PodDelete] = []
    for p in pods:
        if p.deleting or p.replica is None or p.index is None:
            continue
        top = max(newest[(p.replica, p.index)], ledger.replica(p.replica).index(p.index).seen)
        if p.generation < top:
            why = f"superseded by generation {top}: the job ended before its restart finished"
            deletes.append(PodDelete(p.name, p.uid, None, DeleteReason.RESTART, why))
    return tuple(deletes)
