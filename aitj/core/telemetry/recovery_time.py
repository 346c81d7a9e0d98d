"""A restart, followed until its replacements run: recovery time, fault detection, GPU time lost.

Pure and clock-free. The controller (``aitj.controller.recovery_metrics``) begins a ``Recovery`` for each
``RestartRecord`` right after the status write that records it, feeds it the job's pods on
every pass (``advance``), and observes the figures once it is ``finished``:

- recovery time: from the pass that decided the restart (``RestartRecord.time``, when the
  operator observed the fault) to the last replacement Running, as the operator saw it;
- fault detection: from the fault's own time (``Failure.at``; none when the cluster gives none)
  to the create of the failed index's replacement;
- GPU time lost: for each restarted pod, its GPUs times the seconds from the fault
  (``Failure.at``, else the decision) to its replacement Running;
- the job's recovery: from the decision to the end of the first pass, from the one that saw the
  last replacement Running on, after which the discovery ConfigMap holds that pass's lists
  (``listed``): the replacements Running and listed for discovery, the end the operator
  itself can see. What comes after (the training noticing the new host, the ring re-forming)
  happens inside the pods (docs/metrics.md).

What "replaced" means follows the restart's scope (``aitj.core.planner.survey``): scope Pod
renews one index, so its newest pod must be of a later generation than the failed one; scope
Replica / All bumps the restart epoch of the replica / of every replica, so every index of
those replicas must have a newest pod stamped with that epoch or a later one. One record is
one restart and one observation, however many pods it restarted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from aitj.core.api import Job, RestartScope
from aitj.core.observed import PodView
from aitj.core.planner.ledger import Ledger, pod_epoch
from aitj.core.planner.types import ObjectKind, Plan, RestartRecord
from aitj.core.render import gpus
from aitj.core.telemetry.gauges import newest

Index = tuple[str, int]  # (replica, index)


@dataclass(frozen=True)
class Awaited:
    """Awaited: what one restarted replica type must show. ``index`` set (scope Pod): that
    index's newest pod is of a generation above ``generation``. ``index`` None (scope Replica
    or All): each index's newest pod carries restart epoch ``epoch`` or later. ``gpus``: per pod."""

    replica: str
    index: int | None
    generation: int
    epoch: int
    gpus: int

    def replaces(self, index: int, pod: PodView) -> bool:
        """replaces: ``pod``, the newest at ``index`` of this replica, is a replacement."""
        if self.index is not None:
            return index == self.index and pod.generation > self.generation
        return pod_epoch(pod) >= self.epoch


@dataclass(frozen=True)
class Recovery:
    """Recovery: one restart on its way back. ``created``: when the failed index's replacement
    was created (None: not yet known); ``running``: each replaced index and when it was first
    seen Running (sorted)."""

    record: RestartRecord
    awaited: tuple[Awaited, ...]
    created: datetime | None = None
    running: tuple[tuple[Index, datetime], ...] = ()

    @property
    def fault(self) -> datetime:
        """fault: when the fault happened (``Failure.at``), else when it was decided on."""
        return self.record.failure.at or self.record.time

    def detection_seconds(self) -> float | None:
        """detection_seconds: from the fault's own time to the replacement's create (None when
        either is unknown)."""
        at = self.record.failure.at
        if at is None or self.created is None:
            return None
        return max((self.created - at).total_seconds(), 0.0)

    def recovery_seconds(self) -> float:
        """recovery_seconds: from the decision to the last replacement seen Running."""
        end = max((t for _, t in self.running), default=self.record.time)
        return max((end - self.record.time).total_seconds(), 0.0)

    def seconds_until(self, end: datetime) -> float:
        """seconds_until: from the decision to ``end`` (the job's recovery: ``end`` is when the
        replacements were listed for discovery)."""
        return max((end - self.record.time).total_seconds(), 0.0)

    def lost_gpu_seconds(self) -> float:
        """lost_gpu_seconds: per replaced index, its pod's GPUs times the seconds from the fault
        to its replacement Running."""
        per_pod = {a.replica: a.gpus for a in self.awaited}
        return sum(
            per_pod.get(replica, 0) * max((t - self.fault).total_seconds(), 0.0)
            for (replica, _), t in self.running
        )

    def replaces_failed(self, index: Index, pod: PodView) -> bool:
        """replaces_failed: ``pod`` (newest at ``index``) replaces the pod whose fault this is."""
        r = self.record
        return index == (r.replica, r.index) and pod.generation > r.generation


