"""Status: the phase, the condition history and the status fields, as the seed shows them.

Pure. The history: each new condition is appended with status "True" and the one before set to
"False", bounded to api.MAX_STATUS_CONDITIONS (oldest dropped). A condition of the current
type is never appended twice: when only its message changes (Creating's pod list) the message
is updated in place, with lastProbeTime; lastTransitionTime keeps when the phase began.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from aitj.core.api import (
    LABEL_JOB,
    LABEL_REPLICA,
    MAX_LISTED,
    MAX_STATUS_CONDITIONS,
    SCALE_REPLICA,
    ConditionStatus,
    Job,
    JobCondition,
    Phase,
    ReplicaStatus,
)
from aitj.core.planner import hang
from aitj.core.planner.quick import quick_init
from aitj.core.planner.survey import Slot, State, Survey
from aitj.core.policy import FailureKind

REASON_PENDING = "TrainingJobPending"
REASON_CREATING = "TrainingJobCreating"
REASON_RUNNING = "TrainingJobRunning"
REASON_RESTARTING = "TrainingJobRestarting"
REASON_SCALING = "TrainingJobScaling"

MESSAGE_PENDING = "all pods are waiting for scheduling"
MESSAGE_RUNNING = "all pods are running"


@quick_init
@dataclass(frozen=True)
class Condition:
    """Condition: the condition this pass wants current. ``keep``: leave the current one as
    it is (a phase that goes on, e.g. Restarting, keeps the message it began with)."""

    type: Phase
    reason: str
    message: str
    keep: bool = False


def advance_conditions(
    conditions: Sequence[JobCondition], want: Condition, now: str
) -> tuple[JobCondition, ...]:
    """advance_conditions: the history with ``want`` current (unchanged when it already is)."""
    history = list(conditions)
    last = history[-1] if history and history[-1].status is ConditionStatus.TRUE else None
    if last is not None and last.type is want.type:
        if want.keep or (last.reason, last.message) == (want.reason, want.message):
            return tuple(history)
        history[-1] = replace(last, reason=want.reason, message=want.message, last_probe_time=now)
        return tuple(history)
    history = [
        replace(c, status=ConditionStatus.FALSE) if c.status is ConditionStatus.TRUE else c for c in history
    ]
    history.append(
        JobCondition(
            type=want.type,
            status=ConditionStatus.TRUE,
            reason=want.reason,
            message=want.message,
            last_probe_time=now,
            last_transition_time=now,
        )
    )
    return tuple(history[-MAX_STATUS_CONDITIONS:])


# The scheduler's message is quoted; it grows with the number of distinct reasons.
MAX_QUOTED = 512


def pod_list(names: Sequence[str]) -> str:
    """pod_list writes pod names the way the seed's messages do: ``[a b c]``; past MAX_LISTED
    names, ``[a b c ... and 9968 more]``."""
    if len(names) > MAX_LISTED:
        return "[" + " ".join(names[:MAX_LISTED]) + f" ... and {len(names) - MAX_LISTED} more]"
    return "[" + " ".join(names) + "]"


def unschedulable_note(slots: Sequence[Slot]) -> str:
    """unschedulable_note: why pods wait, when the scheduler said it cannot place them
    (``; the scheduler cannot place pod p (and 2 more): 0/4 nodes are available: ...``), so a
    template no node fits reads as such; empty when no pod is unschedulable."""
    stuck = [s.pod for s in slots if s.pod is not None and s.pod.unschedulable]
    if not stuck:
        return ""
    more = f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else ""
    said = str(stuck[0].unschedulable)
    if len(said) > MAX_QUOTED:
        said = said[:MAX_QUOTED] + "..."
    return f"; the scheduler cannot place pod {stuck[0].name}{more}: {said}"


def live_condition(
    job: Job,
    survey: Survey,
    previous: Phase | None,
    started: bool,
    scaling: Condition | None = None,
    scaling_busy: Condition | None = None,
    joining: frozenset[tuple[str, int]] = frozenset(),
) -> Condition:
    """live_condition: the condition of a job that goes on (not finished).

    Restarting from a restart decision until every wanted pod runs again (also when a
    replacement is still on its way after an operator restart). Scaling (aitj.core.planner.scaling)
    when a scale operation begins or is rolled back (``scaling``), and while one is in flight
    (``scaling_busy``); scale-out pods still on their way (``joining``) are the operation's
    business, not a restart's. Running when every wanted pod runs (succeeded pods and failures
    that stand do not hold it up). Before that: Pending while no pod has been scheduled, then
    Creating with the pods not yet running.
    """
    busy = any(state.in_progress for counts in survey.states.values() for state in counts)
    waiting = [s for s in survey.astir if s.state.in_progress] if busy else []
    replacing = [s for s in waiting if (s.replica.name, s.index) not in joining]
    if survey.restarts:
        return Condition(Phase.RESTARTING, REASON_RESTARTING, restart_message(survey))
    if scaling is not None:
        return scaling
    if scaling_busy is not None and previous is Phase.SCALING:
        return scaling_busy
    # A replacement on its way after an operator restart is a restart's (generation > 0), but
    # not before the job (re)runs: a resumed job's pods are next generations (aitj.core.planner.suspend).
    renewed = started and any(s.generation > 0 for s in replacing)
    if replacing and (previous is Phase.RESTARTING or renewed):
        wait_message = f"waiting for pods {pod_list([s.name for s in replacing])} to run"
        return Condition(Phase.RESTARTING, REASON_RESTARTING, wait_message, keep=True)
    if scaling_busy is not None:
        return scaling_busy
    if not waiting:
        return Condition(Phase.RUNNING, REASON_RUNNING, running_message(survey))
    why = unschedulable_note(waiting)
    if not started and not any(s.pod is not None and s.pod.node_name for s in survey.slots):
        return Condition(Phase.PENDING, REASON_PENDING, MESSAGE_PENDING + why)
    return Condition(
        Phase.CREATING,
        REASON_CREATING,
        f"pods {pod_list([s.name for s in waiting])} creating containers{why}",
    )


def running_message(survey: Survey) -> str:
    """running_message: the seed's ``all pods are running``, unless failures that stand leave
    indices vacant; then it names them, so a job that runs short of pods does not read as
    whole: ``pods are running; vacant, as failures that stand are not restarted: index [0] of
    replica trainer``."""
    vacant: dict[str, list[str]] = {}
    hangs: list[str] = []
    for s in survey.astir:
        if s.state is State.FAILED and (words := hang_words(s)) is not None:
            hangs.append(words)  # its pod runs on: not vacant
        elif s.state is State.FAILED:
            vacant.setdefault(s.replica.name, []).append(str(s.index))
    parts = [f"index {pod_list(indices)} of replica {name}" for name, indices in vacant.items()]
    said = [f"vacant, as failures that stand are not restarted: {', '.join(parts)}"] if parts else []
    if not said and not hangs:
        return MESSAGE_RUNNING
    return "; ".join(["pods are running", *said, *hangs])


def hang_words(slot: Slot) -> str | None:
    """hang_words: ``hang.standing`` of a failed slot whose failure is a hang that stands while
    its pod runs on (section 24: no rule restarts it, and its replica's failPolicy lets the job
    go on); None for any other slot."""
    failure, pod = slot.failure, slot.pod
    if failure is None or failure.kind is not FailureKind.HANG or pod is None or pod.terminal:
        return None
    return hang.standing(pod.name, failure)


def restart_message(survey: Survey) -> str:
    """restart_message: the Restarting condition's message, one part per restart decided (with
    the backoff its replacement waits out, if any)."""
    # A slot in backoff does not run: looked for among those that do not (Survey.astir, kept by
    # delta), not among a large job's thousands (issue 26).
    held = {
        (s.replica.name, s.index): f"; {s.shortfall.message}"
        for s in survey.astir
        if s.state is State.BACKOFF and s.shortfall is not None
    }
    parts = [
        f"pod {r.pod}: {r.failure.description}; rule {r.rule} restarts scope {r.scope}"
        + held.get((r.replica, r.index), "")
        for r in survey.restarts[:MAX_LISTED]
    ]
    if len(survey.restarts) > MAX_LISTED:
        parts.append(f"and {len(survey.restarts) - MAX_LISTED} more restarts")
    return "; ".join(parts)


def replica_statuses(survey: Survey, names: Sequence[str]) -> dict[str, ReplicaStatus]:
    """replica_statuses: per replica, pending (to be created, scheduled or started), running,
    succeeded, failed (failures that stand) and active (pending + running)."""
    out: dict[str, ReplicaStatus] = {}
    for name in names:
        states = survey.states.get(name, Counter[State]())
        pending = sum(n for st, n in states.items() if st.in_progress)
        running = states[State.RUNNING]
        out[name] = ReplicaStatus(
            active=pending + running,
            pending=pending,
            running=running,
            succeeded=states[State.SUCCEEDED],
            failed=states[State.FAILED],
        )
    return out


def scale_fields(job: Job, counts: Mapping[str, ReplicaStatus]) -> tuple[int, str] | None:
    """scale_fields: trainerReplicas and selector for the /scale subresource (None: the job has
    no replica of that name)."""
    if SCALE_REPLICA not in counts:
        return None
    return counts[SCALE_REPLICA].active or 0, f"{LABEL_JOB}={job.name},{LABEL_REPLICA}={SCALE_REPLICA}"
