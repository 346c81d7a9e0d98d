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

from aitj.core.api import Job
from aitj.core.observed import NodeView, PodView
from aitj.core.planner import plan
from aitj.core.planner.memo import Memo
from tests.unit.builders import Pod, at, node, seed_job, trainer, views, with_status

NODES = 100


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 512, 4096], help="trainers per job")
    parser.add_argument("--seconds", type=float, default=2.0, help="CPU seconds measured per figure")
    parser.add_argument("--profile", action="store_true", help="cProfile the memo's event passes")
    parser.add_argument("--pending", action="store_true", help="the first trainer waits for a node")
    args = parser.parse_args()
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
    pstats.Stats(profile).sort_stats("cumtime").print_stats(35)


if __name__ == "__main__":
    main()
