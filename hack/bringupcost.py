#!/usr/bin/env python3
"""Where a large bring-up's time and CPU go, process by process (issue 26, F10 and F12).

Usage (from a worktree, so that the operator started is that worktree's code):
    aitj dev cluster up --name mine --nodes 0 --node-profile cpu --base-port 16700 --node-status-seconds 300
    PYTHONPATH=$PWD .venv/bin/python hack/bringupcost.py --cluster mine --runs ours,jc,jcsvc,ours

Each run brings up one job of ``--trainers`` pods on a pool of ``--nodes`` kwok nodes of its
own (the bench's F12: ``aitj.tools.bench.workload``), times it to all Running on the harness's
watch (``scenarios.bring_up``), then deletes it and waits for its pods to go and the machine to
calm down. Runs: ``ours`` (the operator's AITrainingJob, ``large_job``), ``jc`` (one Indexed
Job, the bench's reference, ``peer.indexed_job``), ``jcsvc`` (the same with a headless Service
and ``subdomain``: stable DNS names per index, the contract the operator's pods have with a
plugin that uses them), ``ours-nopdb`` (the operator's job without its PodDisruptionBudget).

Every half second it reads the CPU seconds (/proc/<pid>/stat: ``procstat.cpu_seconds``) of
etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, the operator and itself
(its watch of every pod), and the job's pods created, scheduled (spec.nodeName) and Running.
It prints, per run, each process's CPU over the bring-up (create call to all Running) and over
``--tail`` seconds after, the apiserver's requests over the same span by resource
(``apimetrics``), and the timeline. The operator runs through every run (it idles in the Job
controller's runs: its informers select its own pods).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from typing import Any

from kubernetes.client.exceptions import ApiException

import aitj
from aitj.core import api
from aitj.core.render.pdb import ANNOTATION_MAX_UNAVAILABLE
from aitj.devcluster.cluster import LocalCluster
from aitj.devcluster.config import COMPONENTS
from aitj.tools.bench import apimetrics, peer, procstat
from aitj.tools.bench import scenarios as sc
from aitj.tools.bench.large import _wait_quiet
from aitj.tools.bench.session import Session
from aitj.tools.bench.watcher import Watcher
from aitj.tools.bench.workload import (
    LARGE_POOL,
    NS_LARGE,
    NS_PEER,
    add_nodes,
    large_job,
    large_node,
    pod_classes,
    wait_nodes_ready,
)
from aitj.tools.demo import install_crd
from aitj.tools.listwatch import Obj

SHORT = {"etcd": "etcd", "kube-apiserver": "apiserver", "kube-controller-manager": "kcm"}
SHORT |= {"kube-scheduler": "sched", "kwok": "kwok", "operator": "operator", "harness": "harness"}


def classify(pod: Obj) -> tuple[str, ...]:
    """classify: the bench's classes, and "<ns>/scheduled" for a live pod bound to a node."""
    out = pod_classes(pod)
    if len(out) > 1 and (pod.get("spec") or {}).get("nodeName"):
        out += (f"{out[0].split('/')[0]}/scheduled",)
    return out


