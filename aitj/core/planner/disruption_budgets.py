"""PodDisruptionBudgets: one per replica type, so a drain takes one pod of each at a time
(aitj.core.render.pdb says why minAvailable).

Pure. A budget is rewritten when what it is observed to hold (its fingerprint,
aitj.core.planner.objects) is not what the pods it should protect call for (a restart that
stands, a scale), and made again when deleted by hand (the operator lists budgets every 30 s
rather than watching them, aitj.controller.cache.RELISTED: so within 30 s); ``status.disruptionBudgets``
({replica: minAvailable}) records what is wanted, for people, and decides only when the
objects are not observed (``aitj explain``). A budget held by another is never written.
``part`` is one of each pass of a job that goes on; a job that finishes removes its budgets
(aitj.core.planner.core), since it protects nothing any more.

A replica with ``checkpointOnDrain`` is held (minAvailable all its expected pods: no eviction)
except while its pods on cordoned nodes have had their hooks (aitj.core.planner.drain_checkpoint,
which also names the hooks to start: the Plan's ``drain_hooks``). Without budgets (the job opts
out) there is nothing to hold a drain with, and no hook runs.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from aitj.core import render
from aitj.core.api import Job, JobStatus
from aitj.core.planner import drain_checkpoint, objects
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.survey import State
from aitj.core.planner.types import Manifest, ObjectKind, ObjectRef, Owned


def part(ctx: Context) -> Part:
    """part: the budgets to write and to remove, and what they are, for the status to record."""
    job = ctx.job
    ended = (State.SUCCEEDED, State.FAILED)
    expected = {
        r.name: sum(n for st, n in ctx.found.states.get(r.name, {}).items() if st not in ended)
        for r in job.spec.replicas
    }
    hold = drain_checkpoint.decide(job, ctx.found.slots, ctx.nodes, ctx.now)
    wanted = wanted_budgets(job, expected, hold.held)
    recorded = recorded_budgets(ctx.prev)
    written, probes = objects.probes(budgets(job, wanted, recorded, ctx.owned), ctx.foreign)
    plan = steps(
        budgets=written,
        removes=budget_removes(job, wanted, recorded, ctx.owned),
        probes=probes,
        drain_hooks=hold.hooks if wanted else (),
        events=hold.events if wanted else (),
    )
    return Part(plan, edit=lambda status: status.updated(disruption_budgets=wanted or None), wake=hold.wake)


def budget_ref(job: Job, replica: str) -> ObjectRef:
    """budget_ref: the PodDisruptionBudget of one replica type."""
    return ObjectRef(ObjectKind.PDB, render.pdb_name(job.name, replica))


def wanted_budgets(
    job: Job, expected: Mapping[str, int], held: frozenset[str] = frozenset()
) -> dict[str, int]:
    """wanted_budgets: minAvailable per replica type, given how many of its pods are
    ``expected`` to run (indices neither succeeded nor failed for good: a vacant index must
    not keep a drain waiting); all of them for a replica ``held`` for its checkpoint before a
    drain. Empty when the job opts out."""
    allowed = render.max_unavailable(job)
    if allowed is None:
        return {}
    return {name: max(count - (0 if name in held else allowed), 0) for name, count in expected.items()}


def recorded_budgets(status: JobStatus) -> dict[str, int]:
    """recorded_budgets: the budgets the status says were written."""
    return dict(status.disruption_budgets or {})


def budgets(
    job: Job, wanted: Mapping[str, int], recorded: Mapping[str, int], owned: Owned | None
) -> tuple[Manifest, ...]:
    """budgets: the budgets to write, stamped (aitj.core.planner.objects): those ``owned``
    lacks, and those observed holding another spec than the one wanted (their fingerprint),
    whatever the status recorded; not observed (``owned`` None): those whose minAvailable
    differs from the one the status recorded."""
    out = []
    for name, value in sorted(wanted.items()):
        fingerprint = spec_fingerprint(job.name, name, value)
        ref = budget_ref(job, name)
        if owned is None:
            write = recorded.get(name) != value
        else:
            write = ref not in owned or objects.stale(owned, ref, fingerprint)
        if write:  # rendered only when written: most passes write none
            body = render.render_pdb(job, name, value)
            out.append(objects.stamped(Manifest(ObjectKind.PDB, ref.name, body), fingerprint, owned))
    return tuple(out)


# Every pass of every job fingerprints its budgets, and the JSON and hash of it were 5 % of a
# small job's pass: the spec is a function of these three (render.pdb_spec), so is its print.
@functools.lru_cache(maxsize=4096)
def spec_fingerprint(job_name: str, replica: str, min_available: int) -> str:
    """spec_fingerprint: ``objects.digest`` of the budget's spec (``render.pdb_spec``)."""
    return objects.digest(render.pdb_spec(job_name, replica, min_available))


def budget_removes(
    job: Job, wanted: Mapping[str, int], recorded: Mapping[str, int], owned: Owned | None
) -> tuple[ObjectRef, ...]:
    """budget_removes: the job's budgets observed (not observed: recorded) that are no longer
    wanted (the job opted out, or finished: ``wanted`` empty), each with the uid observed (the
    delete's precondition)."""
    if owned is None:
        have = {budget_ref(job, name) for name in recorded}
    else:
        have = {
            ObjectRef(ref.kind, ref.name, s.uid) for ref, s in owned.items() if ref.kind is ObjectKind.PDB
        }
    keep = {budget_ref(job, name) for name in wanted}
    return tuple(sorted((ref for ref in have if ref not in keep), key=lambda ref: ref.name))
