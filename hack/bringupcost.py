#!/usr/bin/env python3
"""Where a large bring-up's time and CPU go, process by process (issue 26, F10 and F12).

Usage (from a worktree, so that the operator started is that worktree's code):
    aitj dev cluster up --name mine --nodes 0 --node-profile cpu --base-port 16700 --node-status-seconds 300
    PYTHONPATH=$PWD .venv/bin/python hack/bringupcost.py --cluster mine --runs ours,jc,jcsvc,ours
    # F10's shape: 125 jobs of 8 on 40 nodes, the jobs created one call after another
    PYTHONPATH=$PWD .venv/bin/python hack/bringupcost.py --cluster mine --jobs 125 --trainers 8 \
        --nodes 40 --step 0.5 --runs jc,ours,jc,ours

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
With ``--jobs`` N above 1 (F10's shape), each run is N jobs of ``--trainers`` (``job-*``, the
bench's AITrainingJob in its namespace, or Indexed Jobs) on a pool of general nodes
(``bench-node-*``, untainted), and the report adds when each job's first pod was seen after
its create call and how far apart the harness's create calls were, the operator's status
writes per job as its watch saw them (three jobs' in full), and the pods' managedFields by
manager, operation and subresource (who wrote them: a PATCH of pods counted by the apiserver
is named there). ``--pprof S`` saves the apiserver's CPU profile of each run's first S
seconds (the apiserver must run with --profiling=true, which ``aitj dev cluster up`` turns
off; docs/bench.md, "Bring-up (F10, F12)", says how it was restarted with it).
It prints, per run, each process's CPU over the bring-up (create call to all Running) and over
``--tail`` seconds after, the apiserver's requests over the same span by resource
(``apimetrics``), and the timeline. The operator runs through every run (it idles in the Job
controller's runs: its informers select its own pods).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import ssl
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from kubernetes.client.exceptions import ApiException
from recoverycost import names_by_signal  # hack/, the script's own folder, is on sys.path

import aitj
from aitj.controller.kubeclient import release
from aitj.core import api
from aitj.core.render.pdb import ANNOTATION_MAX_UNAVAILABLE
from aitj.devcluster.cluster import LocalCluster
from aitj.devcluster.config import COMPONENTS
from aitj.tools.bench import apimetrics, peer, procstat
from aitj.tools.bench import scenarios as sc
from aitj.tools.bench.large import _wait_quiet
from aitj.tools.bench.session import Session
from aitj.tools.bench.watcher import Expectation, Watcher
from aitj.tools.bench.workload import (
    LARGE_POOL,
    NS_LARGE,
    NS_OURS,
    NS_PEER,
    TRAINERS,
    add_nodes,
    large_job,
    large_node,
    pod_classes,
    slot,
    training_job,
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


@dataclass(frozen=True)
class Shape:
    """Shape: ``jobs`` jobs of ``trainers`` pods each (one job: F12's shape, on the large pool;
    many: F10's, ``job-*`` on the general nodes)."""

    jobs: int
    trainers: int

    @property
    def pods(self) -> int:
        return self.jobs * self.trainers

    @property
    def many(self) -> bool:
        return self.jobs > 1

    def names(self) -> list[str]:
        return [f"job-{i:04d}" for i in range(self.jobs)]

    def namespace(self, kind: str) -> str:
        if not kind.startswith("ours"):
            return NS_PEER
        return NS_OURS if self.many else NS_LARGE


class FirstPods(Expectation):
    """FirstPods: when the first pod of each job of ``ns`` was seen (never done: forgotten)."""

    def __init__(self, ns: str) -> None:
        super().__init__()
        self.ns = ns
        self.first: dict[str, float] = {}

    def feed(self, etype: str, obj: Obj, counts: Counter[str], now: float) -> bool:
        key = slot(obj) if etype == "ADDED" else None
        if key is not None and key[0] == self.ns:
            self.first.setdefault(key[1], now)
        return False


class StatusWrites(Expectation):
    """StatusWrites: each status the watch saw of the jobs of NS_OURS, as (time, phase, running
    pods) per job (never done: forgotten)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, list[tuple[float, str, int]]] = {}

    def feed(self, etype: str, obj: Obj, counts: Counter[str], now: float) -> bool:
        status = obj.get("status") or {}
        if etype == "MODIFIED" and status:
            replicas = (status.get("replicaStatuses") or {}).values()
            running = sum((r or {}).get("running") or 0 for r in replicas)
            name = obj["metadata"]["name"]
            self.seen.setdefault(name, []).append((now, status.get("phase") or "", running))
        return False


def ours_body(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """ours_body: ``body``, its PodDisruptionBudgets opted out of for ``ours-nopdb``."""
    if kind == "ours-nopdb":
        body["metadata"]["annotations"] = {ANNOTATION_MAX_UNAVAILABLE: "none"}
    return body


def creator(s: Session, kind: str, shape: Shape, called: dict[str, float]) -> Callable[[], None]:
    """creator: the create calls of a run of ``kind``, one after another (each job's time of
    call in ``called``)."""
    core = s.core if kind == "jcsvc" else None

    def create() -> None:
        if not shape.many:
            called[f"large-{shape.trainers}"] = time.monotonic()
            if kind.startswith("ours"):
                body = ours_body(kind, large_job(shape.trainers))
                s.custom.create_namespaced_custom_object(api.GROUP, api.VERSION, NS_LARGE, api.PLURAL, body)
            else:
                peer.create_jobs(s.batch, ["peer-large"], shape.trainers, LARGE_POOL, core=core)
            return
        for name in shape.names():
            called[name] = time.monotonic()
            if kind.startswith("ours"):
                body = ours_body(kind, training_job(name, TRAINERS))
                release(
                    s.custom.create_namespaced_custom_object(
                        api.GROUP, api.VERSION, NS_OURS, api.PLURAL, body, _preload_content=False
                    )
                )
            else:
                peer.create_jobs(s.batch, [name], shape.trainers, core=core)

    return create


def profile_apiserver(cluster: LocalCluster, seconds: float, out: Path) -> threading.Thread:
    """profile_apiserver: a thread that writes the apiserver's CPU profile of the next
    ``seconds`` to ``out`` (its /debug/pprof: only when it runs with --profiling=true, which
    ``aitj dev cluster up`` turns off; read with ``go tool pprof``)."""

    def fetch() -> None:
        ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
        ctx.load_cert_chain(str(cluster.pki / "admin.crt"), str(cluster.pki / "admin.key"))
        url = f"{cluster.apiserver.server}/debug/pprof/profile?seconds={seconds:.0f}"
        with urllib.request.urlopen(url, context=ctx, timeout=seconds + 30) as resp:
            out.write_bytes(resp.read())

    thread = threading.Thread(target=fetch, daemon=True)
    thread.start()
    return thread


def thread_cpu(pid: int) -> dict[str, float]:
    """thread_cpu: CPU seconds of each live thread of ``pid``, by thread id (as recoverycost)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            out[tid] = procstat.parse_stat(Path(f"/proc/{pid}/task/{tid}/stat").read_text())
    return out


def thread_names(pid: int, log_path: Path) -> dict[str, str]:
    """thread_names: thread id -> name, from the line the operator logs on SIGUSR2
    (recoverycost's ``names_by_signal``), pools under one name (``pass_3`` -> ``pass_*``)."""
    return {tid: re.sub(r"_\d+$", "_*", name) for tid, name in names_by_signal(pid, log_path).items()}


def report_threads(s: Session, before: dict[str, float], after: dict[str, float], pods: int) -> None:
    """report_threads: the operator's CPU over the bring-up by thread (pools together), a pod."""
    assert s.operator is not None
    names = thread_names(s.operator.pid, s.cluster.logs / "operator.log")
    by: dict[str, float] = {}
    for tid, cpu in after.items():
        name = names.get(tid, f"thread {tid}")
        by[name] = by.get(name, 0.0) + cpu - before.get(tid, 0.0)
    ranked = sorted(by.items(), key=lambda kv: -kv[1])
    parts = ", ".join(f"{name} {1000 * v / pods:.2f}" for name, v in ranked if v >= 0.01)
    print(f"the operator's CPU a pod by thread (ms; threads that ended not counted): {parts}")


def run_one(s: Session, kind: str, shape: Shape, pids: dict[str, int], opts: argparse.Namespace) -> None:
    """run_one: one bring-up of ``kind``, printed, then torn down."""
    ns, tail, step = shape.namespace(kind), opts.tail, opts.step
    called: dict[str, float] = {}
    create = creator(s, kind, shape, called)

    def metrics() -> dict[apimetrics.Key, float]:
        return apimetrics.request_counts(str(s.cluster.apiserver.request("GET", "/metrics")))

    before = metrics()
    firsts = s.pods.expect(FirstPods(ns))
    writes = s.jobs.expect(StatusWrites())
    profiler = None
    if opts.pprof:
        opts.runs_done = getattr(opts, "runs_done", 0) + 1
        out = Path(opts.pprof_dir) / f"apiserver-{opts.runs_done}-{kind}.pprof"
        profiler = profile_apiserver(s.cluster, opts.pprof, out)
    assert s.operator is not None
    threads = thread_cpu(s.operator.pid)
    with Timeline(s, pids, ns) as tl:
        start = tl.rows[0][0]
        took, end = sc.bring_up(s, ns, create, shape.pods, 600)
        threads_after = thread_cpu(s.operator.pid)
        requests = apimetrics.diff(before, metrics())
        time.sleep(tail)
    s.pods.forget(firsts)
    s.jobs.forget(writes)
    if profiler is not None:
        profiler.join()
    report(kind, (shape.pods, took), tl, (start, end, tail), requests, step)
    if kind.startswith("ours"):
        report_threads(s, threads, threads_after, shape.pods)
    if shape.many:
        report_jobs(start, called, firsts.first)
        if kind.startswith("ours"):
            report_writes(called, writes.seen)
    report_managers(s, ns)
    teardown(s, kind, shape)


def report_jobs(start: float, called: dict[str, float], first: dict[str, float]) -> None:
    """report_jobs: each job's create call and first pod seen, from the run's start."""
    lags = sorted(first[n] - called[n] for n in called if n in first)
    if not lags:
        return
    times = sorted(called.values())
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    pick = [lags[min(len(lags) - 1, int(q * len(lags)))] for q in (0.5, 0.9, 0.99)]
    print(
        f"jobs: create calls {min(called.values()) - start:.2f} to {max(called.values()) - start:.2f} s;"
        f" first pods seen {min(first.values()) - start:.2f} to {max(first.values()) - start:.2f} s"
        f" ({len(first)} of {len(called)}); call -> first pod p50/p90/p99/max"
        f" {' / '.join(f'{1000 * v:.0f}' for v in (*pick, lags[-1]))} ms; a create call (the harness's,"
        f" one after another) p50/p90 {1000 * gaps[len(gaps) // 2]:.0f}"
        f" / {1000 * gaps[int(0.9 * len(gaps))]:.0f} ms"
    )


def report_writes(called: dict[str, float], seen: dict[str, list[tuple[float, str, int]]]) -> None:
    """report_writes: the jobs' status writes as the watch saw them (a MODIFIED event with a
    status: the operator's writes, as nothing else writes a job), and three jobs' in full."""
    per_job = sorted(len(v) for v in seen.values())
    if not per_job:
        return
    print(
        f"status versions seen: {sum(per_job)} for {len(per_job)} jobs; per job min/p50/max"
        f" {per_job[0]} / {per_job[len(per_job) // 2]} / {per_job[-1]}"
    )
    for name in sorted(seen)[:: max(1, len(seen) // 3)][:3]:
        steps = ", ".join(f"{t - called[name]:.2f} s {phase} {run}" for t, phase, run in seen[name])
        print(f"  {name} (from its create call): {steps}")


def report_managers(s: Session, ns: str) -> None:
    """report_managers: the pods' managedFields entries by manager, operation, subresource."""
    response = s.core.list_namespaced_pod(ns, _preload_content=False)
    pods = orjson.loads(response.data)["items"]
    tally: Counter[tuple[str, str, str]] = Counter()
    for pod in pods:
        for f in pod["metadata"].get("managedFields") or []:
            tally[(f.get("manager", ""), f.get("operation", ""), f.get("subresource", ""))] += 1
    print(f"managedFields of the {len(pods)} pods (manager, operation, subresource: pods):")
    for (manager, op, sub), v in tally.most_common():
        print(f"  {manager} {op} {sub or '-'}: {v}")


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


def teardown(s: Session, kind: str, shape: Shape) -> None:
    """teardown: the run's jobs deleted and their pods gone, then the operator quiet."""
    ns = shape.namespace(kind)
    if kind.startswith("ours"):
        with contextlib.suppress(ApiException):
            s.custom.delete_collection_namespaced_custom_object(api.GROUP, api.VERSION, ns, api.PLURAL)
    else:
        peer.delete_jobs(s.batch, s.core)
    s.pods.wait_until(lambda w: w.count(f"{ns}/all") == 0, 600, f"the pods of {ns} gone")
    _wait_quiet(s)
    time.sleep(5)  # kcm's and etcd's own tail (endpoints, compaction)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cluster", required=True)
    parser.add_argument(
        "--runs", default="ours,jc,jcsvc", help="ours, ours-nopdb, jc, jcsvc, comma-separated"
    )
    parser.add_argument("--trainers", type=int, default=4096, help="pods per job")
    parser.add_argument("--jobs", type=int, default=1, help="jobs per run (more than 1: F10's shape)")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--tail", type=float, default=5.0, help="seconds sampled after all Running")
    parser.add_argument("--step", type=float, default=2.5, help="seconds per timeline row")
    parser.add_argument(
        "--pprof", type=float, default=0, help="seconds of the apiserver's CPU profile from each create on"
    )
    parser.add_argument("--pprof-dir", default="/tmp", help="where the profiles go")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # each run as it ends
    print(f"operator code: {aitj.__file__}")
    cluster = LocalCluster(args.cluster)
    install_crd(cluster)
    s = Session(cluster, print)
    s.pods = Watcher(s.pods.lister, classify, "pods")
    shape = Shape(args.jobs, args.trainers)
    for ns in (NS_LARGE, NS_PEER, NS_OURS):
        with contextlib.suppress(ApiException):
            s.core.create_namespace({"metadata": {"name": ns}})
    nodes = {n["metadata"]["name"] for n in cluster.apiserver.nodes()}
    if shape.many:  # untainted, as the bench's general nodes
        pool = [f"bench-node-{i}" for i in range(args.nodes)]
        add_nodes(cluster, [p for p in pool if p not in nodes])
    else:
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
            run_one(s, kind, shape, pids, args)
    finally:
        s.close()


if __name__ == "__main__":
    main()
