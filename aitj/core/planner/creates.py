"""The pods a pass creates: one per slot the survey says to create or replace, rendered and
placed.

Pure. Each pod is rendered under the name the survey gave its slot, with the restart counts and
the restart ledger's stamp of this pass (so a pass that fails after any create is recorded by
the next one), and placed (``render.Placement``): kept off the nodes that show a fault signal
and the nodes its index must avoid (a rule's excludeNodeSeconds), in the job's Volcano PodGroup
and native gang when it has them, with the PriorityClass of the job's priority.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from aitj.core import nodesignals, render
from aitj.core.api import MAX_RESTART_RECORDS
from aitj.core.observed import ANNOTATION_LEDGER, TRACKING_FINALIZER
from aitj.core.planner import in_place, resources, rule_budgets
from aitj.core.planner.part import Context, Part
from aitj.core.planner.survey import Slot, State
from aitj.core.planner.types import Plan, PodCreate


def part(ctx: Context) -> Part:
    """part: the pods to create."""
    wanted = [s for s in ctx.found.astir if s.state in (State.CREATE, State.REPLACE)]
    if not wanted:
        return Part()
    job = ctx.job
    counts = {r.name: ctx.found.ledger.replica(r.name).restart_count for r in job.spec.replicas}
    # Bounded like status.restarts, which keeps no more.
    annotations = {ANNOTATION_LEDGER: ctx.ledger.annotation(ctx.records[-MAX_RESTART_RECORDS:])}
    placement = render.Placement(
        # The scheduler knows nothing of fault signals: without this it would put a
        # replacement straight back on the node its predecessor was lost on.
        avoid_nodes=nodesignals.faulty_nodes(ctx.nodes, ctx.settings.node_signals),
        volcano_pod_group=resources.pod_group(job, ctx.settings),
        gang_pod_group=ctx.gang.pod_group if ctx.gang is not None else None,
        priority_class=ctx.settings.priority_classes.get(job.spec.priority or ""),
    )
    return Part(Plan(creates=tuple(_create(ctx, s, counts, annotations, placement) for s in wanted)))


def _create(
    ctx: Context,
    slot: Slot,
    counts: Mapping[str, int],
    annotations: Mapping[str, str],
    placement: render.Placement,
) -> PodCreate:
    """_create: the pod of ``slot`` (its successor's, for a replacement), placed as
    ``placement`` says and kept off the nodes its index must avoid."""
    history = ctx.ledger.replica(slot.replica.name)
    avoid = rule_budgets.avoid(history, slot.index, ctx.now)
    body = render.render_pod(
        ctx.job,
        render.PodIdentity(slot.replica, slot.index, slot.generation, slot.name),
        counts,
        finalizer=TRACKING_FINALIZER,
        extra_annotations=annotations,
        placement=replace(placement, exclude_hostnames=avoid),
        # the InPlace rungs with budget left now: a pod's rules cannot change once it exists
        in_place=in_place.codes(slot.replica, ctx.job.spec.fault_tolerant, history, ctx.now),
    )
    return PodCreate(slot.name, slot.replica.name, slot.index, slot.generation, body)
