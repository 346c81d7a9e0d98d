"""plan(job, pods, nodes, now) -> Plan: the one decision of a reconcile pass.

Pure and clock-free. The steps: merge the restart ledger (status + pod stamps + observed
generations), survey the slots (aitj.core.planner.survey: failures, restarts, gating), judge the
outcome (aitj.core.planner.outcome), then turn it all into rendered pods to create, deletes,
finalizer releases, one status, events, the rendered discovery ConfigMap, the job's missing
objects (aitj.core.planner.resources) and the next time-based wake-up.
A finished job (Succeeded, Failed, Timeout) only gets its cleanup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from aitj.core import naming, nodesignals, render
from aitj.core.api import (
    FINISHED_PHASES,
    MAX_RESTART_RECORDS,
    CleanPodPolicy,
    Job,
    JobStatus,
    Phase,
    RestartScope,
)
from aitj.core.observed import ANNOTATION_LEDGER, TRACKING_FINALIZER, NodeView, PodView
from aitj.core.planner import degraded, gang, hostfiles, resources, rule_budgets, scaling
from aitj.core.planner.ledger import Ledger, record_entry
from aitj.core.planner.outcome import judge, timeout_at
from aitj.core.planner.retire import retire
from aitj.core.planner.status import (
    Condition,
    advance_conditions,
    live_condition,
    replica_statuses,
    scale_fields,
)
from aitj.core.planner.survey import Slot, State, Survey, observe, survey
from aitj.core.planner.types import (
    DeleteReason,
    Event,
    Manifest,
    ObjectRef,
    Outcome,
    Owned,
    Plan,
    PodCreate,
    PodDelete,
    RestartRecord,
    Settings,
    SshKeys,
)
from aitj.core.wire import format_time, parse_time

EVENT_RESTARTING = "TrainingJobRestarting"


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
) -> Plan:
    """plan: what to do for ``job`` given its observed ``pods``, the cluster's ``nodes`` (by
    name; a missing node is gone) and the time ``now``. The same inputs give the same Plan.

    ``owned``: the job's Service, ssh Secret and discovery ConfigMap the cache holds (None: not
    observed, see ``resources``); ``keys``: a key pair for the ssh Secret when
    ``resources.needs_ssh_keys`` says one is wanted; ``settings``: the operator's own."""
    return plan_and_assessment(job, pods, nodes, now, owned=owned, keys=keys, settings=settings)[0]


def plan_and_assessment(
    job: Job,
    pods: Sequence[PodView],
    nodes: Mapping[str, NodeView],
    now: datetime,
    *,
    owned: Owned | None = None,
    keys: SshKeys | None = None,
    settings: Settings = DEFAULT_SETTINGS,
) -> tuple[Plan, Assessment | None]:
    """plan_and_assessment: ``plan``, and the Assessment it was made from (None for a job that
    has finished: its cleanup assesses nothing). ``aitj explain`` reads both."""
    prev = job.status
    named = [p for p in pods if p.job == job.name and p.namespace in ("", job.namespace)]
    # A pod labelled with the job's name but made by an earlier job of that name (deleted and
    # created again while its pods were still terminating) is not this job's: counting it
    # would hand the old job's restarts to the new one. It only gets its finalizer back.
    mine = [p for p in named if p.owner_uid in (None, job.uid)]
    foreign = tuple(p.name for p in named if p.owner_uid not in (None, job.uid) and p.tracked)
    result, a = _plan_mine(job, mine, prev, nodes, now, _Given(owned, keys, settings, nodes))
    if foreign:
        result = replace(result, release=tuple(dict.fromkeys(result.release + foreign)))
    return result, a


