"""``aitj dev bench`` (``make bench``): the whole run, from a fresh cluster to the report.

Order: the cluster and its node pools; the floor's pods and process; the Job controller's
bring-up (F10, on the empty cluster, then removed); the operator and its bring-up (F10); idle
(F6, F7); F0, F1 (F5 and F6 counted over it), F1g, F2, F3, F4; P1; one large job on a pool of
its own, added and removed for it (F12, F13: ``large``), the operator restarted after it; then,
in the full run only, the growth to 10,000 pods (F11), idle there (F6, F7) and the restart
(F8); last, the leader takeover (F9) at the run's largest scale.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Hashable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aitj.controller.kubeclient import release
from aitj.core import api
from aitj.core.wire import format_time
from aitj.devcluster.cluster import ClusterConfig, LocalCluster, free_base
from aitj.devcluster.config import KUBELET_STATUS_REPORT_SECONDS
from aitj.tools.bench import apimetrics, peer, procstat, report
from aitj.tools.bench import scenarios as sc
from aitj.tools.bench.figures import Measurements, checks
from aitj.tools.bench.floor import floor_pod
from aitj.tools.bench.large import LargeShape, run_large
from aitj.tools.bench.session import Say, Session
from aitj.tools.bench.watcher import CountReaches
from aitj.tools.bench.workload import (
    GANG_JOBS,
    NAMESPACES,
    NS_FLOOR,
    NS_GANG,
    NS_OURS,
    NS_PEER,
    TRAINERS,
    add_nodes,
    f3_node,
    job_names,
    training_job,
    wait_nodes_ready,
)
from aitj.tools.demo import REPO, install_crd

# The bench cluster's apiserver port, or the first free one after it (devcluster.free_base).
BENCH_BASE_PORT = 21443

WARMUP_NS = "bench-warmup"


LARGE = LargeShape()  # F12: one job of 4,096 trainers on 100 nodes of its own (110 pods a node)


@dataclass(frozen=True)
class Shape:
    """Shape: how big a run is. ``pods`` on ``nodes`` general nodes (plus the F3 pool) for
    the latency figures; ``big_pods`` on ``big_nodes`` for F8 and F11 (None: not run);
    ``large``: F12's and F13's job sizes, pool and trials (None: not run)."""

    pods: int
    nodes: int
    big_pods: int | None = None
    big_nodes: int = 0
    f3_nodes: int = 10
    f4_to: int = 108
    trials: int = 200  # F0, F1, F2, P1
    f3_rounds: int = 20  # one node at a time; all F3 nodes at once: a quarter of it
    f4_rounds: int = 5
    idle_seconds: float = 30  # at least one resync period (30 s)
    kills: int = 5  # F9: the leader's SIGKILLs
    timeout: float = 300  # a bring-up, a restart
    large: LargeShape | None = LARGE


# 1,000 pods = 125 jobs on 40 nodes (30 + the 10 of F3); 10,000 = 1,250 jobs on 110 nodes (each
# node takes 110 pods, so 100 general nodes leave room for the floor's and the peer's).
# QUICK's F12: one job of 512 trainers on 8 nodes.
FULL = Shape(pods=1000, nodes=30, big_pods=10000, big_nodes=100)
QUICK = Shape(
    pods=200,
    nodes=8,
    f3_rounds=10,
    f4_rounds=3,
    large=LargeShape(trainers=512, nodes=8, trials=50, sizes=(8, 64), size_trials=30, timeout=300),
)
SMOKE = Shape(
    pods=32,
    nodes=2,
    f3_nodes=2,
    f4_to=16,
    trials=5,
    f3_rounds=1,
    f4_rounds=1,
    idle_seconds=1,
    kills=1,
    timeout=60,
    large=LargeShape(trainers=32, nodes=1, trials=5, sizes=(8,), size_trials=5, timeout=60),
)


def run_bench(
    shape: Shape, *, mode: str, out: Path, cluster_name: str = "bench", say: Say = print
) -> dict[str, Any]:
    """run_bench runs every scenario of ``shape`` on a fresh local cluster ``cluster_name``,
    writes the report into ``out`` and returns results.json's document."""
    began, date = time.monotonic(), format_time(dt.datetime.now(dt.UTC))

    def stamped(message: str) -> None:
        say(f"[{time.monotonic() - began:6.1f}s] {message}")

    m = Measurements(pods=shape.pods, f3_nodes=shape.f3_nodes, f4_to=shape.f4_to)
    # Other work on the machine slows every figure: say how busy it was.
    notes = [f"load average (1, 5, 15 min) at the start: {_load()}"]
    cluster = LocalCluster(cluster_name)
    cluster.down()
    up = time.monotonic()
    # The simulated nodes post their status as a kubelet does (every 5 minutes when nothing
    # changed), not every 4 s as the end-to-end suite's do: 100 nodes' heartbeats would be 25
    # Node events a second to the operator, the scheduler and kube-controller-manager alike.
    config = ClusterConfig(
        nodes=shape.nodes,
        node_profile="cpu",
        base_port=free_base(BENCH_BASE_PORT),
        node_status_seconds=KUBELET_STATUS_REPORT_SECONDS,
    )
    cluster.up(config, say=stamped)
    notes.append(f"aitj dev cluster up ({shape.nodes} nodes) to healthy: {time.monotonic() - up:.1f}s")
    s: Session | None = None
    try:
        add_nodes(cluster, [f3_node(i) for i in range(shape.f3_nodes)], pool="f3")
        wait_nodes_ready(cluster, shape.nodes + shape.f3_nodes)
        install_crd(cluster)
        s = Session(cluster, stamped)
        _namespaces(s)
        s.start_watches()
        _measure(s, shape, m, notes)
    finally:
        usage = procstat.usage_points(s.sampler.samples) if s is not None else []
        if s is not None:
            s.close()
        cluster.down()
    notes.append(f"load average (1, 5, 15 min) at the end: {_load()}")
    rows = checks(m)
    ran = report.RunInfo(
        mode=mode,
        date=date,
        shape=json.loads(json.dumps(asdict(shape))),  # as results.json holds it: tuples are lists
        duration_s=time.monotonic() - began,
        notes=tuple(notes),
        machine=report.machine(),
        commit=report.commit(REPO),
    )
    doc = report.document(ran, rows=rows, m=m, usage=usage)
    for path in report.write(out, doc, rows, m, usage):
        stamped(f"wrote {path}")
    say(report.table(rows))
    return doc


