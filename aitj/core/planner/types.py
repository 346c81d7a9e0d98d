"""The Plan: everything one reconcile pass should do, as plain frozen data.

Pure. ``aitj.core.planner.plan`` returns a Plan; the executor (aitj/controller/executor.py)
carries it out in this
order, and the planner is written so that a crash or a failed call anywhere in between is
repaired by the next pass:

1. ``resources``: ENSURE the headless Service (and the ssh Secret / discovery ConfigMap when
   the plugins are on) exists; DELETE the Service (cleanPodPolicy All after the job finished).
2. ``creates``: render each pod with ``aitj.core.render.render_pod(job, job.spec.replica(c.replica),
   c.index, c.generation, c.restart_counts, finalizer=observed.TRACKING_FINALIZER,
   extra_annotations=c.annotations, ...)`` and create it; AlreadyExists counts as success.
   If any other create fails, stop here and requeue: the rest of the plan assumes the pods
   exist.
3. ``hosts``: when not None, rewrite the discovery ConfigMap with exactly these hosts.
4. ``status``: when not None, write it (the whole status; one write per pass).
   Then ``spec_replicas`` (a scale-out rolled back): set each replica's ``replicas`` back, in
   one JSON patch of the job that first tests the value it replaces, so that a newer edit
   wins; a failed test (or the job gone) is not an error: the next pass sees the new spec.
5. ``deletes``: delete each pod with the uid precondition and the grace period given;
   NotFound and a uid Conflict count as success.
6. ``release``: remove observed.TRACKING_FINALIZER from each pod named (NotFound is fine).
7. ``events``: emit them on the job (one with a ``name`` only once). Then count ``restarts`` /
   ``outcome`` in metrics.
8. ``requeue_after``: plan the job again after that many seconds even if nothing changes.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aitj.core.api import Phase, RestartScope


class ResourceAction(enum.StrEnum):
    """What to do with the job's Service, ssh Secret and discovery ConfigMap."""

    ENSURE = "Ensure"  # create whichever is missing (the job is live)
    DELETE = "Delete"  # delete the Service (finished, cleanPodPolicy All); the rest go with the job
    KEEP = "Keep"  # leave everything as it is (finished, cleanPodPolicy Running or None)


@dataclass(frozen=True)
class PodCreate:
    """PodCreate: a pod to create. ``name`` is naming.pod_name(job, uid, replica, index,
    generation); ``restart_counts`` is the job's RestartCount as planned in this pass;
    ``annotations`` must be put on the pod (the restart ledger)."""

    name: str
    replica: str
    index: int
    generation: int
    restart_counts: Mapping[str, int] = field(hash=False)
    annotations: Mapping[str, str] = field(hash=False)


@dataclass(frozen=True)
class PodDelete:
    """PodDelete: a pod to delete. ``grace_period_seconds`` None: the pod's own grace period.

    ``reason`` is for people (logs); ``kind`` is for metrics, one of DELETE_KINDS."""

    name: str
    uid: str
    grace_period_seconds: int | None
    reason: str
    kind: str = "unwanted"


# PodDelete.kind values: the old pod of a restart; a pod still terminating restartTimeLimit after
# its deletion (force-deleted); a pod no index wants (scaled away, replica gone); the pods a
# finished job's cleanPodPolicy removes.
DELETE_KINDS = ("restart", "stuck", "unwanted", "cleanup")


@dataclass(frozen=True)
class Event:
    """Event: a Kubernetes Event to emit on the job. ``type`` is Normal or Warning. ``name``:
    when set, the Event's object name; the executor creates it once (AlreadyExists is done), so
    a pass planned twice from a status that was not yet back in the cache says it once."""

    type: str
    reason: str
    message: str
    name: str | None = None


@dataclass(frozen=True)
class HostEntry:
    """HostEntry: one Running worker for the discovery host list. The executor turns it into
    ``(naming.pod_host(job.name, pod), render.slots_for(job.spec.replica(replica).template))``."""

    pod: str
    replica: str
    index: int


@dataclass(frozen=True)
class RestartRecord:
    """RestartRecord: a restart decided in this pass, for metrics and logs.

    ``cause`` is a policy.FailureKind value; ``latency_seconds`` is now minus the time the
    failure happened (None when the cluster does not say when)."""

    replica: str
    index: int
    pod: str
    cause: str
    rule: str
    scope: RestartScope
    latency_seconds: float | None


@dataclass(frozen=True)
class ReplicasPatch:
    """ReplicasPatch: set ``spec.replicaSpecs.<replica>.replicas`` to ``value`` if it is still
    ``expected`` (the rollback of a scale-out; aitj.core.planner.scaling)."""

    replica: str
    expected: int
    value: int


@dataclass(frozen=True)
class Outcome:
    """Outcome: the job finished in this pass (Succeeded, Failed or Timeout) and why."""

    phase: Phase
    reason: str
    message: str


@dataclass(frozen=True)
class Plan:
    """Plan: what one pass should do; see the module docstring for how to carry it out."""

    creates: tuple[PodCreate, ...] = ()
    deletes: tuple[PodDelete, ...] = ()
    release: tuple[str, ...] = ()  # pod names whose TRACKING_FINALIZER to remove
    status: dict[str, Any] | None = field(default=None, hash=False)  # the new status; None: unchanged
    events: tuple[Event, ...] = ()
    requeue_after: float | None = None  # seconds
    hosts: tuple[HostEntry, ...] | None = None  # None: the discovery host list is unchanged
    resources: ResourceAction = ResourceAction.ENSURE
    restarts: tuple[RestartRecord, ...] = ()
    outcome: Outcome | None = None
    spec_replicas: tuple[ReplicasPatch, ...] = ()  # set replicas back (after the status write)
