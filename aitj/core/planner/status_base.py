"""The status every pass of a job that has not finished rewrites: phase and conditions, restart
counts, replica counts, start times, observedGeneration and the restart ledger.

Pure. The first part of a live job's pass (aitj.core.planner.core.PARTS): the other parts edit
the status it leaves. A job's last pass (``core._finish``) rewrites the same with ``rewrite``.
"""

from __future__ import annotations

from aitj.core.api import Job, JobStatus
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.part import Context, Part
from aitj.core.planner.status import Condition, advance_conditions, replica_statuses, scale_fields
from aitj.core.planner.survey import Survey
from aitj.core.wire import format_time


def part(ctx: Context) -> Part:
    """part: the status of a pass of a live job, before the other parts edit it: ``rewrite``,
    and ``startRunningTime`` once the job has run."""

    def edit(status: JobStatus) -> JobStatus:
        out = rewrite(ctx.job, status, ctx.ledger, ctx.found, ctx.condition, format_time(ctx.now))
        if ctx.started is not None:
            out = out.updated(start_running_time=format_time(ctx.started))
        return out

    return Part(edit=edit)


def rewrite(
    job: Job, prev: JobStatus, ledger: Ledger, found: Survey, condition: Condition, stamp: str
) -> JobStatus:
    """rewrite: ``prev`` with what every pass of a job that has not finished rewrites."""
    names = [r.name for r in job.spec.replicas]
    counts = replica_statuses(found, names)
    restarts = {name: ledger.replica(name).restart_count for name in names}
    status = prev.updated(
        phase=condition.type,
        conditions=advance_conditions(prev.conditions or (), condition, stamp),
        restart_count=restarts,
        total_restarts=sum(restarts.values()),
        replica_statuses=counts,
        start_time=prev.start_time or stamp,
        observed_generation=job.generation,
        restart_ledger=ledger.to_status(),
    )
    if (scale := scale_fields(job, counts)) is not None:
        status = status.updated(trainer_replicas=scale[0], selector=scale[1])
    return status
