"""Recording restarts: the pass's restarts as Events, as ``status.restarts`` entries and as
the Plan's ``restarts`` (counted in the metrics once the status is written).

Pure. Each restart is recorded once (docs/semantics.md, "Each restart is recorded once"): by the
first pass whose status write succeeds, the one that decided it or a later one. The ledger's
``recorded`` marks, written in the same status, keep a later pass from recording it again
(aitj.core.planner.ledger); the Event is named after the restart, so a pass planned twice
sends it once. A job's last pass (``core._finish``) records with ``record`` and ``restart_event``.
"""

from __future__ import annotations

from collections.abc import Sequence

from aitj.core.api import MAX_RESTART_RECORDS, Job, JobStatus, RestartScope
from aitj.core.faultclass import FaultClass
from aitj.core.planner.ledger import record_entry
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.types import Event, RestartRecord

EVENT_RESTARTING = "TrainingJobRestarting"


def part(ctx: Context) -> Part:
    """part: the pass's restarts (``ctx.records``) recorded."""
    return Part(
        steps(restart_events=tuple(restart_event(ctx.job, r) for r in ctx.records), restarts=ctx.records),
        edit=lambda status: record(status, ctx.prev, ctx.records),
    )


def record(status: JobStatus, prev: JobStatus, records: Sequence[RestartRecord]) -> JobStatus:
    """record: ``status`` with ``records`` appended to ``prev.restarts`` (the last
    MAX_RESTART_RECORDS kept)."""
    if not records:
        return status
    history = (*(prev.restarts or ()), *(record_entry(r) for r in records))
    return status.updated(
        restarts=history[-MAX_RESTART_RECORDS:],
        infrastructure_restarts=infrastructure_counts(prev, records),
    )


def infrastructure_counts(prev: JobStatus, records: Sequence[RestartRecord]) -> dict[str, int] | None:
    """infrastructure_counts: ``prev.infrastructureRestarts`` plus the infrastructure faults among
    ``records`` (docs/semantics.md section 25). Counted here, with the ``restarts`` entries, so it
    is exact as they are (each restart is recorded once); None while there has been none, so a
    job without one keeps the status it had."""
    counts = dict(prev.infrastructure_restarts or {})
    for r in records:
        if r.failure.kind.fault_class is FaultClass.INFRASTRUCTURE:
            counts[r.replica] = counts.get(r.replica, 0) + 1
    return counts or None


def restart_event(job: Job, r: RestartRecord) -> Event:
    """restart_event: the Event of a restart, named after it (job uid, replica, index, failed
    generation): the pass that decides it and any pass that records it late send the same
    Event, which the API server keeps once."""
    what = {
        RestartScope.POD: f"pod {job.pod_name(r.replica, r.index, r.generation + 1)}",
        RestartScope.REPLICA: f"every pod of replica {r.replica}",
        RestartScope.ALL: "every pod of the job",
    }[r.scope]
    return Event(
        "Warning",
        EVENT_RESTARTING,
        f"{r.failure.cause} on pod {r.pod} ({r.failure.description}): rule {r.rule} "
        f"restarts scope {r.scope.value}: recreating {what}",
        f"{job.name}.{job.uid[:8] or 'job'}.restart-{r.replica}-{r.index}-{r.generation}",
    )
