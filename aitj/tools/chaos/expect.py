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

Rule budgets (restartLimit within restartWindowSeconds, section 17) and the escalation ladder
(section 23) are kept as the operator keeps them, with its own functions
(``aitj.core.planner.rule_budgets``, ``aitj.core.planner.in_place``) over a ledger of the
rules' charges that ``Ladder`` builds from the failures in order, from the run's start (budgets
a job used before the run are not known). A kill (``kill``: SIGKILL, exit code 137) of a pod
created to restart in place on 137 (its in-place annotation names it, and the cluster stored
its rules) is no failure of the pod: the kubelet restarts its containers, and the operator
either charges that restart to the InPlace rule (``Expected.in_place``: the pod is kept, and
RestartCount does not move) or, that rung being spent, takes it as the pod's failure for the
next rule (``kill_restarts``). A kill of any other pod is an exit code 137 failure like any.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from aitj.core import api
from aitj.core.api import ReplicaSpec, RestartScope
from aitj.core.observed import PodView
from aitj.core.planner import in_place, rule_budgets
from aitj.core.planner.ledger import ReplicaHistory
from aitj.core.planner.rulelog import RuleHistory
from aitj.core.policy import Decision, Failure, FailureKind, RestartDecision, classify, decide
from aitj.tools.chaos.history import FaultRecord, History, JobKey, JobSample, NodeSample, PodSample, Slot
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
    scope: RestartScope | None = None  # the restart's scope (InPlace: the pod was kept)


@dataclass(frozen=True)
class InPlaceCalled:
    """InPlaceCalled: a kill the kubelet restarts in place and the operator charges to an InPlace
    rule: pod ``uid`` on ``node`` is kept, with more than ``restarts`` restarts; ``rung``: the
    rule and its budget after it (``rule 1 (InPlace) 2 of 3 in 600 s``)."""

    t: float
    slot: Slot
    uid: str
    node: str | None
    restarts: int
    running_since: datetime | None
    rung: str


@dataclass
class Expected:
    """Expected: per job, the failures in order and the RestartCount they call for."""

    failures: dict[JobKey, list[Called]] = field(default_factory=dict)
    counts: dict[JobKey, Counter[str]] = field(default_factory=dict)  # baseline included
    baseline: dict[JobKey, dict[str, int]] = field(default_factory=dict)  # as first seen
    # Restarts a node blip (replay.World.is_blip) may or may not have caused: the operator, level
    # triggered, restarts a pod only if it looks while the node is not Ready.
    maybe: dict[JobKey, Counter[str]] = field(default_factory=dict)
    in_place: dict[JobKey, list[InPlaceCalled]] = field(default_factory=dict)

    def stood(self, key: JobKey) -> list[Called]:
        """stood: the job's failures that are not restarted."""
        return [c for c in self.failures.get(key, []) if not c.restart]

    def vacant(self, key: JobKey, replica: str) -> set[int]:
        """vacant: indices of the replica whose failure stood and was not replaced since."""
        return {c.slot[3] for c in self.stood(key) if c.slot[2] == replica}


Charges = tuple[tuple[str, RuleHistory], ...]  # (rule text, its history after), as observe gives
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # the ledger's clock: the run's seconds from here
KILLED = 137  # the exit code of a SIGKILLed container


def at(t: float) -> datetime:
    return EPOCH + timedelta(seconds=t)


@dataclass
class Ladder:
    """Ladder: what each rule was charged, per job and replica, as the operator's ledger keeps it
    (only the rules' part: ``ReplicaHistory.rules``)."""

    histories: dict[tuple[JobKey, str], ReplicaHistory] = field(default_factory=dict)

    def of(self, key: JobKey, replica: str) -> ReplicaHistory:
        return self.histories.get((key, replica)) or ReplicaHistory()

    def decide(self, key: JobKey, job: api.Job, replica: ReplicaSpec, failure: Failure, t: float) -> Decision:
        """decide: ``policy.decide`` with the rules whose budget is spent at ``t``."""
        used = rule_budgets.spent(replica, self.of(key, replica.name), at(t))
        return decide(replica, job.spec.fault_tolerant, failure, {k: b.text for k, b in used.items()})

    def charge(
        self, key: JobKey, replica: ReplicaSpec, pod: PodView, d: RestartDecision, failure: Failure, t: float
    ) -> None:
        """charge: a restart of ``pod``'s index by the rule that fired (``restarted``; an
        InPlace rule's fallback replacement keyed as the operator keys it)."""
        fired = next((c.index for c in d.trace if c.fired), None)
        if fired is None or pod.index is None:
            return
        rule = replica.rules[fired]
        gen = (
            in_place.key(pod.generation, None)
            if rule.restart_scope is RestartScope.IN_PLACE
            else pod.generation
        )
        history = self.of(key, replica.name)
        after, _ = rule_budgets.restarted(rule, history, pod.index, gen, pod, failure, at(t))
        if after is not None:
            self.merge(key, replica.name, ((d.rule, after),), pod.index)

    def merge(self, key: JobKey, replica: str, charges: Charges, index: int) -> None:
        history = self.of(key, replica)
        for text, after in charges:
            history = history.merge(ReplicaHistory(rules=(((index, text), after),)))
        self.histories[(key, replica)] = history


