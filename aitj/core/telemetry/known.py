"""known: the label sets a job's counters can take, known from its spec before anything happens,
so that the operator makes them at 0 when it first plans the job.

Why: Prometheus's ``increase()`` and ``rate()`` see only changes between samples. A counter
series that first appears at 1 (the job's first restart of a cause, its only scale-out) has no
earlier 0 to change from, so it reads 0 on every panel and alert, unless Prometheus runs with the
``created-timestamp-zero-ingestion`` feature. A series made at 0 when the job is first planned is
scraped at 0 first, and its first increment counts everywhere.

Pure: from the parsed ``api.Job`` alone. The sets may hold more than ever moves (a rule that
never fires), never less than the policy allows: a label set missing here only falls back to
appearing at its first increment.
"""

from __future__ import annotations

from aitj.core import api
from aitj.core.api import Phase, ReplicaSpec
from aitj.core.planner.lifecycle import REASON_INVALID
from aitj.core.planner.outcome import REASON_FAILED, REASON_SUCCEEDED, REASON_TIMEOUT
from aitj.core.policy import FailReason, FailureKind, allows
from aitj.core.render.discovery import gpus
from aitj.core.telemetry.labels import ScaleDirection, ScaleResult

# Every (phase, reason) a job can end with (``aitj_jobs_finished_total``): the outcome's reasons
# and the lifecycle's refusal of a spec it cannot run.
FINISHED: tuple[tuple[str, str], ...] = (
    (Phase.SUCCEEDED.value, REASON_SUCCEEDED),
    (Phase.FAILED.value, REASON_FAILED),
    (Phase.FAILED.value, FailReason.RESTART_LIMIT_EXCEEDED.value),
    (Phase.FAILED.value, FailReason.RESTART_TIMEOUT.value),
    (Phase.FAILED.value, REASON_INVALID),
    (Phase.TIMEOUT.value, REASON_TIMEOUT),
)
# Every (direction, result) of a scale operation.
SCALINGS: tuple[tuple[str, str], ...] = tuple((d.value, r.value) for d in ScaleDirection for r in ScaleResult)


def restarts(replica: ReplicaSpec, fault_tolerant: bool) -> tuple[tuple[str, str], ...]:
    """restarts: the (cause, scope) pairs a restart of ``replica`` can have, as
    ``policy.decide`` can decide them: without ``fault_tolerant``, each kind its restartPolicy
    allows, with the replica's scope; with it, the kinds each rule names (exit codes, or its
    events) that the restartPolicy allows, with that rule's scope."""
    if not fault_tolerant:
        kinds = [k for k in FailureKind if allows(replica.restart_policy, k)]
        return tuple((k.value, replica.restart_scope.value) for k in kinds)
    pairs: dict[tuple[str, str], None] = {}  # ordered, each once
    for rule in replica.rules:
        kinds = [FailureKind.EXIT_CODE] if rule.exit_codes else [FailureKind(e.value) for e in rule.events]
        for kind in kinds:
            if allows(replica.restart_policy, kind):
                pairs[(kind.value, rule.restart_scope.value)] = None
    return tuple(pairs)


def restart_labels(job: api.Job) -> tuple[tuple[str, str, str], ...]:
    """restart_labels: (replica, cause, scope) of every restart the job's policy can make."""
    return tuple(
        (r.name, cause, scope)
        for r in job.spec.replicas
        for cause, scope in restarts(r, job.spec.fault_tolerant)
    )


def lost_gpu_causes(job: api.Job) -> tuple[str, ...]:
    """lost_gpu_causes: the causes of the restarts that can cost GPU time: those of the replica
    types whose pods ask for GPUs (a restart of pods without GPUs adds nothing)."""
    causes: dict[str, None] = {}
    for r in job.spec.replicas:
        if gpus(r.template) > 0:
            causes.update(dict.fromkeys(cause for cause, _ in restarts(r, job.spec.fault_tolerant)))
    return tuple(causes)


def scales(job: api.Job) -> bool:
    """scales: whether the job can be scaled (a replica type with a range of replicas)."""
    return any(r.min_replicas != r.max_replicas for r in job.spec.replicas)