def _plan_mine(
    job: Job,
    mine: list[PodView],
    prev: JobStatus,
    nodes: Mapping[str, NodeView],
    now: datetime,
    g: _Given,
) -> tuple[Plan, Assessment | None]:
    """_plan_mine: the plan for the job's own pods (plan_and_assessment's body)."""
    if (phase := prev.phase) in FINISHED_PHASES:
        return _cleanup(job, mine, phase, g.owned), None
    a = assess(job, mine, nodes, now, g.settings)
    outcome = judge(job.spec, a.found, a.started, now)
    if outcome is not None:
        return _finish(job, mine, prev, a.found, a.ledger, outcome, now, g.owned), a
    return _live(job, prev, a.found, a.scale, a.started, now, g), a


@dataclass(frozen=True)
class _Given:
    """_Given: plan's inputs about the world beyond the job's pods, for a live job."""

    owned: Owned | None
    keys: SshKeys | None
    settings: Settings
    nodes: Mapping[str, NodeView]


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
    job: Job, mine: Sequence[PodView], nodes: Mapping[str, NodeView], now: datetime, settings: Settings
) -> Assessment:
    """assess: the first steps of ``plan`` for a job that has not finished, given its own pods."""
    prev = job.status
    ledger = observe(Ledger.from_status(prev), job, mine)
    started = parse_time(prev.start_running_time)
    scale = scaling.prepare(job, prev, mine, now, started is not None)
    found = survey(job, mine, nodes, ledger, now, scale.shape, settings.node_signals)
    scale, reshaped = scaling.settle(job, scale, found, now)
    if reshaped:  # a scale-out rolled back: its slots are gone, its pods retired
        found = survey(job, mine, nodes, ledger, now, scale.shape, settings.node_signals)
    return Assessment(ledger, scale, found, started)


# ---------------------------------------------------------------------------------------------
# A job that goes on


def _live(
    job: Job,
    prev: JobStatus,
    found: Survey,
    scale: scaling.Scaling,
    started: datetime | None,
    now: datetime,
    given: _Given,
) -> Plan:
    stamp = format_time(now)
    previous = prev.phase
    shape = scale.shape
    began, busy = scaling.conditions(job, scale)
    condition = live_condition(job, found, previous, started is not None, began, busy, shape.joining)
    if condition.type is Phase.RUNNING and started is None:
        started = now
    counts = {r.name: found.ledger.replica(r.name).restart_count for r in job.spec.replicas}
    # What this pass records: restarts earlier passes decided and did not get to record, and its own.
    records = found.ledger.unrecorded() + found.restarts
    ledger = rule_budgets.prune(job, found.ledger.recording(records), now)
    # Every pod created carries them, so a pass that fails after any create is recorded by the
    # next one; bounded like status.restarts, which keeps no more.
    annotations = {ANNOTATION_LEDGER: ledger.annotation(records[-MAX_RESTART_RECORDS:])}
    wanted = [s for s in found.slots if s.state in (State.CREATE, State.REPLACE)]
    # No pod goes where a node shows a fault signal: the scheduler knows nothing of them.
    off = nodesignals.faulty_nodes(given.nodes, given.settings.node_signals) if wanted else ()
    joins = gang.plan_gang(job, found, given.owned, given.settings)
    placement = render.Placement(
        avoid_nodes=tuple(off),
        volcano_pod_group=resources.pod_group(job, given.settings),
        gang_pod_group=joins.pod_group if joins is not None else None,
        priority_class=given.settings.priority_classes.get(job.spec.priority or ""),
    )
    creates = tuple(
        _create(
            job,
            s,
            counts,
            annotations,
            replace(
                placement, exclude_hostnames=rule_budgets.avoid(ledger.replica(s.replica.name), s.index, now)
            ),
        )
        for s in wanted
    )
    deletes, release, force_events, wake = retire(job, found.retirees, now)
    lists = hostfiles.host_lists(job, found, shape.joining)
    hosts = lists.hosts if lists is not None else None
    status = scaling.write_status(_status(job, prev, ledger, found, condition, stamp), scale, now)
    shortfalls = tuple(s.shortfall for s in found.slots if s.shortfall is not None)
    status = status.updated(excluded_nodes=rule_budgets.excluded_status(job, ledger, now, shortfalls) or None)
    if started is not None:
        status = status.updated(start_running_time=format_time(started))
    status = _record(hostfiles.record(status, lists), prev, records)
    status, degraded_events = degraded.update(status, job, found, shortfalls, prev, now, shape.joining)
    wake += _timeouts(job, found, started, now) + scaling.wake(scale, now)
    wake += rule_budgets.wakes(shortfalls, rule_budgets.next_expiry(job, ledger, now), now)
    changed = hostfiles.changed(prev, lists)
    budgets, unbudgets, wanted_budgets = _budgets(job, found, prev, given.owned)
    podgroup, podgroup_spec = resources.podgroup_rewrite(job, prev, given.owned, given.settings)
    status = status.updated(disruption_budgets=wanted_budgets or None, volcano_pod_group=podgroup_spec)
    running = lists.running if lists is not None else None
    return Plan(
        ensure=resources.ensure(job, given.owned, given.keys, hosts or (), running)
        + resources.podgroups(job, given.owned, given.settings)
        + (joins.ensure if joins else ()),
        removes=unbudgets + (joins.removes if joins else ()),
        budgets=budgets,
        podgroup=podgroup,
        creates=creates,
        discovery=resources.discovery(job, hosts, running) if hosts is not None and changed else None,
        nudges=hostfiles.nudges(found, lists),
        deletes=deletes,
        release=tuple(dict.fromkeys(release + found.released)),
        status=None if status == prev else status,
        events=force_events + scaling.events(job, scale) + _budget_events(job, found) + degraded_events,
        restart_events=tuple(_restart_event(job, r) for r in records),
        requeue_after=min(wake) if wake else None,
        hosts=hosts if hostfiles.hosts_changed(prev, lists) else None,
        restarts=records,
        spec_replicas=scale.patches,
        shortfalls=shortfalls,
    )


