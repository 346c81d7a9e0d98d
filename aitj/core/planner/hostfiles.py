"""plugin.discovery's lists: who is in them, what the status records, and when the ConfigMap
is rewritten.

Pure. Two lists live in the discovery ConfigMap (``aitj.core.render.discovery``): Horovod's
host list, the Running workers (docs/semantics.md, section 10), and Volcano's host files, each
replica's Running pods (``aitj.core.render.volcano``). Both follow one rule: a pod is in them
while it runs, is not being deleted or replaced, and is not a pod of a scale-out in flight (those
join together once all of them run), nor a pod whose wave still starts (``held``: pods that
start running together join together). ``status.discoveryHosts`` records the first, which also
says who is in the worker replicas' host files (the same pods, by index); ``status.hostFiles``
records only the master replicas' files, so a large job's status does not carry its workers
twice. The ConfigMap is rewritten when what it is observed to hold (its fingerprint,
aitj.core.planner.objects) is not these lists, whatever the status recorded: a pass whose
status write was refused after the ConfigMap's, or the reverse, is repaired by the next one
(``part``, one of each pass of a job that goes on; not observed, as in ``aitj explain``:
when the lists differ from the status's).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from aitj.core.api import Job, JobStatus, ReplicaType
from aitj.core.planner import objects, resources, ring_hold, width
from aitj.core.planner.discovery_texts import Texts
from aitj.core.planner.ledger_records import record_entry
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.survey import Slot, State, Survey
from aitj.core.planner.types import HostEntry, HostLists, Manifest, Owned, PodNudge


def part(ctx: Context) -> Part:
    """part: the lists of this pass (``ctx.lists``) recorded in the status, the ConfigMap
    rewritten when they changed, the master pods nudged, and Horovod's list for people when
    it changed."""
    lists = ctx.lists
    if lists is None:
        return Part()
    until = hold(ctx)
    if until is not None:  # Horovod re-forms around a dead worker: the list stays (ring_hold)
        left = until - ctx.now.timestamp()
        return Part(steps(list_held=left), wake=(left,))
    texts = ctx.texts
    rewrite = changed(ctx.prev, lists) if ctx.owned is None else drifted(ctx.job, ctx.owned, lists, texts)
    discovery = rendered(ctx.job, lists, ctx.owned, texts) if rewrite else None
    plan = steps(
        discovery=discovery,
        nudges=nudges(ctx.found, lists, texts),
        hosts=lists.hosts if hosts_changed(ctx.prev, lists) else None,
        held=lists.held,
    )
    wake = () if lists.wake is None else (lists.wake,)
    return Part(plan, edit=lambda status: record(status, lists), wake=wake)


# Horovod elastic (0.28) can lose a worker that joins its host list while it re-forms around
# another: its driver tells rank 0 of the change, and rank 0's reset, still under way, then
# empties its queue of such messages (horovod.common.elastic.State.on_reset); changes are also
# stamped to the whole second, so a second one within the same second is ignored. The worker then
# stays out of the ring until the list changes again (minutes, in make bench-real, when a node
# holding two trainers was lost and their replacements ran 0.25 s apart). So workers that start
# running together join the list together: a worker that runs and is not listed yet waits while
# another worker created in the same wave (within WAVE of it) is still starting, for at most HOLD
# after it ran (a straggler pulling its image does not keep the others out). One node's loss,
# or several deletes at once, make one change to the list, not one per replacement.
WAVE = timedelta(seconds=5)
HOLD = timedelta(seconds=5)


def host_lists(
    job: Job, found: Survey, joining: frozenset[tuple[str, int]], prev: JobStatus, now: datetime
) -> HostLists | None:
    """host_lists: the lists of this pass (None without plugin.discovery), the workers whose
    wave still starts held out of them."""
    if not job.spec.discovery:
        return None
    waiting = held(found, joining, frozenset(prev.discovery_hosts or ()), now)
    listed = [
        s
        for s in found.slots
        if s.state is State.RUNNING and (s.replica.name, s.index) not in joining and s.name not in waiting
    ]
    hosts = tuple(
        HostEntry(s.name, s.replica.name, s.index)
        for s in listed
        if s.replica.replica_type is ReplicaType.WORKER
    )
    running_by: dict[str, list[str]] = {r.name: [] for r in job.spec.replicas}
    for s in sorted(listed, key=lambda s: s.index):
        running_by[s.replica.name].append(s.name)
    running = {name: tuple(names) for name, names in running_by.items()}
    masters = {r.name: running[r.name] for r in job.spec.replicas if r.replica_type is ReplicaType.MASTER}
    wake = min(waiting.values(), default=None)
    return HostLists(hosts, running, masters, held=tuple(sorted(waiting)), wake=wake)


def held(
    found: Survey, joining: frozenset[tuple[str, int]], listed: frozenset[str], now: datetime
) -> dict[str, float]:
    """held: the Running workers not in the list yet (``listed``: the previous pass's) that wait
    for their wave, each with the seconds it may still wait (see WAVE and HOLD)."""
    workers = [
        s
        for s in found.slots
        if s.replica.replica_type is ReplicaType.WORKER and (s.replica.name, s.index) not in joining
    ]
    return held_among(workers, listed, now)


def held_among(workers: Sequence[Slot], listed: frozenset[str], now: datetime) -> dict[str, float]:
    """held_among: ``held`` of the worker slots ``workers`` (aitj.core.planner.listing hands it
    the few a pass redid: the others run, listed)."""
    pending = [s.pod for s in workers if s.state is State.PENDING and s.pod is not None]
    starting = [p.created for p in pending if p.created is not None and p.deleted_at is None]
    waits: dict[str, float] = {}
    if not starting:
        return waits  # no wave is starting: nobody waits for one
    for s in workers:
        pod = s.pod
        if s.state is not State.RUNNING or pod is None or pod.name in listed:
            continue
        if pod.created is None or pod.running_since is None:
            continue
        left = (HOLD - (now - pod.running_since)).total_seconds()
        if left > 0 and any(abs(created - pod.created) <= WAVE for created in starting):
            waits[pod.name] = left
    return waits


def hold(ctx: Context) -> float | None:
    """hold: until when (epoch seconds) Horovod's list stays as the previous pass wrote it
    (aitj.core.planner.ring_hold), from the restarts recorded and this pass's, and the master's
    log as the recovery watchdog read it; None: not held, or no list was written yet."""
    if ctx.prev.discovery_hosts is None:
        return None
    seen = width.training(ctx.found)
    recorded = tuple(record_entry(r) for r in ctx.records)
    restarts = (*(ctx.prev.restarts or ()), *recorded)
    return ring_hold.held_until(ctx.job, restarts, seen, ctx.now.timestamp(), recorded)


def record(status: JobStatus, lists: HostLists | None) -> JobStatus:
    """record: ``status`` with the lists (unchanged without plugin.discovery)."""
    if lists is None:
        return status
    return status.updated(discovery_hosts=lists.pods, host_files=dict(lists.masters))


def rendered(job: Job, lists: HostLists, owned: Owned | None, texts: Texts | None) -> Manifest:
    """rendered: ``resources.discovery`` of the lists; with ``texts`` (the job's Memo's), the
    same ConfigMap made from the texts kept of earlier renders (aitj.core.planner.discovery_texts)
    and stamped with the lists' digest, which is the one ``resources.discovery`` computes (the
    masters' files are the master replicas' running pods, as the lists are made)."""
    made = None if texts is None else texts.discovery(job, lists)
    if made is None:  # a list the render refuses raises its own error there
        return resources.discovery(job, lists.hosts, lists.running, owned)
    return objects.stamped(made, digest(lists, texts), owned)


def hosts_changed(prev: JobStatus, lists: HostLists | None) -> bool:
    """hosts_changed: Horovod's list differs from the one the previous status recorded."""
    return lists is not None and prev.discovery_hosts != lists.pods


