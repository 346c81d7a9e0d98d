"""A job's gauges at scrape time: its phase, its replicas by state, its restart budgets.

Pure. Read from the job's raw body (the cache's copy) and its pods without parsing the spec
(``aitj.core.api``): a scrape reads every job the operator holds, and this is a handful of
dict lookups per replica where a parse validates the whole spec. Anything unreadable counts as
its default (``replicas`` 1, no ``restartLimit``, phase Pending).

Only the job's own pods count (``own_pods``: the job is their controller and their names are
the ones the operator derives), as in the planner (``aitj.core.planner.core.owned_by``): a pod
that only carries the job's labels is no replica of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aitj.core.api import DEFAULT_REPLICAS, FINISHED_PHASES, JobStatus, Ownership, Phase
from aitj.core.observed import PodView
from aitj.core.planner.goodput import Account, Resumption, account
from aitj.core.wire import as_int, mapping


@dataclass(frozen=True)
class ReplicaCount:
    """ReplicaCount: one replica type's ``aitj_job_replicas`` (``labels.ReplicaState``)."""

    replica: str
    desired: int
    running: int
    pending: int
    vacant: int


@dataclass(frozen=True)
class JobGauges:
    """JobGauges: what a scrape reports of one job. ``budgets``: (replica, RestartCount /
    restartLimit) for each replica type that has a ``restartLimit``; ``degraded``: how many
    indices the job runs short of (``status.degraded.count``, 0 when absent); ``goodput``: the
    account of its time (aitj.core.planner.goodput), when the scrape gives ``now``."""

    phase: Phase
    replicas: tuple[ReplicaCount, ...]
    budgets: tuple[tuple[str, float], ...]
    degraded: int = 0
    goodput: Account | None = None  # None: not asked for (no ``now``)


def _specs(body: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """_specs: ``spec.replicaSpecs`` by replica name."""
    return {str(n): mapping(s) for n, s in mapping(mapping(body.get("spec")).get("replicaSpecs")).items()}


def desired_replicas(body: Mapping[str, Any]) -> dict[str, int]:
    """desired_replicas: ``spec.replicaSpecs.<name>.replicas`` by replica name (1 when unset)."""
    return _desired(_specs(body))


def _desired(specs: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """_desired: each replica spec's ``replicas`` (1 when unset, never below 0)."""
    return {name: max(as_int(spec.get("replicas"), DEFAULT_REPLICAS) or 0, 0) for name, spec in specs.items()}


def own_pods(body: Mapping[str, Any], pods: Iterable[PodView]) -> list[PodView]:
    """own_pods: the pods the job of ``body`` made (``PodView.made_by``)."""
    meta = mapping(body.get("metadata"))
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    held = mapping(body.get("status")).get("ownership")  # read alone: a scrape parses no ledger
    ownership = Ownership.from_json(held) if isinstance(held, Mapping) else None
    return [p for p in pods if p.made_by(name, uid, ownership)]


def newest(pods: Iterable[PodView]) -> dict[tuple[str, int], PodView]:
    """newest: per (replica, index), the pod with the highest generation (the index's current
    pod; older ones are on their way out)."""
    out: dict[tuple[str, int], PodView] = {}
    for p in pods:
        if p.replica is None or p.index is None:
            continue
        key = (p.replica, p.index)
        held = out.get(key)
        if held is None or p.generation > held.generation:
            out[key] = p
    return out


def job_gauges(
    body: Mapping[str, Any],
    pods: Iterable[PodView],
    now: datetime | None = None,
    resumed: Resumption | None = None,
) -> JobGauges:
    """job_gauges: the phase, each replica type's pods by state (its own pods only:
    ``own_pods``), the restart budgets and the indices short (as the job's degraded state,
    written by the planner, says).

    Counted per index, on the index's newest pod: running (Running, not being deleted), pending
    (not finished and not Running: waiting to be scheduled or started, or being deleted with no
    successor yet), and vacant (``desired`` less the indexes that have a pod, finished or not;
    never below 0). A finished or suspended job wants no pods: nothing of it is vacant.
    ``resumed``: the progress signal's facts for the goodput (``goodput.account``)."""
    status = JobStatus.from_json(body.get("status"))
    phase = status.phase or Phase.PENDING
    specs = _specs(body)
    desired = _desired(specs)
    held: dict[str, list[PodView]] = {name: [] for name in desired}
    for (replica, _), pod in newest(own_pods(body, pods)).items():
        if replica in held:
            held[replica].append(pod)
    counts = []
    idle = phase in FINISHED_PHASES or phase is Phase.SUSPENDED  # wants no pods (spec.suspend too)
    for name, want in desired.items():
        mine = held[name]
        running = pending = 0
        for p in mine:
            if p.running:
                running += 1
            elif not p.terminal:
                pending += 1
        vacant = 0 if idle else max(want - len(mine), 0)
        counts.append(ReplicaCount(name, want, running, pending, vacant))
    degraded = 0 if idle else max((status.degraded.count if status.degraded is not None else None) or 0, 0)
    good = account(status, now, resumed) if now is not None else None
    return JobGauges(phase, tuple(counts), _budgets(specs, status), degraded, good)


def _budgets(specs: Mapping[str, Mapping[str, Any]], status: JobStatus) -> tuple[tuple[str, float], ...]:
    """_budgets: RestartCount / restartLimit per replica type with a limit. A limit of 0 allows
    no restart at all: its budget is used up (1.0) from the start."""
    used = status.restart_count or {}
    out = []
    for name, spec in specs.items():
        limit = as_int(spec.get("restartLimit"))
        if limit is None or limit < 0:
            continue
        count = max(used.get(name, 0), 0)
        out.append((name, count / limit if limit else 1.0))
    return tuple(out)
