"""Outcome: whether the job has succeeded, failed or run out of time.

Pure. completePolicy / failPolicy at replica level (over the indices of one replica: All, Any,
None, Rank0 = index 0) and at job level (over the replica types that take part, i.e. whose own
policy is not None: All, Any, None). None never decides; an empty set never decides. Success
is checked before failure, and both before timeLimit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from aitj.core.api import JobSpec, Phase, Policy, ReplicaSpec
from aitj.core.planner.survey import Slot, State, Survey
from aitj.core.planner.types import Outcome
from aitj.core.policy import FailReason
from aitj.core.wire import format_time

REASON_SUCCEEDED = "TrainingJobSucceeded"
REASON_FAILED = "TrainingJobFailed"
REASON_TIMEOUT = "TrainingJobTimeout"
# Fail reasons that name a Failed condition themselves; the others are TrainingJobFailed.
_OWN_REASONS = frozenset({FailReason.RESTART_LIMIT_EXCEEDED, FailReason.RESTART_TIMEOUT})


def replica_meets(policy: Policy, slots: Sequence[Slot], state: State) -> bool:
    """replica_meets: the replica's ``policy`` holds for ``state`` over its indices."""
    hits = [s.state is state for s in sorted(slots, key=lambda s: s.index)]
    if not hits or policy is Policy.NONE:
        return False
    if policy is Policy.ALL:
        return all(hits)
    if policy is Policy.ANY:
        return any(hits)
    return hits[0]  # Rank0: index 0


def job_meets(policy: Policy, replicas: Sequence[ReplicaSpec], met: Callable[[ReplicaSpec], bool]) -> bool:
    """job_meets: the job-level ``policy`` over the replicas that take part. Rank0 is not a
    job-level policy (admission refuses it): like None, it never decides."""
    if not replicas or policy not in (Policy.ALL, Policy.ANY):
        return False
    results = [met(r) for r in replicas]
    return all(results) if policy is Policy.ALL else any(results)


def judge(spec: JobSpec, survey: Survey, started: datetime | None, now: datetime) -> Outcome | None:
    """judge: the job's outcome after this pass's decisions, or None while it goes on."""
    completing = [r for r in spec.replicas if r.complete_policy is not Policy.NONE]

    def succeeded(r: ReplicaSpec) -> bool:
        return replica_meets(r.complete_policy, survey.of(r.name), State.SUCCEEDED)

    if job_meets(spec.complete_policy, completing, succeeded):
        done = [r.name for r in completing if succeeded(r)]
        return Outcome(
            Phase.SUCCEEDED,
            REASON_SUCCEEDED,
            f"replicas [{', '.join(done)}] succeeded (job completePolicy {spec.complete_policy})",
        )
    failing = [r for r in spec.replicas if r.fail_policy is not Policy.NONE]

    def failed(r: ReplicaSpec) -> bool:
        return replica_meets(r.fail_policy, survey.of(r.name), State.FAILED)

    if job_meets(spec.fail_policy, failing, failed):
        first = next(s for r in failing if failed(r) for s in survey.of(r.name) if s.state is State.FAILED)
        assert first.failure is not None and first.fail is not None
        reason = first.fail.reason
        return Outcome(
            Phase.FAILED,
            reason.value if reason in _OWN_REASONS else REASON_FAILED,
            f"pod {first.name} of replica {first.replica.name} failed: {first.failure.description}; "
            f"{first.fail.message}",
        )
    if started is not None and spec.time_limit is not None and now >= timeout_at(started, spec.time_limit):
        return Outcome(
            Phase.TIMEOUT,
            REASON_TIMEOUT,
            f"job ran longer than timeLimit {spec.time_limit}s (running since {format_time(started)})",
        )
    return None


def timeout_at(started: datetime, time_limit: int) -> datetime:
    return started + timedelta(seconds=time_limit)
