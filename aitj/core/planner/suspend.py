"""Suspend and resume (``spec.suspend``, batch/v1 Job's and JobSet's field, the one Kueue drives).

Pure. A job that has not finished and whose ``spec.suspend`` is true is not planned as a live
job: ``plan_suspended`` makes its whole pass (aitj.core.planner.core). It deletes the job's pods
through the usual steps (finalizers released in the same pass), ends each index's generation in
the restart ledger (``ended``, as a scale-in does), so neither the deletions nor the pods' absence
is a failure and the next pods are each index's next generation, and it judges nothing: no
failure is classified, no restart counted, no timeout runs. The job's Service, Secret and
ConfigMap stay.

What each clock does (docs/semantics.md, "Suspend and resume"): ``timeLimit`` starts over at
each resume (``startRunningTime`` is cleared, as batch/v1 Job clears ``startTime`` and restarts
``activeDeadlineSeconds``); ``restartTimeout`` and ``scaleTimeout`` belong to pods and scale
operations, and a suspension ends both; ``restartTimeLimit`` still bounds how long a deleted pod
may take to terminate before it is force-deleted, so a suspended job does end up with no pods.

Resuming is the next live pass: the survey finds every index vacant (or its pod terminating)
with its generation ended, and creates the next one, workers first and the launcher once they
run. ``part`` sends the Event of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from aitj.core.api import DEFAULT_RESTART_TIME_LIMIT, Job, JobStatus, Phase, ReplicaStatus
from aitj.core.observed import PodView
from aitj.core.planner import restarts
from aitj.core.planner.ledger import IndexHistory, Ledger, ReplicaHistory
from aitj.core.planner.part import Context, Part
from aitj.core.planner.stamps import observe
from aitj.core.planner.status import Condition, advance_conditions, scale_fields
from aitj.core.planner.types import DeleteReason, Event, Plan, PodDelete
from aitj.core.wire import format_time

REASON_SUSPENDED = "TrainingJobSuspended"
REASON_RESUMED = "TrainingJobResumed"
MESSAGE_SUSPENDED = "job is suspended (spec.suspend): it runs no pods and counts no restarts"


def plan_suspended(job: Job, mine: Sequence[PodView], now: datetime) -> Plan:
    """plan_suspended: the pass of a suspended job that has not finished, given its own pods:
    each index's generation ended in the ledger (restarts decided by earlier passes and not
    yet recorded are recorded), every pod but a current one that succeeded deleted, every
    finalizer released, a pod still terminating ``restartTimeLimit`` after its deletion began
    force-deleted, and the status Suspended. An Event when the job becomes suspended."""
    prev = job.status
    merged = observe(Ledger.from_status(prev), job, mine)
    records = merged.unrecorded()
    ledger = ended(job, merged.recording(records), mine)
    deletes, wake = _deletes(job, mine, ledger, now)
    status = restarts.record(_status(job, prev, ledger, mine, now), prev, records)
    events: tuple[Event, ...] = ()
    if prev.phase is not Phase.SUSPENDED:
        events = (Event("Normal", REASON_SUSPENDED, f"{MESSAGE_SUSPENDED}; {_deleting(deletes)}"),)
    return Plan(
        status=None if status == prev else status,
        deletes=deletes,
        release=tuple(p.name for p in mine if p.tracked),
        events=events,
        restart_events=tuple(restarts.restart_event(job, r) for r in records),
        restarts=records,
        requeue_after=min(wake, default=None),
    )


def ended(job: Job, ledger: Ledger, mine: Sequence[PodView]) -> Ledger:
    """ended: ``ledger`` with the generation of every index the job has seen ended, but for
    outcomes that hold: an index whose pod succeeded, or whose failure stands (recorded),
    stays so, as a suspended batch/v1 Job keeps its completed indices. A current pod that
    succeeded has its success recorded here."""
    marks: list[tuple[str, ReplicaHistory]] = []
    for r in job.spec.replicas:
        history = ledger.replica(r.name)
        won = {
            p.index for p in mine if p.replica == r.name and p.phase == "Succeeded" and p.index is not None
        }
        out: list[tuple[int, IndexHistory]] = []
        for i, record in history.indices:
            if record.seen < 0 or record.settled(record.seen):
                continue
            if i in won and _current_succeeded(mine, r.name, i, record.seen):
                out.append((i, IndexHistory(succeeded=record.seen)))
            else:
                out.append((i, IndexHistory(ended=record.seen)))
        if out:
            marks.append((r.name, ReplicaHistory(0, tuple(out))))
    return ledger.merge(Ledger(tuple(marks))) if marks else ledger


def _current_succeeded(mine: Sequence[PodView], replica: str, index: int, generation: int) -> bool:
    """_current_succeeded: the index's pod of ``generation`` succeeded."""
    return any(
        p.replica == replica and p.index == index and p.generation == generation and p.phase == "Succeeded"
        for p in mine
    )


