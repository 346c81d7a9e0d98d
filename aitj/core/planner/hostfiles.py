"""plugin.discovery's lists: who is in them, what the status records, and when the ConfigMap
is rewritten.

Pure. Two lists live in the discovery ConfigMap (``aitj.core.render.discovery``): Horovod's
host list, the Running workers (docs/semantics.md, section 10), and Volcano's host files, each
replica's Running pods (``aitj.core.render.volcano``). Both follow one rule: a pod is in them
while it runs, is not being deleted or replaced, and is not a pod of a scale-out in flight (those
join together once all of them run). ``status.discoveryHosts`` records the first, which also
says who is in the worker replicas' host files (the same pods, by index); ``status.hostFiles``
records only the master replicas' files, so a large job's status does not carry its workers
twice. The ConfigMap is rewritten when either changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aitj.core.api import Job, ReplicaType
from aitj.core.planner.survey import State, Survey
from aitj.core.planner.types import HostEntry

STATUS_HOSTS = "discoveryHosts"
STATUS_HOST_FILES = "hostFiles"


@dataclass(frozen=True)
class HostLists:
    """HostLists: ``hosts``, Horovod's list (workers); ``running``, each replica's pods in its
    Volcano host file (every replica, in index order); ``masters``, the master replicas' part
    of ``running`` (what ``status.hostFiles`` records)."""

    hosts: tuple[HostEntry, ...]
    running: Mapping[str, tuple[str, ...]]
    masters: Mapping[str, list[str]]


def host_lists(job: Job, found: Survey, joining: frozenset[tuple[str, int]]) -> HostLists | None:
    """host_lists: the lists of this pass (None without plugin.discovery)."""
    if not job.spec.discovery:
        return None
    listed = [s for s in found.slots if s.state is State.RUNNING and (s.replica.name, s.index) not in joining]
    hosts = tuple(
        HostEntry(s.name, s.replica.name, s.index)
        for s in listed
        if s.replica.replica_type is ReplicaType.WORKER
    )
    running = {
        r.name: tuple(s.name for s in sorted(listed, key=lambda s: s.index) if s.replica.name == r.name)
        for r in job.spec.replicas
    }
    masters = {
        r.name: list(running[r.name]) for r in job.spec.replicas if r.replica_type is ReplicaType.MASTER
    }
    return HostLists(hosts, running, masters)


def record(status: dict[str, Any], lists: HostLists | None) -> None:
    """record: the lists into ``status`` (nothing without plugin.discovery)."""
    if lists is not None:
        status[STATUS_HOSTS] = [h.pod for h in lists.hosts]
        status[STATUS_HOST_FILES] = dict(lists.masters)


def hosts_changed(prev: Mapping[str, Any], lists: HostLists | None) -> bool:
    """hosts_changed: Horovod's list differs from the one the previous status recorded."""
    return lists is not None and prev.get(STATUS_HOSTS) != [h.pod for h in lists.hosts]


def changed(prev: Mapping[str, Any], lists: HostLists | None) -> bool:
    """changed: either list differs from what the previous status recorded (the ConfigMap
    must be rewritten)."""
    if lists is None:
        return False
    return hosts_changed(prev, lists) or prev.get(STATUS_HOST_FILES) != lists.masters
