"""Listing: plugin.discovery's lists (hostfiles.host_lists) kept by delta for the job's Memo.

Pure (issue 26). ``hostfiles.host_lists`` looks at every slot of the survey; a pass whose
survey redid a few slots of the last one (aitj.core.planner.survey.resurvey) gets the last
lists patched at those slots instead (``relisted``), equal to what ``host_lists`` makes. A
Listing keeps, beside the lists, where each of their entries' slots is, to patch them there.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from aitj.core.api import Job, JobStatus, ReplicaType
from aitj.core.planner import hostfiles
from aitj.core.planner.survey import Slot, State, Survey
from aitj.core.planner.types import HostEntry, HostLists


@dataclass(frozen=True)
class Listing:
    """Listing: a pass's lists (None without plugin.discovery), the places in the survey of
    Horovod's list's entries (``places``, ascending, one per entry), and per replica the
    indices of its host file's pods (``indices``, ascending, one per pod)."""

    lists: HostLists | None
    places: tuple[int, ...] = ()
    indices: dict[str, tuple[int, ...]] | None = None


def listing(
    job: Job, found: Survey, joining: frozenset[tuple[str, int]], prev: JobStatus, now: datetime
) -> Listing:
    """listing: ``hostfiles.host_lists`` with the places of its entries."""
    lists = hostfiles.host_lists(job, found, joining, prev, now)
    if lists is None:
        return Listing(None)
    waiting = set(lists.held)
    places = tuple(
        k
        for k, s in enumerate(found.slots)
        if _listed(s, joining, waiting) and s.replica.replica_type is ReplicaType.WORKER
    )
    indices: dict[str, list[int]] = {r.name: [] for r in job.spec.replicas}
    for s in found.slots:
        if _listed(s, joining, waiting):
            indices[s.replica.name].append(s.index)
    return Listing(lists, places, {name: tuple(sorted(i)) for name, i in indices.items()})


def relisted(
    last: Listing,
    before: Survey,
    found: Survey,
    places: Iterable[int],
    joining: frozenset[tuple[str, int]],
    prev: JobStatus,
    now: datetime,
) -> Listing | None:
    """relisted: ``listing`` of ``found``, made from ``last``, the listing of ``before`` with the
    same ``joining``, where ``found`` differs from ``before`` only at ``places`` and runs every
    other slot (resurvey's). None unless ``last`` held no pod and ``prev`` records its hosts:
    then every other worker is in the list the status holds, so none waits for its wave
    (``hostfiles.held``), and only the slots at ``places`` may join, leave or wait."""
    lists = last.lists
    if lists is None or last.indices is None or lists.held or prev.discovery_hosts != lists.pods:
        return None
    redone = sorted(places)
    waiting = _held([(k, found.slots[k], before.slots[k]) for k in redone], joining, now)
    changes = [(k, before.slots[k], found.slots[k]) for k in redone]
    changes = [(k, b, f) for k, b, f in changes if _moved(b, f, joining, waiting)]
    if not changes and not waiting:
        return last
    e = _Lists(
        list(lists.hosts),
        list(lists.pods),
        list(last.places),
        {name: list(names) for name, names in lists.running.items()},
        {name: list(i) for name, i in last.indices.items()},
    )
    for k, b, f in changes:
        if _listed(b, joining, set()):
            e.drop(b, k)
        if _listed(f, joining, waiting):
            e.add(f, k)
    masters = {name: tuple(e.running[name]) for name in lists.masters}
    patched = HostLists(
        tuple(e.hosts),
        {name: tuple(names) for name, names in e.running.items()},
        masters,
        held=tuple(sorted(waiting)),
        wake=min(waiting.values(), default=None),
    )
    # HostLists.pods, patched with the hosts (a large job's 4,096 names are not read again)
    patched.__dict__["pods"] = tuple(e.pods)
    return Listing(patched, tuple(e.at), {name: tuple(i) for name, i in e.indices.items()})


def _listed(s: Slot, joining: frozenset[tuple[str, int]], waiting: set[str] | dict[str, float]) -> bool:
    """_listed: ``s`` is in the lists (as ``hostfiles.host_lists`` says)."""
    return s.state is State.RUNNING and (s.replica.name, s.index) not in joining and s.name not in waiting


def _moved(before: Slot, now: Slot, joining: frozenset[tuple[str, int]], waiting: dict[str, float]) -> bool:
    """_moved: the slot redone joins or leaves the lists, or is listed under another name."""
    was, listed = _listed(before, joining, set()), _listed(now, joining, waiting)
    return was != listed or (listed and before.name != now.name)


def _held(
    slots: list[tuple[int, Slot, Slot]], joining: frozenset[tuple[str, int]], now: datetime
) -> dict[str, float]:
    """_held: ``hostfiles.held`` where only the redone slots (place, now, before) may wait: the
    others run and were listed. A redone slot's pod was listed when its slot before held the
    same pod name, listed (the name says the replica, index and generation)."""
    workers = [
        (s, b)
        for _, s, b in slots
        if s.replica.replica_type is ReplicaType.WORKER and (s.replica.name, s.index) not in joining
    ]
    listed = {b.name for _, b in workers if _listed(b, joining, set())}
    return hostfiles.held_among([s for s, _ in workers], frozenset(listed), now)


@dataclass
class _Lists:
    """_Lists: a listing's lists as ``relisted`` patches them: the workers' hosts, their pods
    and their places in the survey (``at``, ascending), each replica's running pods and their indices."""

    hosts: list[HostEntry]
    pods: list[str]  # the hosts' pods
    at: list[int]
    running: dict[str, list[str]]
    indices: dict[str, list[int]]

    def drop(self, s: Slot, k: int) -> None:
        """drop: the slot ``s`` at place ``k`` leaves the lists."""
        if s.replica.replica_type is ReplicaType.WORKER:
            j = bisect.bisect_left(self.at, k)
            del self.hosts[j], self.pods[j], self.at[j]
        j = bisect.bisect_left(self.indices[s.replica.name], s.index)
        del self.running[s.replica.name][j], self.indices[s.replica.name][j]

    def add(self, s: Slot, k: int) -> None:
        """add: the slot ``s`` at place ``k`` joins the lists."""
        if s.replica.replica_type is ReplicaType.WORKER:
            j = bisect.bisect_left(self.at, k)
            self.hosts.insert(j, HostEntry(s.name, s.replica.name, s.index))
            self.pods.insert(j, s.name)
            self.at.insert(j, k)
        j = bisect.bisect_left(self.indices[s.replica.name], s.index)
        self.running[s.replica.name].insert(j, s.name)
        self.indices[s.replica.name].insert(j, s.index)