def _deletes(
    job: Job, mine: Sequence[PodView], ledger: Ledger, now: datetime
) -> tuple[tuple[PodDelete, ...], list[float]]:
    """_deletes: every pod not already being deleted, but a current one that succeeded; a pod
    still terminating its replica's restartTimeLimit after its deletion began, with grace 0;
    and when the next such force-delete falls due."""
    limits = {r.name: r.restart_time_limit for r in job.spec.replicas}
    deletes: list[PodDelete] = []
    wake: list[float] = []
    for p in mine:
        kept = p.replica is not None and p.index is not None and p.phase == "Succeeded"
        if kept and ledger.replica(p.replica or "").index(p.index or 0).succeeded >= p.generation:
            continue
        if not p.deleting:
            deletes.append(PodDelete(p.name, p.uid, None, DeleteReason.SUSPEND, "the job is suspended"))
            wake.append(float(limits.get(p.replica or "", DEFAULT_RESTART_TIME_LIMIT)))
            continue
        started = p.deletion_started
        if p.deletion_grace_seconds == 0 or started is None:
            continue
        due = started + timedelta(seconds=limits.get(p.replica or "", DEFAULT_RESTART_TIME_LIMIT))
        if now < due:
            wake.append((due - now).total_seconds())
        else:
            stuck = "the job is suspended; still terminating restartTimeLimit after its deletion started"
            deletes.append(PodDelete(p.name, p.uid, 0, DeleteReason.STUCK, stuck))
    return tuple(deletes), wake


def _status(job: Job, prev: JobStatus, ledger: Ledger, mine: Sequence[PodView], now: datetime) -> JobStatus:
    """_status: Suspended, the restart counts as the ledger has them (unchanged: nothing is
    counted), ``active`` the pods not gone yet (a Kueue-like admitter waits for 0), the
    outcomes that hold, no ``startRunningTime`` (timeLimit starts over at the resume), no
    degraded state and no scale operation in flight (its pods are gone; on resume ``replicas``
    applies at once, as before a job first runs)."""
    stamp = format_time(now)
    names = [r.name for r in job.spec.replicas]
    counts = {name: _counts(job, name, ledger, mine) for name in names}
    restart_count = {name: ledger.replica(name).restart_count for name in names}
    status = prev.updated(
        phase=Phase.SUSPENDED,
        conditions=advance_conditions(
            prev.conditions or (), Condition(Phase.SUSPENDED, REASON_SUSPENDED, MESSAGE_SUSPENDED), stamp
        ),
        restart_count=restart_count,
        total_restarts=sum(restart_count.values()),
        replica_statuses=counts,
        observed_generation=job.generation,
        restart_ledger=ledger.to_status(),
        start_running_time=None,
        degraded=None,
        scaling=None,
    )
    if (scale := scale_fields(job, counts)) is not None:
        status = status.updated(trainer_replicas=scale[0], selector=scale[1])
    return status


def _counts(job: Job, name: str, ledger: Ledger, mine: Sequence[PodView]) -> ReplicaStatus:
    """_counts: a suspended replica's counts: its pods still there as active (and pending:
    on their way out), its wanted indices that succeeded or whose failure stands."""
    history = ledger.replica(name)
    wanted = range(job.spec.replica(name).replicas)
    present = sum(1 for p in mine if p.replica == name and not (p.phase == "Succeeded" and not p.deleting))
    return ReplicaStatus(
        active=present,
        pending=present,
        running=0,
        succeeded=sum(1 for i in wanted if 0 <= history.index(i).seen <= history.index(i).succeeded),
        failed=sum(1 for i in wanted if 0 <= history.index(i).seen <= history.index(i).stood),
    )


def _deleting(deletes: Sequence[PodDelete]) -> str:
    """_deleting: the Event's note of the pods the pass deletes."""
    return f"deleting {len(deletes)} pods" if deletes else "it has no pods to delete"


def part(ctx: Context) -> Part:
    """part: the Event of a resume, in the first live pass after a suspended one."""
    if ctx.prev.phase is not Phase.SUSPENDED:
        return Part()
    message = "job resumed (spec.suspend is false): its pods are created afresh; RestartCount kept"
    return Part(Plan(events=(Event("Normal", REASON_RESUMED, message),)))
