"""The pod contract on real nodes (docs/real-nodes.md, docs/pods.md): what the operator's pods
promise a training program, checked where containers really run. Times that users feel are
printed (pytest -s shows them); they are measured, never asserted."""

from __future__ import annotations

import re
import time

import pytest

from aitj.core import api
from tests.clusters import KubeCluster
from tests.e2e.real import nodes
from tests.e2e.real.jobs import (
    box_job,
    grace,
    live_pods,
    pods_by_index,
    restart_time_limit,
    wait_replaced,
    wait_running,
)
from tests.jobs import create_job, events_for, get_job, job_pods, patch_job
from tests.operator_process import OperatorProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e


def resolve(cluster: KubeCluster, namespace: str, pod: str, name: str) -> str | None:
    """resolve: the address ``name`` has from inside ``pod``, through the pod's resolver and its
    search path (busybox's ping resolves, then says where it would send)."""
    out = cluster.kubectl("exec", "-n", namespace, pod, "--", "ping", "-c", "1", "-W", "1", name, check=False)
    found = re.search(r"PING \S+ \(([\d.]+)\)", out.stdout)
    return found.group(1) if found else None


def test_every_pod_runs_on_a_real_node_and_resolves_every_other_by_pod_dot_job(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "names"
    create_job(real_cluster, ns, box_job(job))
    wait_running(real_cluster, ns, job, trainers=3)
    pods = live_pods(real_cluster, ns, job)
    assert {p.spec.node_name for p in pods} <= {"real-node-0", "real-node-1"}
    for asker in pods:
        for target in pods:
            got = resolve(real_cluster, ns, asker.metadata.name, f"{target.metadata.name}.{job}")
            assert got == target.status.pod_ip, (asker.metadata.name, target.metadata.name)


def test_a_real_exit_code_101_restarts_the_launcher_by_the_seeds_rule(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "exit101"
    # The first launcher exits 101; its replacement (RESTARTCOUNT 1 in its environment) runs on.
    first_exits = '[ "$TRAININGJOB_REPLICA_RESTARTCOUNT" != 0 ] || exit 101; sleep 100000'
    create_job(real_cluster, ns, box_job(job, launcher=first_exits))
    wait_for(
        lambda: (
            (get_job(real_cluster, ns, job).get("status") or {}).get("RestartCount", {}).get("launcher") == 1
        ),
        120,
        "RestartCount.launcher 1",
    )
    wait_running(real_cluster, ns, job, trainers=3)
    events = [e for e in events_for(real_cluster, ns, job) if e.reason == "TrainingJobRestarting"]
    assert events and "101" in events[0].message, [e.message for e in events]
    old = [
        p
        for p in job_pods(real_cluster, ns, job, "launcher")
        if p.metadata.labels[api.LABEL_GENERATION] == "0" and p.status.container_statuses
    ]
    # The exit code is the container's own, as the kubelet reports it (the pod may be gone).
    for pod in old:
        (status,) = pod.status.container_statuses
        assert status.state.terminated.exit_code == 101


def test_a_gracefully_deleted_worker_runs_beside_its_replacement_for_its_whole_grace_period(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job, limit, grace_s = real_namespace, "graceful", 10, 30
    # The seed's 300 s grace period and 60 s restartTimeLimit, scaled down to keep the test short.
    create_job(
        real_cluster,
        ns,
        box_job(job, limit=restart_time_limit("trainer", limit), grace=grace("trainer", grace_s)),
    )
    wait_running(real_cluster, ns, job, trainers=3)
    old = pods_by_index(real_cluster, ns, job, "trainer")[1]
    deleted = time.monotonic()
    real_cluster.core.delete_namespaced_pod(old.metadata.name, ns)  # graceful: the pod's own 30 s
    _, running_at = wait_replaced(real_cluster, ns, job, "trainer", 1, old.metadata.name)
    # Both run: the replacement, and the old worker's container, in its grace period.
    assert nodes.pod_processes(old.metadata.uid), "the old worker stopped before its replacement ran"
    wait_for(
        lambda: old.metadata.name not in {p.metadata.name for p in job_pods(real_cluster, ns, job)},
        limit + 15,
        "the old pod's object force-deleted at restartTimeLimit",
    )
    removed_at = time.monotonic()
    assert "ForceDeletingPod" in [e.reason for e in events_for(real_cluster, ns, job)]
    # The force delete removes the object, not the processes: a kubelet already terminating a
    # pod keeps its first grace period (kubernetes/kubernetes#113712), so the old worker runs
    # on until its own grace period ends.
    assert nodes.pod_processes(old.metadata.uid), "the force delete stopped the old worker"
    wait_for(
        lambda: not nodes.pod_processes(old.metadata.uid), grace_s + 30, "the old worker's processes gone"
    )
    gone_at = time.monotonic()
    print(
        f"graceful delete: replacement Running after {running_at - deleted:.1f}s; old pod's object "
        f"force-deleted after {removed_at - deleted:.1f}s (restartTimeLimit {limit}s); its processes "
        f"gone after {gone_at - deleted:.1f}s (grace period {grace_s}s)"
    )
    assert gone_at - deleted >= grace_s - 2, "the old worker was stopped before its grace period ended"


@pytest.mark.long
def test_a_node_whose_kubelet_stops_has_its_pods_replaced_elsewhere_while_they_run_on_until_it_returns(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "partition"
    create_job(
        real_cluster, ns, box_job(job, grace=grace("trainer", 5), limit=restart_time_limit("trainer", 5))
    )
    wait_running(real_cluster, ns, job, trainers=3)
    victim = pods_by_index(real_cluster, ns, job, "trainer")[0]
    node = victim.spec.node_name
    lost = [p for p in pods_by_index(real_cluster, ns, job, "trainer").values() if p.spec.node_name == node]
    nodes.stop_kubelet(real_cluster, node)
    stopped = time.monotonic()
    try:
        new, running_at = wait_replaced(real_cluster, ns, job, "trainer", 0, victim.metadata.name)
        assert new.spec.node_name != node
        # The partitioned node's containers run on: nothing there stops them while its kubelet is gone.
        assert all(nodes.pod_processes(p.metadata.uid) for p in lost)
        wait_for(
            lambda: victim.metadata.name not in {p.metadata.name for p in job_pods(real_cluster, ns, job)},
            60,
            "the old pod's object gone (force-deleted after restartTimeLimit)",
        )
    finally:
        nodes.continue_kubelet(real_cluster, node)
    continued = time.monotonic()
    wait_for(
        lambda: not any(nodes.pod_processes(p.metadata.uid) for p in lost),
        120,
        "the old containers stopped by their returning kubelet",
    )
    print(
        f"stopped kubelet: trainer 0 running again on {new.spec.node_name} {running_at - stopped:.1f}s after "
        f"the kubelet stopped; its old containers ran on until the kubelet came back, then stopped "
        f"{time.monotonic() - continued:.1f}s later"
    )


@pytest.mark.long
def test_kubectl_drain_moves_the_workers_off_a_real_node(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "drain"
    create_job(
        real_cluster, ns, box_job(job, trainer_grace=grace("trainer", 5), launcher_grace=grace("launcher", 5))
    )
    wait_running(real_cluster, ns, job, trainers=3)
    node = pods_by_index(real_cluster, ns, job, "trainer")[0].spec.node_name
    before = {p.metadata.name for p in live_pods(real_cluster, ns, job) if p.spec.node_name == node}
    started = time.monotonic()
    try:
        real_cluster.kubectl(
            "drain",
            node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=180s",
            "--pod-selector",
            f"{api.LABEL_JOB}={job}",
        )
        wait_running(real_cluster, ns, job, trainers=3, timeout=180)
        took = time.monotonic() - started
    finally:
        real_cluster.kubectl("uncordon", node)
    after = live_pods(real_cluster, ns, job)
    assert not {p.metadata.name for p in after} & before
    assert all(p.spec.node_name != node for p in after)
    moved = len(before)
    restarts = sum((get_job(real_cluster, ns, job)["status"].get("RestartCount") or {}).values())
    assert restarts == moved, (restarts, before)
    print(f"drain of {node}: {moved} pods evicted and running again elsewhere in {took:.1f}s")


def hosts_seen(cluster: KubeCluster, namespace: str, launcher: str) -> list[str]:
    out = nodes.exec_in(cluster, namespace, launcher, "/etc/edl/discover_hosts.sh")
    return sorted(line.split(":")[0] for line in out.split())


@pytest.mark.long
def test_discover_hosts_in_the_launcher_follows_the_running_workers(
    real_cluster: KubeCluster, real_namespace: str, real_operator: OperatorProcess
) -> None:
    ns, job = real_namespace, "hosts"
    create_job(real_cluster, ns, box_job(job, trainer_grace=grace("trainer", 5)))
    wait_running(real_cluster, ns, job, trainers=3)
    launcher = pods_by_index(real_cluster, ns, job, "launcher")[0].metadata.name

    def expected() -> list[str]:
        return sorted(
            f"{p.metadata.name}.{job}" for p in pods_by_index(real_cluster, ns, job, "trainer").values()
        )

    def reaches_launcher(what: str) -> None:
        started = time.monotonic()
        wait_for(
            lambda: hosts_seen(real_cluster, ns, launcher) == expected(),
            150,
            f"{what} in discover_hosts.sh",
            0.5,
        )
        took = time.monotonic() - started
        print(f"discover_hosts.sh: {what} reached the launcher {took:.1f}s after the workers ran")

    reaches_launcher("the first three workers")
    patch_job(real_cluster, ns, job, {"spec": {"replicaSpecs": {"trainer": {"replicas": 4}}}})
    wait_for(
        lambda: len(pods_by_index(real_cluster, ns, job, "trainer")) == 4, 120, "a fourth worker Running"
    )
    reaches_launcher("a scale-out to 4")
    patch_job(real_cluster, ns, job, {"spec": {"replicaSpecs": {"trainer": {"replicas": 2}}}})
    wait_for(lambda: len(pods_by_index(real_cluster, ns, job, "trainer")) == 2, 120, "two workers left")
    reaches_launcher("a scale-in to 2")
    old = pods_by_index(real_cluster, ns, job, "trainer")[0]
    real_cluster.core.delete_namespaced_pod(old.metadata.name, ns, grace_period_seconds=0)
    wait_replaced(real_cluster, ns, job, "trainer", 0, old.metadata.name)
    reaches_launcher("a replacement of worker 0")
    # Volcano's host files follow the same ConfigMap, in every pod.
    volcano = nodes.exec_in(real_cluster, ns, launcher, "cat", "/etc/volcano/trainer.host").split()
    assert (
        sorted(volcano) == sorted(h.removesuffix(f".{job}") for h in expected())
        or sorted(volcano) == expected()
    )
