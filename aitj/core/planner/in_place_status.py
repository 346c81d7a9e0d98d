"""The in-place restarts of a pass, shown (issue 28): an Event each, and a ``status.restarts``
entry each (scope InPlace), written in the same status as the ledger that charges them, so
each is recorded once; the Event of a pod the cluster would not restart in place.

Pure. What is charged and when is aitj.core.planner.in_place's; docs/semantics.md, "In-place
restarts and the escalation ladder".
"""

from __future__ import annotations

from collections.abc import Sequence

from aitj.core.api import MAX_RESTART_RECORDS, Job, JobStatus
from aitj.core.planner.in_place import NOT_SERVED, InPlaceRecord
from aitj.core.planner.part import Context, Part
from aitj.core.planner.types import Event, Plan

EVENT_IN_PLACE = "TrainingJobRestartedInPlace"
EVENT_NOT_SERVED = "InPlaceRestartNotServed"


def part(ctx: Context) -> Part:
    """part: the in-place restarts of the pass: an Event each (named after it, so said once),
    and a ``status.restarts`` entry each, written with the ledger that charges them."""
    records: Sequence[InPlaceRecord] = ctx.found.in_place
    fallbacks = tuple(
        not_served_event(ctx.job, r.replica, r.index, r.generation, r.pod, NOT_SERVED)
        for r in ctx.records
        if NOT_SERVED in r.failure.description
    )
    # Sent before the status, as a restart's Event (aitj.controller.executor.STEPS): the status
    # that records them makes the next pass charge nothing, so an operator that died after
    # writing it would never say them (tests/unit/test_inplace_failed_write.py).
    if not records:
        return Part(Plan(restart_events=fallbacks)) if fallbacks else Part()
    events = (*(in_place_event(ctx.job, r) for r in records), *fallbacks)

    def edit(status: JobStatus) -> JobStatus:
        history = (*(status.restarts or ()), *(r.entry() for r in records))
        return status.updated(restarts=history[-MAX_RESTART_RECORDS:])

    return Part(Plan(restart_events=events), edit=edit)


def in_place_event(job: Job, r: InPlaceRecord) -> Event:
    return Event(
        "Normal",
        EVENT_IN_PLACE,
        f"{r.failure.cause} on pod {r.pod} ({r.failure.description}): {r.rung}: restarted in place "
        f"(same pod, same node)",
        f"{job.name}.{job.uid[:8] or 'job'}.inplace-{r.replica}-{r.index}-{r.generation}-{r.restart}",
    )


def not_served_event(job: Job, replica: str, index: int, generation: int, pod: str, why: str) -> Event:
    return Event(
        "Warning",
        EVENT_NOT_SERVED,
        f"pod {pod}: {why}",
        f"{job.name}.{job.uid[:8] or 'job'}.notserved-{replica}-{index}-{generation}",
    )
