"""Incremental planning (issue 26): a pass planned with the job's Memo equals a full re-plan.

Random event sequences on small random jobs, run pass by pass on the simulated cluster of
tests/unit/builders.py: pods start, exit with random codes, are disrupted (evicted,
preempted), are deleted (forced or graceful) and finish terminating, nodes go NotReady and come
back, replicas are scaled, time moves on, and the executor carries each plan out, sometimes
without its status write, its creates or the steps after the status write (a crash). At every
pass the plan made with the Memo kept across the passes is the full planner's, the whole Plan.

The simulated cluster hands the planner the same PodView for a pod its events left alone, and
the same NodeView for an unchanged node, as the operator's cache does (aitj.controller.cache):
that is what lets the Memo reuse anything, so it is what has to be right.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aitj.core.api import LABEL_INDEX, Job, RestartScope
from aitj.core.observed import PodView
from aitj.core.planner import ledger_index, plan
from aitj.core.planner.memo import Memo
from aitj.core.planner.objects import pods_of
from aitj.core.planner.ownership import key_pass
from aitj.core.planner.types import Plan
from tests.unit.builders import (
    KEYS,
    KeptViews,
    Pod,
    at,
    exit_rule,
    launcher,
    name_of,
    node,
    observed,
    seed_job,
    trainer,
    with_replica,
    with_status,
)
from tests.unit.builders import (
    event_rule as on_event,
)

NODES = ("node-a", "node-b", "node-c")
DISRUPTIONS = ["EvictionByEvictionAPI", "PreemptionByScheduler", "DeletionByTaintManager"]


class Twin(KeptViews):
    """Twin: the simulated cluster, whose every pass is planned twice, in full and with the
    Memo, and checked equal. Pod and node views are kept while their bodies are unchanged."""

    def __init__(self, job: Job, fresh_key: str | None = None) -> None:
        super().__init__(job, node_views=[node(n) for n in NODES])
        self.memo = Memo()
        self.passes = 0
        self.fresh_key = fresh_key  # None: the job is planned unkeyed, as before keys

    def plan(self, now: float) -> Plan:
        owned = observed(self.objects)
        pods = self.pod_views()
        keys = KEYS  # always offered: the planner uses it only when it wants one
        if self.fresh_key is not None and (keyed := key_pass(self.job, pods, owned, self.fresh_key, at(now))):
            self.passes += 1
            return keyed  # the pass that writes the key: no plan made
        full = plan(self.job, pods, self.nodes, at(now), owned=owned, keys=keys)
        kept = plan(self.job, pods, self.nodes, at(now), owned=owned, keys=keys, memo=self.memo)
        assert kept == full, f"pass {self.passes}: the Memo's plan differs from the full planner's"
        self.passes += 1
        return full


# Events: (what, argument). Pods are picked by their place among the live pods' names.
EVENTS = st.one_of(
    st.tuples(st.just("run"), st.integers(0, 7)),
    st.tuples(st.just("schedule"), st.integers(0, 7)),
    st.tuples(st.just("exit"), st.integers(0, 7), st.sampled_from([0, 1, 101, 129, 137])),
    st.tuples(st.just("delete"), st.integers(0, 7), st.sampled_from([0, 30])),
    st.tuples(st.just("disrupt"), st.integers(0, 7), st.sampled_from(DISRUPTIONS)),
    st.tuples(st.just("terminate"), st.just(0)),
    st.tuples(st.just("run_all"), st.integers(0, len(NODES) - 1)),
    st.tuples(st.just("node"), st.integers(0, len(NODES) - 1), st.sampled_from(["True", "False", "Unknown"])),
    st.tuples(st.just("scale"), st.integers(1, 6)),
    st.tuples(st.just("suspend"), st.booleans()),  # spec.suspend set (aitj.core.planner.suspend)
    st.tuples(st.just("wait"), st.sampled_from([1, 5, 30, 120])),
    st.tuples(st.just("crash"), st.sampled_from(["status", "rest", "creates"])),
)


@st.composite
def jobs(draw: st.DrawFn) -> Job:
    """jobs: a small job: 1 to 6 trainers with or without a launcher, random restart settings."""
    scope = draw(st.sampled_from(list(RestartScope)))
    rules = (on_event("nodeNotReady,PodForceDeleted", scope), exit_rule("1,137", scope))
    worker = trainer(
        replicas=draw(st.integers(1, 6)),
        max_replicas=6,
        restart_limit=draw(st.sampled_from([None, 1, 3])),
        restart_timeout=draw(st.sampled_from([None, 20, 864000])),
        rules=draw(st.sampled_from([rules, rules[:1], ()])),
    )
    replicas = (worker, launcher()) if draw(st.booleans()) else (worker,)
    return seed_job(*replicas, discovery=draw(st.booleans()), ssh=draw(st.booleans()))


def _live(cluster: Twin) -> list[str]:
    return sorted(cluster.pods)


def _event(cluster: Twin, event: tuple[Any, ...], now: float) -> str | None:
    """_event: what happens in the cluster; the part of the next pass's plan the executor does
    not carry out (it crashed: ``Cluster.apply``), if any."""
    what, arg, *more = event
    names = _live(cluster)
    pod = cluster.pods[names[arg % len(names)]] if names and isinstance(arg, int) else None
    if what == "run" and pod is not None and pod.raw["status"]["phase"] == "Pending":
        pod.running(now, NODES[arg % len(NODES)])
    elif what == "schedule" and pod is not None and "nodeName" not in pod.raw["spec"]:
        pod.on(NODES[arg % len(NODES)])  # Pending on a node: its containers not started yet
    elif what == "exit" and pod is not None:
        pod.exited(more[0], now)
    elif what == "delete" and pod is not None and "deletionTimestamp" not in pod.raw["metadata"]:
        pod.deleted(now, more[0])
    elif what == "disrupt" and pod is not None:
        pod.disrupted(more[0], now)
    elif what == "run_all":
        cluster.run_all(now, NODES[arg])
    elif what == "terminate":
        cluster.terminate_deleted()
    elif what == "node":
        name = NODES[arg]
        cluster.nodes = {**cluster.nodes, name: node(name, more[0], now)}
    elif what == "scale":
        replicas = min(arg, cluster.job.spec.replicas[0].max_replicas)
        cluster.job = with_replica(cluster.job, "trainer", replicas=replicas)
        cluster.job = dataclasses.replace(cluster.job, generation=cluster.job.generation + 1)
    elif what == "suspend" and cluster.job.spec.suspend is not arg:
        spec = dataclasses.replace(cluster.job.spec, suspend=arg)
        cluster.job = dataclasses.replace(cluster.job, spec=spec, generation=cluster.job.generation + 1)
    return str(arg) if what == "crash" else None


def _run(job: Job, events: Sequence[tuple[Any, ...]], fresh_key: str | None = "ab" * 16) -> Twin:
    """_run: the job planned through ``events``, its first pass writing ``fresh_key`` (as the
    reconciler's does; None: planned unkeyed, as a job made before keys)."""
    cluster = Twin(job, fresh_key)
    now = 10.0
    cluster.step(now)
    for event in events:
        if event[0] == "wait":
            now += event[1]
        lost = _event(cluster, event, now)
        now += 1
        cluster.step(now, status=lost != "status", rest=lost != "rest", creates=lost != "creates")
        cluster.collect()
    return cluster


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs(), st.lists(EVENTS, min_size=1, max_size=16))
def test_the_memo_plans_what_the_full_planner_plans(job: Job, events: list[tuple[Any, ...]]) -> None:
    cluster = _run(job, events)
    assert cluster.passes == len(events) + 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs(), st.lists(EVENTS, min_size=1, max_size=16))
