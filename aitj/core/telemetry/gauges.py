"""A job's gauges at scrape time: its phase, its replicas by state, its restart budgets.

Pure. Read from the job's raw body (the cache's copy) and its pods without parsing the spec
(``aitj.core.api``): a scrape reads every job the operator holds, and this is a handful of
dict lookups per replica where a parse validates the whole spec. Anything unreadable counts as
its default (``replicas`` 1, no ``restartLimit``, phase Pending).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aitj.core.api import DEFAULT_REPLICAS, FINISHED_PHASES, Phase
from aitj.core.observed import PodView
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
    restartLimit) for each replica type that has a ``restartLimit``."""

    phase: Phase
    replicas: tuple[ReplicaCount, ...]
    budgets: tuple[tuple[str, float], ...]


def desired_replicas(body: Mapping[str, Any]) -> dict[str, int]:
    """desired_replicas: ``spec.replicaSpecs.<name>.replicas`` by replica name (1 when unset)."""
    specs = mapping(mapping(body.get("spec")).get("replicaSpecs"))
    return {
        str(name): max(as_int(mapping(spec).get("replicas"), DEFAULT_REPLICAS) or 0, 0)
        for name, spec in specs.items()
    }


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


def job_gauges(body: Mapping[str, Any], pods: Iterable[PodView]) -> JobGauges:
    """job_gauges: the phase, each replica type's pods by state and the restart budgets.

    Counted per index, on the index's newest pod: running (Running, not being deleted), pending
    (not finished and not Running: waiting to be scheduled or started, or being deleted with no
    successor yet), and vacant (``desired`` less the indexes that have a pod, finished or not;
    never below 0). A finished job wants no pods: nothing of it is vacant."""
    status = mapping(body.get("status"))
    try:
        phase = Phase(str(status.get("phase")))
    except ValueError:
        phase = Phase.PENDING
    desired = desired_replicas(body)
    held: dict[str, list[PodView]] = {name: [] for name in desired}
    for (replica, _), pod in newest(pods).items():
        if replica in held:
            held[replica].append(pod)
    counts = []
    for name, want in desired.items():
        mine = held[name]
        running = sum(1 for p in mine if p.running)
        pending = sum(1 for p in mine if not p.running and not p.terminal)
        vacant = 0 if phase in FINISHED_PHASES else max(want - len(mine), 0)
        counts.append(ReplicaCount(name, want, running, pending, vacant))
    return JobGauges(phase, tuple(counts), _budgets(body, status))


def _budgets(body: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """_budgets: RestartCount / restartLimit per replica type with a limit. A limit of 0 allows
    no restart at all: its budget is used up (1.0) from the start."""
    specs = mapping(mapping(body.get("spec")).get("replicaSpecs"))
    used = mapping(status.get("RestartCount"))
    out = []
    for name, spec in specs.items():
        limit = as_int(mapping(spec).get("restartLimit"))
        if limit is None or limit < 0:
            continue
        count = max(as_int(used.get(name), 0) or 0, 0)
        out.append((str(name), count / limit if limit else 1.0))
    return tuple(out)
