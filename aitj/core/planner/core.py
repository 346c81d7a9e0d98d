"""plan(job, pods, nodes, now) -> Plan: the one decision of a reconcile pass.

Pure and clock-free. A finished job (Succeeded, Failed, Timeout) only gets its cleanup. Any
other is assessed first (``assess``): the restart ledger merged (status + pod stamps + observed
generations), the scale operations prepared, the slots surveyed (aitj.core.planner.survey:
failures, restarts, gating), the operations settled. Then the outcome is judged
(aitj.core.planner.outcome): a job that ends in this pass gets its last status and cleanup
(``_finish``).

A job that goes on gets the Plan its features make together. ``_live`` builds the pass's
Context once (aitj.core.planner.context: what ``plan`` was given, the assessment, and the facts
several features share), hands it to each feature's ``part`` in the order of ``PARTS`` and
combines what they return (aitj.core.planner.part.combine): tuple steps one part's after the
other's, single-valued steps from at most one part, the status as each part's edit applied in
turn to the one before, the wake-up at the soonest any part asks for. The parts, in order:

- ``status_base``: phase, conditions, restart and replica counts, start times,
  observedGeneration, the restart ledger (the status every other part edits);
- ``creates``: the pods to create, rendered and placed;
- ``restarts``: the restarts recorded (Events, ``status.restarts``);
- ``retire``: deletes, force-deletes, finalizer releases;
- ``scaling.part``: the scale operations' Events, status fields, rollback patch, wake-up;
- ``rule_status``: ``status.excludedNodes``, the Events of rule budgets used up, wake-ups;
- ``degraded``: ``status.degraded`` and its Events, the shortfalls;
- ``hostfiles``: plugin.discovery's lists, the ConfigMap rewrite, the master pods' nudges;
- ``resources``: the job's missing objects and its Volcano PodGroup;
- ``disruption_budgets``: the PodDisruptionBudgets;
- ``gang``: the native gang's objects;
- ``timeouts``: wake-ups when a restartTimeout or the timeLimit falls due;
- ``suspend``: the Event of a resume. A suspended job's pass is ``suspend.plan_suspended``
  alone.

A new feature is a module with a ``part(ctx)``, its tests, and its line in ``PARTS`` (with its
name in the import of the planner's modules).

The caller may keep a Memo per job and hand it to each pass (``memo``; the reconciler does):
what earlier passes computed from inputs that have not changed (which pods are the job's, the
ledger parsed and merged, the survey's verdict of each current pod, the last survey and the
discovery lists) is reused, and patched where they changed (a ledger read again where the
status changed, a survey redone at the slots whose pods or records changed or that do not
run). It makes a pass cheaper, never different (aitj.core.planner.memo says why;
docs/operator.md, "Large jobs", has the figures).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from aitj.core.api import FINISHED_PHASES, CleanPodPolicy, Job, JobStatus, Phase
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import (
    context,
    creates,
    degraded,
    disruption_budgets,
    gang,
    goodput,
    hostfiles,
    in_place_status,
    objects,
    resources,
    restarts,
    retire,
    rule_status,
    scaling,
    status_base,
    suspend,
    timeouts,
)
from aitj.core.planner.context import Given
from aitj.core.planner.ledger import Ledger
from aitj.core.planner.memo import Memo, Seen
from aitj.core.planner.objects import owned_by as owned_by  # the pods' rule; core.owned_by for its readers
from aitj.core.planner.outcome import judge
from aitj.core.planner.part import Context, Part, combine
from aitj.core.planner.quick import quick_init
from aitj.core.planner.scaling import part as scaling_part
from aitj.core.planner.stamps import observe
from aitj.core.planner.status import Condition
from aitj.core.planner.survey import Shape, Survey, survey
from aitj.core.planner.types import DeleteReason, Event, Outcome, Owned, Plan, PodDelete, Settings, SshKeys
from aitj.core.wire import format_time, parse_time

DEFAULT_SETTINGS = Settings()


def plan(
    job: Job,
    pods: Sequence[PodView],
    nodes: Mapping[str, NodeView],
    now: datetime,
    *,
    owned: Owned | None = None,
    keys: SshKeys | None = None,
    settings: Settings = DEFAULT_SETTINGS,
    memo: Memo | None = None,
) -> Plan:
    """plan: what to do for ``job`` given its observed ``pods``, the cluster's ``nodes`` (by
    name; a missing node is gone) and the time ``now``. The same inputs give the same Plan.

    ``owned``: the objects other than pods observed under the job's names, with their state
    (None: not observed, see ``resources``; only those the job controls are its own:
    ``objects.split``); ``keys``: a key pair for the ssh Secret when
    ``resources.needs_ssh_keys`` says one is wanted; ``settings``: the operator's own;
    ``memo``: what the job's earlier passes found, kept by the caller for the job's next pass
    (aitj.core.planner.memo: it makes a pass cheaper, never different). Pods are named under
    the job's key (``status.ownership``; unkeyed without one): the pass that writes a key is
    aitj.core.planner.ownership's ``key_pass``, asked first."""
    return plan_and_assessment(job, pods, nodes, now, owned=owned, keys=keys, settings=settings, memo=memo)[0]