def test_the_memo_plans_what_the_full_planner_plans_with_its_ledgers_folded_at_once(
    job: Job, events: list[tuple[Any, ...]]
) -> None:
    # A small job's histories never have ledger_index.FOLD indices patched: fold after one, so
    # that the planner also runs on index records folded from shared ones (both ways: with and
    # without a memo, the merges patch the same way).
    kept, ledger_index.FOLD = ledger_index.FOLD, 1
    try:
        cluster = _run(job, events, fresh_key=None)
    finally:
        ledger_index.FOLD = kept
    assert cluster.passes == len(events) + 1


def test_a_memo_handed_another_job_forgets_the_first() -> None:
    first = Twin(seed_job())
    first.step(10)
    other = dataclasses.replace(seed_job(), uid="another-uid")
    pods = first.pod_views()
    assert plan(other, pods, first.nodes, at(11), keys=KEYS, memo=first.memo) == plan(
        other, pods, first.nodes, at(11), keys=KEYS
    )


def test_scaled_pods_are_judged_again() -> None:
    """A spec change drops the survey's verdicts (their slots hold the old replica spec)."""
    cluster = Twin(seed_job())
    for now in range(10, 14):
        cluster.step(now)
        cluster.run_all(now)
    cluster.job = with_replica(cluster.job, "trainer", replicas=2)
    cluster.step(20)
    assert {p.raw["metadata"]["labels"][LABEL_INDEX] for p in cluster.pods.values()} >= {"0", "1"}


def _twice(pod: PodView, before: dict[str, Any], after: dict[str, Any]) -> tuple[Plan, Plan]:
    """_twice: the seed job's pass with the status ledger ``before`` (the memo learns the pod's
    verdict), then with ``after`` and the same pod view: the memo's plan and the full one."""
    memo, job, nodes = Memo(), seed_job(trainer(replicas=1), launcher(replicas=0)), {"node-a": node("node-a")}
    plan(with_status(job, {"restartLedger": before}), [pod], nodes, at(20), keys=KEYS, memo=memo)
    job = with_status(job, {"restartLedger": after})
    return plan(job, [pod], nodes, at(21), keys=KEYS, memo=memo), plan(job, [pod], nodes, at(21), keys=KEYS)


def test_a_pod_made_stale_by_a_new_epoch_is_judged_again() -> None:
    """The status may bring a Replica-scope restart's epoch while the pod's view stays."""
    pod = Pod("trainer", 0).running(1).view()
    kept, full = _twice(pod, {"trainer": {"epoch": 0, "seen": [0]}}, {"trainer": {"epoch": 1, "seen": [0]}})
    assert kept == full and [d.name for d in full.deletes] == [pod.name]


def test_a_terminating_pod_whose_generation_was_ended_is_judged_again() -> None:
    """The status may record that the operator ended the pod's generation while its view stays."""
    pod = Pod("trainer", 0).running(1).deleted(5, 30).view()
    kept, full = _twice(
        pod, {"trainer": {"epoch": 0, "seen": [0]}}, {"trainer": {"epoch": 0, "seen": [0], "ended": {"0": 0}}}
    )
    assert kept == full and [c.name for c in full.creates] == [name_of("trainer", 0, 1)]


def test_a_live_pod_of_an_ended_generation_deleted_after_a_settled_pass_is_passed_over() -> None:
    """A generation the ledger says was ended (a scale-in whose delete was lost, then a
    scale-out) whose pod is deleted later: its slot's redo retires it and creates the next."""
    ledger = {"trainer": {"epoch": 0, "seen": [0], "ended": {"0": 0}}}
    job = with_status(seed_job(trainer(replicas=1), launcher(replicas=0)), {"restartLedger": ledger})
    memo, nodes, pod = Memo(), {"node-a": node("node-a")}, Pod("trainer", 0).running(1)
    plan(job, [pod.view()], nodes, at(20), keys=KEYS, memo=memo)
    assert memo.quiet is not None  # the pass decided nothing: the next redoes only what changed
    gone = pod.deleted(21, 30).view()
    kept = plan(job, [gone], nodes, at(22), keys=KEYS, memo=memo)
    assert kept == plan(job, [gone], nodes, at(22), keys=KEYS)
    assert [c.name for c in kept.creates] == [name_of("trainer", 0, 1)]


def test_a_recovery_in_a_larger_job_is_redone_slot_by_slot() -> None:
    """A trainer force-deleted in a job of 40, its finalizer released and its replacement
    created, scheduled and run: every pass equals the full planner's, and after the first (which
    surveys all) each redoes only the slots that changed (the Memo keeps a survey to redo)."""
    cluster = Twin(seed_job(trainer(replicas=40, max_replicas=40), launcher()))
    for now in range(10, 14):
        cluster.step(now)
        cluster.run_all(now)
    victim = cluster.pods[name_of("trainer", 7)]
    victim.deleted(20, 0)
    for now in (21, 22, 23):
        cluster.step(now)
        assert cluster.memo.quiet is not None
    fresh = cluster.pods[name_of("trainer", 7, 1)]
    fresh.on("node-b")
    cluster.step(24)
    fresh.running(25, "node-b")
    for now in (26, 27):
        cluster.step(now)
        assert cluster.memo.quiet is not None
    assert [r["pod"] for r in cluster.status["restarts"]] == [name_of("trainer", 7)]
    assert name_of("trainer", 7) not in cluster.pods
    assert cluster.memo.quiet is not None and not cluster.memo.quiet.loud  # all 41 run


def test_a_view_handed_twice_is_sorted_as_the_full_planner_sorts_it() -> None:
    """A pod list holding one view twice (no cache hands one, but plan takes any list): the
    memo sorts it view by view, and the passes after it as usual."""
    cluster = Twin(seed_job(trainer(replicas=2), launcher()))
    for now in range(10, 13):
        cluster.step(now)
        cluster.run_all(now)
    pods = cluster.pod_views()
    new = dataclasses.replace(pods[0])  # a new view of the same pod, handed twice, then gone
    steps = [[*pods, pods[0]], pods, pods, [*pods[1:], new, new], [*pods[1:], new], pods[1:], pods[1:]]
    for now, views in enumerate(steps, start=20):
        kept = plan(cluster.job, views, cluster.nodes, at(now), keys=KEYS, memo=cluster.memo)
        assert kept == plan(cluster.job, views, cluster.nodes, at(now), keys=KEYS)


def test_views_changed_in_place_are_sorted_as_the_full_planner_sorts_them() -> None:
    """Lists as long as the last pass's, whose views changed at a few places (the memo looks
    only there): a view given again at a changed place while it stays at its own, two new
    views the same object, a pod with the job's label it did not make (not the job's) coming
    and going, two views swapping places."""
    cluster = Twin(seed_job(trainer(replicas=8, max_replicas=8), launcher()))
    for now in range(10, 13):
        cluster.step(now)
        cluster.run_all(now)
    pods = cluster.pod_views()
    assert len(pods) == 9
    new = dataclasses.replace(pods[3])
    # A pod with the job's labels that another made, under another name: not the job's pod.
    alien = dataclasses.replace(pods[4], owner_uid="another-uid", name="someone-elses")
    steps = [
        pods,
        [*pods[:4], alien, *pods[5:]],
        [*pods[:4], alien, *pods[5:]],
        [*pods[:4], pods[4], *pods[5:]],
        [pods[1], pods[0], *pods[2:]],  # two views swap places
        pods,
        [*pods[:3], new, *pods[4:]],
        [*pods[:2], new, new, *pods[4:]],  # new at a changed place and at its own
        pods,
        [pods[0], pods[0], *pods[2:]],  # the same at a place that did not change
        pods,
        [pods[0], pods[0], *pods[2:4], alien, *pods[5:]],  # given twice, and a pod not the job's
        [*pods[:4], alien, *pods[5:]],
        pods,
        pods[:-1],  # one gone: the whole list looked at
        pods,
    ]
    sorting, before = Memo(), set[int]()
    for now, views in enumerate(steps, start=20):
        kept = plan(cluster.job, views, cluster.nodes, at(now), keys=KEYS, memo=cluster.memo)
        assert kept == plan(cluster.job, views, cluster.nodes, at(now), keys=KEYS)
        seen = sorting.seen(cluster.job, views)
        assert (seen.mine, seen.others) == pods_of(cluster.job, views)
        mine = set(map(id, seen.mine))  # and the job's views that came and went, by identity
        assert (set(map(id, seen.came)), set(map(id, seen.went))) == (mine - before, before - mine)
        before = mine


def test_a_recovery_of_many_slots_at_once_surveys_all() -> None:
    """More slots to redo than a quarter of the job's (a node lost under many pods): the memo
    surveys all, and plans what the full planner plans."""
    cluster = Twin(seed_job(trainer(replicas=40, max_replicas=40)))
    for now in range(10, 14):
        cluster.step(now)
        cluster.run_all(now)
    for i in range(12):
        cluster.pods[name_of("trainer", i)].deleted(20, 0)
    for now in (21, 22, 23):
        cluster.step(now)
    assert len(cluster.status["restarts"]) == 12