def _measure(s: Session, shape: Shape, m: Measurements, notes: list[str]) -> None:
    """_measure runs the scenarios in order, filling ``m``."""
    say = s.say
    for i in range(TRAINERS):
        release(s.core.create_namespaced_pod(NS_FLOOR, floor_pod(str(i)), _preload_content=False))
    s.start_floor(NS_FLOOR)
    s.settle(NS_FLOOR, TRAINERS)

    say(f"F10 peer: the Job controller brings up {shape.pods} pods")
    peer_names = [f"peer-{i:04d}" for i in range(shape.pods // TRAINERS)]
    m.bringup_peer, _ = sc.bring_up(
        s, NS_PEER, lambda: peer.create_jobs(s.batch, peer_names, TRAINERS), shape.pods, shape.timeout
    )
    sc.peer_teardown(s)

    say("the operator starts")
    s.start_operator()
    _warm_up(s, shape.timeout)
    names = job_names(shape.pods, shape.f3_nodes)
    say(f"F10: the operator brings up {len(names)} jobs, {shape.pods} pods")
    cpu = s.operator_cpu()
    m.bringup_ours, last_pod = sc.bring_up(
        s, NS_OURS, lambda: sc.create_jobs(s, names, shape.f4_to), shape.pods, shape.timeout
    )
    if m.bringup_ours is None:
        m.why["F10"] = f"not all pods Running within {shape.timeout:.0f}s"
    else:
        m.cpu_per_pod = (s.operator_cpu() - cpu) / shape.pods
    _jobs_running(s, len(names), last_pod, shape.timeout, notes)
    say(f"F6, F7: idle for {shape.idle_seconds:.0f}s at {shape.pods} pods")
    m.idle_percent[shape.pods], m.rss_mb[shape.pods] = sc.idle(s, shape.idle_seconds)

    say(f"F0: {shape.trials} force deletes, the floor client")
    floor_order = [(NS_FLOOR, str(i)) for i in range(TRAINERS)]
    m.floor_delete = sc.replacement_trials(s, NS_FLOOR, list(floor_order), sc.strike_delete, shape.trials)
    _f1(s, shape, m, names)
    _f1g(s, shape, m)
    say(f"F2: {shape.trials} exits with code matched by a rule")
    m.ours_exit = sc.replacement_trials(s, NS_OURS, sc.ours_order(names), sc.strike_exit, shape.trials)
    s.settle(NS_OURS, shape.pods)

    f3 = [f3_node(i) for i in range(shape.f3_nodes)]
    say(f"F3: a node NotReady, {shape.f3_rounds} rounds; {len(f3)} at once, {max(1, shape.f3_rounds // 4)}")
    m.node_one = sc.node_trials(s, f3, shape.f3_rounds, together=False)
    m.node_ten = sc.node_trials(s, f3, max(1, shape.f3_rounds // 4), together=True)
    s.settle(NS_OURS, shape.pods)

    say(f"F4: 8 -> {shape.f4_to} trainers, {shape.f4_rounds} rounds; the floor's sequential creates")
    m.scale_first, m.scale_all = sc.scale_trials(s, "f4", shape.f4_to, shape.f4_rounds, shape.timeout)
    m.floor_creates = sc.floor_burst_trials(s, shape.f4_to - TRAINERS, shape.f4_rounds)

    say(f"P1: {shape.trials} force deletes, the Job controller")
    m.peer_delete = sc.peer_trials(s, shape.trials)
    sc.peer_teardown(s)

    if shape.large is None:
        m.why["F12"] = m.why["F13"] = "not in this run"
    else:
        run_large(s, shape.large, m, shape.nodes + shape.f3_nodes, notes)
        _fresh_operator(s, shape.timeout, notes)
    if shape.big_pods is None:
        for fig in ("F8", "F11", "F6@10000", "F7@10000"):
            m.why[fig] = "only in the full run (10,000 pods)"
    else:
        _big(s, shape, m, names, notes)
    say(f"F9: two operators under leader election, the leader SIGKILLed {shape.kills} times")
    m.takeover_pods = shape.pods if shape.big_pods is None else shape.big_pods
    m.takeover, m.takeover_leader = sc.leader_takeover(s, shape.kills, shape.timeout)


def _f1(s: Session, shape: Shape, m: Measurements, names: list[str]) -> None:
    """_f1: F1's trials, with the apiserver's request counts (F5) and the operator's CPU per
    pod event (F6) taken over them."""
    s.say(f"F1: {shape.trials} force deletes, the operator (F5, F6 counted over them)")
    before = apimetrics.request_counts(str(s.cluster.apiserver.request("GET", "/metrics")))
    cpu, events = s.operator_cpu(), s.pods.events[NS_OURS]
    m.ours_delete = sc.replacement_trials(
        s, NS_OURS, sc.ours_order(names), sc.strike_delete, shape.trials, running=m.ours_running
    )
    s.settle(NS_OURS, shape.pods)
    time.sleep(2)  # the last recovery's status write and Event
    after = apimetrics.request_counts(str(s.cluster.apiserver.request("GET", "/metrics")))
    m.api_per_recovery = apimetrics.per_recovery(apimetrics.diff(before, after), shape.trials, shape.trials)
    seen = s.pods.events[NS_OURS] - events
    if seen:
        m.cpu_per_1000_events = (s.operator_cpu() - cpu) / seen * 1000


def _f1g(s: Session, shape: Shape, m: Measurements) -> None:
    """_f1g: F1 on jobs whose pods are gang-scheduled, made for it in a namespace of their own
    (kept to the end: nothing else counts them): a replacement joins a gang already placed and
    must not wait for it (docs/gang.md)."""
    names = [f"gang-{i}" for i in range(GANG_JOBS)]
    trials = max(1, shape.trials // 4)
    s.say(f"F1g: {trials} force deletes in {len(names)} gang-scheduled jobs")
    sc.create_jobs(s, names, shape.f4_to, gang=True)
    s.settle(NS_GANG, len(names) * TRAINERS)
    order: list[Hashable] = [(NS_GANG, job, "trainer", str(i)) for i in range(TRAINERS) for job in names]
    m.gang_delete = sc.replacement_trials(s, NS_GANG, order, sc.strike_delete, trials, running=m.gang_running)
    s.settle(NS_GANG, len(names) * TRAINERS)


def _big(s: Session, shape: Shape, m: Measurements, names: list[str], notes: list[str]) -> None:
    """_big: the full run's 10,000 pods: growth (F11), idle (F6, F7), restart (F8)."""
    assert shape.big_pods is not None
    say = s.say
    add_nodes(s.cluster, [f"bench-node-{i}" for i in range(shape.nodes, shape.big_nodes)])
    wait_nodes_ready(s.cluster, shape.big_nodes + shape.f3_nodes, timeout=300)
    every = job_names(shape.big_pods, shape.f3_nodes)
    more = every[len(names) :]
    say(f"F11: the operator grows to {len(every)} jobs, {shape.big_pods} pods")
    last_pod = s.pods.expect(CountReaches(f"{NS_OURS}/Running", shape.big_pods))
    all_jobs = s.jobs.expect(CountReaches("phase/Running", len(every)))
    started = time.monotonic()
    sc.create_jobs(s, more, shape.f4_to)
    grow = 2 * shape.timeout
    if not last_pod.wait(grow):
        m.why["F11"] = f"not all {shape.big_pods} pods Running within {grow:.0f}s"
        notes.append(f"growth: {s.pods.count(f'{NS_OURS}/Running')} pods Running after {grow:.0f}s")
    else:
        notes.append(
            f"growth: {len(more)} jobs created and all pods Running in {last_pod.times[0] - started:.1f}s"
        )
        if all_jobs.wait(shape.timeout):
            m.jobs_running_after = all_jobs.times[0] - last_pod.times[0]
        else:
            m.why["F11"] = f"not every job Running within {shape.timeout:.0f}s of the last pod"
    s.pods.forget(last_pod)
    s.jobs.forget(all_jobs)
    if s.operator is not None and s.operator.poll() is None:
        say(f"F6, F7: idle for {shape.idle_seconds:.0f}s at {shape.big_pods} pods")
        m.idle_percent[shape.big_pods], m.rss_mb[shape.big_pods] = sc.idle(s, shape.idle_seconds)
    say("F8: the operator restarts")
    m.restart_first, m.restart_status = sc.restart(s, every, shape.timeout)
    if m.restart_first is None or m.restart_status is None:
        m.why["F8"] = f"not within {shape.timeout:.0f}s of the start"


def _fresh_operator(s: Session, timeout: float, notes: list[str]) -> None:
    """_fresh_operator restarts the operator after F12 and F13 and waits until it acts (the
    warm-up job's trainer, force-deleted, runs again): CPython keeps the memory the large job
    took, which F7 at 10,000 pods would count."""
    rss = s.operator_rss() / 1e6
    s.stop_operator()
    s.start_operator()
    sc.replacement_trials(s, WARMUP_NS, [(WARMUP_NS, "warmup", "trainer", "0")], sc.strike_delete, 1, timeout)
    notes.append(f"the operator restarted after F12 and F13 (its RSS then {rss:.0f} MB)")


def _warm_up(s: Session, timeout: float) -> None:
    """_warm_up waits until the operator has listed and acts: a one-trainer job of its own
    namespace runs (the operator's start-up is F8's business, not F10's)."""
    job = training_job("warmup")
    job["metadata"]["namespace"] = WARMUP_NS
    job["spec"]["replicaSpecs"]["trainer"]["replicas"] = 1
    s.custom.create_namespaced_custom_object(api.GROUP, api.VERSION, WARMUP_NS, api.PLURAL, job)
    s.pods.wait_until(lambda w: w.count(f"{WARMUP_NS}/Running") >= 1, timeout, "the operator's warm-up job")


def _jobs_running(s: Session, jobs: int, last_pod: float, timeout: float, notes: list[str]) -> None:
    """_jobs_running waits until every job's phase is Running, and notes how long after the
    last pod Running (at ``last_pod``) it took: F11's measure, at this scale."""
    done = s.jobs.expect(CountReaches("phase/Running", jobs))
    pods = jobs * TRAINERS
    if done.wait(timeout):
        after = max(0.0, done.times[0] - last_pod)
        notes.append(f"{pods} pods: every job's phase Running {after:.1f}s after the last pod Running")
    else:
        s.jobs.forget(done)
        notes.append(f"{pods} pods: not every job's phase Running within {timeout:.0f}s")


def _namespaces(s: Session) -> None:
    """_namespaces creates the bench's namespaces and waits for their default service accounts."""
    for ns in (*NAMESPACES, WARMUP_NS):
        s.core.create_namespace({"metadata": {"name": ns}})
    deadline = time.monotonic() + 60
    for ns in (*NAMESPACES, WARMUP_NS):
        while not [
            a for a in s.core.list_namespaced_service_account(ns).items if a.metadata.name == "default"
        ]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no default service account in {ns}")
            time.sleep(0.2)


def _load() -> str:
    """_load: the machine's load averages, as uptime prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())
