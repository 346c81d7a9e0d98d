"""Stamps: the restart ledger as the job's pods tell it, merged into the one the status holds.

Pure. Every pod the operator creates carries the ledger as it stood when the pod was planned
(aitj.core.planner.ledger), and its labels tell its index's generation; the planner merges both
into the status's ledger before it surveys anything (aitj.core.planner.core.assess).
"""

from __future__ import annotations

from collections.abc import Sequence

from aitj.core.api import Job
from aitj.core.observed import PodView
from aitj.core.planner.ledger import IndexHistory, Ledger, ReplicaHistory, pod_ledger


def observe(ledger: Ledger, job: Job, pods: Sequence[PodView]) -> Ledger:
    """observe merges what the pods tell into the ledger: their stamps and their generations.

    The merge is a join (per field the latest, for each record the first), so what the pods
    tell is one ledger (``told``), merged into the status's: a caller that keeps it while the
    pods tell the same (aitj.core.planner.memo) merges one ledger into a new status's, not
    every pod's stamp again."""
    return ledger.merge(told(job, pods))


def told(job: Job, pods: Sequence[PodView]) -> Ledger:
    """told: what ``pods`` tell of the ledger: their stamps and their generations, merged."""
    names = {r.name for r in job.spec.replicas}
    generations: dict[str, dict[int, int]] = {}
    for p in pods:
        if p.replica in names and p.index is not None and p.index >= 0:
            by_index = generations.setdefault(p.replica, {})
            by_index[p.index] = max(by_index.get(p.index, -1), p.generation)
    seen = Ledger(
        tuple(
            (name, ReplicaHistory(0, tuple((i, IndexHistory(seen=g)) for i, g in sorted(by_index.items()))))
            for name, by_index in sorted(generations.items())
        )
    )
    # Pods created by one pass carry one stamp, parsed once (pod_ledger caches it): merge
    # each distinct stamp once, not once per pod.
    stamps = {id(stamp): stamp for stamp in map(pod_ledger, pods)}
    return Ledger().merge(*stamps.values(), seen)
