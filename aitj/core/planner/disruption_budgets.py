"""PodDisruptionBudgets: one per replica type, so a drain takes one pod of each at a time
(aitj.core.render.pdb says why minAvailable).

Pure. What was last written is kept in ``status.disruptionBudgets`` ({replica: minAvailable}),
so a budget is rewritten only when the pods it should protect change (a restart that stands, a
scale), and, once the cache observes budgets in ``owned``, made again when deleted by hand.
``part`` is one of each pass of a job that goes on; a job that finishes removes its budgets
(aitj.core.planner.core), since it protects nothing any more.
"""

from __future__ import annotations

from collections.abc import Mapping

from aitj.core import render
from aitj.core.api import Job, JobStatus
from aitj.core.planner.part import Context, Part
from aitj.core.planner.survey import State
from aitj.core.planner.types import Manifest, ObjectKind, ObjectRef, Owned, Plan


def part(ctx: Context) -> Part:
    """part: the budgets to write and to remove, and what they are, for the status to record."""
    job = ctx.job
    expected = {
        r.name: sum(1 for s in ctx.found.of(r.name) if s.state not in (State.SUCCEEDED, State.FAILED))
        for r in job.spec.replicas
    }
    wanted = wanted_budgets(job, expected)
    recorded = recorded_budgets(ctx.prev)
    plan = Plan(
        budgets=budgets(job, wanted, recorded, ctx.owned),
        removes=budget_removes(job, wanted, recorded, ctx.owned),
    )
    return Part(plan, edit=lambda status: status.updated(disruption_budgets=wanted or None))


def budget_ref(job: Job, replica: str) -> ObjectRef:
    """budget_ref: the PodDisruptionBudget of one replica type."""
    return ObjectRef(ObjectKind.PDB, render.pdb_name(job.name, replica))


def wanted_budgets(job: Job, expected: Mapping[str, int]) -> dict[str, int]:
    """wanted_budgets: minAvailable per replica type, given how many of its pods are
    ``expected`` to run (indices neither succeeded nor failed for good: a vacant index must
    not keep a drain waiting). Empty when the job opts out."""
    allowed = render.max_unavailable(job)
    if allowed is None:
        return {}
    return {name: max(count - allowed, 0) for name, count in expected.items()}


def recorded_budgets(status: JobStatus) -> dict[str, int]:
    """recorded_budgets: the budgets the status says were written."""
    return dict(status.disruption_budgets or {})


def budgets(
    job: Job, wanted: Mapping[str, int], recorded: Mapping[str, int], owned: Owned | None
) -> tuple[Manifest, ...]:
    """budgets: the budgets to write: those whose minAvailable changed since the status
    recorded them, and those ``owned`` lacks (None: not observed)."""
    return tuple(
        Manifest(ObjectKind.PDB, budget_ref(job, name).name, render.render_pdb(job, name, value))
        for name, value in sorted(wanted.items())
        if recorded.get(name) != value or (owned is not None and budget_ref(job, name) not in owned)
    )


def budget_removes(
    job: Job, wanted: Mapping[str, int], recorded: Mapping[str, int], owned: Owned | None
) -> tuple[ObjectRef, ...]:
    """budget_removes: the budgets recorded or observed that are no longer wanted (the job
    opted out, or finished: ``wanted`` empty)."""
    have = {budget_ref(job, name) for name in recorded}
    have |= {ref for ref in owned or () if ref.kind is ObjectKind.PDB}
    keep = {budget_ref(job, name) for name in wanted}
    return tuple(sorted(have - keep, key=lambda ref: ref.name))