def plan_and_assessment(
    job: Job,
    pods: Sequence[PodView],
    nodes: Mapping[str, NodeView],
    now: datetime,
    *,
    owned: Owned | None = None,
    keys: SshKeys | None = None,
    settings: Settings = DEFAULT_SETTINGS,
    memo: Memo | None = None,
) -> tuple[Plan, Assessment | None]:
    """plan_and_assessment: ``plan``, and the Assessment it was made from (None for a job that
    has finished: its cleanup assesses nothing). ``aitj explain`` reads both."""
    prev = job.status
    # A job's pods are the ones it made: controlled by it (its uid) and named as the operator
    # names them. Labels alone prove nothing: anyone who may create pods in the namespace can
    # set them, and a pod counted by label could supersede a real one, join the host list, or
    # end the job. Nor is a pod of an earlier job of that name (deleted and created again
    # while its pods were still terminating) this job's. Any other pod only gets back the
    # finalizer it may carry.
    if memo is None:
        (mine, others), work = objects.pods_of(job, pods), None
    else:  # the same, each pod view judged once in its life
        seen = memo.seen(job, pods)
        mine, others, work = seen.mine, seen.others, (memo, seen)
    foreign = tuple(p.name for p in others if p.tracked)
    # Likewise the job's other objects: those it controls (objects.split).
    own, held = objects.split(job, owned)
    if memo is None:
        given = Given(own, keys, settings, nodes, held)
    else:
        given = Given(own, keys, settings, nodes, held, host_lists=memo.host_lists, texts=memo.texts)
    result, a = _plan_mine(job, mine, prev, nodes, now, given, work)
    result = goodput.carried(prev, result)  # conditions dropped: their goodput kept (section 25)
    if foreign:
        result = replace(result, release=tuple(dict.fromkeys(result.release + foreign)))
    return result, a


def _plan_mine(
    job: Job,
    mine: list[PodView],
    prev: JobStatus,
    nodes: Mapping[str, NodeView],
    now: datetime,
    g: Given,
    memo: tuple[Memo, Seen] | None,
) -> tuple[Plan, Assessment | None]:
    """_plan_mine: the plan for the job's own pods (plan_and_assessment's body)."""
    if (phase := prev.phase) in FINISHED_PHASES:
        return _cleanup(job, mine, phase, g.owned), None
    if job.spec.suspend:  # judges nothing: no failure, restart or time limit (aitj.core.planner.suspend)
        return suspend.plan_suspended(job, mine, now), None
    a = assess(job, mine, nodes, now, g.settings, memo)
    outcome = judge(job.spec, a.found, a.started, now)
    if outcome is not None:
        return _finish(job, mine, prev, a, outcome, now, g.owned), a
    return _live(job, prev, a, now, g), a


@quick_init
@dataclass(frozen=True)
class Assessment:
    """Assessment: what the planner makes of a live job before it decides anything: the restart
    ledger, the scale operation in flight, every index's verdict (the survey), and when the job
    first ran. ``aitj explain`` shows it pod by pod."""

    ledger: Ledger
    scale: scaling.Scaling
    found: Survey
    started: datetime | None


def assess(
    job: Job,
    mine: Sequence[PodView],
    nodes: Mapping[str, NodeView],
    now: datetime,
    settings: Settings,
    memo: tuple[Memo, Seen] | None = None,
) -> Assessment:
    """assess: the first steps of ``plan`` for a job that has not finished, given its own pods
    (``memo``: the job's Memo and what it saw of this pass's pods)."""
    prev = job.status
    if memo is None:
        ledger = observe(Ledger.from_status(prev), job, mine)
    else:
        ledger = memo[0].observe(memo[0].ledger(prev), job, memo[1])

    def surveyed(shape: Shape) -> Survey:
        if memo is None:
            return survey(job, mine, nodes, ledger, now, shape, settings.node_signals)
        return memo[0].survey(job, memo[1], nodes, ledger, now, shape, settings.node_signals)

    started = parse_time(prev.start_running_time)
    scale = scaling.prepare(job, prev, mine, now, started is not None)
    found = surveyed(scale.shape)
    scale, reshaped = scaling.settle(job, scale, found, now)
    if reshaped:  # a scale-out rolled back: its slots are gone, its pods retired
        found = surveyed(scale.shape)
    return Assessment(ledger, scale, found, started)