def begin(
    record: RestartRecord, job: Job, ledger: Ledger | None, created: datetime | None = None
) -> Recovery:
    """begin: the recovery of ``record``. ``ledger``: the restart ledger of the status that
    recorded it (its epochs say what a scope restart waits for; None will do for a Pod
    restart, which waits for its index alone); ``created``: when this pass created the failed
    index's replacement, if it did."""
    per_pod = {r.name: gpus(r.template) for r in job.spec.replicas}
    if record.scope is RestartScope.POD:
        one = Awaited(record.replica, record.index, record.generation, 0, per_pod.get(record.replica, 0))
        awaited: tuple[Awaited, ...] = (one,)
    else:
        if ledger is None:
            raise ValueError(f"a {record.scope} restart's recovery needs the ledger's epochs")
        names = [record.replica] if record.scope is RestartScope.REPLICA else list(per_pod)
        awaited = tuple(Awaited(n, None, -1, ledger.replica(n).epoch, per_pod.get(n, 0)) for n in names)
    return Recovery(record, awaited, created)


def awaited_pods(
    recoveries: Sequence[Recovery],
    pods: Sequence[PodView],
    at: Callable[[Collection[tuple[str, int]]], list[PodView]] | None = None,
) -> list[PodView]:
    """awaited_pods: the ``pods`` some recovery waits on: at its index (scope Pod), or of its
    replica (Replica, All). ``advance`` reads no other, and a pass of a job of thousands looks
    at one or a few pods instead of checking whose every pod is (a name hashed per pod).
    ``at``: the pods of ``pods`` at some (replica, index) slots, found without looking through
    them (the cache's index of a job's pods by slot); Pod restarts only are then looked up."""
    indexes = {(a.replica, a.index) for r in recoveries for a in r.awaited if a.index is not None}
    replicas = {a.replica for r in recoveries for a in r.awaited if a.index is None}
    if replicas:
        return [p for p in pods if p.replica in replicas or (p.replica, p.index) in indexes]
    if at is not None:  # looked up by slot: a pass costs the slots awaited, not the job's pods
        return at(indexes)
    # Pod restarts only (the common case): the index alone rules out nearly every pod, a third of
    # the time of building each pod's (replica, index) (0.33 -> 0.10 ms at 4,096 pods).
    at_index = {index for _, index in indexes}
    return [p for p in pods if p.index in at_index and (p.replica, p.index) in indexes]


def advance(recovery: Recovery, pods: Sequence[PodView], now: datetime) -> Recovery:
    """advance: ``recovery`` after seeing the job's ``pods`` at ``now``: replacements Running for
    the first time are noted at ``now``; the failed index's replacement, when the operator did
    not see its create (a pass before this process recorded the restart), counts as created at
    its creationTimestamp."""
    running = dict(recovery.running)
    created = recovery.created
    for index, pod in newest(pods).items():
        awaited = [a for a in recovery.awaited if a.replica == index[0] and a.replaces(index[1], pod)]
        if not awaited:
            continue
        if created is None and recovery.replaces_failed(index, pod):
            created = pod.created
        if pod.running and index not in running:
            running[index] = now
    if running == dict(recovery.running) and created == recovery.created:
        return recovery
    return replace(recovery, created=created, running=tuple(sorted(running.items())))


def finished(recovery: Recovery, desired: Mapping[str, int]) -> bool:
    """finished: every index the restart took down runs again: the one index (scope Pod), or
    as many indexes as the replica type wants now (``desired``, by replica; Replica / All)."""
    seen = [index for index, _ in recovery.running]
    for a in recovery.awaited:
        if a.index is not None:
            if (a.replica, a.index) not in seen:
                return False
        elif sum(1 for replica, _ in seen if replica == a.replica) < desired.get(a.replica, 0):
            return False
    return True


def listed(plan: Plan, carried_out: bool) -> bool:
    """listed: after the pass that planned ``plan``, the discovery ConfigMap holds the lists
    that pass planned from its snapshot and the launchers were nudged to read them: the pass
    carried its steps out through the status write, which comes after those two
    (``carried_out``), or had neither to send (the ConfigMap already held these lists; a job
    without plugin.discovery has none). A pass that stopped before its status write is taken as
    not having listed them, even if its ConfigMap write went through: the next pass, which finds
    the ConfigMap holding the lists, ends the recovery, a pass late."""
    if carried_out:
        return True
    to_write = plan.discovery is not None or any(m.kind is ObjectKind.CONFIGMAP for m in plan.ensure)
    return not to_write and not plan.nudges
