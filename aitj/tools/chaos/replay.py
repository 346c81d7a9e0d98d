"""The cluster as the watch saw it at one point of the history: replayed sample by sample. Pure.

``expect`` and ``invariants`` walk the same timeline through one ``World``, so they agree on
what "live", "current" and "back at its replica count" mean.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from aitj.core import api
from aitj.core.observed import NodeView, PodView
from aitj.tools.chaos.history import FaultRecord, History, JobKey, JobSample, NodeSample, PodSample, Slot
from aitj.tools.chaos.schedule import FaultKind

NODE_FAULTS = frozenset({FaultKind.NODE_NOT_READY, FaultKind.NODE_SILENT, FaultKind.DRAIN})


def slot_of(pod: PodView) -> Slot | None:
    if pod.job is None or pod.replica is None or pod.index is None:
        return None
    return pod.namespace, pod.job, pod.replica, pod.index


BLIP = 2.0  # seconds: a node not Ready for less is a blip, not a failure one can count on
# Seconds after an apiserver restart ends in which a node spell still counts as its echo: the
# nodes could not renew their Leases while it was down, kube-controller-manager marks them
# Unknown on its first look after it returns (the node monitor runs every second) and kwok's
# next heartbeat (every few seconds) makes them Ready again.
OUTAGE_ECHO = 10.0


@dataclass
class World:
    """World: pods by uid, nodes by name, jobs by key, as of the last sample applied; and per
    slot the newest generation ever seen (a replacement outranks the pod it replaces)."""

    pods: dict[str, PodView] = field(default_factory=dict)
    nodes: dict[str, NodeView] = field(default_factory=dict)
    jobs: dict[JobKey, JobSample] = field(default_factory=dict)
    newest: dict[Slot, int] = field(default_factory=dict)
    by_slot: dict[Slot, set[str]] = field(default_factory=lambda: defaultdict(set))
    on_node: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    lost: set[str] = field(default_factory=set)  # pods once seen running on a bad node
    deleted_nodes: set[str] = field(default_factory=set)
    # Spells of a node not Ready: (node, start, end or None). A blip (``is_blip``) is not a
    # node failure anyone can rely on: the pods lost in it are live again once it ends.
    spells: list[tuple[str, float, float | None]] = field(default_factory=list)
    # Apiserver restarts (start, back) and the node faults the command made (node, when): what
    # tells an apiserver restart's echo on every node from a node failure (``is_blip``).
    outages: list[tuple[float, float]] = field(default_factory=list)
    node_faults: list[tuple[str, float]] = field(default_factory=list)
    _bad_since: dict[str, float] = field(default_factory=dict)
    _lost_in: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _relive: dict[str, float] = field(default_factory=dict)  # uid: when it is live again

    def apply(self, s: PodSample | NodeSample | JobSample) -> None:
        """apply: one sample."""
        for uid, due in list(self._relive.items()):
            if s.t >= due:
                del self._relive[uid]
                if uid in self.pods and self.current_generation(self.pods[uid]):
                    self.lost.discard(uid)
        if isinstance(s, PodSample):
            self._pod(s)
        elif isinstance(s, NodeSample):
            if s.gone:
                self.nodes.pop(s.node.name, None)
                self.deleted_nodes.add(s.node.name)
            else:
                self.nodes[s.node.name] = s.node
                self.deleted_nodes.discard(s.node.name)
            self._spell(s.node.name, s.t)
            for uid in self.on_node.get(s.node.name, ()):
                self._mark_lost(self.pods[uid])
        elif s.gone:
            self.jobs.pop(s.key, None)
        else:
            self.jobs[s.key] = s

    def _pod(self, s: PodSample) -> None:
        pod, slot = s.pod, s.slot
        old = self.pods.get(pod.uid)
        if old is not None and old.node_name:
            self.on_node[old.node_name].discard(pod.uid)
        if s.gone:
            self.pods.pop(pod.uid, None)
            if slot is not None:
                self.by_slot[slot].discard(pod.uid)
            return
        self.pods[pod.uid] = pod
        if pod.node_name:
            self.on_node[pod.node_name].add(pod.uid)
        self._mark_lost(pod)
        if slot is not None:
            self.by_slot[slot].add(pod.uid)
            self.newest[slot] = max(self.newest.get(slot, 0), pod.generation)

    def _spell(self, name: str, t: float) -> None:
        bad = not self.node_ok(name)
        if bad and name not in self._bad_since:
            self._bad_since[name] = t
        elif not bad and name in self._bad_since:
            start = self._bad_since.pop(name)
            self.spells.append((name, start, t))
            lost = self._lost_in.pop(name, set())
            if self.is_blip(name, start, t):
                # Live again if, BLIP after the blip, the operator has not replaced it.
                for u in lost:
                    self._relive[u] = t + BLIP

    def note_fault(self, rec: FaultRecord) -> None:
        """note_fault: a fault the command carried out, for ``is_blip`` (an apiserver restart
        once it is back: ``healed``)."""
        if rec.error is not None:
            return
        if rec.kind is FaultKind.APISERVER_RESTART:
            self.outages.append((rec.t, rec.healed if rec.healed is not None else rec.t))
        elif rec.kind in NODE_FAULTS and rec.target:
            self.node_faults.append((rec.target, rec.t))

    def is_blip(self, name: str, start: float, end: float) -> bool:
        """is_blip: the node's spell from ``start`` to ``end`` is not a failure anyone can count
        on: shorter than BLIP, or begun during an apiserver restart or its echo (``OUTAGE_ECHO``)
        on a node no node fault of the command's aimed at meanwhile. Whether the operator
        restarts the pods on such a node depends on whether it looked during the spell: under
        leader election no operator leads for a few seconds after an apiserver restart (the
        leader exits when it cannot renew its Lease), and the nodes are Ready again by then."""
        if end - start < BLIP:
            return True
        echo = any(a <= start <= b + OUTAGE_ECHO for a, b in self.outages)
        aimed = any(n == name and start - 1.0 <= t <= end for n, t in self.node_faults)
        return echo and not aimed

    def open_spells(self) -> list[tuple[str, float, float | None]]:
        """open_spells: every spell, those still going at the end with no end."""
        return self.spells + [(n, start, None) for n, start in self._bad_since.items()]

    def _mark_lost(self, pod: PodView) -> None:
        """_mark_lost: a pod seen unfinished on a node that is gone or not Ready is lost for
        good: the operator replaces it, and its node coming back does not make it the index's
        pod again (the kubelet kills it once it sees the deletion)."""
        if not pod.terminal and not self.node_ok(pod.node_name):
            self.lost.add(pod.uid)
            if pod.node_name:
                self._lost_in[pod.node_name].add(pod.uid)

    def known(self, name: str | None) -> bool:
        """known: the pod's node has been seen (or deleted), or the pod has no node. Samples
        are replayed by resourceVersion and a node's is bumped by every heartbeat, so the pods
        listed at the start come before the nodes they run on: until then, nothing is known of
        their node, which is not the same as its being gone."""
        return name is None or name in self.nodes or name in self.deleted_nodes

    def current_generation(self, pod: PodView) -> bool:
        """current_generation: no newer pod of the pod's index has been seen."""
        slot = slot_of(pod)
        return slot is not None and pod.generation >= self.newest.get(slot, 0)

    def node_ok(self, name: str | None) -> bool:
        """node_ok: the node is Ready, or not known yet (an unbound pod has no node to fail)."""
        if name is None or not self.known(name):
            return True
        node = self.nodes.get(name)
        return node is not None and node.is_ready

    def live(self, pod: PodView) -> bool:
        """live: the pod may be running its workload for the job: not being deleted, not
        finished, not marked for termination (a True DisruptionTarget: an eviction, a
        preemption, the taint manager, written just before the delete) and never seen on a node
        that is gone or not Ready (``_mark_lost``)."""
        return not pod.deleting and not pod.terminal and pod.disruption is None and pod.uid not in self.lost

    def live_in(self, slot: Slot) -> list[PodView]:
        return sorted(
            (p for u in self.by_slot.get(slot, ()) if self.live(p := self.pods[u])), key=lambda p: p.name
        )

    def spec(self, key: JobKey) -> api.Job | None:
        sample = self.jobs.get(key)
        return None if sample is None else sample.job

    def wanted(self, key: JobKey) -> dict[str, int]:
        """wanted: replicas per replica type, as the job's spec says now."""
        job = self.spec(key)
        return {} if job is None else {r.name: r.replicas for r in job.spec.replicas}

    def current(self, pod: PodView) -> bool:
        """current: the pod is its index's newest generation and the index is wanted."""
        slot = slot_of(pod)
        if slot is None:
            return False
        return pod.generation >= self.newest.get(slot, 0) and slot[3] < self.wanted(slot[:2]).get(slot[2], 0)

    def running_count(self, key: JobKey, replica: str) -> int:
        """running_count: wanted indices of the replica with a live Running current pod."""
        n = 0
        for i in range(self.wanted(key).get(replica, 0)):
            if any(p.phase == "Running" for p in self.live_in((*key, replica, i))):
                n += 1
        return n

    def pods_of(self, key: JobKey) -> list[PodView]:
        return [p for p in self.pods.values() if (p.namespace, p.job) == key]


def world_of(history: History) -> World:
    """world_of: an empty World that knows the run's faults, to replay its history through."""
    world = World()
    for rec in history.faults:
        world.note_fault(rec)
    return world