# ---------------------------------------------------------------------------------------------
# A job that goes on: the parts, combined

# Each feature's part of the pass (aitj.core.planner.part), in the order their steps and status
# edits combine. The order is the Plan's: Events come from retire, scaling, the rules' budgets,
# then degraded; the objects to ensure from resources, then the gang; the removes from the
# budgets, then the gang. A new feature adds its line here.
PARTS: tuple[Callable[[Context], Part], ...] = (
    status_base.part,  # the status the others edit
    creates.part,
    restarts.part,
    in_place_status.part,  # after restarts: it appends to status.restarts
    retire.part,
    scaling_part.part,
    rule_status.part,
    degraded.part,
    hostfiles.part,
    resources.part,
    disruption_budgets.part,
    gang.part,
    timeouts.part,
    suspend.part,
)


def _live(job: Job, prev: JobStatus, a: Assessment, now: datetime, given: Given) -> Plan:
    """_live: the Plan of a pass of a job that goes on: every part's, combined."""
    ctx = context.build(job, prev, a.found, a.scale, a.started, now, given)
    # Then what the parts' probes say of objects held by another: after every part, since it
    # edits the current condition and holds back the pods the parts create.
    combined = objects.with_proofs(job, combine(prev, [feature(ctx) for feature in PARTS]))
    return objects.held_back(ctx, combined)


# ---------------------------------------------------------------------------------------------
# A job that finishes, or has finished


def _finish(
    job: Job,
    pods: Sequence[PodView],
    prev: JobStatus,
    a: Assessment,
    outcome: Outcome,
    now: datetime,
    owned: Owned | None,
) -> Plan:
    """_finish: the pass in which the job ends. Restarts decided in the same pass are dropped
    (nothing is created once the job has ended), so the ledger is the one before them; those
    earlier passes decided and did not get to record are recorded."""
    stamp = format_time(now)
    condition = Condition(outcome.phase, outcome.reason, outcome.message)
    records = a.ledger.unrecorded()
    ledger = a.ledger.recording(records)
    status = restarts.record(status_base.rewrite(job, prev, ledger, a.found, condition, stamp), prev, records)
    # A finished job runs short of nothing, and protects nothing: its budgets go (not only
    # when the job is deleted).
    status = status.updated(completion_time=stamp, degraded=None, disruption_budgets=None)
    cleanup = _cleanup(job, pods, outcome.phase, owned)
    unbudgets = disruption_budgets.budget_removes(job, {}, disruption_budgets.recorded_budgets(prev), owned)
    kind = "Normal" if outcome.phase is Phase.SUCCEEDED else "Warning"
    return Plan(
        removes=tuple(dict.fromkeys(cleanup.removes + unbudgets)),
        deletes=cleanup.deletes,
        release=cleanup.release,
        status=status,
        events=(Event(kind, outcome.reason, outcome.message),),
        restart_events=tuple(restarts.restart_event(job, r) for r in records),
        restarts=records,
        outcome=outcome,
    )


def _cleanup(job: Job, pods: Sequence[PodView], phase: Phase | None, owned: Owned | None) -> Plan:
    """_cleanup: cleanPodPolicy on a finished job. All: delete every pod (and the Service);
    Running: delete the pods not finished; None: keep them. Every finalizer is released: a
    finished job tracks nothing. The status is left alone."""
    policy = job.spec.clean_pod_policy
    reason = f"job {phase}: cleanPodPolicy {policy}"
    # The old pods of a restart the job's end interrupted go whatever the policy: they are not
    # the job's pods any more (retire.superseded).
    old = retire.superseded(pods, Ledger.from_status(job.status))
    gone = {d.name for d in old}
    doomed = [
        p
        for p in pods
        if not p.deleting
        and p.name not in gone
        and (policy is CleanPodPolicy.ALL or (policy is CleanPodPolicy.RUNNING and not p.terminal))
    ]
    return Plan(
        removes=resources.removes(job, owned) + disruption_budgets.budget_removes(job, {}, {}, owned),
        deletes=old + tuple(PodDelete(p.name, p.uid, None, DeleteReason.CLEANUP, reason) for p in doomed),
        release=tuple(p.name for p in pods if p.tracked),
    )