def _budgets(
    job: Job, found: Survey, prev: JobStatus, owned: Owned | None
) -> tuple[tuple[Manifest, ...], tuple[ObjectRef, ...], dict[str, int]]:
    """_budgets: the PodDisruptionBudgets to write and to remove, and what they are, for the
    status to record (resources, "PodDisruptionBudgets")."""
    expected = {
        r.name: sum(1 for s in found.of(r.name) if s.state not in (State.SUCCEEDED, State.FAILED))
        for r in job.spec.replicas
    }
    wanted = resources.wanted_budgets(job, expected)
    recorded = resources.recorded_budgets(prev)
    return (
        resources.budgets(job, wanted, recorded, owned),
        resources.budget_removes(job, wanted, recorded, owned),
        wanted,
    )


def _budget_events(job: Job, found: Survey) -> tuple[Event, ...]:
    """_budget_events: one per failure that stands because a rule's budget ran out."""
    events = (
        rule_budgets.budget_event(job, s.name, s.generation, s.shortfall) for s in found.slots if s.shortfall
    )
    return tuple(e for e in events if e is not None)


def _create(
    job: Job,
    slot: Slot,
    counts: Mapping[str, int],
    annotations: Mapping[str, str],
    placement: render.Placement,
) -> PodCreate:
    """_create: the pod of ``slot`` (its successor's, for a replacement), rendered under the
    name the survey gave it, placed as ``placement`` says."""
    pod = render.PodIdentity(slot.replica, slot.index, slot.generation, slot.name)
    body = render.render_pod(
        job, pod, counts, finalizer=TRACKING_FINALIZER, extra_annotations=annotations, placement=placement
    )
    return PodCreate(slot.name, slot.replica.name, slot.index, slot.generation, body)


def _status(
    job: Job, prev: JobStatus, ledger: Ledger, found: Survey, condition: Condition, stamp: str
) -> JobStatus:
    """_status: ``prev`` with what every pass of a job that has not finished rewrites."""
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