def changed(prev: JobStatus, lists: HostLists | None) -> bool:
    """changed: either list differs from what the previous status recorded (the ConfigMap
    must be rewritten)."""
    if lists is None:
        return False
    return hosts_changed(prev, lists) or prev.host_files != lists.masters


def drifted(job: Job, owned: Owned, lists: HostLists, texts: Texts | None = None) -> bool:
    """drifted: the job's ConfigMap is observed holding other lists than these (its
    fingerprint, ``objects.ANNOTATION_WRITTEN``): whatever the status recorded, it is
    rewritten (a missing one is made by ``resources.ensure``)."""
    return objects.stale(owned, resources.configmap_ref(job), digest(lists, texts))


def digest(lists: HostLists, texts: Texts | None = None) -> str:
    """digest: a short fingerprint of what the ConfigMap is rendered from: the host list and
    the master replicas' files (the workers' files hold the host list's pods again, so they
    change with it), as the status records them."""
    # Made once per lists (a pass reads it to tell a drifted ConfigMap and to nudge the
    # masters, and the memo keeps unchanged lists): kept on them as Survey.states is.
    made = lists.__dict__.get("_digest")
    if made is None:
        make = resources.hosts_digest if texts is None else texts.digest  # the same digest
        made = lists.__dict__["_digest"] = make(lists.pods, lists.masters)
    return str(made)


def nudges(found: Survey, lists: HostLists | None, texts: Texts | None = None) -> tuple[PodNudge, ...]:
    """nudges: the Running pods of master replicas (those that mount ``/etc/edl``, where
    ``horovodrun`` reads the workers) not yet annotated with the lists' digest. The annotation
    makes their kubelet sync them, which rewrites their ConfigMap files within a second
    (docs/pods.md, "plugin.discovery"); it is set after the ConfigMap is written, so a pass that
    fails in between nudges again. Workers' Volcano host files are left to the kubelet's
    period: nudging every pod of a large job on every change would cost a write per pod."""
    if lists is None:
        return ()
    pods = [s.pod for s in found.masters if s.state is State.RUNNING and s.pod is not None]
    if not pods:
        return ()  # no fingerprint to compute: it costs a pass time on a large job
    d = digest(lists, texts)
    return tuple(PodNudge(p.name, p.uid, d) for p in pods if p.hosts_annotation != d)
