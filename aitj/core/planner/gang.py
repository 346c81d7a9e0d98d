"""Native gang scheduling: which gang a job's new pods join, and the gang objects it needs.

Pure. docs/gang.md is the user-facing description. A job is gang-scheduled when every one of
its replica templates names the same schedulerName and that name is one of
``Settings.gang_schedulers`` (empty unless the cluster serves the Workload API: then nothing
here changes anything). Its pods then belong to a PodGroup (``spec.schedulingGroup``), which
the scheduler places all or none: none of them is bound until ``minCount`` fit.

``minCount`` is the sum of the minReplicas of the replicas that start together (``members``):
the job runs once its minimum runs, and an elastic job (minReplicas below replicas) starts as
soon as its minimum fits; the pods above the minimum are placed as room allows. Masters of a
job with workers are not counted: the launcher is created only once every worker runs
(aitj.core.planner.survey's gate), so counting it would make the gang wait for a pod that
waits for the gang. It joins the gang when it comes, like scale-out pods.

The gang epoch. A pod names its PodGroup once (the field is immutable), and a PodGroup stays
until its last pod has stopped, so a gang cannot be emptied and refilled under one name while
old pods are on their way out: the scheduler would count those as the gang already placed and
bind new pods one by one. So gangs are numbered (``render.gang.pod_group_name``): the epoch in
use is the highest one the job's pods or PodGroups carry. A pass that creates pods while no
pod of the job stays live (every slot is created, replaced or waits; a restart of scope All,
or of the only replica) and a pod of the current gang still exists forms a new gang, epoch
plus one; the old PodGroup is deleted (the API keeps it until its pods are gone). Any other
create (scope Pod or Replica replacements, scale-out pods, the launcher) joins the current
gang: the scheduler places a pod that joins a gang already placed at once, without waiting
for the rest (docs/gang.md, "What the scheduler does").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aitj.core.api import Job, ReplicaSpec
from aitj.core.observed import PodView
from aitj.core.planner import objects
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.survey import State, Survey
from aitj.core.planner.types import Gang, Manifest, ObjectKind, ObjectRef, Owned, Settings
from aitj.core.render import gang as render_gang
from aitj.core.wire import mapping

# Slots whose pod stays: a pass that keeps one of them adds to the gang in place.
_KEEPS = (State.PENDING, State.RUNNING)


def part(ctx: Context) -> Part:
    """part: the gang objects the job lacks (one held by another under its name is tried
    again after the status write instead: ``objects.probes``), and the PodGroups of earlier
    epochs removed (the pods join the gang by their Placement, aitj.core.planner.creates)."""
    if ctx.gang is None:
        return Part()
    made, probes = objects.probes(ctx.gang.ensure, ctx.foreign)
    return Part(steps(ensure=made, removes=ctx.gang.removes, probes=probes))


def scheduler_name(job: Job) -> str | None:
    """scheduler_name: the schedulerName every replica's pod template names (None when they
    differ or one names none: the default scheduler, and a gang's pods must share one)."""
    names = {mapping(mapping(r.template).get("spec")).get("schedulerName") for r in job.spec.replicas}
    name = names.pop() if len(names) == 1 else None
    return name if isinstance(name, str) and name else None


def gang_scheduled(job: Job, settings: Settings) -> bool:
    """gang_scheduled: the job's pods go to a scheduler that gang-schedules natively."""
    name = scheduler_name(job)
    return name is not None and name in settings.gang_schedulers


def members(job: Job) -> tuple[ReplicaSpec, ...]:
    """members: the replicas whose pods start together (``render.gang.start_together``)."""
    return render_gang.start_together(job)


def min_count(job: Job) -> int:
    """min_count: how many pods must fit for the gang to be placed: the members' minReplicas
    (at least one: the API wants a positive count)."""
    return max(sum(r.min_replicas for r in members(job)), 1)


def epoch_in_use(job: Job, pods: Iterable[PodView], owned: Owned) -> int:
    """epoch_in_use: the highest gang epoch the job's pods or PodGroups name (0: none yet)."""
    names = [p.pod_group for p in pods if p.pod_group]
    names += [ref.name for ref in owned if ref.kind is ObjectKind.GANG_POD_GROUP]
    epochs = [render_gang.pod_group_epoch(job.name, n) for n in names]
    return max((e for e in epochs if e is not None), default=0)


def plan_gang(job: Job, found: Survey, owned: Owned | None, settings: Settings) -> Gang | None:
    """plan_gang: the gang of a live job this pass (None: not gang-scheduled, or its objects
    not observed: then nothing about gangs is planned)."""
    if owned is None or not gang_scheduled(job, settings):
        return None
    pods = _pods(found)
    epoch = epoch_in_use(job, pods, owned)
    current = render_gang.pod_group_name(job.name, epoch)
    creating = any(s.state in (State.CREATE, State.REPLACE) for s in found.slots)
    keeps = any(s.state in _KEEPS and s.pod is not None for s in found.slots)
    held = any(p.pod_group == current and not p.terminal for p in pods)
    if creating and not keeps and held:
        epoch += 1
    name = render_gang.pod_group_name(job.name, epoch)
    count = min_count(job)
    ensure: list[Manifest] = []
    workload = render_gang.workload_name(job.name)
    if ObjectRef(ObjectKind.GANG_WORKLOAD, workload) not in owned:
        body = render_gang.render_workload(job, count, settings.gang_version)
        ensure.append(Manifest(ObjectKind.GANG_WORKLOAD, workload, body))
    if ObjectRef(ObjectKind.GANG_POD_GROUP, name) not in owned:
        body = render_gang.render_pod_group(job, epoch, count, settings.gang_version)
        ensure.append(Manifest(ObjectKind.GANG_POD_GROUP, name, body))
    removes = tuple(
        sorted(
            (
                ObjectRef(ref.kind, ref.name, owned[ref].uid)  # the uid: the delete's precondition
                for ref in owned
                if ref.kind is ObjectKind.GANG_POD_GROUP
                and (old := render_gang.pod_group_epoch(job.name, ref.name)) is not None
                and old < epoch
            ),
            key=lambda ref: ref.name,
        )
    )
    return Gang(name, epoch, tuple(ensure), removes)


def _pods(found: Survey) -> Sequence[PodView]:
    """_pods: every pod the survey saw: the slots' current pods and those being retired."""
    return [s.pod for s in found.slots if s.pod is not None] + [t.pod for t in found.retirees]