def _timeouts(job: Job, found: Survey, started: datetime | None, now: datetime) -> list[float]:
    """_timeouts: seconds until the next restartTimeout or timeLimit falls due."""
    wake: list[float] = []
    for s in found.slots:
        p, timeout = s.pod, s.replica.restart_timeout
        if (
            s.state is State.PENDING
            and p is not None
            and p.generation > 0
            and timeout is not None
            and p.created
        ):
            due = p.created + timedelta(seconds=timeout)
            wake.append((due - now).total_seconds())
    if started is not None and job.spec.time_limit is not None:
        wake.append((timeout_at(started, job.spec.time_limit) - now).total_seconds())
    return [max(w, 0.0) for w in wake]


def _record(status: JobStatus, prev: JobStatus, records: Sequence[RestartRecord]) -> JobStatus:
    """_record: ``status`` with ``records`` appended to ``status.restarts`` (the last
    MAX_RESTART_RECORDS kept). Each is recorded once: the ledger's ``recorded`` marks, written
    in the same status, keep a later pass from recording it again (aitj.core.planner.ledger)."""
    if not records:
        return status
    history = (*(prev.restarts or ()), *(record_entry(r) for r in records))
    return status.updated(restarts=history[-MAX_RESTART_RECORDS:])


def _restart_event(job: Job, r: RestartRecord) -> Event:
    """_restart_event: the Event of a restart, named after it (job uid, replica, index, failed
    generation): the pass that decides it and any pass that records it late send the same
    Event, which the API server keeps once."""
    what = {
        RestartScope.POD: f"pod {naming.pod_name(job.name, job.uid, r.replica, r.index, r.generation + 1)}",
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


# ---------------------------------------------------------------------------------------------
# A job that finishes, or has finished


def _finish(
    job: Job,
    pods: Sequence[PodView],
    prev: JobStatus,
    found: Survey,
    ledger: Ledger,
    outcome: Outcome,
    now: datetime,
    owned: Owned | None,
) -> Plan:
    """_finish: the pass in which the job ends. Restarts decided in the same pass are dropped
    (nothing is created once the job has ended), so the ledger is the one before them; those
    earlier passes decided and did not get to record are recorded."""
    stamp = format_time(now)
    condition = Condition(outcome.phase, outcome.reason, outcome.message)
    records = ledger.unrecorded()
    status = _record(_status(job, prev, ledger.recording(records), found, condition, stamp), prev, records)
    # A finished job runs short of nothing, and protects nothing: its budgets go (not only
    # when the job is deleted).
    status = status.updated(completion_time=stamp, degraded=None, disruption_budgets=None)
    cleanup = _cleanup(job, pods, outcome.phase, owned)
    unbudgets = resources.budget_removes(job, {}, resources.recorded_budgets(prev), owned)
    kind = "Normal" if outcome.phase is Phase.SUCCEEDED else "Warning"
    return Plan(
        removes=tuple(dict.fromkeys(cleanup.removes + unbudgets)),
        deletes=cleanup.deletes,
        release=cleanup.release,
        status=status,
        events=(Event(kind, outcome.reason, outcome.message),),
        restart_events=tuple(_restart_event(job, r) for r in records),
        restarts=records,
        outcome=outcome,
    )


def _cleanup(job: Job, pods: Sequence[PodView], phase: Phase | None, owned: Owned | None) -> Plan:
    """_cleanup: cleanPodPolicy on a finished job. All: delete every pod (and the Service);
    Running: delete the pods not finished; None: keep them. Every finalizer is released: a
    finished job tracks nothing. The status is left alone."""
    policy = job.spec.clean_pod_policy
    reason = f"job {phase}: cleanPodPolicy {policy}"
    doomed = [
        p
        for p in pods
        if not p.deleting
        and (policy is CleanPodPolicy.ALL or (policy is CleanPodPolicy.RUNNING and not p.terminal))
    ]
    return Plan(
        removes=resources.removes(job, owned) + resources.budget_removes(job, {}, {}, owned),
        deletes=tuple(PodDelete(p.name, p.uid, None, DeleteReason.CLEANUP, reason) for p in doomed),
        release=tuple(p.name for p in pods if p.tracked),
    )