def restarted_in_place(pod: PodView) -> bool:
    """restarted_in_place: the kubelet restarts ``pod``'s containers in place when one exits 137."""
    codes = {int(c) for c in (pod.in_place or "").split(",") if c.isdigit()}
    return pod.in_place_served and KILLED in codes


def expected_restarts(history: History) -> Expected:
    """expected_restarts: replay the history and count the restarts the faults call for."""
    aimed = {uid for f in history.faults if f.error is None for uid in f.pods}
    kills = sorted(
        (f for f in history.faults if f.kind == "kill" and f.error is None and f.pods), key=lambda f: f.t
    )
    world = world_of(history)
    out = Expected()
    ladder = Ladder()
    seen: set[tuple[Slot, int]] = set()
    for s in history.timeline():
        while kills and kills[0].t <= s.t:
            kill_restarts(world, kills.pop(0), aimed, seen, ladder, out)
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
            _judge(world, pod, s.t, pod.uid in aimed, seen, ladder, out)
    for f in kills:
        kill_restarts(world, f, aimed, seen, ladder, out)
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
    world: World,
    pod: PodView,
    t: float,
    aimed: bool,
    seen: set[tuple[Slot, int]],
    ladder: Ladder,
    out: Expected,
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
    by_node = failure.kind is FailureKind.NODE_NOT_READY and pod.disruption is None
    _failed(key, sample.job, pod, failure, t, ladder, out, pod.node_name if by_node else None)


def _failed(
    key: JobKey,
    job: api.Job,
    pod: PodView,
    failure: Failure,
    t: float,
    ladder: Ladder,
    out: Expected,
    node: str | None = None,
) -> None:
    """_failed: a failure of ``pod`` decided as the operator decides it (rule budgets, then the
    replica's restartLimit), charged to its rule, and noted."""
    assert pod.replica is not None and pod.index is not None
    replica = job.spec.replica(pod.replica)
    decision = ladder.decide(key, job, replica, failure, t)
    counts = out.counts.setdefault(key, Counter())
    scope = None
    if isinstance(decision, RestartDecision):
        restart, why = True, decision.rule
        if replica.restart_limit is not None and counts[replica.name] >= replica.restart_limit:
            restart, why = False, f"restartLimit {replica.restart_limit} used up"
        else:
            ladder.charge(key, replica, pod, decision, failure, t)
            # An InPlace rule that fires on a failed pod replaces it (the pod was not made to
            # restart in place: created while the rung was spent, or the cluster dropped its rules).
            scope = RestartScope.POD if decision.scope is RestartScope.IN_PLACE else decision.scope
    else:
        restart, why = False, decision.message
    if restart:
        counts[replica.name] += 1
    slot = (key[0], key[1], replica.name, pod.index)
    out.failures.setdefault(key, []).append(
        Called(t, slot, pod.generation, pod.name, failure.cause, restart, why, node, scope)
    )


def kill_restarts(
    world: World, f: FaultRecord, aimed: set[str], seen: set[tuple[Slot, int]], ladder: Ladder, out: Expected
) -> None:
    """kill_restarts: a kill of a pod made to restart in place on 137 (``restarted_in_place``),
    as the operator observes it (``in_place.observe``, at the kill's time): charged to the
    InPlace rule, the pod kept; or, the rung spent, escalated: the pod's failure, which the next
    rule takes (its replacement and deletion are then the operator's, no failure of their own).
    A kill of another pod is left to ``_judge``: the pod fails with exit code 137."""
    pod = world.pods.get(f.pods[0])
    slot = slot_of(pod) if pod is not None else None
    if pod is None or slot is None or not world.current(pod) or not restarted_in_place(pod):
        return
    sample = world.jobs.get(slot[:2])
    if sample is None or sample.job is None or sample.phase in api.FINISHED_PHASES:
        return
    aimed.discard(pod.uid)
    key, job, index = slot[:2], sample.job, slot[3]
    replica = job.spec.replica(slot[2])
    history = ladder.of(key, replica.name)
    done = in_place.charged(replica, history, index, pod.generation)
    restarted = replace(pod, restarts=done + 1, restart_exit=(KILLED, "", at(f.t)))
    found = in_place.observe(job, replica, index, restarted, history, at(f.t))
    ladder.merge(key, replica.name, found.charges, index)
    for r in found.records:
        called = InPlaceCalled(f.t, slot, pod.uid, pod.node_name, pod.restarts, pod.running_since, r.rung)
        out.in_place.setdefault(key, []).append(called)
        out.failures.setdefault(key, []).append(
            Called(
                f.t,
                slot,
                pod.generation,
                pod.name,
                r.failure.cause,
                True,
                r.rule,
                None,
                RestartScope.IN_PLACE,
            )
        )
    if found.escalated is not None:
        seen.add((slot, pod.generation))
        _failed(key, job, pod, found.escalated, f.t, ladder, out)
