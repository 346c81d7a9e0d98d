"""What a pass writes and says about scale operations: the status fields, the Events, the
Scaling condition and its messages (the seed's wording), and when to wake up.

Pure and clock-free (the caller passes ``now``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from aitj.core.api import (
    MAX_LISTED,
    MAX_SCALE_HISTORY,
    Job,
    JobStatus,
    Phase,
    ScaleHistoryEntry,
    ScaleOperation,
)
from aitj.core.planner.scaling.operation import (
    CANCELLED,
    SUCCEEDED,
    Happening,
    Kind,
    Op,
    Scaling,
    vacant_indices,
)
from aitj.core.planner.status import REASON_SCALING, Condition, pod_list
from aitj.core.planner.types import Event
from aitj.core.wire import format_time

REASON_ROLLBACK = "TrainingJobScaleRollback"  # condition reason while a rollback is under way

# Event reasons
EVENT_SCALING = "TrainingJobScaling"  # an operation began (Normal)
EVENT_SCALED = "TrainingJobScaled"  # it finished (Normal)
EVENT_ROLLBACK = "TrainingJobScaleRollback"  # a scale-out was rolled back (Warning)
EVENT_CANCELLED = "TrainingJobScaleCancelled"  # an edit replaced an operation in flight (Normal)


def write_status(status: JobStatus, scaling: Scaling, now: datetime) -> JobStatus:
    """write_status: ``status`` with currentReplicas, vacantIndices, scaling and scaleHistory
    as this pass leaves them (empty maps are dropped)."""
    vacant = {rs.replica.name: tuple(v) for rs in scaling.replicas if (v := vacant_indices(rs.current))}
    ops = {op.replica: op.to_status() for op in scaling.ops}
    out = status.updated(
        current_replicas={rs.replica.name: len(rs.current) for rs in scaling.replicas},
        vacant_indices=vacant or None,
        scaling=ops or None,
    )
    entries = [_entry(h, now) for h in scaling.happenings if h.kind is not Kind.BEGAN]
    if entries:
        out = out.updated(scale_history=(*(status.scale_history or ()), *entries)[-MAX_SCALE_HISTORY:])
    return out


def _entry(h: Happening, now: datetime) -> ScaleHistoryEntry:
    """_entry: the scaleHistory entry of an operation that ended in this pass."""
    op = h.op
    operation, reason = op.operation, SUCCEEDED
    if h.kind is not Kind.SUCCEEDED:
        operation = ScaleOperation.ROLLBACK
        reason = CANCELLED if h.kind is Kind.CANCELLED else op.reason
    return ScaleHistoryEntry(
        time=format_time(now),
        started=format_time(op.started),
        replica=op.replica,
        operation=operation,
        version=op.version,
        generation=op.generation,
        source=op.source,
        target=op.target,
        pods=op.pods[:MAX_LISTED],  # 64 entries of thousands of names would not fit etcd
        reason=reason,
        message=outcome_message(h),
    )


def events(job: Job, scaling: Scaling) -> tuple[Event, ...]:
    """events: one Event per operation that began, finished, was rolled back or replaced. Each
    is named after the job (uid included), the operation's number and what happened, so a
    pass planned again from a status not yet back in the operator's cache records it once."""
    out = []
    for h in scaling.happenings:
        name = f"{job.name}.{job.uid[:8] or 'job'}.scale-{h.op.version}-{h.kind.value}"
        if h.kind is Kind.BEGAN:
            out.append(Event("Normal", EVENT_SCALING, message(job, h.op), name))
        elif h.kind is Kind.SUCCEEDED:
            out.append(Event("Normal", EVENT_SCALED, outcome_message(h), name))
        elif h.kind is Kind.ROLLED_BACK:
            out.append(Event("Warning", EVENT_ROLLBACK, outcome_message(h), name))
        else:
            out.append(Event("Normal", EVENT_CANCELLED, outcome_message(h), name))
    return tuple(out)


def message(job: Job, op: Op) -> str:
    """message: the seed's Scaling message (a rollback's names the operation it undoes)."""
    verb = op.operation.value
    what = ScaleOperation.SCALE_OUT.value if op.operation is ScaleOperation.ROLLBACK else verb
    text = (
        f"trainingJob {job.namespace}/{job.name} {verb} Operation {what} scale num {len(op.indices)} "
        f"scale pods {pod_list(op.pods)}, replicas name {op.replica} job version {op.version}"
    )
    if op.operation is ScaleOperation.ROLLBACK:
        text += f": {op.message}; replicas set back to {op.source}"
    return text


def outcome_message(h: Happening) -> str:
    """outcome_message: how an operation ended, for its Event and its scaleHistory entry."""
    op = h.op
    head = f"replica {op.replica}: {_verb(op)} from {op.source} to {op.target} (job version {op.version})"
    if h.kind is Kind.SUCCEEDED and op.operation is ScaleOperation.SCALE_OUT:
        return f"{head} done: pods {pod_list(op.pods)} are running and in the host list"
    if h.kind is Kind.SUCCEEDED:
        grace = _seconds(op.deadline - op.started)
        drained = f", {grace}s after leaving the host list" if op.draining else ""
        return f"{head} done: pods {pod_list(op.pods)} deleted{drained}"
    if h.kind is Kind.ROLLED_BACK:
        removed = f"pods {pod_list(op.pods)} removed, replicas set back to {op.source}"
        return f"{head} rolled back: {op.message}; {removed}"
    stays = "removed" if op.operation is ScaleOperation.SCALE_OUT else "stay"
    return f"{head} cancelled by an edit of replicas to {h.by}: pods {pod_list(op.pods)} {stays}"


def _verb(op: Op) -> str:
    """_verb: what the operation is (a rollback undoes a scaleout)."""
    return ScaleOperation.SCALE_OUT.value if op.operation is ScaleOperation.ROLLBACK else op.operation.value


def _seconds(delta: timedelta) -> int:
    return max(int(delta.total_seconds()), 0)


def conditions(job: Job, scaling: Scaling) -> tuple[Condition | None, Condition | None]:
    """conditions: (the Scaling condition an operation that began or was rolled back in this
    pass sets, the one an operation still in flight keeps). None when there is none."""
    changed = None
    for h in scaling.happenings:
        if h.kind is Kind.BEGAN:
            changed = Condition(Phase.SCALING, REASON_SCALING, message(job, h.op))
            break
        if h.kind is Kind.ROLLED_BACK:
            changed = Condition(Phase.SCALING, REASON_ROLLBACK, message(job, h.op))
            break
    busy = None
    for op in scaling.ops:
        reason = REASON_ROLLBACK if op.operation is ScaleOperation.ROLLBACK else REASON_SCALING
        busy = Condition(Phase.SCALING, reason, message(job, op), keep=True)
        break
    return changed, busy


def wake(scaling: Scaling, now: datetime) -> list[float]:
    """wake: seconds until an operation in flight falls due (rollback, or deleting drained pods)."""
    return [
        max((op.deadline - now).total_seconds(), 0.0)
        for op in scaling.ops
        if op.operation is not ScaleOperation.ROLLBACK
    ]
