"""The job's PodDisruptionBudgets: one per replica type, so a drain takes its pods one at a time.

A voluntary eviction (``kubectl drain``, the descheduler, a cluster autoscaler's scale-down)
asks the eviction API, which refuses while a budget has no disruption left. With at most
``max_unavailable`` pods of a replica type (default 1) allowed to be down, a drain of several
nodes evicts one trainer, waits until the operator's replacement runs elsewhere, then the next.

The budget says ``minAvailable`` (an integer the operator keeps equal to the replica's pods
expected to run, less ``max_unavailable``), not ``maxUnavailable``: for ``maxUnavailable`` the
disruption controller counts expected pods through the owner's /scale subresource, and the
AITrainingJob's /scale is the trainer's alone, which would be wrong for every other replica type.

The job annotation ``ANNOTATION_MAX_UNAVAILABLE`` changes it: an integer (0 stops voluntary
evictions of the job's pods altogether, so a drain waits for the job), or ``none`` for no
budgets. Anything else is the default. docs/semantics.md says the same for users.

A replica with ``checkpointOnDrain`` is rendered with ``min_available`` all its expected pods
(no eviction) until its pods on cordoned nodes have had their hook: the planner decides it
(aitj.core.planner.drain_checkpoint), this only writes the number (semantics.md section 26).
"""

from __future__ import annotations

from typing import Any

from aitj.core import api
from aitj.core.render._meta import object_meta

ANNOTATION_MAX_UNAVAILABLE = f"{api.LABEL_PREFIX}/max-unavailable"
DEFAULT_MAX_UNAVAILABLE = 1
OPT_OUT = "none"


def max_unavailable(job: api.Job) -> int | None:
    """max_unavailable: how many pods of each replica type a voluntary eviction may take at
    once; None when the job opts out of budgets (annotation ``none``)."""
    value = job.annotations.get(ANNOTATION_MAX_UNAVAILABLE, "").strip()
    if value.lower() == OPT_OUT:
        return None
    return int(value) if value.isdigit() else DEFAULT_MAX_UNAVAILABLE


def pdb_name(job_name: str, replica: str) -> str:
    """pdb_name: the budget of one replica type, ``<job>-<replica>``."""
    return f"{job_name}-{replica}"


def render_pdb(job: api.Job, replica: str, min_available: int) -> dict[str, Any]:
    """render_pdb: the budget of ``replica``'s pods: at least ``min_available`` of them healthy
    for an eviction to go ahead. Pods not healthy anyway (pending, failing) may always be
    evicted (``unhealthyPodEvictionPolicy: AlwaysAllow``): a budget must never keep a drain
    waiting on a pod that is of no use."""
    meta = object_meta(job, pdb_name(job.name, replica))
    meta["labels"][api.LABEL_REPLICA] = replica
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": pdb_spec(job.name, replica, min_available),
    }


def pdb_spec(job_name: str, replica: str, min_available: int) -> dict[str, Any]:
    """pdb_spec: the spec of ``render_pdb``: of the job's name, the replica and the number
    alone (the planner fingerprints it on every pass, keyed on these three)."""
    return {
        "minAvailable": max(min_available, 0),
        "selector": {"matchLabels": {api.LABEL_JOB: job_name, api.LABEL_REPLICA: replica}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }
