#!/usr/bin/env python3
"""Time the planner on one running job of N trainers (issue 26, F13: CPU per pass against
the pods in the job).

Usage:
    PYTHONPATH=$PWD .venv/bin/python hack/planbench.py                 # 8, 512 and 4,096 trainers
    PYTHONPATH=$PWD .venv/bin/python hack/planbench.py --sizes 4096 --profile

The job is the seed job of tests/unit/builders.py (discovery and ssh on), every trainer
Running on one of 100 nodes, its status settled by a few passes. Two figures per size, as CPU
time (``time.process_time``) per ``plan()`` call over ``--seconds`` seconds:

- ``steady``: the same inputs every pass (a pass kicked by a job event or a resync);
- ``event``: before each pass one pod's view is replaced by a new, equal one (the cache hands
  the planner a new PodView when a pod's resourceVersion moves: the common pod event that
  changes nothing the planner decides on), a different pod each time.

With ``--pending`` the first trainer waits for a node (Pending, unscheduled): the job is coming
up or recovering, and every pass decides something about that pod.

With ``--recovery`` (aitj.core.planner's figure F13): a recovery of one trainer, a different one
each trial, in the running job with its memo, applied as the executor would
(tests/unit/builders.py's ``Cluster``): the trainer is force-deleted, pass; the plan applied (its
finalizer released and the pod gone, the replacement created Pending, the restart written into
the status), pass; the replacement scheduled, pass; Running, pass; and after any pass that wrote
the status, one more (the status update comes back as a job event). As the cache does, the
planner gets the same PodView of every pod that did not change. Printed: CPU ms per ``plan()``
call, for each step and per whole recovery (only the ``plan()`` calls are timed).

Each is measured without a memo (the full planner) and with one (``aitj.core.planner.memo``,
kept across the passes as the reconciler keeps it).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import pstats
import time
from collections.abc import Callable, Mapping
from statistics import mean

from aitj.core.api import LABEL_INDEX, Job
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import Plan, plan
from aitj.core.planner.memo import Memo
from tests.unit.builders import (
    KEYS,
    KeptViews,
    Pod,
    at,
    node,
    observed,
    seed_job,
    trainer,
    views,
    with_status,
)

NODES = 100
SORT = ["cumtime"]  # --sort: the order of --profile's table


def running_job(n: int, pending: bool = False) -> tuple[Job, list[PodView], dict[str, NodeView]]:
    """running_job: the job of ``n`` trainers, all Running (``pending``: but the first, which
    waits for a node), its status settled."""
    job = seed_job(trainer(replicas=n, max_replicas=n, min_replicas=1), discovery=True, ssh=True)
    pods = views(Pod("trainer", i).running(1, f"node-{i % NODES}") for i in range(n))
    if pending:
        pods[0] = Pod("trainer", 0).view()
    nodes = {f"node-{i}": node(f"node-{i}") for i in range(NODES)}
    for second in range(10, 14):
        status = plan(job, pods, nodes, at(second)).status
        if status is not None:
            job = with_status(job, status)
    return job, pods, nodes


def per_pass(step: Callable[[int], object], seconds: float) -> float:
    """per_pass: CPU milliseconds per call of ``step(k)`` (k counts the calls)."""
    start, k = time.process_time(), 0
    while time.process_time() - start < seconds:
        step(k)
        k += 1
    return (time.process_time() - start) / k * 1000


def passes(
    job: Job, pods: list[PodView], nodes: Mapping[str, NodeView], *, memo: bool, event: bool
) -> Callable[[int], object]:
    """passes: the ``step`` of one pass of the job (see the module docstring); the first pod
    keeps its view."""
    m = Memo() if memo else None
    current = list(pods)

    def step(k: int) -> object:
        if event:
            i = 1 + k % (len(current) - 1) if len(current) > 1 else 0
            current[i] = dataclasses.replace(current[i])
        return plan(job, current, nodes, at(20), memo=m)

    return step


class Recovering(KeptViews):
    """Recovering: the simulated cluster planned with a Memo, handing the planner the same
    PodView for a pod whose body did not change (as aitj.controller.cache does); ``spent``
    holds the CPU seconds of each ``plan()`` call since it was last emptied."""

    def __init__(self, job: Job, pods: list[Pod], node_views: list[NodeView]) -> None:
        super().__init__(job, pods, node_views)
        self.memo = Memo()
        self.spent: list[float] = []
        self.profile: cProfile.Profile | None = None  # when set, the ``plan()`` calls are profiled

    def plan(self, now: float) -> Plan:
        pods, owned = self.pod_views(), observed(self.objects)
        start = time.process_time()
        if self.profile is not None:
            self.profile.enable()
        result = plan(self.job, pods, self.nodes, at(now), owned=owned, keys=KEYS, memo=self.memo)
        if self.profile is not None:
            self.profile.disable()
        self.spent.append(time.process_time() - start)
        return result

    def settle(self, now: float) -> float:
        """settle: a pass, then one more after each that wrote the status (at most 3);
        the time after."""
        for _ in range(4):
            now += 0.1
            if self.step(now).status is None:
                break
        return now


STEPS = ("force-deleted", "scheduled", "running")


def recovering(n: int) -> Recovering:
    """recovering: the running job of ``n`` trainers on the simulated cluster, settled."""
    job = seed_job(trainer(replicas=n, max_replicas=n, min_replicas=1), discovery=True, ssh=True)
    pods = [Pod("trainer", i).running(1, f"node-{i % NODES}") for i in range(n)]
    cluster = Recovering(job, pods, [node(f"node-{i}") for i in range(NODES)])
    cluster.settle(10)
    return cluster


def recovery(cluster: Recovering, k: int, now: float) -> tuple[float, dict[str, list[float]]]:
    """recovery: trainer ``k`` force-deleted and replaced (see the module docstring); the time
    after, and the CPU seconds of each ``plan()`` call by step."""
    spent: dict[str, list[float]] = {}
    victim = next(p for p in cluster.pods.values() if p.raw["metadata"]["labels"][LABEL_INDEX] == str(k))
    for step in STEPS:
        if step == "force-deleted":
            victim.deleted(now, 0)
        else:
            fresh = next(
                p for p in cluster.pods.values() if p.raw["metadata"]["labels"][LABEL_INDEX] == str(k)
            )
            fresh.on(f"node-{k % NODES}") if step == "scheduled" else fresh.running(now, f"node-{k % NODES}")
        cluster.spent = []
        now = cluster.settle(now)
        spent[step] = cluster.spent
    return now + 1, spent


def recoveries(n: int, trials: int, profile: bool) -> None:
    """recoveries: ``trials`` recoveries of the job of ``n`` trainers, their figures printed:
    the mean of each pass of each step, of a pass, of a recovery."""
    cluster = recovering(n)
    now, runs = 100.0, []
    for t in range(trials + 1):
        now, spent = recovery(cluster, (7 * t + 1) % n, now)
        if t > 0:  # the first fills what the memo keeps of the recovery's passes
            runs.append(spent)
    shapes = {tuple(len(c) for c in run.values()) for run in runs}
    steps = " ".join(
        f"{step} " + "/".join(f"{mean([run[step][k] for run in runs]) * 1000:.2f}" for k in range(len(calls)))
        for step, calls in runs[0].items()
    )
    calls = [c for run in runs for cs in run.values() for c in cs]
    per_recovery = sum(calls) / trials * 1000
    print(
        f"{n:8d}  {mean(calls) * 1000:8.3f}  {per_recovery:9.3f}   {steps}"
        + ("" if len(shapes) == 1 else " (uneven)")
    )
    if profile:
        cluster.profile = cProfile.Profile()
        for t in range(5):
            recovery(cluster, (7 * t + 3) % n, now + 10 * t)
        pstats.Stats(cluster.profile).sort_stats(SORT[0]).print_stats(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 512, 4096], help="trainers per job")
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds measured per figure")
    parser.add_argument("--profile", action="store_true", help="cProfile the memo's event passes")
    parser.add_argument("--pending", action="store_true", help="the first trainer waits for a node")
    parser.add_argument("--recovery", action="store_true", help="a trainer force-deleted and replaced")
    parser.add_argument("--trials", type=int, default=10, help="recoveries measured per size (--recovery)")
    parser.add_argument("--sort", default="cumtime", help="--profile's order: cumtime, tottime, ...")
    args = parser.parse_args()
    SORT[0] = args.sort
    if args.recovery:
        print("trainers  per pass  recovery   each pass of each step (ms of CPU)")
        for n in args.sizes:
            recoveries(n, args.trials, args.profile)
        return
    print("trainers  steady full  steady memo  event full  event memo   (ms of CPU per pass)")
    for n in args.sizes:
        job, pods, nodes = running_job(n, args.pending)
        figures = [
            per_pass(passes(job, pods, nodes, memo=memo, event=event), args.seconds)
            for event in (False, True)
            for memo in (False, True)
        ]
        print(f"{n:8d}" + "".join(f"  {f:10.3f}" for f in figures))
        if args.profile:
            profiled(passes(job, pods, nodes, memo=True, event=True))


def profiled(step: Callable[[int], object]) -> None:
    """profiled: cProfile of 20 passes of ``step`` after a first (which fills the memo)."""
    step(0)
    profile = cProfile.Profile()
    profile.runcall(lambda: [step(k) for k in range(1, 21)])
    pstats.Stats(profile).sort_stats(SORT[0]).print_stats(35)


if __name__ == "__main__":
    main()
