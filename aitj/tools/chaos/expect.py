"""The restarts the faults called for, worked out from the history with the operator's own
rules (``aitj.core.policy``: ``classify`` then ``decide``), never from the operator's state. Pure.

A failure counts when a *current* pod (its index's newest generation, an index the job wants)
shows one while the job has not finished, and either it is a node failure (the node is gone
or not Ready, or the pod was evicted from a cordoned node: whatever made the node fail), or
the pod is one a fault aimed at (a delete, an eviction or an exit code the command caused).
Deletions the command did not make (a scale-in, the cleanup of a finished job) are the
operator's own and are not failures. Each (slot, generation) fails at most once, as in the
operator's ledger. ``decide`` says whether the policies restart it; ``restartLimit`` caps the
count, in the order the failures happened. A hang fault (a pod's processes stopped) is no
failure of the stopped pod: it calls for one ``hang`` failure of the job's watched pod
(spec.progress; ``hang_restarts``), whatever pod was stopped. Counts start from RestartCount
as the watch first saw it (a job may have restarted before the run).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from aitj.core import api
from aitj.core.observed import PodView
from aitj.core.policy import Failure, FailureKind, RestartDecision, classify, decide
from aitj.tools.chaos.history import History, JobKey, JobSample, NodeSample, PodSample, Slot
from aitj.tools.chaos.replay import World, slot_of, world_of


@dataclass(frozen=True)
class Called:
    """Called: one failure the faults caused, and what the policies make of it."""

    t: float
    slot: Slot
    generation: int
    pod: str
    cause: str
    restart: bool
    why: str  # the rule that restarts it, or why it stands
    node: str | None = None  # a node failure's node (not a drain: that the command caused)


@dataclass
class Expected:
    """Expected: per job, the failures in order and the RestartCount they call for."""

    failures: dict[JobKey, list[Called]] = field(default_factory=dict)
    counts: dict[JobKey, Counter[str]] = field(default_factory=dict)  # baseline included
    baseline: dict[JobKey, dict[str, int]] = field(default_factory=dict)  # as first seen
    # Restarts a node blip (replay.World.is_blip) may or may not have caused: the operator, level
    # triggered, restarts a pod only if it looks while the node is not Ready.
    maybe: dict[JobKey, Counter[str]] = field(default_factory=dict)

    def stood(self, key: JobKey) -> list[Called]:
        """stood: the job's failures that are not restarted."""
        return [c for c in self.failures.get(key, []) if not c.restart]

    def vacant(self, key: JobKey, replica: str) -> set[int]:
        """vacant: indices of the replica whose failure stood and was not replaced since."""
        return {c.slot[3] for c in self.stood(key) if c.slot[2] == replica}


def expected_restarts(history: History) -> Expected:
    """expected_restarts: replay the history and count the restarts the faults call for."""
    aimed = {uid for f in history.faults if f.error is None for uid in f.pods}
    world = world_of(history)
    out = Expected()
    seen: set[tuple[Slot, int]] = set()
    for s in history.timeline():
        world.apply(s)
        if isinstance(s, JobSample) and s.key not in out.baseline and not s.gone:
            out.baseline[s.key] = s.restart_count
            out.counts[s.key] = Counter(s.restart_count)
        if isinstance(s, PodSample) and not s.gone:
            candidates = [s.pod]
        elif isinstance(s, NodeSample):
            candidates = [world.pods[u] for u in sorted(world.on_node.get(s.node.name, ()))]
        else:
            continue
        for pod in candidates:
            _judge(world, pod, s.t, pod.uid in aimed, seen, out)
    _blips(world, out)
    hang_restarts(history, world, out)
    return out


def hang_restarts(history: History, world: World, out: Expected) -> None:
    """hang_restarts: each hang fault carried out calls for one ``hang`` of its job's watched
    pod (index 0 of spec.progress.replica), restarted or not as the policies say."""
    for f in history.faults:
        if f.kind != "hang" or f.error is not None or not f.jobs:
            continue
        key = f.jobs[0]
        sample = world.jobs.get(key)
        job = sample.job if sample is not None else None
        if job is None or job.spec.progress is None:
            continue
        replica = job.spec.replica(job.spec.progress.replica)
        failure = Failure(FailureKind.HANG, f"hang: {f.target} stopped")
        decision = decide(replica, job.spec.fault_tolerant, failure)
        counts = out.counts.setdefault(key, Counter())
        restart = isinstance(decision, RestartDecision)
        why = decision.rule if isinstance(decision, RestartDecision) else decision.message
        if restart and replica.restart_limit is not None and counts[replica.name] >= replica.restart_limit:
            restart, why = False, f"restartLimit {replica.restart_limit} used up"
        if restart:
            counts[replica.name] += 1
        slot = (key[0], key[1], replica.name, 0)
        out.failures.setdefault(key, []).append(Called(f.t, slot, -1, f.target, failure.cause, restart, why))


def _blips(world: World, out: Expected) -> None:
    """_blips: node-failure restarts within a blip (``World.is_blip``) move to ``maybe``."""
    brief = [(n, a, b) for n, a, b in world.open_spells() if b is not None and world.is_blip(n, a, b)]
    for key, calls in out.failures.items():
        for c in calls:
            if c.restart and c.node and any(n == c.node and a <= c.t <= b for n, a, b in brief):
                out.counts[key][c.slot[2]] -= 1
                out.maybe.setdefault(key, Counter())[c.slot[2]] += 1


def _judge(
    world: World, pod: PodView, t: float, aimed: bool, seen: set[tuple[Slot, int]], out: Expected
) -> None:
    slot = slot_of(pod)
    if slot is None or (slot, pod.generation) in seen or not world.current(pod):
        return
    key = slot[:2]
    sample = world.jobs.get(key)
    if sample is None or sample.job is None or sample.phase in api.FINISHED_PHASES:
        return
    if not world.known(pod.node_name):
        return  # judged once its node is seen
    node = world.nodes.get(pod.node_name) if pod.node_name else None
    failure = classify(pod, node)
    if failure is None or (failure.kind is not FailureKind.NODE_NOT_READY and not aimed):
        return
    seen.add((slot, pod.generation))
    job = sample.job
    replica = job.spec.replica(slot[2])
    decision = decide(replica, job.spec.fault_tolerant, failure)
    counts = out.counts.setdefault(key, Counter())
    if isinstance(decision, RestartDecision):
        restart, why = True, decision.rule
        if replica.restart_limit is not None and counts[replica.name] >= replica.restart_limit:
            restart, why = False, f"restartLimit {replica.restart_limit} used up"
    else:
        restart, why = False, decision.message
    if restart:
        counts[replica.name] += 1
    by_node = failure.kind is FailureKind.NODE_NOT_READY and pod.disruption is None
    out.failures.setdefault(key, []).append(
        Called(
            t, slot, pod.generation, pod.name, failure.cause, restart, why, pod.node_name if by_node else None
        )
    )