class Timeline:
    """Timeline: every ``interval`` seconds, each process's CPU seconds and the pods of ``ns``."""

    def __init__(self, s: Session, pids: dict[str, int], ns: str, interval: float = 0.5) -> None:
        self.s, self.pids, self.ns, self.interval = s, pids, ns, interval
        self.rows: list[tuple[float, dict[str, float], tuple[int, int, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        cpu = {name: procstat.cpu_seconds(pid) for name, pid in self.pids.items()}
        counts = tuple(self.s.pods.count(f"{self.ns}/{c}") for c in ("live", "scheduled", "Running"))
        self.rows.append((time.monotonic(), cpu, counts))  # type: ignore[arg-type]

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> Timeline:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def cpu_between(self, t0: float, t1: float) -> dict[str, float]:
        """cpu_between: each process's CPU seconds between the samples nearest t0 and t1."""
        a = min(self.rows, key=lambda r: abs(r[0] - t0))[1]
        b = min(self.rows, key=lambda r: abs(r[0] - t1))[1]
        return {name: b[name] - a[name] for name in a}


def run_one(s: Session, kind: str, n: int, pids: dict[str, int], tail: float, step: float) -> None:
    """run_one: one bring-up of ``kind``, printed, then torn down."""
    ns = NS_LARGE if kind.startswith("ours") else NS_PEER
    core = s.core if kind == "jcsvc" else None

    def create() -> None:
        if kind.startswith("ours"):
            body = large_job(n)
            if kind == "ours-nopdb":  # the job's PodDisruptionBudgets opted out of
                body["metadata"]["annotations"] = {ANNOTATION_MAX_UNAVAILABLE: "none"}
            s.custom.create_namespaced_custom_object(api.GROUP, api.VERSION, NS_LARGE, api.PLURAL, body)
        else:
            peer.create_jobs(s.batch, ["peer-large"], n, LARGE_POOL, core=core)

    def metrics() -> dict[apimetrics.Key, float]:
        return apimetrics.request_counts(str(s.cluster.apiserver.request("GET", "/metrics")))

    before = metrics()
    with Timeline(s, pids, ns) as tl:
        start = tl.rows[0][0]
        took, end = sc.bring_up(s, ns, create, n, 600)
        requests = apimetrics.diff(before, metrics())
        time.sleep(tail)
    report(kind, (n, took), tl, (start, end, tail), requests, step)
    teardown(s, kind, n)


def report(
    kind: str,
    result: tuple[int, float | None],
    tl: Timeline,
    span: tuple[float, float, float],
    requests: dict[apimetrics.Key, float],
    step: float,
) -> None:
    """report prints a run: CPU by process, the apiserver's requests, the timeline."""
    (n, took), (start, end, tail), pids = result, span, list(tl.pids)
    during, after = tl.cpu_between(start, end), tl.cpu_between(end, end + tail)
    took_s = "not" if took is None else f"{took:.1f} s"
    print(f"\n== {kind}: {n} pods Running in {took_s}; CPU over it {sum(during.values()):.1f} s")
    print(f"{'process':10} {'bring-up s':>10} {'% of 2 cores':>12} {f'next {tail:.0f}s':>9}")
    for p in pids:
        share = 100 * during[p] / (2 * (end - start))
        print(f"{SHORT[p]:10} {during[p]:10.2f} {share:12.0f} {after[p]:9.2f}")
    print("apiserver requests over the bring-up (>= 20):")
    for (verb, group, resource, sub), v in sorted(requests.items(), key=lambda kv: -kv[1]):
        if v >= 20:
            print(f"  {verb:6} {group + '/' if group else ''}{resource}{'/' + sub if sub else ''}: {v:.0f}")
    print("t(s)   live  sched  Running | CPU % of a core: " + " ".join(f"{SHORT[p]:>9}" for p in pids))
    last = tl.rows[0]
    for row in tl.rows[1:]:
        if row[0] - last[0] >= step or row is tl.rows[-1]:
            dt = row[0] - last[0]
            cpu = " ".join(f"{100 * (row[1][p] - last[1][p]) / dt:9.0f}" for p in pids)
            live, sched, run = row[2]
            print(f"{row[0] - start:5.1f} {live:5d} {sched:6d} {run:8d} | {' ' * 16} {cpu}")
            last = row


def teardown(s: Session, kind: str, n: int) -> None:
    """teardown: the run's job deleted and its pods gone, then the operator quiet."""
    if kind.startswith("ours"):
        with contextlib.suppress(ApiException):
            s.custom.delete_namespaced_custom_object(
                api.GROUP, api.VERSION, NS_LARGE, api.PLURAL, f"large-{n}"
            )
        s.pods.wait_until(lambda w: w.count(f"{NS_LARGE}/all") == 0, 600, "the operator's pods gone")
    else:
        peer.delete_jobs(s.batch, s.core)
        s.pods.wait_until(lambda w: w.count(f"{NS_PEER}/all") == 0, 600, "the Job controller's pods gone")
    _wait_quiet(s)
    time.sleep(5)  # kcm's and etcd's own tail (endpoints, compaction)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cluster", required=True)
    parser.add_argument(
        "--runs", default="ours,jc,jcsvc", help="ours, ours-nopdb, jc, jcsvc, comma-separated"
    )
    parser.add_argument("--trainers", type=int, default=4096)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--tail", type=float, default=5.0, help="seconds sampled after all Running")
    parser.add_argument("--step", type=float, default=2.5, help="seconds per timeline row")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # each run as it ends
    print(f"operator code: {aitj.__file__}")
    cluster = LocalCluster(args.cluster)
    install_crd(cluster)
    s = Session(cluster, print)
    s.pods = Watcher(s.pods.lister, classify, "pods")
    for ns in (NS_LARGE, NS_PEER):
        with contextlib.suppress(ApiException):
            s.core.create_namespace({"metadata": {"name": ns}})
    nodes = {n["metadata"]["name"] for n in cluster.apiserver.nodes()}
    pool = [large_node(i) for i in range(args.nodes)]
    add_nodes(cluster, [p for p in pool if p not in nodes], pool=LARGE_POOL)
    wait_nodes_ready(cluster, len(nodes | set(pool)), timeout=300)
    time.sleep(3)  # the namespaces' service accounts
    s.start_watches()
    s.start_operator()
    assert s.operator is not None
    s.operator_passes()  # its /metrics answers: started
    time.sleep(5)
    pids: dict[str, Any] = {c: cluster.pid(c) for c in COMPONENTS}
    pids |= {"operator": s.operator.pid, "harness": os.getpid()}
    try:
        for kind in args.runs.split(","):
            run_one(s, kind, args.trainers, pids, args.tail, args.step)
    finally:
        s.close()


if __name__ == "__main__":
    main()
